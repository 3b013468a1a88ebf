"""``def_vjp``: a primitive differentiated by a forward and a backward rule, as ``custom_vjp``.

The JVP of such a primitive runs the author's ``fwd`` (results and residuals) and binds
``jext_vjp_lin``, one JAX primitive shared by every jext primitive with a VJP rule: a
linear map from the operands' tangents to the results' tangents, whose transpose is the
author's ``bwd`` on the residuals.  Reverse mode (``grad``, ``vjp``, ``jacrev``) only ever
transposes it; evaluating it is forward mode, which a VJP rule cannot give, so it raises
naming the primitive, as ``custom_vjp`` raises for ``jvp``.  Under ``vmap`` its batching
rule vectorizes ``bwd``; ``fwd`` and ``bwd`` run inline, so jext primitives they call are
batched by their own rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, final

import jax
import jax.numpy as jnp
from jax import tree_util

from jext import _jax
from jext._errors import RuleError, RuleTypeError, RuleValueError
from jext.primitives._abstract import rule_result_types
from jext.primitives._core import Core, Form, as_value
from jext.primitives._markers import GradAccum, NullAccum, SymbolicZero, is_zero_tangent
from jext.primitives._rules import Rule

__all__ = ["vjp_jvp"]


@final
class _Backward:
    """The ``bwd`` of one equation: the rule, its params and the trees it speaks in."""

    __slots__ = (
        "__weakref__",
        "core",
        "form",
        "out_avals",
        "out_tree",
        "res_tree",
        "tangent_avals",
    )

    def __init__(
        self,
        core: Core,
        form: Form,
        res_tree: Any,
        out_tree: Any,
        out_avals: Sequence[Any],
        tangent_avals: Sequence[Any],
    ) -> None:
        self.core = core
        self.form = form
        self.res_tree = res_tree
        self.out_tree = out_tree
        self.out_avals = tuple(out_avals)
        self.tangent_avals = tuple(tangent_avals)

    def __repr__(self) -> str:
        return f"<bwd of {self.core.name}>"

    def __call__(
        self, residuals: Sequence[Any], cts: Sequence[Any], needed: Sequence[bool]
    ) -> list[Any]:
        """The cotangents of the operands' leaves (None for a zero one), from the results'
        (None for a zero one: a :class:`SymbolicZero` for a rule declared with
        ``symbolic_zeros=True``, zeros for the others); ``needed``: which operand leaves
        are solved for (the others get a :class:`NullAccum` in an accumulating rule)."""
        core, form = self.core, self.form
        bwd = core.rules.vjp_bwd
        assert bwd is not None
        res = tree_util.tree_unflatten(self.res_tree, list(residuals))
        symbolic = core.rules.vjp_symbolic_zeros
        given = [
            ct
            if ct is not None
            else SymbolicZero(_tangent_aval(a))
            if symbolic
            else _jax.instantiate_zeros(_jax.make_zero(_tangent_aval(a)))
            for ct, a in zip(cts, self.out_avals, strict=True)
        ]
        cotangents = tree_util.tree_unflatten(self.out_tree, given)
        if core.rules.vjp_accumulate:
            flat = self._accumulated(res, cotangents, needed)
        else:
            result = bwd(res, cotangents, params=form.params)
            flat = core.flatten_cotangents("VJP (bwd)", result, form.in_tree)
        return [
            _checked_cotangent(core, i, ct, aval)
            for i, (ct, aval) in enumerate(zip(flat, self.tangent_avals, strict=True))
        ]

    def _accumulated(self, res: Any, cotangents: Any, needed: Sequence[bool]) -> list[Any]:
        """Run an accumulating ``bwd``: what it accumulated for each operand leaf."""
        core, form = self.core, self.form
        bwd = core.rules.vjp_bwd
        assert bwd is not None
        accums: list[GradAccum | NullAccum] = [
            GradAccum(a) if need else NullAccum(a)
            for a, need in zip(self.tangent_avals, needed, strict=True)
        ]
        operands = tree_util.tree_unflatten(form.in_tree, accums)
        result = bwd(res, cotangents, *operands, params=form.params)
        if result is not None:
            raise RuleTypeError(
                f"VJP rule (bwd) of primitive {core.name!r} was declared accumulating "
                "(def_vjp(..., accumulate=True)): it must call acc.accum(cotangent) on its "
                f"accumulators and return None, got {type(result).__name__}"
            )
        return [a.total if isinstance(a, GradAccum) else None for a in accums]


def _checked_cotangent(core: Core, i: int, ct: Any, aval: Any) -> Any:
    if is_zero_tangent(ct) and (
        tuple(ct.shape) != tuple(aval.shape) or ct.dtype != _jax.tangent_dtype(aval.dtype)
    ):
        raise RuleValueError(
            f"VJP rule (bwd) of primitive {core.name!r}: cotangent for operand leaf {i} is a "
            f"SymbolicZero of {ct.dtype}{list(ct.shape)}, but the operand's tangent is "
            f"{_jax.aval_str(aval)}. Consider just returning a None here instead of a "
            "SymbolicZero."
        )
    if ct is None or _jax.is_symbolic_zero(ct) or is_zero_tangent(ct) or aval.dtype == _jax.FLOAT0:
        # An integer operand has no cotangent: whatever bwd gives for it is dropped, as
        # custom_vjp turns it into float0 zeros.
        return None
    ct = as_value(ct, aval.dtype)
    if tuple(ct.shape) != tuple(aval.shape) or ct.dtype != aval.dtype:
        raise RuleValueError(
            f"VJP rule (bwd) of primitive {core.name!r}: cotangent for operand leaf {i} is "
            f"{ct.dtype}{list(ct.shape)}, but the operand's tangent is {_jax.aval_str(aval)}"
        )
    return ct


# --- the linear map ``jext_vjp_lin`` ----------------------------------------------------

_LIN = _jax.make_primitive("jext_vjp_lin")


def _lin_abstract_eval(*avals: Any, backward: Any, n_res: int) -> list[Any]:
    return [_tangent_aval(a) for a in backward.out_avals]


def _tangent_aval(aval: Any) -> Any:
    return aval.to_tangent_aval()


def _forward_mode_error(backward: Any) -> RuleError:
    name = backward.core.name
    return RuleTypeError(
        f"primitive {name!r} has a VJP rule (def_vjp) and no JVP rule: forward-mode "
        "differentiation (jax.jvp, jacfwd, linearize evaluated forwards) is not available, "
        f"as with jax.custom_vjp; define @{backward.core.short_name}.def_jvp for it"
    )


def _lin_impl(*args: Any, backward: Any, n_res: int) -> list[Any]:
    raise _forward_mode_error(backward)


def _lin_lowering(ctx: Any, *values: Any, backward: Any, n_res: int) -> list[Any]:
    raise _forward_mode_error(backward)


def _lin_transpose(cts: Sequence[Any], *args: Any, backward: Any, n_res: int) -> list[Any]:
    residuals = args[:n_res]
    cotangents = [None if ct is None or _jax.is_symbolic_zero(ct) else ct for ct in cts]
    needed = [_jax.is_undefined_primal(t) for t in args[n_res:]]
    solved: list[Any] = backward(residuals, cotangents, needed)
    return [None] * n_res + solved


def _lin_batching(
    axis_name: Any,
    size: int,
    args: Sequence[Any],
    dims: Sequence[int | None],
    *,
    backward: Any,
    n_res: int,
) -> tuple[list[Any], list[int | None]]:
    if all(d is None for d in dims):
        outs = _jax.bind(_LIN, *args, backward=backward, n_res=n_res)
        return outs, [None] * len(outs)
    res_axes = dims[:n_res]
    residuals = [
        a if d is None else jnp.moveaxis(a, d, 0)
        for a, d in zip(args[:n_res], res_axes, strict=True)
    ]
    # Every tangent batched (broadcast where it is not): the cotangents bwd gives then have
    # the batch axis too, one per example.
    tangents = [
        jnp.broadcast_to(a, (size, *a.shape)) if d is None else jnp.moveaxis(a, d, 0)
        for a, d in zip(args[n_res:], dims[n_res:], strict=True)
    ]
    axes = [None if d is None else 0 for d in res_axes]
    batched = _BatchedBackward(backward, axes, size, axis_name)
    outs = _jax.bind(_LIN, *residuals, *tangents, backward=batched, n_res=n_res)
    return outs, [0] * len(outs)


@final
class _BatchedBackward:
    """``bwd`` vectorized over one ``vmap`` level: the residuals' batch axes as given,
    cotangents and the tangents' cotangents along axis 0."""

    __slots__ = ("__weakref__", "axis_name", "inner", "res_axes", "size")

    def __init__(
        self, inner: Any, res_axes: Sequence[int | None], size: int, axis_name: Any
    ) -> None:
        self.inner = inner
        self.res_axes = tuple(res_axes)
        self.size = size
        self.axis_name = axis_name

    @property
    def core(self) -> Core:
        core: Core = self.inner.core
        return core

    @property
    def out_avals(self) -> tuple[Any, ...]:
        return tuple(_jax.add_batch_axis(a, self.size) for a in self.inner.out_avals)

    def __repr__(self) -> str:
        return f"<bwd of {self.core.name}, batched>"

    def __call__(
        self, residuals: Sequence[Any], cts: Sequence[Any], needed: Sequence[bool]
    ) -> list[Any]:
        solved: list[bool] = []
        zero = [ct is None for ct in cts]  # zero cotangents stay zero (symbolic) inside

        def one(res: Sequence[Any], ct: Sequence[Any]) -> list[Any]:
            it = iter(ct)
            out = self.inner(res, [None if z else next(it) for z in zero], needed)
            solved[:] = [c is not None for c in out]
            return [c for c in out if c is not None]

        nonzero = [ct for ct in cts if ct is not None]
        given = jax.vmap(
            one,
            in_axes=(list(self.res_axes), [0] * len(nonzero)),
            axis_size=self.size,
            axis_name=self.axis_name,
        )(list(residuals), nonzero)
        it = iter(given)
        return [next(it) if s else None for s in solved]


