"""References that close over traced values: a primitive's closure twin.

A primitive defined inside a traced function (``jit``, ``vmap``, ``grad``) may close over
that function's traced values, as ``jax.custom_jvp`` functions may.  jext traces such a
reference once, at the call, and makes those values *hidden operands*: the call binds the
primitive's twin, a second JAX primitive of the same name whose operands are the hidden
values (one tuple) followed by the caller's flat operands, and whose one static param,
``closure``, holds the traced reference.  Every rule derived from the reference (abstract
evaluation, the default JVP, ``vmap``, the reference lowering) then sees the hidden values
as ordinary operands, so they are differentiated, batched and lowered like the others.

The author's own rules run inline, with the operands the author declared, and still close
over the same values.  As with ``custom_jvp`` and ``custom_vmap``, such a rule cannot see
a closed-over value's tangent or batch axis: a JVP rule of a primitive whose closed-over
value is being differentiated, or a batching rule of one whose closed-over value is batched
by the same ``vmap``, raises :class:`jext.RuleError` instead of returning a wrong result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, final

from jax import tree_util

from jext import _jax
from jext._errors import RuleError, RuleTracerError

__all__ = [
    "ClosesOverTracers",
    "Closure",
    "closed_over_error",
    "closed_over_tangents",
    "twin_reference",
]


class ClosesOverTracers(Exception):
    """Raised by the reference's tracing when it closed over traced values."""

    def __init__(self, jaxpr: _jax.ClosedJaxpr, values: list[Any], out_tree: Any) -> None:
        super().__init__("the reference closes over traced values")
        self.jaxpr = jaxpr
        self.values = values
        self.out_tree = out_tree


@final
class Closure:
    """The reference traced at one call, its traced constants made leading inputs.

    Equal only to itself: each call that closes over traced values has its own.
    """

    __slots__ = (
        "__weakref__",
        "hidden_ids",
        "in_tree",
        "jaxpr",
        "n_hidden",
        "out_tree",
        "params",
    )

    def __init__(
        self,
        jaxpr: _jax.ClosedJaxpr,
        hidden: Sequence[Any],
        in_tree: Any,
        out_tree: Any,
        params: dict[str, Any],
    ) -> None:
        self.jaxpr = jaxpr
        self.n_hidden = len(hidden)
        # The traced values themselves are not kept (they belong to the caller's trace):
        # their ids tell a lowering rule's closed-over values apart.  Each stays alive, and
        # its id its own, while the reference that closes over it does.
        self.hidden_ids = tuple(id(v) for v in hidden)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.params = params

    def __repr__(self) -> str:
        return f"<closure over {self.n_hidden} traced value(s)>"


def twin_reference(hidden: Sequence[Any], /, *operands: Any, closure: Closure) -> Any:
    """The twin's reference: the traced reference on the hidden values and the operands."""
    leaves = closure.in_tree.flatten_up_to(operands)
    outs = _jax.eval_jaxpr(closure.jaxpr, *hidden, *leaves)
    return tree_util.tree_unflatten(closure.out_tree, outs)


def closed_over_error(name: str, what: str) -> RuleError:
    return RuleTracerError(
        f"primitive {name!r}: its reference closes over a traced value that {what}, which "
        "its custom rule cannot see (as with jax.custom_jvp and custom_vmap); pass that "
        "value as an operand instead"
    )


def closed_over_tangents(tangents: Sequence[Any], in_tree: Any) -> bool:
    """Whether a tangent of a twin's hidden values (its first operand) is not zero."""
    hidden = tree_util.tree_unflatten(in_tree, list(tangents))[0]
    return any(not _jax.is_symbolic_zero(t) for t in tree_util.tree_leaves(hidden))
