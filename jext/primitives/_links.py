"""The links of a derivative chain (see ``_derivatives.py``), as functions of functions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from jext import _jax
from jext._errors import TransposeError
from jext.primitives._core import Link

__all__ = ["apply_chain", "jvp_tangents"]

Flat = Callable[..., list[Any]]


def _zero_tangent(x: Any) -> Any:
    return _jax.instantiate_zeros(_jax.make_zero(_jax.typeof(x)))


def jvp_tangents(fn: Flat, primals: Sequence[Any], tangents: Sequence[Any]) -> list[Any]:
    """The tangents of ``fn``'s results at ``primals``, without the effects of computing
    its results: the caller has those from an equation that ran them once, as JAX does.
    """
    n = len(primals)

    def tangents_of(*xs: Any) -> list[Any]:
        _, touts = jax.jvp(lambda *p: list(fn(*p)), tuple(xs[:n]), tuple(xs[n:]))
        return list(touts)

    args = [*primals, *tangents]
    closed = _jax.trace_avals(tangents_of, [_jax.typeof(x) for x in args])
    return _jax.eval_jaxpr(_jax.drop_unused_effects(closed), *args)


def _jvp_link(prev: Flat, active: Sequence[bool]) -> Flat:
    n = len(active)

    def jvp(*xs: Any) -> list[Any]:
        primals, given = xs[:n], iter(xs[n:])
        tangents = [
            next(given) if a else _zero_tangent(p) for p, a in zip(primals, active, strict=True)
        ]
        return jvp_tangents(prev, primals, tangents)

    return jvp


def _vjp_link(prev: Flat, linear: Sequence[bool], avals: Sequence[Any], name: str) -> Flat:
    k = len(linear) - sum(linear)

    def vjp(*xs: Any) -> list[Any]:
        fixed, cts = xs[:k], xs[k:]

        def in_linear(*lin: Any) -> list[Any]:
            f, g = iter(fixed), iter(lin)
            return list(prev(*(next(g) if is_lin else next(f) for is_lin in linear)))

        shapes = [_jax.shape_dtype_struct(a.shape, a.dtype) for a in avals]
        try:
            return list(jax.linear_transpose(in_linear, *shapes)(list(cts)))
        except (NotImplementedError, AssertionError):
            raise TransposeError(
                f"primitive {name!r}: a derivative of it was transposed in operands it is not "
                "linear in; this is a bug in jext, please report it"
            ) from None

    return vjp


def apply_chain(
    base: Flat, chain: Sequence[Link], name: str, batch_size: int | None = None
) -> Flat:
    """``base`` with the chain's links applied, innermost first.

    With ``batch_size``, ``base`` is batched: every operand and result carries a leading
    batch axis of that size, and so do the operands a ``vjp`` link solves for.
    """
    fn = base
    for link in chain:
        if link[0] == "jvp":
            fn = _jvp_link(fn, link[1])
        else:
            avals = link[2]
            if batch_size is not None:
                avals = [_jax.add_batch_axis(a, batch_size) for a in avals]
            fn = _vjp_link(fn, link[1], avals, name)
    return fn