_jax.set_abstract_eval(_LIN, _lin_abstract_eval)
_jax.set_impl(_LIN, _lin_impl)
_jax.register_transpose(_LIN, _lin_transpose)
_jax.register_batching(_LIN, _lin_batching)
_jax.register_lowering(_LIN, _lin_lowering, None)


# --- the JVP of a primitive with a VJP rule ------------------------------------------------


def vjp_jvp(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form, fwd: Rule
) -> tuple[list[Any], list[Any]]:
    """The results from ``fwd``, their tangents from ``jext_vjp_lin`` on its residuals."""
    avals = [_jax.typeof(p) for p in primals]
    operands: Sequence[Any] = primals
    if core.rules.vjp_symbolic_zeros:  # custom_vjp's: which operands are differentiated
        operands = [
            _jax.CustomVJPPrimal(p, not _jax.is_symbolic_zero(t))
            for p, t in zip(primals, tangents, strict=True)
        ]
    result = fwd(*tree_util.tree_unflatten(form.in_tree, operands), params=form.params)
    core.check_pair("VJP rule (fwd)", result, "(outputs, residuals)")
    out_avals, tree = rule_result_types(core, form, primals, result[0])
    outs = [
        as_value(o.value if isinstance(o, _jax.CustomVJPPrimal) else o, a.dtype)
        for o, a in zip(core.flatten_results("fwd", result[0], tree), out_avals, strict=True)
    ]
    core.check_outputs("VJP rule (fwd)", outs, out_avals)
    residuals, res_tree = tree_util.tree_flatten(result[1])
    residuals = [as_value(r) for r in residuals]
    tangent_avals = [_tangent_aval(a) for a in avals]
    backward = _Backward(core, form, res_tree, tree, out_avals, tangent_avals)
    given = [_jax.instantiate_zeros(t) for t in tangents]
    touts = _jax.bind(_LIN, *residuals, *given, backward=backward, n_res=len(residuals))
    return outs, touts
