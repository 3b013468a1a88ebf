"""Abstract evaluation, and the traces of the reference every default rule derives from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
from jax import tree_util

from jext import _jax
from jext._errors import RuleError
from jext.primitives._closure import ClosesOverTracers
from jext.primitives._core import (
    NEEDS_CONCRETE_VALUES,
    Core,
    Form,
    as_value,
    batched_avals,
    typed_key,
    unbatched_avals,
)
from jext.primitives._links import apply_chain
from jext.primitives._sharding import concrete_rule, explicit_result_axes

__all__ = [
    "Linearized",
    "abstract_eval",
    "abstract_eval_and_effects",
    "base_abstract_eval",
    "chain_jaxpr",
    "check_explicit_operands",
    "linearized",
    "out_tree",
    "rule_result_types",
    "trace_reference",
]


def _key(form: Form, avals: Sequence[Any], what: str) -> tuple[Any, ...]:
    return (what, form.key(), tuple(avals), _jax.trace_context())


def trace_reference(core: Core, form: Form, avals: Sequence[Any]) -> tuple[_jax.ClosedJaxpr, Any]:
    """The reference traced at the per-example ``avals`` (cached) and its result tree."""

    def trace() -> tuple[_jax.ClosedJaxpr, Any]:
        fun, out_tree = core.flat_fn(core.reference, form, "reference", params=form.params)
        closed = _jax.trace_avals(fun, avals)
        hoisted = _jax.hoist_traced_consts(closed)
        if hoisted is not None:  # never cached: the traced values belong to this call
            raise ClosesOverTracers(*hoisted, out_tree())
        return closed, out_tree()

    try:
        result: tuple[_jax.ClosedJaxpr, Any] = core.traces.get_or_make(
            _key(form.plain, avals, "reference"), trace
        )
    except TypeError:
        core.check_hashable(form.params)
        raise
    return result


@dataclass(frozen=True, slots=True)
class Linearized:
    """The reference's JVP split by JAX's partial evaluation, as ``jax.linearize`` does."""

    forward: _jax.ClosedJaxpr  # primals -> (results, residuals)
    linear: _jax.ClosedJaxpr  # (residuals, active tangents) -> tangents of the results
    n_residuals: int


def linearized(core: Core, form: Form, avals: Sequence[Any]) -> Linearized:
    """The default JVP's two halves at the per-example ``avals`` (cached)."""
    assert form.linearize is not None
    active = form.linearize

    def make() -> Linearized:
        closed, _ = trace_reference(core, form.plain, avals)
        n = len(avals)
        reference = _jax.jaxpr_as_fun(closed)

        def jvp(*xs: Any) -> list[Any]:
            primals = xs[:n]
            given = iter(xs[n:])
            tangents = [
                next(given) if a else _jax.instantiate_zeros(_jax.make_zero(aval))
                for a, aval in zip(active, avals, strict=True)
            ]
            outs, tangent_outs = jax.jvp(reference, tuple(primals), tuple(tangents))
            return [*outs, *tangent_outs]

        tangent_avals = [aval.to_tangent_aval() for a, aval in zip(active, avals, strict=True) if a]
        jvp_jaxpr = _jax.trace_avals(jvp, [*avals, *tangent_avals])
        forward, linear, n_res = _jax.split_linearized(jvp_jaxpr, n, len(closed.out_avals))
        return Linearized(forward, linear, n_res)

    result: Linearized = core.traces.get_or_make(_key(form.base, avals, "linearize"), make)
    return result


def chain_jaxpr(core: Core, form: Form, avals: Sequence[Any]) -> _jax.ClosedJaxpr:
    """The derivative form's function at per-example ``avals``, applied to the reference
    (cached); see ``_derivatives.py``."""

    def make() -> _jax.ClosedJaxpr:
        n = form.in_tree.num_leaves
        closed, _ = trace_reference(core, form.plain, avals[:n])
        reference = _jax.jaxpr_as_fun(closed)
        fn = apply_chain(lambda *xs: list(reference(*xs)), form.chain, core.name)
        return _jax.trace_avals(fn, avals)

    key = ("chain", form.key(), tuple(avals), _jax.trace_context())
    result: _jax.ClosedJaxpr = core.traces.get_or_make(key, make)
    return result


def base_abstract_eval(core: Core, form: Form, avals: Sequence[Any]) -> tuple[list[Any], Any]:
    """The per-example result avals of the primitive itself, and its result tree."""
    rule = core.rules.abstract_eval
    if rule is None:
        closed, out_tree = trace_reference(core, form.plain, avals)
        out_avals = list(closed.out_avals)
    else:
        result = rule(*tree_util.tree_unflatten(form.in_tree, avals), params=form.params)
        leaves, out_tree = tree_util.tree_flatten(result)
        out_avals = [_as_aval(core, leaf) for leaf in leaves]
    core.record_out_tree(form, out_tree)
    return out_avals, out_tree


def abstract_eval(core: Core, avals: Sequence[Any], form: Form) -> list[Any]:
    """The result avals of the equation binding ``form`` on ``avals``."""
    return abstract_eval_and_effects(core, avals, form)[0]


