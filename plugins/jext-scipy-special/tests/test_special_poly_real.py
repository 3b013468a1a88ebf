"""Legendre, Gegenbauer, Jacobi and Laguerre functions of real (non-integer) degree.

Held to mpmath's own ``legendre``, ``gegenbauer``, ``jacobi`` and ``laguerre`` (not
SciPy: its ``hyp2f1``/``hyp1f1`` are off by up to 1e21 relative at these arguments, see
docs/scipy-special-families.md), over the declared domains; one call per function
evaluates the points forward and reversed (no value may depend on its batch).

Compiling these kernels is most of this module's time, so every float64 value of every
test comes from one compiled program per function (:func:`_values`, the points padded to
:data:`SIZE`, called as users call the function), and every derivative from one more
(:func:`_slopes`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.special as sc
from jext_scipy_special._functions import _poly_family as pf

N = 40
SIZE = 384  # points of every float64 call below (the most: 336, in near_minus_one)


def _padded(cols: tuple[Any, ...], size: int) -> tuple[list[np.ndarray], int]:
    """``cols`` broadcast, flattened and padded with their last point to ``size`` points."""
    flat = [np.ravel(c) for c in np.broadcast_arrays(*(np.asarray(c, np.float64) for c in cols))]
    k = len(flat[0])
    assert k <= size, (k, size)
    return [np.concatenate([c, np.full(size - k, c[-1])]) for c in flat], k


def _values(fn: Callable[..., jax.Array], *cols: Any) -> np.ndarray:
    """``fn(*cols)`` in float64 through the function's one compiled program for ``SIZE``
    points (the public function compiles once per input shape and dtype)."""
    padded, k = _padded(cols, SIZE)
    with jax.enable_x64(True):
        return np.asarray(fn(*padded))[:k]


@functools.cache
def _slope_program(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    def slope(*args: jax.Array) -> jax.Array:
        *params, x = args
        tangent: jax.Array = jax.jvp(lambda u: fn(*params, u), (x,), (jnp.ones_like(x),))[1]
        return tangent

    return jax.jit(slope)


def _slopes(fn: Callable[..., jax.Array], *cols: Any) -> np.ndarray:
    """d/dx of ``fn(*cols)`` (its JVP in the last argument), one compiled program per
    function for 64 points; values (the JVP's primal output) are left to :func:`_values`."""
    padded, k = _padded(cols, 64)
    with jax.enable_x64(True):
        return np.asarray(_slope_program(fn)(*padded))[:k]


def _legendre(n: Any, x: Any) -> Any:
    return mpmath.legenp(n, 0, x, type=2 if x <= 1 else 3)


def _sh_jacobi(n: Any, p: Any, q: Any, x: Any) -> Any:
    return mpmath.jacobi(n, p - q, q - 1, 2 * x - 1) / mpmath.binomial(2 * n + p - 1, n)


#: name -> (function, mpmath reference, argument ranges, relative tolerance)
CASES: dict[str, tuple[Any, Any, tuple[tuple[float, float], ...], float]] = {
    # x above 1 too: see _points.
    "legendre": (pf.eval_legendre, _legendre, ((-50.0, 50.0), (-1.0, 1.0)), 1e-12),
    "sh_legendre": (
        pf.eval_sh_legendre,
        lambda n, x: _legendre(n, 2 * x - 1),
        ((-50.0, 50.0), (0.0, 1.0)),
        1e-12,
    ),
    "gegenbauer": (
        pf.eval_gegenbauer,
        mpmath.gegenbauer,
        ((-0.99, 50.0), (-0.45, 10.0), (-1.0, 3.0)),
        1e-11,
    ),
    "jacobi": (
        pf.eval_jacobi,
        mpmath.jacobi,
        ((-0.99, 50.0), (-0.9, 5.0), (-0.9, 5.0), (-1.0, 3.0)),
        1e-11,
    ),
    "sh_jacobi": (
        pf.eval_sh_jacobi,
        _sh_jacobi,
        ((0.0, 30.0), (1.0, 6.0), (0.1, 1.0), (0.0, 1.0)),
        1e-11,
    ),
    "genlaguerre": (
        pf.eval_genlaguerre,
        mpmath.laguerre,
        ((-0.99, 50.0), (-0.9, 5.0), (0.0, 15.0)),
        1e-11,
    ),
    "laguerre": (
        pf.eval_laguerre,
        lambda n, x: mpmath.laguerre(n, 0, x),
        ((-0.99, 50.0), (0.0, 15.0)),
        1e-11,
    ),
}


#: Points where SciPy gives nan (the poles of hyp2f1's ``c`` or of the normalisation,
#: Laguerre's ``a <= -1``) and, for Legendre, one below ``x = -1`` (a complex value:
#: nan here, SciPy's ``inf``).  (column -> values) appended to each case's points.
NANS: dict[str, tuple[tuple[float, ...], ...]] = {
    "legendre": ((2.5, 2.3), (-1.01, float(np.nextafter(-1.0, -2.0)))),
    "gegenbauer": ((2.5, 2.5, 2.5), (-0.5, -1.0, -1.5), (0.3, 0.3, 0.3)),
    "jacobi": ((2.5, 2.5), (-1.0, -2.0), (0.3, 0.3), (0.3, 0.3)),
    "genlaguerre": ((2.5, 2.5), (-1.0, -1.5), (0.3, 0.3)),
}


def _points(name: str) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, name)))
    cols = [rng.uniform(lo, hi, N) for lo, hi in CASES[name][2]]
    cols[0] = np.where(cols[0] == np.round(cols[0]), cols[0] + 0.25, cols[0])  # non-integer
    if name == "legendre":
        cols[1][: N // 4] = rng.uniform(1.0, 10.0, N // 4)
    extra = NANS.get(name, tuple(() for _ in cols))
    return [
        np.concatenate([c, np.asarray(e, np.float64)]) for c, e in zip(cols, extra, strict=True)
    ]


@pytest.mark.parametrize("name", list(CASES))
def test_real_degree_values_against_mpmath(name: str) -> None:
    fn, ref, _, rtol = CASES[name]
    args = _points(name)
    size = len(args[0])
    out = _values(fn, *(np.concatenate([a, a[::-1]]) for a in args))
    forward, backward = out[:size], out[size:][::-1]
    np.testing.assert_array_equal(forward.view(np.int64), backward.view(np.int64))
    assert np.all(np.isnan(forward[N:])), forward[N:]
    forward = forward[:N]
    with mpmath.workdps(40):
        want = np.array([float(ref(*(mpmath.mpf(float(a[i])) for a in args))) for i in range(N)])
    err = np.abs(forward - want) / np.maximum(np.abs(want), 1e-14)
    assert np.all(err <= rtol), (name, float(err.max()), [float(a[np.argmax(err)]) for a in args])


def test_the_nan_points_are_scipy_s() -> None:
    # The expected nans above are SciPy's (Legendre below -1 aside: SciPy gives inf).
    for name, cols in NANS.items():
        fn = getattr(sc, "eval_" + name)
        got = fn(*cols)
        assert np.all(np.isnan(got)) == (name != "legendre"), (name, got)


SlopeCase = tuple[Callable[..., jax.Array], tuple[list[float], ...], list[float]]


def _check_slopes(cases: list[SlopeCase], rel: float) -> None:
    """The JVP in ``x`` of each case against central differences of its values with a
    step ``rel`` times ``1 + x`` (``x`` for the shifted Jacobi), or ``h = 1e-6`` if ``rel``
    is 0."""
    for fn, params, x in cases:
        xs = np.asarray(x)
        if rel:
            h = rel * (xs - (0.0 if fn is pf.eval_sh_jacobi else -1.0))
        else:
            h = np.full_like(xs, 1e-6)
        k = len(x)
        value = _values(fn, *(np.tile(q, 2) for q in params), np.concatenate([xs + h, xs - h]))
        got = _slopes(fn, *params, xs)
        fd = (value[:k] - value[k:]) / (2 * h)
        assert np.all(np.abs(got - fd) <= 1e-7 * np.maximum(1.0, np.abs(fd))), (fn, got, fd)


def test_real_degree_derivative_matches_finite_differences() -> None:
    # d/dx through the identities at real degree (P_v' = C^(3/2)_{v-1}, the Jacobi and
    # Laguerre shifts); central differences of the values, h = 1e-6.
    cases: list[SlopeCase] = [
        (pf.eval_legendre, ([7.3, -3.6],), [0.41, -0.7]),
        (pf.eval_gegenbauer, ([5.4, 0.3], [1.7, 0.6]), [0.2, 1.5]),
        (pf.eval_sh_jacobi, ([3.5, 0.6], [2.5, 1.3], [0.7, 0.4]), [0.6, 0.3]),
        (pf.eval_genlaguerre, ([4.2, 0.7], [0.8, -0.3]), [3.0, 9.0]),
    ]
    _check_slopes(cases, 0.0)


#: Near ``x = -1`` (the connection formula about ``z = 1``, ``_poly_real._connection``):
#: distances ``1 + x`` from 1e-1 to one ulp and ``x = -1`` itself, the switch-over at
#: ``x = 0`` (``z = 1/2``) and both sides of it, and ``b = c - a - b`` of the Gauss
#: function integer (the logarithmic case: Legendre, half-integer Gegenbauer ``g``),
#: near an integer (1e-10, 1e-3 off) and negative.  name -> (degrees, parameter tuples).
NEAR_X = (
    -1.0,
    float(np.nextafter(-1.0, 0.0)),
    -1 + 1e-14,
    -1 + 1e-11,
    -1 + 1e-8,
    -1 + 1e-5,
    -0.999,
    -0.97,
    -0.8,
    -1e-9,
)
SWITCH_X = (-(2.0**-53), 0.0, 2.0**-53, 1e-9)
NEAR: dict[str, tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]] = {
    "legendre": ((0.5, 2.3, 17.6, 43.9, -7.2), ((),)),
    "gegenbauer": (
        (0.7, 3.4, 12.9, 38.2),
        ((1.5,), (3.5,), (3.5 + 1e-10,), (3.5 - 1e-3,), (0.25,), (8.2,)),
    ),
    "jacobi": (
        (0.6, 4.3, 21.7, 47.1),
        ((0.3, 0.0), (1.2, 2.0), (0.4, 2.0 + 1e-10), (2.5, 1.0 - 1e-3), (0.7, -0.6), (-0.5, 4.3)),
    ),
}


