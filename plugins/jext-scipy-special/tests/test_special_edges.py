"""Edge cases: +-0, +-inf, nan and domain boundaries equal SciPy's values."""

from __future__ import annotations

import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import CASE_BY_NAME, JITTED, x64
from jext_scipy_special import _functions as jf
from jext_scipy_special._functions import _bessel_jy_family as bessel_jy
from jext_scipy_special._functions._gamma_family import ndtri_exp

from jext.scipy import special

INF, NAN = np.inf, np.nan
E1 = float(np.exp(-1.0))  # the float nearest 1/e
PAD = 3000  # evaluate at the shape the value tests compiled for

_SPECIALS = (-INF, -1e300, -10.0, -0.0, 0.0, 0.5, 1.0, np.nextafter(1, 2), 1.5, INF, NAN)
_STDTR: list[tuple[float, ...]] = [
    (1.0, INF), (1.0, -INF), (1.0, 0.0), (1.0, -0.0), (0.0, 1.0), (-1.0, 1.0),
    (INF, 1.0), (INF, -1.0), (INF, INF), (INF, -INF), (INF, 0.0), (-INF, 1.0),
    (NAN, 1.0), (1.0, NAN), (INF, NAN), (0.5, -1e300), (1e300, 1.0), (1e20, 1.0),
    (1e-300, 1.0), (1e-300, -1.0), (5.0, 1e-300), (5.0, -1e-300),
]  # fmt: skip
_GAMMAINCINV: list[tuple[float, ...]] = [
    (1.0, 0.0), (1.0, 1.0), (1.0, -0.1), (1.0, 1.1), (1.0, -0.0), (0.0, 0.5), (-1.0, 0.5),
    (-1.0, 0.0), (INF, 0.5), (INF, 0.0), (INF, 1.0), (1.0, NAN), (NAN, 0.5), (NAN, 0.0),
    (0.0, 0.0), (0.0, 1.0), (1e-300, 0.5), (0.1, 1e-300), (1e5, 0.5),
]  # fmt: skip
_ORDERS = (0.0, 1.0, -2.5, 1e5, NAN, INF, -INF)
_W0 = (np.nextafter(-E1, -1), 0.0, -0.0, INF, -INF, NAN, -1.0, 1e308, 1.0, 1e-300, -1e-300)
_WM1 = (np.nextafter(-E1, -1), 0.0, -0.0, -1e-300, -0.1, -0.25, 1.0, INF, -INF, NAN)

EDGES: dict[str, list[tuple[float, ...]]] = {
    "ellipk": [(x,) for x in _SPECIALS],
    "ellipkm1": [(x,) for x in (-0.1, -0.0, 0.0, 1e-300, 1.0, 2.0, 1e300, INF, -INF, NAN)],
    "ellipe": [(x,) for x in _SPECIALS],
    "erfcinv": [
        (x,) for x in (-0.1, -0.0, 0.0, 1e-300, 1.0, 2.0, np.nextafter(2, 3), 2.1, INF, NAN)
    ],
    "stdtr": _STDTR,
    "lambertw0": [(x,) for x in _W0],
    "lambertw-1": [(x,) for x in _WM1],
    "gammaincinv": _GAMMAINCINV,
    "kv": [(v, z) for v in _ORDERS for z in (0.0, -0.0, -1.0, 1e-300, 1.0, 1e10, INF, -INF, NAN)],
    "kve": [(v, z) for v in _ORDERS for z in (0.0, -0.0, -1.0, 1e-300, 1.0, INF, -INF, NAN)],
}


def _padded(points: list[tuple[float, ...]]) -> tuple[np.ndarray, ...]:
    cols = list(zip(*points, strict=True))
    return tuple(
        np.concatenate([np.asarray(c, np.float64), np.full(PAD - len(c), c[-1])]) for c in cols
    )


@pytest.mark.parametrize("name", list(EDGES))
def test_edge_values_equal_scipy(name: str) -> None:
    case = CASE_BY_NAME[name]
    args = _padded(EDGES[name])
    with np.errstate(all="ignore"):
        ref = np.asarray(case.ref(*args), np.float64)
    with x64(True):
        got = np.asarray(JITTED[name](*args))
    k = len(EDGES[name])
    got, ref = got[:k], ref[:k]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    fin = ~np.isnan(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-13, atol=0)
    zero = fin & (ref == 0)
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(ref[zero]), err_msg="zero sign")


def test_lambertw_at_float_minus_inverse_e() -> None:
    """Documented deviation: at the float nearest -1/e (just below the true branch
    point) SciPy returns nan+nanj (a 0/0 in its Halley step); both real branches
    return -1 here, the branch-point value."""
    with x64(True):
        for k in (0, -1):
            assert float(jf.lambertw(-E1, k)) == -1.0


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("k", [0, -1])
def test_lambertw_near_branch_point_vs_mpmath(k: int, dt: type) -> None:
    """Within ~1e-4 of -1/e SciPy's iteration loses accuracy (errors up to 1e-8);
    here the branch-point series is checked against mpmath instead."""
    z: np.ndarray = (-E1 + np.geomspace(1e-16 if dt is np.float64 else 1e-7, 1e-3, 64)).astype(dt)
    with x64(dt is np.float64):
        got = np.asarray(jf.lambertw(z, k)).astype(np.float64)
    with mpmath.workdps(40):
        ref = np.array([float(mpmath.lambertw(mpmath.mpf(float(x)), k).real) for x in z])
    np.testing.assert_allclose(got, ref, rtol=1e-15 if dt is np.float64 else 2e-7)


