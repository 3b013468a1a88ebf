"""Automatic differentiation: the JVP and transpose rules of every form of a primitive.

The JVP of the primitive itself is, in order of preference: the author's ``def_jvp``;
for a primitive with a transpose rule, the primitive applied to the tangents of its
linear operands (so ``grad`` and ``vjp`` run the transpose rule); otherwise the
reference linearized by JAX, split in a forward half (the primitive's ``jext_linearize``
form: results and residuals in one equation) and a linear half on the residuals, so the
forward computation runs once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal

import jax
import jax.numpy as jnp
from jax import tree_util

from jext import _jax
from jext._errors import RuleError, RuleTracerError, RuleTypeError, TransposeError
from jext.primitives._abstract import (
    abstract_eval,
    linearized,
    out_tree,
    rule_result_types,
    trace_reference,
)
from jext.primitives._batching import over_levels
from jext.primitives._closure import closed_over_error, closed_over_tangents
from jext.primitives._core import NEEDS_CONCRETE_VALUES, Core, Form, as_value, unbatched_avals
from jext.primitives._derivatives import chain_jvp, chain_transpose
from jext.primitives._links import jvp_tangents
from jext.primitives._markers import LinearOperand, SymbolicZero, is_zero_tangent
from jext.primitives._rules import Derivative, Rules

__all__ = [
    "Mode",
    "custom_jvp",
    "declared_derivatives",
    "jvp",
    "jvp_per_example",
    "linearize_jvp",
    "transpose",
]

Mode = Literal["jvp", "linearize", "vjp"]
"""What JAX differentiates for: ``jax.jvp`` (and ``jacfwd``), ``jax.linearize``, ``vjp``
(``grad``, ``jacrev``); the last two only where JAX says (``_jax.linearization_knows_mode``)."""

# --- forward mode ---------------------------------------------------------------------


def jvp(
    core: Core,
    primals: Sequence[Any],
    tangents: Sequence[Any],
    form: Form,
    *,
    mode: Mode = "jvp",
) -> tuple[list[Any], list[Any]]:
    """JAX's JVP rule for the equation binding ``form``; ``mode``: what JAX differentiates
    it for (``jax.jvp``, ``jax.linearize``, ``vjp``), which picks the author's rule."""
    if form.chain:
        return chain_jvp(core, primals, tangents, form)
    if form.linearize is not None:
        return _jvp_of_forward_half(core, primals, tangents, form)
    if not form.levels:
        return jvp_per_example(core, primals, tangents, form, mode=mode)
    # Batched: the per-example JVP, vectorized over the levels; zero tangents stay
    # symbolic inside, so the author's rule sees exactly what it would unbatched.
    levels = form.levels
    n = len(primals)
    per_example = unbatched_avals([_jax.typeof(p) for p in primals], levels)
    nonzero = [i for i, t in enumerate(tangents) if not _jax.is_symbolic_zero(t)]
    zero_outs: list[bool] = []

    def one(*xs: Any) -> list[Any]:
        given = dict(zip(nonzero, xs[n:], strict=True))
        tans = [given[i] if i in given else _jax.make_zero(per_example[i]) for i in range(n)]
        outs, touts = jvp_per_example(core, xs[:n], tans, form.base, mode=mode)
        zero_outs[:] = [_jax.is_symbolic_zero(t) for t in touts]
        return [*outs, *(t for t in touts if not _jax.is_symbolic_zero(t))]

    masks = [(*mask, *(mask[i] for i in nonzero)) for _, mask, _, _ in levels]
    try:
        results = over_levels(one, levels, masks)(*primals, *(tangents[i] for i in nonzero))
    except jax.errors.UnexpectedTracerError as err:
        if not declared_derivatives(core.rules):
            raise
        raise RuleTracerError(
            f"primitive {core.name!r}: its derivative rule uses a value traced by an "
            "enclosing vmap that is not one of its operands (a Python closure of the rule; "
            "the reference's closures become operands, a rule's cannot); pass that value "
            "as an operand"
        ) from err
    n_out = len(zero_outs)
    outs, given_touts = results[:n_out], iter(results[n_out:])
    touts = [
        _jax.make_zero(_jax.typeof(o)) if z else next(given_touts)
        for o, z in zip(outs, zero_outs, strict=True)
    ]
    return outs, touts


