"""Calling a primitive: what each operand tree and params reuse, and the calls that cannot
reuse anything (a reference closing over traced values, one needing concrete values)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import jax
import numpy as np
from jax import tree_util

from jext import _jax
from jext.primitives import _abstract
from jext.primitives._closure import ClosesOverTracers, Closure
from jext.primitives._core import Core, Form
from jext.primitives.rules import KINDS

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = [
    "EAGER_ARRAY_TYPES",
    "SINGLE_LEAF",
    "EagerCall",
    "PreparedCall",
    "bind_unprepared",
    "call_closure",
    "check_leaves",
    "define_twin",
    "prepare_call",
]

_SCALAR_TYPES: Final = (
    *(bool, int, float, complex, np.ndarray, np.generic, jax.Array),
    *_jax.literal_array_types(),
)
EAGER_ARRAY_TYPES: Final = frozenset({np.ndarray, _jax.ArrayImpl})
SINGLE_LEAF: Final = tree_util.tree_structure(0)


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """What every call with one operand tree and params reuses."""

    out_tree: Any
    bind_params: Mapping[str, Any]
    eager: EagerCall | None  # None: bind (a custom impl runs as it is)
    single: bool  # the result is one array


class EagerCall:
    """A jitted bind, made on the first eager call (tracing never needs one)."""

    __slots__ = ("_bind_params", "_jitted", "_prim")

    def __init__(self, prim: _jax.Primitive, bind_params: Mapping[str, Any]) -> None:
        self._prim = prim
        self._bind_params = bind_params
        self._jitted: Callable[..., list[Any]] | None = None

    def __call__(self, *args: Any) -> list[Any]:
        jitted = self._jitted
        if jitted is None:
            bound = functools.partial(_jax.bind, self._prim, **self._bind_params)
            jitted = self._jitted = jax.jit(bound)
        return jitted(*args)


def check_leaves(name: str, flat: Sequence[Any]) -> None:
    """TypeError for an operand leaf that is not an array or a Python scalar."""
    for i, leaf in enumerate(flat):
        if not isinstance(leaf, _SCALAR_TYPES):
            raise TypeError(
                f"{name}(): operand leaf {i} is a {type(leaf).__name__}; operands must "
                "be arrays, Python scalars or pytrees of them (static values go in "
                "keyword-only params)"
            )


def prepare_call(
    core: Core, in_tree: Any, flat: Sequence[Any], params: dict[str, Any]
) -> PreparedCall | ClosesOverTracers:
    """What every later call with this operand tree and these params reuses, or, for a
    reference that closed over traced values, those values (nothing to reuse)."""
    form = Form(in_tree, params)
    avals = [_jax.typeof(x) for x in flat]
    _abstract.check_explicit_operands(core, form, avals)
    try:
        _, out_tree = _abstract.base_abstract_eval(core, form, avals)
    except ClosesOverTracers as found:
        return found
    bind_params = form.bind_params()
    # Eagerly, a jitted bind skips JAX's per-call dispatch of the primitive; it is
    # compiled once per signature like the default impl.  A custom impl runs as is.
    eager = None if core.rules.impl is not None else EagerCall(core.jax, bind_params)
    return PreparedCall(out_tree, bind_params, eager, out_tree == SINGLE_LEAF)


def bind_unprepared(
    core: Core, in_tree: Any, flat: Sequence[Any], params: dict[str, Any], err: Exception
) -> Any:
    """A call whose reference needs concrete values, under a transformation: bind it
    unprepared.  Under an eager ``jax.jvp`` or ``grad`` the rules run on the concrete
    primals and record the result tree; under ``jit`` JAX's error (``err``) is raised."""
    form = Form(in_tree, params)
    outs = _jax.bind(core.jax, *flat, **form.bind_params())
    tree = core.recorded_out_tree(form)
    if tree is None:
        raise err
    return tree_util.tree_unflatten(tree, outs)


def call_closure(
    twin: Primitive[..., Any],
    found: ClosesOverTracers,
    in_tree: Any,
    flat: Sequence[Any],
    params: dict[str, Any],
) -> Any:
    """A call whose reference closed over traced values: bind the closure twin."""
    closure = Closure(found.jaxpr, found.values, in_tree, found.out_tree, params)
    return twin(tuple(found.values), *flat, closure=closure)


def define_twin(made: Primitive[..., Any], core: Core) -> None:
    """Give ``made``, the closure twin of the primitive of ``core``, its rules adapted."""
    for kind in KINDS.values():
        if kind.twin is not None:
            kind.twin(made, core.rules)
    made._core.leading_hidden = True
    made._core.operand_names = ("", *core.operand_names)
