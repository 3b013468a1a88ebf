"""jit, vmap and eager agree; promotion, broadcasting and argument checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _special_cases import CASE_IDS, CASES, Case, sample, x64
from jext_scipy_special import _functions as jf

N = 3000  # the direct call is already compiled for this shape by the value tests
M = 8
V = 400


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_jit_vmap_agree_with_direct_call(case: Case) -> None:
    """The direct call (itself a cached jit entry point, the partitioned/chunked
    path for this size) against ``jit(vmap(f))`` (per-element kernels, no chunking)
    and an outer ``jit`` on a few elements."""
    args = sample(case, np.float64, N, seed=3)
    with x64(True):
        direct = np.asarray(case.fn(*args))
        mapped = np.asarray(jax.jit(jax.vmap(case.fn))(*(a[:V] for a in args)))
        outer = np.asarray(jax.jit(case.fn)(*(a[:M] for a in args)))
    # Different fusion / vectorisation may round differently in the last bit.
    np.testing.assert_allclose(mapped, direct[:V], rtol=1e-13, atol=0)
    np.testing.assert_allclose(outer, direct[:M], rtol=1e-13, atol=0)


def test_broadcasting_and_python_scalars() -> None:
    t = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    with x64(True):
        out = jf.stdtr(5.0, t)
        assert out.shape == (3, 4)
        assert out.dtype == jnp.float64
        np.testing.assert_array_equal(
            np.asarray(out), np.asarray(jf.stdtr(np.full((3, 4), 5.0), t))
        )
        assert jf.stdtr(np.arange(1, 4)[:, None], np.array([1.0, 2.0])).shape == (3, 2)
        assert jf.ellipk(0).dtype == jnp.float64  # integers promote to the default float
    assert jf.ellipk(0).dtype == jnp.float32  # x64 off
    assert jf.erfcinv(np.float16(0.5)).dtype == jnp.float32  # half is computed in float32
    assert jf.ellipkm1(np.float32(0.5)).dtype == jnp.float32


def test_argument_checks() -> None:
    with pytest.raises(TypeError, match="complex"):
        jf.ellipk(1j)
    with pytest.raises(ValueError, match="k=0 and k=-1"):
        jf.lambertw(1.0, 1)
    with pytest.raises(ValueError, match="k=0 and k=-1"):
        jf.lambertw(1.0, True)


def test_grad_under_jit_and_vmap_matches_eager() -> None:
    z = np.array([0.5, 2.0, 7.5])
    with x64(True):
        eager = np.array([float(jax.grad(jf.stdtr, 1)(1.3, float(x))) for x in z])
        mapped = np.asarray(jax.jit(jax.vmap(jax.grad(jf.stdtr, 1), (None, 0)))(1.3, z))
    np.testing.assert_allclose(mapped, eager, rtol=1e-15)