def jvp_per_example(
    core: Core,
    primals: Sequence[Any],
    tangents: Sequence[Any],
    form: Form,
    *,
    mode: Mode = "jvp",
) -> tuple[list[Any], list[Any]]:
    """The JVP of one example, from the author's rule for ``mode``: the declared derivative
    kind ranked first for it (``Derivative.rank``; ``jext.primitives.rules.PREFERENCE``),
    as a hijax ``VJPHiPrimitive`` runs each mode's own rule."""
    rules = core.rules
    if rules.nondifferentiable_in:
        _refuse_tangents_in(core, rules.nondifferentiable_in, tangents, form)
    declared = declared_derivatives(rules)
    if declared and core.leading_hidden and closed_over_tangents(tangents, form.in_tree):
        # An author's derivative rule cannot see the tangent of a value its reference
        # closed over (a closure twin's hidden operand).
        raise closed_over_error(core.name, "is being differentiated")
    if declared:
        return min(declared, key=lambda d: d.rank[mode]).jvp(core, primals, tangents, form)
    if rules.transpose is not None:
        return _linear_jvp(core, primals, tangents, form)
    if rules.batching_kind == "custom":  # the derivative of the batching rule under vmap
        return chain_jvp(core, primals, tangents, form)
    avals = [_jax.typeof(p) for p in primals]
    active = tuple(
        not _jax.is_symbolic_zero(t) and _jax.tangent_dtype(a.dtype) != _jax.FLOAT0
        for t, a in zip(tangents, avals, strict=True)
    )
    if not any(active):
        outs = core.bind(form, *primals)
        return outs, [_jax.make_zero(_jax.typeof(o)) for o in outs]
    forward_form = Form(form.in_tree, form.params, (), active)
    try:
        halves = linearized(core, forward_form, avals)
    except NEEDS_CONCRETE_VALUES:
        if not all(_jax.is_concrete(p) for p in primals):
            raise
        # An eager jvp or grad of a reference that needs concrete values: its JVP op by
        # op on them, as JAX differentiates the same code inline.
        zeros = [_jax.instantiate_zeros(t) for t in tangents]
        outs, touts = jax.jvp(
            functools.partial(core.run_reference, form), tuple(primals), tuple(zeros)
        )
        return list(outs), list(touts)
    results = core.bind(forward_form, *primals)
    n_out = len(results) - halves.n_residuals
    outs, residuals = results[:n_out], results[n_out:]
    given = [t for t, a in zip(tangents, active, strict=True) if a]
    return outs, _jax.eval_jaxpr(halves.linear, *residuals, *given)


def linearize_jvp(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form
) -> tuple[list[Any], list[Any]]:
    """The JVP from ``def_linearize``: ``lin`` once on the primals (results and residuals),
    ``linearized`` on the residuals and the tangents; JAX's partial evaluation keeps the
    residuals for the linear part instead of recomputing them."""
    rules = core.rules
    assert rules.lin is not None and rules.linearized is not None
    result = rules.lin(*tree_util.tree_unflatten(form.in_tree, primals), params=form.params)
    core.check_pair("linearize (lin)", result, "(outputs, residuals)")
    out_avals, tree = rule_result_types(core, form, primals, result[0])
    outs = [
        as_value(o, a.dtype)
        for o, a in zip(core.flatten_results("lin", result[0], tree), out_avals, strict=True)
    ]
    core.check_outputs("linearize rule (lin)", outs, out_avals)
    tans = tree_util.tree_unflatten(form.in_tree, [_jax.instantiate_zeros(t) for t in tangents])
    touts = rules.linearized(result[1], *tans, params=form.params)
    flat = core.flatten_results("linearized", touts, tree, none_ok=True)
    return outs, [
        _check_tangent(core, i, t, aval)
        for i, (t, aval) in enumerate(zip(flat, out_avals, strict=True))
    ]


def jvp_is_the_references(rules: Rules) -> bool:
    """Whether the primitive's JVP is JAX's JVP of its reference (linearized), as
    :func:`jvp_per_example` derives it where the author declared no derivative rule, no
    transpose rule (a linear primitive's JVP is itself) and no batching rule (whose
    derivative it is under ``vmap``)."""
    return (
        not declared_derivatives(rules)
        and rules.transpose is None
        and rules.batching_kind != "custom"
    )


