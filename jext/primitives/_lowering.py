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

from jext import _host, _jax
from jext._errors import LoweringError, RuleError
from jext.primitives._abstract import base_abstract_eval, chain_jaxpr, linearized, trace_reference
from jext.primitives._batching import loop_over_levels, over_levels, run_over_levels
from jext.primitives._core import (
    NEEDS_CONCRETE_VALUES,
    Core,
    Form,
    Level,
    batched_avals,
    parse_form,
    unbatched_avals,
)
from jext.primitives._rules import LoweringEntry, LoweringInfo
from jext.primitives._sharding import equation_rule

__all__ = [
    "impl",
    "lowering_info",
    "platform_labels",
    "register_lowerings",
    "rule_as_function",
    "rule_ffi_targets",
]

# The FFI targets found in the traces of hand-written lowering rules (ffi_call in a
# traceable rule): jext.lowering.export allows them, as it allows ffi_rule's.  Only grows.
_RULE_FFI_TARGETS: set[str] = set()


def rule_ffi_targets() -> frozenset[str]:
    """The FFI targets the lowering rules traced in this process call through
    ``jax.ffi.ffi_call`` (those of ``ffi_rule`` and of hand-written rules alike)."""
    return frozenset(_RULE_FFI_TARGETS)


def register_lowerings(core: Core) -> None:
    """Register JAX lowering rules reading ``core.rules`` (called once, when frozen)."""
    if _may_partition(core):
        _jax.require_devices_during_lowering(core.jax)
    if not core.rules.has_custom_lowering:
        # Every platform lowers the reference: one dispatcher serves them all.
        _jax.register_lowering(core.jax, functools.partial(_lower, core, None), None)
        return
    for platform in (*_jax.PLATFORMS, None):
        _jax.register_lowering(core.jax, functools.partial(_lower, core, platform), platform)


def _may_partition(core: Core) -> bool:
    """Whether a rule may lower to ``custom_partitioning`` (see ``_lower``): any traceable
    rule of the author's (an FFI call or a Pallas kernel is found in its trace, whether
    ``ffi_rule`` made it or the author called ``jax.ffi.ffi_call``), or a raw rule of a
    primitive with a declared sharding rule."""
    rules = core.rules
    return any(
        entry.rule is not None and (not entry.raw or rules.sharding is not None)
        for entry in rules.lowerings.values()
    )


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
    target = entry.ffi_target
    if target is not None and not form.derived and not _jax.for_export(ctx):
        check_ffi_handler(core, target, platform or _jax.module_platforms(ctx)[0])
    raw = entry.rule is not None and entry.raw and not form.derived
    if raw and not form.levels and not _jax.partitioned_context(ctx):
        return _emit_raw(entry, ctx, values, form)
    avals = _jax.avals_in(ctx)
    closed: _jax.ClosedJaxpr | None = None
    if not raw:
        key = ("lower", platform, form.key(), tuple(avals), _jax.trace_context())
        closed = core.traces.get_or_make(
            key, lambda: _traced_rule(core, form, entry, platform, avals)
        )
        called = _jax.ffi_call_targets(closed)
        _RULE_FFI_TARGETS.update(called)
        # A hand-written rule's ffi_call: the same check as an ffi_rule's target.  Not for
        # jext's own primitives: the check reads every plugin's targets, and using those
        # never loads a plugin.
        own = core.name.startswith("jext.")
        if target is None and not own and form.linearize is None and not _jax.for_export(ctx):
            for name in sorted(called):
                check_ffi_handler(core, name, platform or _jax.module_platforms(ctx)[0])
    # A custom call (an FFI or a Pallas kernel) is opaque to the partitioner, which would
    # gather its operands: the sharding rule makes it splittable.  A raw rule may emit
    # one too, or plain operations the partitioner sees (and fuses): it is made a
    # partitioned call only when its primitive declares a sharding rule.
    opaque = closed is None and core.rules.sharding is not None
    if (
        not form.derived
        and _jax.partitioned_context(ctx)
        and (opaque or (closed is not None and _jax.has_custom_call(closed)))
    ):
        partitioned = _lower_partitioned(core, form, ctx, values)
        if partitioned is not None:
            return partitioned
    if closed is None:
        if not form.levels:
            return _emit_raw(entry, ctx, values, form)
        closed = _jax.trace_avals(form_function(core, form, entry, platform), avals)
    return _jax.lower_jaxpr(ctx, closed, *values)


def _traced_rule(
    core: Core, form: Form, entry: LoweringEntry, platform: str | None, avals: Sequence[Any]
) -> _jax.ClosedJaxpr:
    closed = _jax.trace_avals(form_function(core, form, entry, platform), avals)
    if _jax.hoist_traced_consts(closed) is not None:
        # A value of the traced function that defined the primitive, which XLA cannot
        # embed; a closure twin's rules see the values its reference closes over.
        label = "reference" if entry.rule is None else f"lowering rule {entry.label!r}"
        raise RuleError(
            f"the {label} of primitive {core.name!r} closes over a traced value (the "
            "primitive is defined inside jit, vmap or grad) that its reference does not "
            "use: a lowering rule can use only the traced values the reference closes "
            "over; use that value in the reference too, or pass it as an operand"
        )
    return closed


def _emit_raw(entry: LoweringEntry, ctx: Any, values: Sequence[Any], form: Form) -> list[Any]:
    rule = entry.rule
    assert rule is not None
    return list(rule.fn(ctx, *values, **rule.arity.select(form.params)))