def abstract_eval_and_effects(
    core: Core, avals: Sequence[Any], form: Form
) -> tuple[list[Any], frozenset[Any]]:
    """The result avals of the equation binding ``form`` on ``avals``, and its effects: those
    of the function it computes (collectives' named axes aside) and, where a platform rule
    calls an FFI handler with ``has_side_effect=True``, the FFI's."""
    per_example = unbatched_avals(avals, form.levels)
    declared = None if form.derived else core.rules.sharding
    axes = [_jax.mesh_axes_of(a) for a in avals] if declared is not None else []
    template = next((a for a, x in zip(avals, axes, strict=False) if x is not None), None)
    check_explicit_operands(core, form, avals)
    closed: _jax.ClosedJaxpr | None = None
    with _jax.extend_axis_env(_missing_axes(form)):
        if form.chain:
            closed = chain_jaxpr(core, form.base, per_example)
        elif form.linearize is not None:
            closed = linearized(core, form, per_example).forward
        elif core.rules.abstract_eval is None:
            closed, tree = trace_reference(core, form.plain, per_example)
            core.record_out_tree(form, tree)
        outs = (
            list(closed.out_avals)
            if closed is not None
            else base_abstract_eval(core, form, per_example)[0]
        )
    found = set() if closed is None else set(_jax.side_effects(closed))
    if any(entry.ffi_side_effect for entry in core.rules.lowerings.values()):
        found.add(_jax.ffi_side_effect())
    batched = batched_avals(outs, form.levels)
    if declared is None or template is None:
        return batched, frozenset(found)
    # The result types carry the shardings the author's rule gives.
    rule = concrete_rule(core.name, declared, per_example, outs, form.levels, in_tree=form.in_tree)
    out_axes = explicit_result_axes(core.name, declared.text, rule, axes)
    return [
        _jax.with_mesh_axes(o, a, like=template) for o, a in zip(batched, out_axes, strict=True)
    ], frozenset(found)


def _missing_axes(form: Form) -> list[tuple[Any, int]]:
    """The named ``vmap`` axes of ``form``'s levels that are not in scope now (JAX may
    evaluate an equation's type again outside the ``vmap`` that made it), for the
    per-example trace of a reference whose collectives refer to them."""
    named = [(name, size) for size, _, _, name in form.levels if name is not None]
    if not named:  # the common case: no scope to read
        return []
    in_scope = _jax.axis_sizes()
    return [(name, size) for name, size in named if name not in in_scope]


def check_explicit_operands(core: Core, form: Form, avals: Sequence[Any]) -> None:
    """Under explicit sharding, refuse operands sharded against the author's rule before
    the reference traces (whose own error would not name the rule)."""
    declared = core.rules.sharding
    if declared is None or form.derived:
        return
    axes = [_jax.mesh_axes_of(a) for a in avals]
    if all(x is None for x in axes):
        return
    per_example = unbatched_avals(avals, form.levels)
    operands_only = concrete_rule(
        core.name, declared, per_example, None, form.levels, in_tree=form.in_tree
    )
    explicit_result_axes(core.name, declared.text, operands_only, axes)


def out_tree(core: Core, form: Form, avals: Sequence[Any]) -> Any:
    """The result tree of the primitive for per-example ``avals``."""
    key = (form.in_tree, tuple((k, typed_key(v)) for k, v in form.params.items()))
    tree = core.out_trees.get(key)
    if tree is None:
        _, tree = base_abstract_eval(core, form, avals)
    return tree


def rule_result_types(
    core: Core, form: Form, primals: Sequence[Any], results: Any
) -> tuple[list[Any], Any]:
    """The result avals and tree that a derivative rule's primal ``results`` must have.

    Abstract evaluation gives them; where it cannot because the reference needs concrete
    values and ``primals`` are concrete (an eager ``jax.jvp`` or ``grad``), the rule's own
    ``results`` give them, as ``custom_jvp`` takes its rule's under an eager ``jvp``.
    """
    avals = [_jax.typeof(p) for p in primals]
    try:
        return abstract_eval(core, avals, form), out_tree(core, form, avals)
    except NEEDS_CONCRETE_VALUES:
        if form.levels or not all(_jax.is_concrete(p) for p in primals):
            raise
    leaves, tree = tree_util.tree_flatten(
        results, is_leaf=lambda x: isinstance(x, _jax.CustomVJPPrimal)
    )
    core.record_out_tree(form, tree)
    values = [as_value(x.value if isinstance(x, _jax.CustomVJPPrimal) else x) for x in leaves]
    return [_jax.typeof(v) for v in values], tree


def _as_aval(core: Core, x: object) -> Any:
    if _jax.is_abstract_value(x):
        return x
    if isinstance(x, jax.ShapeDtypeStruct):
        return _jax.shaped_array(x.shape, x.dtype, weak_type=bool(x.weak_type))
    raise RuleError(
        f"abstract_eval rule of primitive {core.name!r} returned {x!r} "
        f"({type(x).__name__}); it must return jax.core.ShapedArray or "
        "jax.ShapeDtypeStruct values (or a pytree of them)"
    )
