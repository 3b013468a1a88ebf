"""Subnormal numbers under XLA on CPU: what it does, and what the wrappers make of it.

XLA:CPU (jax 0.8.3 and 0.10.2 alike) runs with denormals-are-zero and flush-to-zero: a
subnormal operand of arithmetic or of a comparison reads as 0, a subnormal result is
returned as 0; only bit moves (an identity, a bitcast) keep a subnormal.  A wrapper can
read a subnormal input from its bits (``_common.subnormal_log``) where 0 would give a
wrong normal answer; a result that SciPy returns as a subnormal comes back as 0, and
those are listed here by name (docs/scipy-special-families.md, "Subnormal numbers").
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions._erf import ndtri
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


#: Subnormal arguments (and, float64, the first normal binade, where ``y/2`` underflows),
#: both signs; SciPy evaluates float32 in float64, which halves float32 subnormals exactly.
SUB64 = np.array([5e-324, 1e-323, 1.5e-323, 1e-320, 1e-310, 5.6e-309, 2.2e-308, -5e-324])
SUB32 = np.array([1.4e-45, 1e-40, 3e-39, 1.1e-38, -1e-45], np.float32)
#: Normal arguments just above the subnormals, where a product or a leading factor underflows.
LOW64 = np.array([2.3e-308, 3e-308, 4.4e-308, 5e-308, 8.8e-308, 1e-307])
LOW32 = np.array([1.2e-38, 2e-38, 4e-38, 5e-38, 1e-37], np.float32)


def _both_dtypes(name: str, sub64: np.ndarray = SUB64) -> None:
    fn, ref = getattr(js, name), getattr(sc, name)
    with x64(True):
        y = np.concatenate([sub64, LOW64])
        np.testing.assert_allclose(np.asarray(fn(jnp.asarray(y))), ref(y), rtol=1e-14)
    with x64(False):
        y32 = np.concatenate([SUB32, LOW32])
        got = np.asarray(fn(jnp.asarray(y32)), np.float64)
        with np.errstate(over="ignore"):  # 1/x beyond float32's range: inf
            want = ref(y32.astype(np.float64)).astype(np.float32).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=5e-6)


@pytest.mark.parametrize("name", ["erfcinv", "k0", "k0e", "k1", "k1e"])
def test_subnormal_arguments_read_from_bits_as_scipy(name: str) -> None:
    """Each read a subnormal argument as 0 (inf): ``erfcinv(1e-310)`` is 26.6,
    ``k0(1e-310)`` 713.9, ``k1(2.2e-308)`` 4.5e307 (1/x), as SciPy's.  SciPy's own
    rounding of ``y/2`` shows at ``5e-324`` (erfcinv, k0: inf; k1: nan) and 1.5e-323."""
    _both_dtypes(name)


def test_ndtri_of_subnormal_p_from_bits() -> None:
    """The private ``ndtri`` (under erfcinv and the start values of the inverse
    distributions) of a subnormal ``p`` is about -38, not -inf."""
    with x64(True):
        got = np.asarray(jax.jit(ndtri)(jnp.asarray(SUB64)))
    np.testing.assert_allclose(got, sc.ndtri(SUB64), rtol=1e-14)


#: kolmogi where SciPy's Newton runs in subnormal arithmetic: (p, SciPy's value).
KOLMOGI_SCIPY_OFF = ((5e-324, math.inf), (1.5e-323, 19.28402090774667))


def test_kolmogi_far_tail() -> None:
    """``kolmogi`` read a subnormal ``p`` as 0 (inf) and was nan up to 4.4e-308 (its
    Newton step was 0/0).  There ``sf(x) = 2 e^(-2x^2)`` to the last bit, so
    ``kolmogi(p) = sqrt(log(2/p) / 2)`` (mpmath); SciPy agrees except at the points of
    ``KOLMOGI_SCIPY_OFF``."""
    mp = pytest.importorskip("mpmath")
    off = np.array([p for p, _ in KOLMOGI_SCIPY_OFF])
    np.testing.assert_allclose(sc.kolmogi(off), [v for _, v in KOLMOGI_SCIPY_OFF], rtol=1e-15)
    _both_dtypes("kolmogi", SUB64[~np.isin(SUB64, off)])
    p = np.concatenate([off, SUB64[SUB64 > 0], LOW64])
    want = [float(mp.sqrt(mp.log(2 / mp.mpf(float(v))) / 2)) for v in p]
    with x64(True):
        got = np.asarray(js.kolmogi(jnp.asarray(p)))
    np.testing.assert_allclose(got, want, rtol=1e-15)


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
