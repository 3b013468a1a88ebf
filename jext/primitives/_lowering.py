"""Lowering and eager implementation of every form of a primitive, per platform.

Each platform lowers with the rule the frozen record gives it (see ``Rules.lowering_for``);
batched forms run that rule vectorized (or, for raw MLIR rules, once per example), and
the forward half of the default JVP runs it for the results beside the reference's
residuals.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax

from jext import _jax
from jext._errors import LoweringError, RuleError
from jext.primitives._abstract import base_abstract_eval, linearized, trace_reference
from jext.primitives._batching import loop_over_levels, over_levels, run_over_levels
from jext.primitives._core import Core, Form, batched_avals, parse_form, unbatched_avals
from jext.primitives._rules import LoweringEntry

__all__ = ["impl", "register_lowerings", "rule_as_function"]


def register_lowerings(core: Core) -> None:
    """Register JAX lowering rules reading ``core.rules`` (called once, when frozen)."""
    if not core.rules.has_custom_lowering:
        # Every platform lowers the reference: one dispatcher serves them all.
        _jax.register_lowering(core.jax, functools.partial(_lower, core, None), None)
        return
    for platform in (*_jax.PLATFORMS, None):
        _jax.register_lowering(core.jax, functools.partial(_lower, core, platform), platform)


def _entry(core: Core, platform: str | None) -> LoweringEntry | None:
    rules = core.rules
    if platform is not None:
        return rules.lowering_for(platform)
    if None in rules.lowerings:
        return rules.lowerings[None]
    if not rules.has_custom_lowering or None in rules.reference_platforms:
        return LoweringEntry(None)
    return None


def _lower(
    core: Core, platform: str | None, ctx: Any, *values: Any, **bind_params: Any
) -> Sequence[Any]:
    entry = _entry(core, platform)
    if entry is None:
        where = platform or "/".join(_jax.module_platforms(ctx))
        have = sorted(p for p in _jax.PLATFORMS if core.rules.lowering_for(p) is not None)
        raise LoweringError(
            f"primitive {core.name!r} has no lowering rule for platform {where!r} (it has "
            f"rules for {have or 'no platform'}); register one with "
            f"@{core.short_name}.def_lowering(platform={where!r})"
        )
    form = parse_form(bind_params, len(values))
    if entry.rule is not None and entry.raw and not form.levels and form.linearize is None:
        return list(entry.rule.fn(ctx, *values, **entry.rule.arity.select(form.params)))
    avals = _jax.avals_in(ctx)
    key = ("lower", platform, form.key(), tuple(avals), _jax.trace_context())
    closed: _jax.ClosedJaxpr = core.traces.get_or_make(
        key, lambda: _jax.trace_avals(form_function(core, form, entry, platform), avals)
    )
    return _jax.lower_jaxpr(ctx, closed, *values)


def form_function(
    core: Core, form: Form, entry: LoweringEntry, platform: str | None
) -> Callable[..., list[Any]]:
    """The flat traceable function the equation binding ``form`` computes with ``entry``."""
    levels = form.levels
    fn = _per_example_function(core, form.base, entry, platform)
    masks = [mask for _, mask, _ in levels]
    if not levels:
        return fn
    if entry.raw and form.linearize is None:
        # vmap of a raw rule would bind the batched primitive again: loop instead.
        return loop_over_levels(fn, levels, masks)
    return over_levels(fn, levels, masks)


def _per_example_function(
    core: Core, form: Form, entry: LoweringEntry, platform: str | None
) -> Callable[..., list[Any]]:
    plain = form.plain
    if form.linearize is not None:
        # The primitive itself computes the results where a platform rule or the author's
        # batching rule (under vmap) must apply; the reference then gives only residuals.
        via_primitive = entry.rule is not None or core.rules.batching_kind != "default"

        def forward_half(*args: Any) -> list[Any]:
            avals = [_jax.typeof(a) for a in args]
            forward = linearized(core, form, avals).forward
            if not via_primitive:
                return _jax.eval_jaxpr(forward, *args)
            results = core.bind(plain, *args)
            return [*results, *_jax.eval_jaxpr(forward, *args)[len(results) :]]

        return forward_half
    if entry.rule is None:

        def reference(*args: Any) -> list[Any]:
            avals = [_jax.typeof(a) for a in args]
            closed, _ = trace_reference(core, plain, avals)
            if core.rules.abstract_eval is not None:
                # Else XLA's verifier would reject the module with a raw MLIR error.
                want, _ = base_abstract_eval(core, plain, avals)
                _check_types(core, "reference", platform, closed.out_avals, want)
            return _jax.eval_jaxpr(closed, *args)

        return reference
    if entry.raw:
        return lambda *args: core.bind(plain, *args)
    rule = entry.rule

    def traceable(*args: Any) -> list[Any]:
        avals = [_jax.typeof(a) for a in args]
        want, tree = base_abstract_eval(core, plain, avals)
        result = rule(*jax.tree_util.tree_unflatten(form.in_tree, args), params=form.params)
        outs = core.flatten_results("lowering", result, tree)
        got = [_jax.typeof(out) for out in outs]
        _check_types(core, f"lowering rule {entry.label!r}", platform, got, want)
        return outs

    return traceable


def _check_types(
    core: Core, what: str, platform: str | None, got: Sequence[Any], want: Sequence[Any]
) -> None:
    """RuleError unless each result's shape and dtype are the abstract evaluation's."""
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.shape != w.shape or g.dtype != w.dtype:
            where = (
                "eagerly" if platform == "eager" else f"lowering for {platform or 'any platform'}"
            )
            raise RuleError(
                f"the {what} of primitive {core.name!r} returned {_jax.aval_str(g)} for "
                f"result {i} ({where}), but its abstract evaluation gives "
                f"{_jax.aval_str(w)}: make the abstract_eval rule and the {what} agree"
            )


def rule_as_function(core: Core, entry: LoweringEntry) -> Callable[..., Any]:
    """A traceable rule (or the reference) callable like the primitive, for checkers."""
    if entry.rule is None:
        return core.reference
    rule = entry.rule
    if entry.raw:

        def raw(*operands: Any, **params: Any) -> Any:
            raise RuleError(
                f"lowering rule {entry.label!r} of primitive {core.name!r} is a raw MLIR "
                "rule: it runs only while JAX lowers the primitive, not as a function"
            )

        return raw

    def call(*operands: Any, **params: Any) -> Any:
        return rule(*operands, params=params)

    return call


def impl(core: Core, args: Sequence[Any], bind_params: dict[str, Any]) -> list[Any]:
    """The eager implementation: the author's impl, or the lowering compiled once."""
    user = core.rules.impl
    if user is None:
        # Bind params tell 2 from 2.0 (see StaticParam): they key the compiled impl as is.
        key = tuple(bind_params.items())
        jitted = core.impls.get(key)
        if jitted is None:
            bound = functools.partial(_jax.bind, core.jax, **bind_params)
            jitted = core.impls.put(key, jax.jit(bound))
        return list(_jax.run_eagerly(jitted, *args))
    form = parse_form(bind_params, len(args))
    per_example_avals = unbatched_avals([_jax.typeof(a) for a in args], form.levels)
    avals, tree = base_abstract_eval(core, form.plain, per_example_avals)

    def one(*xs: Any) -> list[Any]:
        result = user(*jax.tree_util.tree_unflatten(form.in_tree, xs), params=form.params)
        outs = core.flatten_results("impl", result, tree)
        _check_types(core, "impl", "eager", [_jax.typeof(o) for o in outs], avals)
        return outs

    outs = run_over_levels(one, form.levels, args, batched_avals(avals, form.levels))
    if form.linearize is None:
        return outs
    # The forward half: the author's impl gives the results, the reference the residuals.
    residuals = _compiled(core, form)(*args)[len(outs) :]
    return [*outs, *residuals]


def _compiled(core: Core, form: Form) -> Callable[..., list[Any]]:
    jitted = core.impls.get_or_make(form.key(), lambda: jax.jit(functools.partial(core.bind, form)))
    return lambda *args: list(_jax.run_eagerly(jitted, *args))