def declared_derivatives(rules: Rules) -> list[Derivative]:
    """The derivative rule kinds (``RuleKind.derivative``) the author declared."""
    return [
        k.derivative
        for k in rules.kinds.values()
        if k.derivative is not None and k.derivative.declared(rules)
    ]


def _refuse_tangents_in(
    core: Core, operands: tuple[int, ...], tangents: Sequence[Any], form: Form
) -> None:
    """RuleError if a tangent of an operand declared without a derivative is not a symbolic
    zero (integer operands' float0 tangents carry nothing)."""
    leaves_of = tree_util.tree_unflatten(form.in_tree, range(len(tangents)))
    for k in operands:
        if k >= len(leaves_of):  # an optional or variadic operand not given
            continue
        for i in tree_util.tree_leaves(leaves_of[k]):
            t = tangents[i]
            if _jax.is_symbolic_zero(t) or _jax.typeof(t).dtype == _jax.FLOAT0:
                continue
            names = core.operand_names
            which = repr(names[k]) if k < len(names) else str(k - core.leading_hidden)
            raise RuleError(
                f"primitive {core.name!r} is not differentiable in operand {which} "
                "(def_nondifferentiable); stop its gradient (jax.lax.stop_gradient) or "
                "differentiate in the other operands"
            )


def custom_jvp(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form
) -> tuple[list[Any], list[Any]]:
    rules = core.rules
    assert rules.jvp is not None
    if rules.jvp_symbolic_zeros:
        tans = [SymbolicZero(t.aval) if _jax.is_symbolic_zero(t) else t for t in tangents]
    else:
        tans = [_jax.instantiate_zeros(t) for t in tangents]
    result = rules.jvp(
        tree_util.tree_unflatten(form.in_tree, primals),
        tree_util.tree_unflatten(form.in_tree, tans),
        params=form.params,
    )
    core.check_pair("jvp", result, "(primals_out, tangents_out)")
    out_avals, tree = rule_result_types(core, form, primals, result[0])
    primals_out = [
        as_value(p, aval.dtype)
        for p, aval in zip(core.flatten_results("jvp", result[0], tree), out_avals, strict=True)
    ]
    tangents_out = core.flatten_results("jvp", result[1], tree, none_ok=True)
    for i, (p, aval) in enumerate(zip(primals_out, out_avals, strict=True)):
        if tuple(p.shape) != tuple(aval.shape) or p.dtype != aval.dtype:
            raise RuleTypeError(
                f"jvp rule of primitive {core.name!r}: primal result {i} is "
                f"{p.dtype}{list(p.shape)}, but abstract evaluation gives {_jax.aval_str(aval)}"
            )
    return primals_out, [
        _check_tangent(core, i, t, aval)
        for i, (t, aval) in enumerate(zip(tangents_out, out_avals, strict=True))
    ]


def _check_tangent(core: Core, i: int, t: Any, aval: Any) -> Any:
    if t is None or is_zero_tangent(t):
        return _jax.make_zero(aval)
    if _jax.is_symbolic_zero(t):
        return t
    t = as_value(t, _jax.tangent_dtype(aval.dtype))
    if not _is_tangent_of(t, aval):
        raise RuleTypeError(
            f"jvp rule of primitive {core.name!r}: tangent result {i} is "
            f"{t.dtype}{list(t.shape)}, but the primal result is {_jax.aval_str(aval)} "
            f"(its tangent must be {_jax.tangent_dtype(aval.dtype)}{list(aval.shape)})"
        )
    return t


def _is_tangent_of(t: Any, aval: Any) -> bool:
    """Whether ``t`` (a tangent or cotangent) has ``aval``'s shape and its tangent dtype
    (``float0`` for integers and keys)."""
    return tuple(t.shape) == tuple(aval.shape) and t.dtype == _jax.tangent_dtype(aval.dtype)


