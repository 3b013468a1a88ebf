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

from collections.abc import Callable, Sequence
from typing import Any, final

import jax
import jax.numpy as jnp
from jax import tree_util

from jext import _jax
from jext._errors import RuleError, RuleTracerError
from jext.primitives._markers import LinearOperand, is_zero_tangent
from jext.primitives._rules import LoweringEntry, Rule, Rules

__all__ = [
    "ClosesOverTracers",
    "Closure",
    "closed_over_error",
    "closed_over_tangents",
    "twin_reference",
    "twin_rules",
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


def twin_rules(name: str, rules: Rules) -> dict[str, Any]:
    """The twin's rules, as ``def_*`` calls: each author rule adapted to the twin's
    operands (the hidden tuple first, then the flat leaves), the rest derived."""
    out: dict[str, Any] = {}
    if rules.abstract_eval is not None:
        rule = rules.abstract_eval

        def abstract_eval(hidden: Any, *avals: Any, closure: Closure) -> Any:
            return rule(*avals, params=closure.params)

        out["abstract_eval"] = abstract_eval
    if rules.impl is not None:
        impl_rule = rules.impl

        def impl(hidden: Any, *leaves: Any, closure: Closure) -> Any:
            return impl_rule(*leaves, params=closure.params)

        out["impl"] = impl
    if rules.jvp is not None:
        out["jvp"] = _twin_jvp(rules.jvp, rules.jvp_symbolic_zeros)
    if rules.transpose is not None:
        out["transpose"] = _twin_transpose(name, rules.transpose)
    if rules.vjp_fwd is not None and rules.vjp_bwd is not None:
        out["vjp"] = _twin_vjp(rules.vjp_fwd, rules.vjp_bwd)
    if rules.lin is not None and rules.linearized is not None:
        out["linearize"] = _twin_linearize(rules.lin, rules.linearized)
    if rules.batching is not None and rules.batching_kind == "custom":
        out["batching"] = _twin_batching(name, rules.batching)
    out["lowerings"] = {
        platform: _twin_lowering(name, entry)
        for platform, entry in rules.lowerings.items()
        if entry.rule is not None
    }
    return out


def _twin_jvp(rule: Rule, symbolic_zeros: bool) -> Callable[..., Any]:
    """The author's JVP rule on the twin's operands (differentiating the hidden values is
    refused before it runs: see ``_ad.jvp_per_example``)."""

    def jvp(primals: Sequence[Any], tangents: Sequence[Any], *, closure: Closure) -> Any:
        tans = tangents[1:]
        if not symbolic_zeros:
            tans = tree_util.tree_map(
                lambda t: jnp.zeros(t.shape, t.dtype) if is_zero_tangent(t) else t,
                tans,
                is_leaf=is_zero_tangent,
            )
        return rule(tuple(primals[1:]), tuple(tans), params=closure.params)

    return jvp


def _twin_vjp(fwd: Rule, bwd: Rule) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The author's VJP rules on the twin's operands; no cotangent for the hidden values
    (differentiating them is refused before ``fwd`` runs: see ``_ad.jvp_per_example``)."""

    def twin_fwd(hidden: Any, *operands: Any, closure: Closure) -> Any:
        return fwd(*operands, params=closure.params)

    def twin_bwd(residuals: Any, cts: Any, *accums: Any, closure: Closure) -> Any:
        # An accumulating bwd gets no accumulator for the hidden values, and returns None.
        result = bwd(residuals, cts, *accums[1:], params=closure.params)
        if not isinstance(result, tuple | list):
            return result  # the twin's own check reports it with the primitive's name
        return (None, *result)

    return twin_fwd, twin_bwd


def _twin_linearize(lin: Rule, linearized: Rule) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The author's linearization rules on the twin's operands (differentiating the hidden
    values is refused before ``lin`` runs: see ``_ad.jvp_per_example``)."""

    def twin_lin(hidden: Any, *operands: Any, closure: Closure) -> Any:
        return lin(*operands, params=closure.params)

    def twin_linearized(residuals: Any, hidden: Any, *tangents: Any, closure: Closure) -> Any:
        return linearized(residuals, *tangents, params=closure.params)

    return twin_lin, twin_linearized


def closed_over_tangents(tangents: Sequence[Any], in_tree: Any) -> bool:
    """Whether a tangent of a twin's hidden values (its first operand) is not zero."""
    hidden = tree_util.tree_unflatten(in_tree, list(tangents))[0]
    return any(not _jax.is_symbolic_zero(t) for t in tree_util.tree_leaves(hidden))


def _twin_transpose(name: str, rule: Rule) -> Callable[..., Any]:
    def transpose(cts: Any, hidden: Sequence[Any], *leaves: Any, closure: Closure) -> Any:
        if any(isinstance(h, LinearOperand) for h in hidden):
            raise closed_over_error(name, "is being transposed")
        result = rule(cts, *leaves, params=closure.params)
        if not isinstance(result, tuple | list):
            return result  # the twin's own check reports it with the primitive's name
        return (None, *result)

    return transpose


def _twin_batching(name: str, rule: Rule) -> Callable[..., Any]:
    def batching(args: Sequence[Any], dims: Sequence[Any], *, closure: Closure) -> Any:
        if any(d is not None for d in dims[0]):
            raise closed_over_error(name, "is batched by this vmap")
        return rule(tuple(args[1:]), tuple(dims[1:]), params=closure.params)

    return batching


def _twin_lowering(name: str, entry: LoweringEntry) -> tuple[Callable[..., Any], bool]:
    rule = entry.rule
    assert rule is not None
    if entry.raw:

        def raw(ctx: Any, *values: Any, closure: Closure) -> Any:
            return rule(ctx, *values[closure.n_hidden :], params=closure.params)

        return _labelled(raw, rule.fn), True

    def traceable(hidden: Sequence[Any], *leaves: Any, closure: Closure) -> Any:
        # The rule may close over the traced values the reference closes over (defined in
        # the same traced function); while lowering, those are the hidden operands.
        store: list[Any] = []

        def flat(*xs: Any) -> list[Any]:
            out, tree = tree_util.tree_flatten(rule(*xs, params=closure.params))
            store[:] = [tree]
            return out

        try:
            closed = _jax.trace_avals(flat, [_jax.typeof(x) for x in leaves])
        except jax.errors.UnexpectedTracerError as err:  # a finished vmap's value
            raise RuleError(
                f"lowering rule {entry.label!r} of primitive {name!r} closes over a value "
                "batched by an enclosing vmap, which a lowering rule cannot see (it lowers "
                "one example); pass that value as an operand"
            ) from err
        hoisted = _jax.hoist_traced_consts(closed)
        if hoisted is None:
            outs = _jax.eval_jaxpr(closed, *leaves)
        else:
            jaxpr, values = hoisted
            where = {h: i for i, h in enumerate(closure.hidden_ids)}
            if any(id(v) not in where for v in values):
                raise RuleError(
                    f"lowering rule {entry.label!r} of primitive {name!r} closes over a "
                    "traced value its reference does not use: a lowering rule can use only "
                    "the traced values the reference closes over (they become hidden "
                    "operands); use that value in the reference too, or pass it as an operand"
                )
            outs = _jax.eval_jaxpr(jaxpr, *(hidden[where[id(v)]] for v in values), *leaves)
        return tree_util.tree_unflatten(store[0], outs)

    return _labelled(traceable, rule.fn), False


def _labelled(fn: Callable[..., Any], like: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` named and marked as ``like`` (reports and FFI detection read both), with its
    own signature (``functools.wraps`` would make ``inspect`` read ``like``'s)."""
    marks = getattr(like, "__dict__", {})
    fn.__dict__.update({k: v for k, v in marks.items() if k != "__wrapped__"})
    fn.__name__ = getattr(like, "__name__", fn.__name__)
    fn.__qualname__ = getattr(like, "__qualname__", fn.__qualname__)
    return fn