def _near_points(name: str) -> list[np.ndarray]:
    degrees, params = NEAR[name]
    rows = [(n, *p, x) for n in degrees for p in params for x in (*NEAR_X, *SWITCH_X)]
    return [np.asarray(col, np.float64) for col in zip(*rows, strict=True)]


@pytest.mark.parametrize("name", list(NEAR))
def test_real_degree_near_minus_one_against_mpmath(name: str) -> None:
    # The declared oracle (mpmath at 40 digits through SciPy's hyp2f1 definitions; at
    # x = -1 the signed limit): finite values to the family's tolerance, with an
    # absolute floor of 1e-14 times the size of the neighbouring degrees' values (near
    # a zero in the degree, the recurrence's error is absolute); +-inf exactly.
    fn, _, _, rtol = CASES[name]
    args = _near_points(name)
    got = _values(fn, *args)
    scale = _values(fn, args[0] + 1.0, *args[1:])
    want = pf._real_hyper("eval_" + name, *args)
    finite = np.isfinite(want)
    assert np.array_equal(got[~finite], want[~finite]), (got[~finite], want[~finite])
    floor = 1e-14 * np.maximum(np.abs(scale[finite]), 1.0)
    err = np.abs(got[finite] - want[finite]) / np.maximum(np.abs(want[finite]), floor / rtol)
    worst = int(np.argmax(err))
    assert err[worst] <= rtol, (name, float(err[worst]), [float(a[finite][worst]) for a in args])


