"""The bundled example plugins, as installed by the README's set-up, through the registry."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jext
import jext.lowering

X = jnp.linspace(-2.0, 2.0, 6, dtype=jnp.float32).reshape(2, 3)


def test_softplus_custom_jvp_matches_sigmoid() -> None:
    softplus = jext.get_primitive("example.softplus")
    g = jax.jit(jax.grad(lambda x: softplus(x, beta=2.0).sum()))(X)
    np.testing.assert_allclose(g, jax.nn.sigmoid(2.0 * X), rtol=1e-6)
    assert softplus.rule_sources()["jvp"] == "custom"


def test_cumsum_transpose_is_the_adjoint_and_batching_moves_axes() -> None:
    cumsum = jext.get_primitive("example.cumsum")
    ct = jnp.arange(3.0)
    (x_ct,) = jax.linear_transpose(cumsum, X[0])(ct)
    np.testing.assert_allclose(jnp.dot(ct, cumsum(X[0])), jnp.dot(x_ct, X[0]), rtol=1e-6)
    np.testing.assert_allclose(
        jax.vmap(cumsum, in_axes=1, out_axes=1)(X.T), np.cumsum(X.T, 0), rtol=1e-6
    )
    g = jax.jit(jax.grad(lambda x: (cumsum(x) * ct).sum()))(X)
    np.testing.assert_allclose(g, np.broadcast_to([3.0, 3.0, 2.0], (2, 3)), rtol=1e-6)


def test_polar_pytree_in_and_out() -> None:
    polar = jext.get_primitive("example.polar")
    out = jax.jit(polar)({"x": X, "y": -X})
    np.testing.assert_allclose(out["r"], np.hypot(X, -X), rtol=1e-6)
    np.testing.assert_allclose(out["theta"], np.arctan2(-X, X), rtol=1e-6)


def test_rms_norm_lowers_per_platform_with_the_vendor_rocm_rule() -> None:
    rms_norm = jext.get_primitive("example.rms_norm")
    result = jext.lowering.export(lambda x: rms_norm(x, eps=1e-6), X)
    assert {p: r["example.rms_norm"] for p, r in result.rules.items()} == {
        "cpu": "_rms_norm_cpu",
        "cuda": "_rms_norm_accelerator",
        "rocm": "rms_norm_rocm",
        "tpu": "_rms_norm_accelerator",
    }
    want = X / np.sqrt(np.mean(np.square(X), -1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(result.call(X), want, rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(rms_norm)(X[:, None, :]), want[:, None, :], rtol=1e-5)
