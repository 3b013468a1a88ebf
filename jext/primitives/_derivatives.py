"""Derivatives of a primitive with a custom batching rule, as ``custom_vmap`` defines them.

Under ``vmap`` such a primitive is its batching rule, so the derivative of the batched
primitive must be the derivative of the batching rule: ``jvp(vmap(f))``, ``vmap(jvp(f))``,
``grad(vmap(f))`` and ``vmap(grad(f))`` all differentiate the rule.  A JVP computed before
the ``vmap`` is seen (``vmap(grad(f))`` traces ``grad`` first) therefore cannot be fixed
code: it is an equation of the primitive itself, a *derivative form* whose param
``jext_derivative`` is a chain of links (``("jvp", active)``, ``("vjp", linear, avals)``).
Unbatched, a chain is applied to the reference; batched, to the batching rule.  The JVP of
a derivative form appends a ``jvp`` link, its transpose a ``vjp`` link, so derivatives of
any order stay consistent with the rule.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np

from jext import _jax
from jext.primitives._core import Core, Form, as_value
from jext.primitives._links import apply_chain, jvp_tangents

__all__ = ["batch_chain", "chain_jvp", "chain_transpose"]


class _Active(threading.local):
    """The primitives whose batched JVP link is being traced on this thread."""

    def __init__(self) -> None:
        self.names: set[str] = set()


_IN_JVP_LINK: Final = _Active()


def chain_jvp(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form
) -> tuple[list[Any], list[Any]]:
    """The JVP of the primitive or of a derivative form: the form, and its ``jvp`` link."""
    outs = core.bind(form, *primals)
    active = tuple(
        not _jax.is_symbolic_zero(t) and _jax.tangent_dtype(_jax.typeof(p).dtype) != _jax.FLOAT0
        for p, t in zip(primals, tangents, strict=True)
    )
    if not any(active):
        return outs, [_jax.make_zero(_jax.typeof(o)) for o in outs]
    given = [_jax.instantiate_zeros(t) for t, a in zip(tangents, active, strict=True) if a]
    return outs, core.bind(form.with_link(("jvp", active)), *primals, *given)


def chain_transpose(
    core: Core, cts: Sequence[Any], args: Sequence[Any], out_avals: Sequence[Any], form: Form
) -> list[Any]:
    """The transpose of a derivative form in its undefined operands: a ``vjp`` link."""
    linear = tuple(_jax.is_undefined_primal(a) for a in args)
    fixed = [a for a, on in zip(args, linear, strict=True) if not on]
    avals = tuple(_jax.undefined_aval(a) for a, on in zip(args, linear, strict=True) if on)
    cotangents = [
        _jax.instantiate_zeros(_jax.make_zero(a) if ct is None else ct)
        for ct, a in zip(cts, out_avals, strict=True)
    ]
    solved = iter(core.bind(form.with_link(("vjp", linear, avals)), *fixed, *cotangents))
    return [next(solved) if on else None for on in linear]


def batch_chain(
    core: Core,
    rule: Callable[[Sequence[Any], Sequence[int | None]], tuple[list[Any], list[int | None]]],
    args: Sequence[Any],
    dims: Sequence[int | None],
    size: int,
    form: Form,
) -> tuple[list[Any], list[int | None]]:
    """A derivative form under ``vmap``: its chain applied to the batching ``rule``.

    ``rule(base operands, their dims) -> (results, out dims)`` is the author's rule on flat
    operands.  A JVP whose batched operands are all batched in both primal and tangent, or
    all in only one of them, is ``custom_vmap``'s (:func:`_batch_jvp_link`).  Otherwise
    every operand is made batched (broadcast along the batch where it is not), so the
    chain differentiates the rule one example at a time: a cotangent of an operand shared
    by the batch is then one per example, as ``vmap`` of a VJP gives, not their sum.
    """
    n = form.in_tree.num_leaves
    if len(form.chain) == 1 and form.chain[0][0] == "jvp" and core.name not in _IN_JVP_LINK.names:
        # A rule that calls the primitive itself (on its batch, or unbatched) meets this
        # again while differentiated: there the operands are broadcast, which ends.
        _IN_JVP_LINK.names.add(core.name)
        try:
            done = _batch_jvp_link(rule, args, dims, size, n, form.chain[0][1])
        finally:
            _IN_JVP_LINK.names.discard(core.name)
        if done is not None:
            return done

    def canonical(x: Any, d: int | None) -> Any:
        if d is None:
            return jnp.broadcast_to(x, (size, *np.shape(x)))
        return jnp.moveaxis(x, d, 0)

    def batched_rule(*xs: Any) -> list[Any]:
        results, out_dims = rule(list(xs), [0] * n)
        return [canonical(as_value(r), d) for r, d in zip(results, out_dims, strict=True)]

    fn = apply_chain(batched_rule, form.chain, core.name, size)
    results = fn(*(canonical(x, d) for x, d in zip(args, dims, strict=True)))
    return results, [0] * len(results)


def _batch_jvp_link(
    rule: Callable[[Sequence[Any], Sequence[int | None]], tuple[list[Any], list[int | None]]],
    args: Sequence[Any],
    dims: Sequence[int | None],
    size: int,
    n: int,
    active: Sequence[bool],
) -> tuple[list[Any], list[int | None]] | None:
    """The batched JVP of the rule as ``custom_vmap`` defines it, or None where it mixes
    operands batched in primal and tangent with operands batched in only one of them.

    The rule runs with the operands batched in both primal and tangent marked batched
    (``in_batched``), and its JVP is ``vmap``-ed over the axes only a primal or only a
    tangent carries: with only tangents batched (``jacfwd``, ``vmap(jvp)`` with
    ``in_axes=(None, 0)``) the rule sees nothing batched and is differentiated.
    """
    p_dims = list(dims[:n])
    t_dims: list[int | None] = [None] * n
    given_dims = iter(dims[n:])
    for i, on in enumerate(active):
        if on:
            t_dims[i] = next(given_dims)
    mutual = [p is not None and t is not None for p, t in zip(p_dims, t_dims, strict=True)]
    extra_p = [p is not None and t is None for p, t in zip(p_dims, t_dims, strict=True)]
    extra_t = [t is not None and p is None for p, t in zip(p_dims, t_dims, strict=True)]
    if any(mutual) and (any(extra_p) or any(extra_t)):
        return None

    def front(x: Any, d: int | None) -> Any:
        return x if d is None else jnp.moveaxis(x, d, 0)

    primals = [front(x, d) for x, d in zip(args[:n], p_dims, strict=True)]
    tangents = [front(x, d) for x, d in zip(args[n:], dims[n:], strict=True)]
    rule_dims = [0 if m else None for m in mutual]
    out_dims: list[int | None] = []

    def on_rule(*xs: Any) -> list[Any]:
        results, given = rule(list(xs), rule_dims)
        out_dims[:] = [None if d is None else 0 for d in given]
        return [front(as_value(r), d) for r, d in zip(results, given, strict=True)]

    def jvp_of_rule(ps: Sequence[Any], ts: Sequence[Any]) -> list[Any]:
        given = iter(ts)
        full = [
            next(given) if on else _jax.instantiate_zeros(_jax.make_zero(_jax.typeof(p)))
            for p, on in zip(ps, active, strict=True)
        ]
        # The results came from the primitive's own equation: the rule's effects (a
        # jax.debug.print in it) do not run again for its tangents.
        return jvp_tangents(on_rule, ps, full)

    if not any(extra_p) and not any(extra_t):
        touts = jvp_of_rule(primals, tangents)
        return touts, list(out_dims)
    p_axes = [0 if e else None for e in extra_p]
    t_axes = [0 if e else None for e, on in zip(extra_t, active, strict=True) if on]
    touts = jax.vmap(jvp_of_rule, in_axes=(p_axes, t_axes), axis_size=size)(primals, tangents)
    return list(touts), [0] * len(touts)
