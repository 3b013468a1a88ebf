"""Subnormal numbers under XLA on CPU: what it does, and what the wrappers make of it.

XLA:CPU (jax 0.8.3 and 0.10.2 alike) runs with denormals-are-zero and flush-to-zero: a
subnormal operand of arithmetic or of a comparison reads as 0, a subnormal result is
returned as 0; only bit moves (an identity, a bitcast) keep a subnormal.  A wrapper can
read a subnormal input from its bits (``_common.subnormal_log``) where 0 would give a
wrong normal answer; a result that SciPy returns as a subnormal comes back as 0, and
those are listed here by name (docs/scipy-special-families.md, "Subnormal numbers", which
also tables the wrappers that still differ at subnormal arguments, found by
``tools/subnormal_survey.py``).  Where SciPy's own answer at a subnormal probability is
off (its iterations run in subnormal arithmetic), the inverses are held to mpmath.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions._erf import ndtri
from jext_scipy_special._functions._gamma_family import ndtri_exp

import jext.scipy.special as js
import jext.scipy.stats as jst

TINY64 = float(np.finfo(np.float64).tiny)


@pytest.fixture(autouse=True)
def _on_cpu() -> Iterator[None]:
    """XLA:CPU's subnormal semantics are this module's subject: on a GPU machine (XLA
    keeps subnormals there) its tests still run on the CPU."""
    with jax.default_device(jax.devices("cpu")[0]):
        yield


@pytest.mark.numerics
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


def _both_dtypes(name: str, sub64: np.ndarray = SUB64, sub32: np.ndarray = SUB32) -> None:
    fn, ref = getattr(js, name), getattr(sc, name)
    with x64(True):
        y = np.concatenate([sub64, LOW64])
        np.testing.assert_allclose(np.asarray(fn(jnp.asarray(y))), ref(y), rtol=1e-14)
    with x64(False):
        y32 = np.concatenate([sub32, LOW32])
        got = np.asarray(fn(jnp.asarray(y32)), np.float64)
        with np.errstate(over="ignore"):  # 1/x beyond float32's range: inf
            want = ref(y32.astype(np.float64)).astype(np.float32).astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=5e-6)


@pytest.mark.numerics
@pytest.mark.parametrize("name", ["erfcinv", "k0", "k0e", "k1", "k1e"])
def test_subnormal_arguments_read_from_bits_as_scipy(name: str) -> None:
    """Each read a subnormal argument as 0 (inf): ``erfcinv(1e-310)`` is 26.6,
    ``k0(1e-310)`` 713.9, ``k1(2.2e-308)`` 4.5e307 (1/x), as SciPy's.  SciPy's own
    rounding of ``y/2`` shows at ``5e-324`` (erfcinv, k0: inf; k1: nan) and 1.5e-323."""
    _both_dtypes(name)


def test_erfcinv_replaces_jax_scipy_for_its_subnormals_without_a_warning() -> None:
    """jext.scipy.special.erfcinv is the plugin's on every JAX, with its reason stated
    (jax 0.12 added jax.scipy.special.erfcinv): loading the plugin reports no failure, and
    at subnormal ``y`` it gives SciPy's finite value where jax.scipy's gives inf."""
    import jax.scipy.special as jss
    from jext_scipy_special._functions import _erf

    from jext._registry import registry

    assert js.erfcinv.jext_wrapper.replaces_jax == _erf.REPLACES_JAX
    (plugin,) = [p for p in registry().plugins() if p.name == "scipy-special"]
    assert plugin.status == "loaded", plugin.error
    y = np.array([1e-310, 2.2e-308])
    with x64(True):
        np.testing.assert_allclose(js.erfcinv(jnp.asarray(y)), sc.erfcinv(y), rtol=1e-14)
        if hasattr(jss, "erfcinv"):  # the reason stated, as long as it holds
            assert np.all(np.isinf(np.asarray(jss.erfcinv(jnp.asarray(y)))))


@pytest.mark.numerics
def test_cbrt_of_subnormal_from_bits() -> None:
    """``cbrt(5e-324)`` is SciPy's 1.7e-108, not the 0 of a flushed operand (float32:
    ``cbrt(1e-45)`` positive); that is ``cbrt(m) 2^-358``.  Odd, so negative subnormals too; the
    derivative ``1 / (3 cbrt(x)^2)`` is finite there."""
    _both_dtypes("cbrt")
    with x64(True):  # compiled whole, not op by op
        grad = float(jax.jit(jax.grad(js.cbrt))(jnp.float64(1e-310)))
    np.testing.assert_allclose(grad, 1.0 / (3.0 * np.cbrt(1e-310) ** 2), rtol=1e-14)


@pytest.mark.parametrize("name", ["y0", "y1"])
def test_y0_y1_of_subnormal_from_bits(name: str) -> None:
    """``y0(1e-310)`` and ``y1(2.2e-308)`` are SciPy's -454.5 and -2.9e307 (a flushed operand
    gives -inf and nan): the leading terms ``(2/pi)(log(x/2) + gamma)`` and ``-(2/pi)/x``
    (Cephes forms ``1/x`` first: -inf below 5.6e-309).  Positive subnormals only (a negative one
    reads as -0: -inf, where SciPy's is nan)."""
    _both_dtypes(name, SUB64[SUB64 > 0], SUB32[SUB32 > 0])


def _gamma_root_error(a: float, y: float, x: float, upper: bool) -> float:
    """Relative error of ``x`` as a root of ``P(a, x) = y`` (``Q`` if ``upper``), from
    mpmath's residual of ``log P`` over its slope in ``log x``."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(30):

        def g(t: Any) -> Any:
            v = mp.gammainc(a, t, mp.inf) if upper else mp.gammainc(a, 0, t)
            return mp.log(v / mp.gamma(a)) - mp.log(mp.mpf(y))

        t = mp.mpf(x)
        h = t * mp.mpf("1e-15")
        slope = (g(t + h) - g(t - h)) / (2 * h) * t
        return float(abs(g(t) / slope))


#: (a, upper): a lower-side root below the normal range is flushed (a = 1: x = y), so
#: the lower side is held where its root is normal, x ~ (y Gamma(a + 1))^(1/a).
GAMMA_CASES = [(3.16, False), (25.25, False), (500.0, False)] + [
    (a, True) for a in (0.1, 0.5, 3.16, 25.25, 500.0)
]


@pytest.mark.parametrize(("a", "upper"), GAMMA_CASES)
def test_incomplete_gamma_inverse_at_subnormal_probability(a: float, upper: bool) -> None:
    """``gammaincinv(25.25, 5e-324)`` and ``gammainccinv(a, 5e-324)`` are finite and positive
    (the probability read as 0 gives 0 and inf).  Held to mpmath's root: SciPy's own Newton runs
    in subnormal arithmetic and is off by up to 3e-4 there (``gammainccinv(0.5, 5e-324)``:
    740.44 for 740.56).  Float32 against SciPy, which computes it in float64."""
    name = "gammainccinv" if upper else "gammaincinv"
    ys = SUB64[SUB64 > 0][::2]
    with x64(True):
        got = np.asarray(getattr(js, name)(jnp.full(ys.shape, a), jnp.asarray(ys)))
    errors = [_gamma_root_error(a, float(y), float(x), upper) for y, x in zip(ys, got, strict=True)]
    assert max(errors) < 1e-13, (got, errors)
    y32 = SUB32[SUB32 > 0]
    with x64(False):
        got32 = np.asarray(getattr(js, name)(jnp.full(y32.shape, a, jnp.float32), y32))
    ref = getattr(sc, name)(a, y32.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(got32, ref, rtol=5e-6)


def _beta_root_error(a: float, b: float, y: float, x: float, upper: bool) -> float:
    """Relative error of ``x`` as a root of ``I_x(a, b) = y`` (``1 - I_x`` if ``upper``),
    from mpmath's residual of ``log I`` over its slope in ``log x``."""
    mp = pytest.importorskip("mpmath")
    with mp.workdps(60):

        def g(t: Any) -> Any:
            v = (
                mp.betainc(b, a, 0, 1 - t, regularized=True)
                if upper
                else mp.betainc(a, b, 0, t, regularized=True)
            )
            return mp.log(v) - mp.log(mp.mpf(y))

        t = mp.mpf(x)
        h = min(t, 1 - t) * mp.mpf("1e-20")
        slope = (g(t + h) - g(t - h)) / (2 * h) * t
        return float(abs(g(t) / slope))


#: (a, b, upper) whose roots at a subnormal p (q if upper) are normal and below 1 - eps
#: (an upper-tail root is near 1 unless b is large).
BETA_CASES = [
    (3.16, 1.0, False),
    (25.25, 25.25, False),
    (500.0, 500.0, False),
    (3.16, 500.0, False),
    (500.0, 3.16, False),
    (25.25, 25.25, True),
    (500.0, 500.0, True),
    (3.16, 500.0, True),
    (0.3, 25.25, True),
]


@pytest.mark.parametrize(("a", "b", "upper"), BETA_CASES)
def test_incomplete_beta_inverse_at_subnormal_probability(a: float, b: float, upper: bool) -> None:
    """``betaincinv(500, 500, 5e-324)`` is 0.0606 and ``betainccinv`` below 1 (the probability
    read as 0, or ``I`` underflowing near the root, gives 0 and 1).  Held to mpmath (SciPy is
    nan at several of these, e.g. ``betaincinv(3.16, 0.3, 1e-310)``)."""
    name = "betainccinv" if upper else "betaincinv"
    ys = SUB64[SUB64 > 0][::2]
    with x64(True):
        full = [np.full(ys.shape, v) for v in (a, b)]
        got = np.asarray(getattr(js, name)(*full, ys))
    keep = (got > TINY64) & (got < 1.0)  # a root below the normal range is flushed
    errors = [
        _beta_root_error(a, b, float(y), float(x), upper)
        for y, x in zip(ys[keep], got[keep], strict=True)
    ]
    assert keep.any() and max(errors) < 1e-13, (ys[keep], got[keep], errors)


def test_float32_incomplete_beta_inverse_far_tail() -> None:
    """Float32 ``betaincinv(500, 3.16, p)`` for ``p <= 1e-32`` (normal ones too) is right
    though ``I`` underflows on the way to the root (unscaled: up to 7% off, and 0 at a
    subnormal ``p``).  mpmath's roots (SciPy's own float64 answer at ``p = 1e-45`` is 1.4% off)."""
    p = np.array([1e-45, 1e-40, 1e-38, 1e-36, 1e-34, 1e-32, 1e-30], np.float32)
    with x64(False):
        got = np.asarray(js.betaincinv(jnp.float32(500.0), jnp.float32(3.16), p), np.float64)
    errors = [
        _beta_root_error(500.0, 3.16, float(pv), float(x), False)
        for pv, x in zip(p, got, strict=True)
    ]
    assert max(errors) < 5e-6, errors


def test_stdtrit_at_subnormal_p() -> None:
    """``stdtrit(25.25, 1e-310)`` is finite (``min(p, 1 - p)`` and ``2 p`` flush ``p``: -inf).
    Held to mpmath, ``p = I_x(df/2, 1/2) / 2`` at ``x = df / (df + t^2)``: SciPy's float64
    is +inf at 5e-324 and 1e-320, and 2.6% off at 1e-310."""
    mp = pytest.importorskip("mpmath")
    p = SUB64[SUB64 > 0]
    with x64(True):
        t = np.asarray(js.stdtrit(jnp.full(p.shape, 25.25), jnp.asarray(p)))
    assert np.all(np.isfinite(t)) and np.all(t < 0.0)
    with mp.workdps(40):
        df = mp.mpf(25.25)
        ratio = [
            mp.betainc(df / 2, 0.5, 0, df / (df + mp.mpf(v) ** 2), regularized=True)
            / (2 * mp.mpf(float(pv)))
            for v, pv in zip(t, p, strict=True)
        ]
    # The root's relative error is that of the ratio over d log p / d log t = -df.
    np.testing.assert_allclose(np.log([float(r) for r in ratio]) / 25.25, 0.0, atol=1e-13)


@pytest.mark.parametrize(("dist", "args"), [("poisson", (150.0,)), ("binom", (60.0, 0.5))])
def test_discrete_ppf_at_subnormal_q(dist: str, args: tuple[float, ...]) -> None:
    """``poisson.ppf(5e-324, 150)`` is SciPy's 0, the first ``k`` (not ``ppf(0) = -1``)."""
    st = pytest.importorskip("scipy.stats")
    q = SUB64[SUB64 > 0]
    with x64(True):
        got = np.asarray(getattr(jst, dist).ppf(jnp.asarray(q), *args))
    np.testing.assert_array_equal(got, getattr(st, dist).ppf(q, *args))


def test_ndtri_of_subnormal_p_from_bits() -> None:
    """The private ``ndtri`` (under erfcinv and the start values of the inverse
    distributions) of a subnormal ``p`` is about -38, not -inf."""
    with x64(True):
        got = np.asarray(jax.jit(ndtri)(jnp.asarray(SUB64)))
    np.testing.assert_allclose(got, sc.ndtri(SUB64), rtol=1e-14)


#: kolmogi where SciPy's Newton runs in subnormal arithmetic: (p, SciPy's value).
KOLMOGI_SCIPY_OFF = ((5e-324, math.inf), (1.5e-323, 19.28402090774667))


@pytest.mark.numerics
def test_kolmogi_far_tail() -> None:
    """``kolmogi`` of a subnormal ``p``, and of ``p`` up to 4.4e-308, is finite (read as 0 it
    is inf; its Newton step is 0/0 there).  There ``sf(x) = 2 e^(-2x^2)`` to the last bit, so
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


@pytest.mark.numerics
@pytest.mark.parametrize("name", list(FLUSHED_RESULTS))
def test_subnormal_results_come_back_as_zero(name: str) -> None:
    args = FLUSHED_RESULTS[name]
    ref = float(getattr(sc, name)(*args))
    assert 0.0 < ref < TINY64, f"SciPy's {name}{args} = {ref} is no longer subnormal"
    # In a batch of the incomplete beta inverse tests' shape, whose program it reuses.
    shape = SUB64[SUB64 > 0][::2].shape
    with x64(True):
        got = float(getattr(js, name)(*(np.full(shape, a) for a in args))[0])
    assert got == 0.0, f"{name}{args} = {got}: no longer flushed (SciPy {ref}); drop it here"