def test_the_limit_at_minus_one_has_the_sign_scipy_drops() -> None:
    # SciPy returns +inf at x = -1 for every non-integer degree with b >= 0 (hyp2f1 at
    # z = 1 with c - a - b <= 0); the function's limit there has a sign, which mpmath
    # shows just above -1: P_2.5 tends to -inf, P_1.7 to +inf.  For b < 0 the value is
    # finite (Gauss's sum).
    got = _values(pf.eval_legendre, [2.5, 1.7], -1.0)
    (jac,) = _values(pf.eval_jacobi, 2.3, 1.2, -0.5, -1.0)
    assert list(got) == [-np.inf, np.inf]
    assert list(sc.eval_legendre([2.5, 1.7], -1.0)) == [np.inf, np.inf]
    with mpmath.workdps(30):
        want = mpmath.jacobi(2.3, 1.2, -0.5, -1)
    assert abs(jac - float(want)) <= 1e-13 * abs(float(want))


def test_real_degree_derivative_near_minus_one() -> None:
    # d/dx from the connection formula's region (the identities evaluate it at other
    # parameters, b + 1 included: Legendre's derivative is a Gegenbauer function with an
    # integer b = 1); central differences with a step relative to 1 + x.
    cases: list[SlopeCase] = [
        (pf.eval_legendre, ([7.3, -3.6, 21.4],), [-0.9999, -0.97, -0.4]),
        (pf.eval_gegenbauer, ([5.4, 2.2, 13.1], [1.5, 0.8, 3.7]), [-0.99, -0.99999, -0.3]),
        (
            pf.eval_jacobi,
            ([3.5, 9.2, 30.3], [0.4, 1.1, 2.0], [2.0, -0.4, 1.5]),
            [-0.999, -0.9, -0.6],
        ),
        (pf.eval_sh_jacobi, ([3.5, 0.6], [2.5, 1.3], [0.7, 0.4]), [0.0005, 0.1]),
    ]
    _check_slopes(cases, 1e-6)


