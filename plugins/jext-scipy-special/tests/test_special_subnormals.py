"""Subnormal numbers under XLA on CPU: what it does, and what the wrappers make of it.

XLA:CPU (jax 0.8.3 and 0.10.2 alike) runs with denormals-are-zero and flush-to-zero: a
subnormal operand of arithmetic or of a comparison reads as 0, a subnormal result is
returned as 0; only bit moves (an identity, a bitcast) keep a subnormal.  A wrapper can
read a subnormal input from its bits (``_common.subnormal_log``) where 0 would give a
wrong normal answer; a result that SciPy returns as a subnormal comes back as 0, and
those are listed here by name (docs/scipy-special-families.md, "Subnormal numbers").
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions._gamma_family import ndtri_exp

import jext.scipy.special as js

TINY64 = float(np.finfo(np.float64).tiny)


def test_xla_cpu_reads_subnormals_as_zero_and_flushes_results() -> None:
    """The premise of the exceptions below; if XLA changes it, revisit them."""
    sub = np.array([5e-324, -1e-310], np.float64)
    with x64(True):
        x = jnp.asarray(sub)
        assert not np.any(np.asarray(jax.jit(lambda v: v > 0.0)(x)))  # operands: as zero
        np.testing.assert_array_equal(jax.jit(lambda v: v * 2.0**60)(x), [0.0, -0.0])
        np.testing.assert_array_equal(jax.jit(lambda v: v / 4.0)(jnp.full(2, TINY64)), 0.0)
        np.testing.assert_array_equal(jax.jit(lambda v: v)(x), sub)  # bits move untouched


def test_ndtri_exp_of_subnormal_y_is_finite_as_scipy() -> None:
    """``ndtri_exp(-5e-324)`` read ``y`` as 0 and returned inf; SciPy's 38.47 is right
    (``1 - e^y = -y`` there)."""
    y = np.array([-5e-324, -1e-310, -2.2e-308, 5e-324, -1e-300])
    with x64(True):
        got = np.asarray(ndtri_exp(jnp.asarray(y)))
    np.testing.assert_allclose(got, sc.ndtri_exp(y), rtol=1e-14)
    y32 = np.array([-1e-45, -1e-40, 1e-40], np.float32)
    with x64(False):
        got32 = np.asarray(ndtri_exp(jnp.asarray(y32)), np.float64)
    np.testing.assert_allclose(got32, sc.ndtri_exp(y32.astype(np.float64)), rtol=5e-6)


#: Named exceptions: SciPy's result is subnormal, XLA:CPU flushes it to 0.
FLUSHED_RESULTS: dict[str, tuple[float, ...]] = {
    "kolmogorov": (19.3,),
    "betaincinv": (1e-3, 0.2, 0.3),
}


@pytest.mark.parametrize("name", list(FLUSHED_RESULTS))
def test_subnormal_results_come_back_as_zero(name: str) -> None:
    args = FLUSHED_RESULTS[name]
    ref = float(getattr(sc, name)(*args))
    assert 0.0 < ref < TINY64, f"SciPy's {name}{args} = {ref} is no longer subnormal"
    with x64(True):
        got = float(getattr(js, name)(*(jnp.float64(a) for a in args)))
    assert got == 0.0, f"{name}{args} = {got}: no longer flushed (SciPy {ref}); drop it here"
