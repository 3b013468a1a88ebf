"""JVP and transpose of every form: the author's rules, the linear JVP, the default JVP."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jext
from jext import _jax

XS = np.linspace(-1.5, 1.5, 12, dtype=np.float32).reshape(3, 4)


def _count(fn: Any, *args: Any, names: tuple[str, ...]) -> dict[str, int]:
    closed = jax.make_jaxpr(fn)(*args)
    counts = dict.fromkeys(names, 0)
    for eqn in _jax.iter_equations(closed):
        if eqn.primitive.name in counts:
            counts[eqn.primitive.name] += 1
    return counts


def _mlp(x: jax.Array) -> jax.Array:
    w = jnp.linspace(-1.0, 1.0, 16, dtype=x.dtype).reshape(4, 4)
    for _ in range(3):
        x = jnp.sin(x @ w)
    return x


def test_the_default_jvp_runs_the_forward_computation_once() -> None:
    mlp = jext.primitive("ad.mlp")(lambda x, /: _mlp(x))
    names = ("sin", "cos", "dot_general")

    def loss_prim(v: jax.Array) -> jax.Array:
        return mlp(v).sum()

    def loss_ref(v: jax.Array) -> jax.Array:
        return _mlp(v).sum()

    prim_counts = _count(jax.grad(loss_prim), XS, names=names)
    ref_counts = _count(jax.grad(loss_ref), XS, names=names)
    assert all(prim_counts[n] <= ref_counts[n] for n in names), (prim_counts, ref_counts)
    assert "jext_linearize" in str(jax.make_jaxpr(jax.grad(loss_prim))(XS))
    np.testing.assert_allclose(jax.grad(loss_prim)(XS), jax.grad(loss_ref)(XS), rtol=1e-6)
    np.testing.assert_allclose(
        jax.hessian(loss_prim)(XS[0]), jax.hessian(loss_ref)(XS[0]), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        jax.vmap(jax.grad(loss_prim))(XS), jax.vmap(jax.grad(loss_ref))(XS), rtol=1e-6
    )


def test_a_custom_jvp_applies_under_vmap_like_jax_custom_jvp() -> None:
    # The JVP is deliberately not the reference's derivative (a straight-through round).
    @jext.primitive("ad.ste")
    def ste(x: jax.Array, /) -> jax.Array:
        return jnp.round(x)

    ste.def_jvp(lambda p, t: (ste(p[0]), 3.0 * t[0]))

    @jax.custom_jvp
    def ste_jax(x: jax.Array) -> jax.Array:
        return jnp.round(x)

    ste_jax.defjvp(lambda p, t: (ste_jax(p[0]), 3.0 * t[0]))
    for f, g in [(ste, ste_jax), (jax.vmap(ste), jax.vmap(ste_jax))]:
        np.testing.assert_allclose(
            jax.grad(lambda v, f=f: f(v).sum())(XS), jax.grad(lambda v, g=g: g(v).sum())(XS)
        )
    np.testing.assert_allclose(
        jax.grad(lambda v: jax.vmap(ste, in_axes=1, out_axes=1)(v).sum())(XS), 3 * np.ones_like(XS)
    )


def test_a_linear_primitive_differentiates_through_its_transpose_rule() -> None:
    calls: list[str] = []

    @jext.primitive("ad.cumsum")
    def cumsum(x: jax.Array, /) -> jax.Array:
        return jnp.cumsum(x, axis=-1)

    @cumsum.def_transpose
    def _t(ct: jax.Array, x: Any) -> tuple[jax.Array]:
        calls.append("t")
        return (jnp.flip(jnp.cumsum(jnp.flip(ct, -1), axis=-1), -1),)

    w = jnp.arange(4.0)
    expected = jax.grad(lambda v: (jnp.cumsum(v, axis=-1) * w).sum())(XS)
    np.testing.assert_allclose(jax.grad(lambda v: (cumsum(v) * w).sum())(XS), expected)
    assert calls == ["t"]
    np.testing.assert_allclose(
        jax.linear_transpose(cumsum, XS)(XS)[0], jax.vjp(cumsum, XS)[1](XS)[0]
    )
    np.testing.assert_allclose(jax.grad(lambda v: (jax.vmap(cumsum)(v) * w).sum())(XS), expected)


def test_transposing_a_batched_primitive_sums_over_unbatched_operands() -> None:
    @jext.primitive("ad.mul")
    def mul(a: jax.Array, x: jax.Array, /) -> jax.Array:
        return a * x

    mul.def_transpose(lambda ct, a, x: (None, ct * a), linear_in=(1,))
    a = jnp.arange(4.0)
    f = jax.vmap(lambda x: mul(a, x))  # `a` is unbatched, x batched
    g = jax.vmap(lambda b: mul(b, jnp.ones(4)))  # the linear operand unbatched
    np.testing.assert_allclose(jax.grad(lambda v: f(v).sum())(XS), np.broadcast_to(a, XS.shape))
    # The linear operand closed over (unbatched) collects the sum over the batch.
    np.testing.assert_allclose(
        jax.grad(lambda x: jax.vmap(lambda b: mul(b, x))(XS).sum())(jnp.ones(4)), XS.sum(0)
    )
    np.testing.assert_allclose(jax.jacfwd(lambda b: g(b).sum())(XS), np.ones_like(XS))


def test_symbolic_zero_tangents_reach_the_rule_under_vmap() -> None:
    seen: list[bool] = []

    @jext.primitive("ad.pair")
    def pair(a: jax.Array, b: jax.Array, /) -> jax.Array:
        return a + b

    @pair.def_jvp(symbolic_zeros=True)
    def _jvp(p: Any, t: Any) -> Any:
        seen.append(isinstance(t[1], jext.SymbolicZero))
        tb = 0.0 if isinstance(t[1], jext.SymbolicZero) else t[1]
        return pair(*p), t[0] + tb

    jax.vmap(jax.grad(lambda x: pair(x, jnp.float32(1.0))))(XS[0])
    jax.grad(lambda v: jax.vmap(lambda x: pair(x, jnp.float32(1.0)))(v).sum())(XS[0])
    assert seen and all(seen)