@pytest.mark.numerics
def test_float32_one_ulp_above_minus_one_is_not_minus_one() -> None:
    # z = (1 - x)/2 rounds to 1 near x = -1 (float32: up to 1 + x = 6e-8; float64 one
    # ulp either side, see NEAR_X and NANS), which would give the infinite limit at -1
    # there; the side is decided by the exact y = (1 + x)/2.
    x32 = np.array([np.nextafter(np.float32(-1.0), np.float32(0.0)), -1.0 + 2.0**-23], np.float32)
    with jax.enable_x64(True):
        got = np.asarray(pf.eval_legendre(jnp.full(2, 2.3, jnp.float32), jnp.asarray(x32)))
    with mpmath.workdps(40):
        want = [float(mpmath.legenp(2.3, 0, float(t), type=2)) for t in x32]
    np.testing.assert_allclose(got, want, rtol=5e-6)


#: Degrees a few ulp, 1e-12 and 1e-8 (relative) from an integer, as a computed degree
#: lands (``0.1 * 80`` is 8.000000000000002), and tiny degrees of either sign.
NEAR_INTEGER_DEGREES = (
    8.000000000000002,
    7.999999999999998,
    1.0 - 2.0**-52,
    1.0 + 2.0**-51,
    2.0 + 1e-12,
    13.0 - 1.3e-11,
    30.0 + 3e-7,
    49.99999999999999,
    -1e-20,
    -1e-300,
    1e-20,
)