def _linear_jvp(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form
) -> tuple[list[Any], list[Any]]:
    """The JVP of a primitive linear in its ``linear_in`` operands (jointly).

    The tangent in those is the primitive itself applied to their tangents; the tangent
    in any other operand comes from the reference's JVP.
    """
    outs = core.bind(form, *primals)
    linear = _linear_leaves(core, form)
    tangent_outs: list[Any] | None = None
    if any(linear[i] and not _jax.is_symbolic_zero(t) for i, t in enumerate(tangents)):
        args = [
            _jax.instantiate_zeros(t) if linear[i] else p
            for i, (p, t) in enumerate(zip(primals, tangents, strict=True))
        ]
        tangent_outs = core.bind(form, *args)
    others = [
        i
        for i, t in enumerate(tangents)
        if not linear[i]
        and not _jax.is_symbolic_zero(t)
        and _jax.tangent_dtype(_jax.typeof(primals[i]).dtype) != _jax.FLOAT0
    ]
    if others:
        closed, _ = trace_reference(core, form.plain, [_jax.typeof(p) for p in primals])
        in_others = _in_some(_jax.jaxpr_as_fun(closed), primals, others)
        # The results came from the equation above: its effects do not run again here.
        extra = jvp_tangents(
            in_others,
            [primals[i] for i in others],
            [_jax.instantiate_zeros(tangents[i]) for i in others],
        )
        tangent_outs = (
            list(extra)
            if tangent_outs is None
            else [a + b for a, b in zip(tangent_outs, extra, strict=True)]
        )
    if tangent_outs is None:
        return outs, [_jax.make_zero(_jax.typeof(o)) for o in outs]
    return outs, tangent_outs


def _in_some(
    fn: Callable[..., Sequence[Any]], args: Sequence[Any], indices: Sequence[int]
) -> Callable[..., list[Any]]:
    """``fn`` as a function of ``args[i]`` for ``i`` in ``indices``, the others fixed."""

    def of_some(*xs: Any) -> list[Any]:
        full = list(args)
        for i, x in zip(indices, xs, strict=True):
            full[i] = x
        return list(fn(*full))

    return of_some


def _linear_leaves(core: Core, form: Form) -> list[bool]:
    """For each operand leaf, whether the primitive is linear in it."""
    linear_in = core.rules.linear_in
    subtrees = form.in_tree.children()
    flags: list[bool] = []
    for i, sub in enumerate(subtrees):
        hidden = core.leading_hidden and i == 0
        flags.extend([not hidden and (linear_in is None or i in linear_in)] * sub.num_leaves)
    return flags


def _jvp_of_forward_half(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form
) -> tuple[list[Any], list[Any]]:
    # Higher-order derivatives of the default JVP: the forward half keeps its equation
    # (so platform rules still compute its results); its tangent is the JVP of its jaxpr.
    per_example = unbatched_avals([_jax.typeof(p) for p in primals], form.levels)
    forward = linearized(core, form.base, per_example).forward
    masks = [mask for _, mask, _, _ in form.levels]
    fn = over_levels(_jax.jaxpr_as_fun(forward), form.levels, masks)
    tans = tuple(_jax.instantiate_zeros(t) for t in tangents)
    if _jax.side_effects(forward):
        # The JVP computes the results too: binding the equation as well would run the
        # reference's effects (a jax.debug.print) twice, where JAX runs them once.
        results, touts = jax.jvp(fn, tuple(primals), tans)
        return list(results), list(touts)
    outs = core.bind(form, *primals)
    _, touts = jax.jvp(fn, tuple(primals), tans)
    return outs, list(touts)


# --- transposition --------------------------------------------------------------------


def transpose(core: Core, cts: Sequence[Any], args: Sequence[Any], form: Form) -> list[Any]:
    """JAX's transpose rule for the equation binding ``form``."""
    if form.chain:
        out_avals = abstract_eval(core, [_aval(a) for a in args], form)
        return chain_transpose(core, cts, args, out_avals, form)
    if form.linearize is not None:
        raise RuleError(
            f"primitive {core.name!r}: the forward half of its JVP was transposed; this is a "
            "bug in jext, please report it"
        )
    if all(_jax.is_symbolic_zero(ct) for ct in cts):
        return [None] * len(args)
    if not form.levels:
        return _transpose_per_example(core, cts, args, form)
    levels = form.levels
    avals = [_aval(a) for a in args]
    per_example = unbatched_avals(avals, levels)
    linear = [_jax.is_undefined_primal(a) for a in args]
    values = [i for i, a in enumerate(args) if not linear[i]]
    cts = [_jax.instantiate_zeros(ct) for ct in cts]
    solved: list[bool] = []

    def one(*xs: Any) -> list[Any]:
        given = dict(zip(values, xs[len(cts) :], strict=True))
        example_args = [
            given[i] if i in given else _jax.undefined_primal(per_example[i])
            for i in range(len(args))
        ]
        result = _transpose_per_example(core, xs[: len(cts)], example_args, form.base)
        solved[:] = [ct is not None for ct in result]
        return [ct for ct in result if ct is not None]

    masks = [(*(True for _ in cts), *(mask[i] for i in values)) for _, mask, _, _ in levels]
    results = iter(over_levels(one, levels, masks)(*cts, *(args[i] for i in values)))
    out: list[Any] = []
    for i, has in enumerate(solved):
        if not has:
            out.append(None)
            continue
        ct = next(results)
        # A level that does not batch this operand: its cotangent sums over that axis.
        unbatched = tuple(k for k, (_, mask, _, _) in enumerate(levels) if not mask[i])
        out.append(jnp.sum(ct, axis=unbatched) if unbatched else ct)
    return out