def test_sign_of_zero_results() -> None:
    with x64(True):
        assert np.signbit(float(jf.erfcinv(1.0)))  # SciPy: -0.0
        assert np.signbit(float(jf.lambertw(-0.0)))
        assert not np.signbit(float(jf.lambertw(0.0)))
        assert np.signbit(float(bessel_jy.j1(-0.0)))  # odd: SciPy gives -0.0
        assert not np.signbit(float(bessel_jy.j1(0.0)))
    assert np.signbit(sc.erfcinv(1.0))
    assert np.signbit(sc.j1(-0.0))


def _ndtri_exp_mpmath(y: float) -> float:
    """The root of ``log Phi(x) = y`` at 40 digits: near ``y = 0`` through the complement
    (whose logarithm keeps its digits); below ``y = -2``, ``x = -t`` by the fixed point
    ``t^2 = 2 (log Phi(-t) + t^2/2 - y)`` (contracting by ~1/t^2)."""
    with mpmath.workdps(40):
        yy = mpmath.mpf(y)
        if y > -0.5:
            log_q = mpmath.log(-mpmath.expm1(yy))
            return float(mpmath.findroot(lambda x: mpmath.log(mpmath.ncdf(-x)) - log_q, 0.5))
        if y > -2.0:
            return float(mpmath.findroot(lambda x: mpmath.log(mpmath.ncdf(x)) - yy, -0.5))
        t = mpmath.sqrt(-2 * yy)
        for _ in range(40):
            if t < 1e12:
                log_ratio = mpmath.log(mpmath.ncdf(-t)) + t * t / 2
            else:  # A&S 26.2.12 (the next term, 3/t^4, is below the 40 digits); fast
                log_ratio = -mpmath.log(t) - mpmath.log(2 * mpmath.pi) / 2 - 1 / t**2
            t = mpmath.sqrt(2 * (log_ratio - yy))
        return float(-t)


def test_ndtri_exp_vs_mpmath() -> None:
    """Where SciPy is off: near ``y = -log 2`` (``x`` near 0, where rounding ``e^y`` costs
    ``x`` its relative accuracy; the split ``log 2`` must carry ``log 2``'s next bits), far
    below ``y = -2048`` (Cephes' tail fit extrapolated: 5e-13), and below ``-max/2``
    (where ``-2 y`` overflows)."""
    near_half = -np.log(2.0) + np.array([-1e-6, -3e-9, -1e-12, 2e-13, 4e-10, 1e-7])
    far = [-2.5, -700.0, -2047.0, -2049.0, -3e3, -1e5, -1e10, -1e300, -1.7e308]
    y = np.concatenate([near_half, [-1.9, -0.5, -1e-9], far])
    with x64(True):
        got = np.asarray(ndtri_exp(y))
    ref = np.array([_ndtri_exp_mpmath(float(v)) for v in y])
    np.testing.assert_allclose(got, ref, rtol=2e-15)


def test_ndtri_exp_float32_near_minus_log_2_vs_mpmath() -> None:
    """float32 needs its own split of ``log 2``: with float64's high word rounded to
    float32 (1.9e-9 above ``log 2``), ``ndtri_exp(float32(-log 2))`` is +2.9e-17 instead
    of -2.39e-9 (every ``|x| < 1e-3`` or so lost its digits)."""
    y0 = np.float32(-np.log(2.0))
    steps = np.array([-3000, -40, -1, 0, 1, 2, 40, 3000], dtype=np.int32)
    y = (y0.view(np.int32) + steps).view(np.float32)
    with x64(True):
        got = np.asarray(ndtri_exp(y))
    ref = np.array([_ndtri_exp_mpmath(float(v)) for v in y])
    np.testing.assert_allclose(got, ref, rtol=5e-6)
    np.testing.assert_allclose(got, sc.ndtri_exp(y.astype(np.float64)), rtol=5e-6)


#: ``(n, alpha, C(+inf), C(-inf))`` as SciPy 1.18.1 gives them (read on Python 3.12);
#: SciPy 1.17 gives nan at -inf (the recurrence's inf - inf) and at alpha = 0.
_GEGENBAUER_AT_INF = [
    (20, 4.775, INF, INF), (21, 4.775, INF, -INF), (20, -0.2, -INF, -INF),
    (21, -0.2, -INF, INF), (20, 0.0, 0.0, 0.0), (2, 4.775, INF, INF), (1, 4.775, INF, -INF),
]  # fmt: skip


def test_gegenbauer_at_infinity_is_the_limit_of_its_leading_term() -> None:
    """``C^(a)_n(+-inf)`` is an infinity with the sign of ``(a)_n x^n``, as SciPy 1.18 gives."""
    table = np.array(_GEGENBAUER_AT_INF, np.float64)
    n, alpha, up, down = table.T
    with x64(True):
        got_up = np.asarray(special.eval_gegenbauer(n, alpha, np.full_like(n, INF)))
        got_down = np.asarray(special.eval_gegenbauer(n, alpha, np.full_like(n, -INF)))
    np.testing.assert_array_equal(got_up, up)
    np.testing.assert_array_equal(got_down, down)