def test_degrees_near_an_integer_or_zero_against_mpmath() -> None:
    # The connection formula (x below 0) divides Gamma-function poles at integer
    # degrees: sin(pi w) for w near +-1 reduced only to [-1, 1] rounds pi w to 4e-16
    # absolute against a sine of ~1e-14, and P_8.000000000000002(-0.52) is then 36% off
    # (181 of 400 random near-integer points of Legendre beyond 1e-11, a few in 10 of
    # Jacobi).  A tiny negative Legendre degree reflected to -v - 1 rounds to the
    # integer -1 and gives nan.
    n = np.asarray(NEAR_INTEGER_DEGREES)
    x = np.array([-0.9, -0.52, -0.167, 0.35])
    cases: list[tuple[str, tuple[Any, ...]]] = [
        ("legendre", (n[:, None], x)),
        ("sh_legendre", (n[:, None], (x + 1.0) / 2.0)),
        ("gegenbauer", (n[:, None], 2.7, x)),
        ("jacobi", (n[:, None], 1.9, 0.0, x)),
        ("jacobi", (n[:, None], 0.6, -0.4, x)),
    ]
    for name, cols in cases:
        fn, ref, _, rtol = CASES[name]
        args = [np.ravel(c) for c in np.broadcast_arrays(*(np.asarray(c, float) for c in cols))]
        got = _values(fn, *args)
        with mpmath.workdps(40):
            points = zip(*args, strict=True)
            want = np.array([float(ref(*(mpmath.mpf(float(v)) for v in p))) for p in points])
        err = np.abs(got - want) / np.maximum(np.abs(want), 1e-14)
        err = np.where(np.isnan(err), np.inf, err)  # a nan where mpmath has a value
        worst = int(np.argmax(err))
        assert err[worst] <= rtol, (name, float(err[worst]), [float(a[worst]) for a in args])


@pytest.mark.numerics
def test_chebyshev_real_degree_near_minus_one_against_mpmath() -> None:
    # T_v(x) = cos(v acos x): acos depends on 1 + x most near -1, which (1 - x) / 2 rounded
    # away (T_13.49 one ulp above -1 7e-7 off; 734 of 3000 points log-spaced towards
    # -1 beyond 1e-12).  The declared tolerance: 1e-12 relative, 1e-13 absolute.
    degrees = np.array([0.37, 2.5, 13.490223689917771, 17.500785338464002, 19.9])
    x = -1.0 + 2.0**-52 * np.array([1.0, 2.0, 23.0, 1e3, 1e6, 1e10, 1e14])
    n, xs = (np.ravel(c) for c in np.broadcast_arrays(degrees[:, None], x))
    for fn, scale in ((pf.eval_chebyt, 1.0), (pf.eval_chebyc, 2.0)):
        got = _values(fn, n, scale * xs)
        with mpmath.workdps(40):
            points = zip(n, xs, strict=True)
            want = np.array([scale * float(mpmath.chebyt(float(v), float(t))) for v, t in points])
        err = np.abs(got - want) / np.maximum(np.abs(want), 0.1)
        worst = int(err.argmax())
        assert err[worst] <= 1e-12, (fn.__name__, float(err[worst]), n[worst], xs[worst])


def test_tiny_and_near_pole_parameters_against_mpmath() -> None:
    # The normalising binomial formed through a rounded top = n + 2a - 1 (or n + a) loses a tiny
    # 2a, or an a + 1 near 0 (eval_gegenbauer(2.5, 1e-12, 0.4) 9e-5 off, eval_jacobi(2.5,
    # -0.99999999, 0.2, 0.3) 1e-8, and the Gegenbauer function at a tiny degree and a tiny
    # negative alpha 0 for -9.5e-21).
    cases: list[tuple[str, list[tuple[float, ...]]]] = [
        (
            "gegenbauer",
            [
                (1e-10, 1e-10, 0.5),
                (2.5, 1e-12, 0.4),
                (7.3, 1e-9, -0.6),
                (2.67e-218, -1.27e-238, 1.376),
            ],
        ),
        (
            "jacobi",
            [
                (1e-10, -0.9999999, 0.3, 0.5),
                (2.5, -0.99999999, 0.2, 0.3),
                (4.5, -0.9999999999, 1.0, -0.7),
            ],
        ),
        ("genlaguerre", [(2.5, -0.99999999, 3.0), (7.7, -0.9999999999, 0.5)]),
    ]
    for name, points in cases:
        fn, ref, _, rtol = CASES[name]
        got = _values(fn, *(np.array(col) for col in zip(*points, strict=True)))
        # Enough digits that n + 2a - 1 keeps a 1e-238 beside 1.
        with mpmath.workdps(260):
            want = [float(ref(*(mpmath.mpf(v) for v in p))) for p in points]
        np.testing.assert_allclose(got, want, rtol=rtol, err_msg=name)