def _aval(x: Any) -> Any:
    return _jax.undefined_aval(x) if _jax.is_undefined_primal(x) else _jax.typeof(x)


def _transpose_per_example(
    core: Core, cts: Sequence[Any], args: Sequence[Any], form: Form
) -> list[Any]:
    rule = core.rules.transpose
    if rule is None:
        return _transpose_reference(core, cts, args, form)
    avals = [_aval(a) for a in args]
    tree = out_tree(core, form, avals)
    out_avals = abstract_eval(core, avals, form)
    cotangents = tree_util.tree_unflatten(
        tree,
        [
            _jax.instantiate_zeros(_jax.make_zero(a) if ct is None else ct)
            for ct, a in zip(cts, out_avals, strict=True)
        ],
    )
    operands = tree_util.tree_unflatten(
        form.in_tree,
        [
            LinearOperand(aval) if _jax.is_undefined_primal(x) else x
            for x, aval in zip(args, avals, strict=True)
        ],
    )
    result = rule(cotangents, *operands, params=form.params)
    flat = core.flatten_cotangents("transpose", result, form.in_tree)
    return [
        _check_cotangent(core, i, ct, x, aval)
        for i, (ct, x, aval) in enumerate(zip(flat, args, avals, strict=True))
    ]


def _transpose_reference(
    core: Core, cts: Sequence[Any], args: Sequence[Any], form: Form
) -> list[Any]:
    """The transpose of the reference in its linear operands, as JAX transposes the body of
    a ``custom_jvp`` function whose JVP rule applies it to tangents."""
    avals = [_aval(a) for a in args]
    linear = [i for i, a in enumerate(args) if _jax.is_undefined_primal(a)]
    closed, _ = trace_reference(core, form.plain, avals)
    in_linear = _in_some(_jax.jaxpr_as_fun(closed), args, linear)
    out_avals = closed.out_avals
    cotangents = [
        _jax.instantiate_zeros(_jax.make_zero(a) if ct is None else ct)
        for ct, a in zip(cts, out_avals, strict=True)
    ]
    shapes = [_jax.shape_dtype_struct(avals[i].shape, avals[i].dtype) for i in linear]
    try:
        solved = jax.linear_transpose(in_linear, *shapes)(cotangents)
    except (NotImplementedError, AssertionError):
        raise TransposeError(
            f"primitive {core.name!r} has no transpose rule, and its reference is not linear "
            f"in operand leaves {linear}, but it was transposed (by grad, vjp or "
            "linear_transpose through a JVP that applies it to tangents); define one with "
            f"@{core.short_name}.def_transpose"
        ) from None
    out: list[Any] = [None] * len(args)
    for i, ct in zip(linear, solved, strict=True):
        out[i] = ct
    return out


def _check_cotangent(core: Core, i: int, ct: Any, x: Any, aval: Any) -> Any:
    if ct is None or not _jax.is_undefined_primal(x) or _jax.is_symbolic_zero(ct):
        return None
    ct = as_value(ct, _jax.tangent_dtype(aval.dtype))
    if not _is_tangent_of(ct, aval):
        raise RuleError(
            f"transpose rule of primitive {core.name!r}: cotangent for operand leaf {i} "
            f"is {ct.dtype}{list(ct.shape)}, but the operand is {_jax.aval_str(aval)}"
        )
    return ct