def _lower_partitioned(
    core: Core, form: Form, ctx: Any, values: Sequence[Any]
) -> Sequence[Any] | None:
    """A custom call the partitioner cannot see into, made splittable by its sharding rule.

    The equation becomes a ``custom_partitioning`` call carrying the Shardy rule; each
    device then binds the same form on its shards (which lowers the kernel on the shard
    shapes: inside the per-device module this path is not taken again).  None when the
    equation has no rule that lets anything be split.
    """
    avals = _jax.avals_in(ctx)
    per_example = unbatched_avals(avals, form.levels)
    outs, _ = base_abstract_eval(core, form.plain, per_example)
    rule = equation_rule(
        core.name,
        core.rules.sharding,
        elementwise=core.rules.batching_kind == "elementwise",
        avals_in=per_example,
        avals_out=outs,
        levels=form.levels,
        in_tree=form.in_tree,
    )
    if rule is None or not rule.splittable:
        return None
    text, kept = rule.shardy()

    def per_shard(*shards: Any) -> list[Any]:
        return core.bind(_shard_form(form, [_jax.typeof(x) for x in shards]), *shards)

    call = _jax.custom_partitioned(
        functools.partial(core.bind, form), per_shard, text, kept, rule.choose
    )
    closed = _jax.trace_avals(lambda *args: list(call(*args)), avals)
    return _jax.lower_jaxpr(ctx, closed, *values)


def _shard_form(form: Form, avals: Sequence[Any]) -> Form:
    """``form`` for operands of ``avals`` (shards): each batch level's size read from them."""
    levels: list[Level] = []
    for k, (size, batched, _, name) in enumerate(form.levels):
        if True not in batched:  # only the results carry this level (a collective's)
            levels.append((size, batched, None, name))
            continue
        i = batched.index(True)
        axis = sum(1 for _, outer, _, _ in form.levels[:k] if outer[i])
        levels.append((int(avals[i].shape[axis]), batched, None, name))
    return Form(form.in_tree, form.params, tuple(levels), form.linearize)


def check_ffi_handler(core: Core, target: str, platform: str) -> None:
    """Raise LoweringError when no handler for ``target`` is registered on ``platform``
    (XLA would fail to compile the call with a message naming neither primitive nor plugin)."""
    _host.host().load_plugins()
    if (target, platform) in _host.FFI_TARGETS or _ffi_handler_known(target, platform):
        return
    raise LoweringError(
        f"primitive {core.name!r}: its {platform} rule calls the XLA FFI target {target!r}, "
        f"but no handler for it is registered on {platform}. The plugin providing the "
        "kernel registers it in its jext_register_ffi_targets hook "
        f"(registry.add({target!r}, handler, platform={platform!r})); run `jext list` to "
        "see whether that plugin is installed and loaded"
    )


def _ffi_handler_known(target: str, platform: str) -> bool:
    # A handler registered with jax.ffi.register_ffi_target directly, not through jext:
    # only compiling a call tells (XLA lists no typed FFI handlers).  Once per target
    # found; a missing one is probed again, as it may be registered later.
    if (target, platform) in _host.KNOWN_FFI_HANDLERS:
        return True
    try:
        _jax.compile_ffi_probe(target, platform)
    except Exception as err:  # XLA raises its runtime error type
        if "No FFI handler registered" in str(err):
            return False
    _host.KNOWN_FFI_HANDLERS.add((target, platform))
    return True


def form_function(
    core: Core, form: Form, entry: LoweringEntry, platform: str | None
) -> Callable[..., list[Any]]:
    """The flat traceable function the equation binding ``form`` computes with ``entry``."""
    levels = form.levels
    fn = _per_example_function(core, form.base, entry, platform)
    masks = [mask for _, mask, _, _ in levels]
    if not levels:
        return fn
    if entry.raw and not form.derived:
        # vmap of a raw rule would bind the batched primitive again: loop instead.
        return loop_over_levels(fn, levels, masks)
    return over_levels(fn, levels, masks)


def _per_example_function(
    core: Core, form: Form, entry: LoweringEntry, platform: str | None
) -> Callable[..., list[Any]]:
    plain = form.plain
    if form.chain:
        # Derivatives come from the reference on every platform, as the default JVP's do.

        def derivative(*args: Any) -> list[Any]:
            closed = chain_jaxpr(core, form, [_jax.typeof(a) for a in args])
            return _jax.eval_jaxpr(closed, *args)

        return derivative
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
        # The params of a call, defaults filled in, as the primitive passes them.
        return rule(*operands, params=core.signature.params(params))

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
        try:
            return list(_jax.run_eagerly(jitted, *args))
        except NEEDS_CONCRETE_VALUES:
            form = parse_form(bind_params, len(args))
            if form.levels or form.chain or form.linearize is not None:
                raise
            # A reference that needs concrete values runs op by op on them, as a
            # custom_jvp function does (this bind: an eager jvp with zero tangents).
            return core.run_reference(form, *args)
    form = parse_form(bind_params, len(args))
    if form.chain:  # a derivative: the reference's, compiled
        return _compiled(core, form)(*args)
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


def platform_labels(core: Core) -> dict[str, str]:
    """Each platform that has a lowering rule, and which rule (``"reference"`` or its name)."""
    out: dict[str, str] = {}
    for platform in _jax.PLATFORMS:
        entry = core.rules.lowering_for(platform)
        if entry is not None:
            out[platform] = entry.label
    return out


def lowering_info(core: Core, platform: str) -> LoweringInfo | None:
    """The rule ``platform`` lowers with (None: no rule), as ``Primitive.lowering_rule``."""
    rules = core.rules
    entry = rules.lowering_for(platform)
    if entry is None:
        return None
    fn = rule_as_function(core, entry)
    return LoweringInfo(platform, entry.label, entry.kind, fn, rules.batching_label(entry))
