"""Carlson's symmetric integrals, incomplete elliptic integrals, Jacobi functions and the AGM.

Methods:

* ``elliprf, elliprd, elliprj`` (real arguments): Carlson's duplication
  theorem (B. C. Carlson, "Numerical computation of real or complex elliptic
  integrals", Numer. Algorithms 10 (1995) 13-26; DLMF 19.36.i): the arguments
  are replaced by ``(x + lambda)/4``, ``lambda = sqrt(x)sqrt(y) + sqrt(y)sqrt(z)
  + sqrt(z)sqrt(x)``, until their relative spread about the mean is below
  ``2.5e-3`` (float64; float32 ``5e-2``), then the fifth-order Taylor series in
  the elementary symmetric functions is summed.  Each element stops iterating
  on its own (values do not depend on the other elements of a call); large
  calls iterate in chunks of 2048 elements (``elliprj``'s grouped by their
  expected number of steps first, see ``_rj_class``).  ``elliprj`` sums ``RC(1, 1 + e_m)``
  in closed form (``atan``/``atanh``, a series near 0); negative ``p`` in
  ``elliprj`` is outside the declared domain.
* ``elliprc``: in closed form (``acos`` through a polynomial ``asin``, or
  ``log1p``; see :func:`_rc_pos`); negative ``y`` gives the Cauchy principal
  value ``sqrt(x/(x-y)) RC(x-y, -y)``.
* ``elliprg = (z RF - (x-z)(y-z) RD / 3 + sqrt(x y / z)) / 2`` (DLMF 19.21.10)
  with ``z`` the median argument, so that all three terms are non-negative.
* ``ellipkinc(phi, m) = s RF(c^2, 1 - m s^2, 1)`` and ``ellipeinc = s RF
  - m s^3 RD(c^2, 1 - m s^2, 1) / 3`` (``s, c = sin, cos`` of ``phi`` reduced
  modulo ``pi``), plus ``2 n K(m)`` / ``2 n E(m)`` for the ``n`` half periods
  (DLMF 19.25.5, 19.25.9).
* ``ellipj``: the descending Landen / AGM scheme (A&S 16.4): ``a_{n+1} = (a_n +
  b_n)/2``, ``b_{n+1} = sqrt(a_n b_n)``, ``phi_N = 2^N a_N u``, then
  ``phi_{n-1} = (phi_n + asin(c_n sin(phi_n) / a_n)) / 2``, each element with
  its own ``N`` (``c_N / a_N <= eps``), ``dn = cn / cos(phi_1 - phi_0)`` (where
  ``|cn| < |sn|``: ``dn^2 = 1 - m + m (1 - sn)(1 + sn)``); for
  ``(1 - m) cosh(u)^2 < 1e-7`` the first order about ``m = 1`` (A&S 16.15).
* ``agm``: the arithmetic-geometric mean iteration, a fixed number of steps
  (quadratic convergence once the ratio is near 1; enough for any ratio of
  representable numbers).

Derivatives: ``dRF/dx = -RD(y, z, x)/6`` (DLMF 19.18.1), ``RC = RF(x, y, y)``;
``dRD/dx = (RD(x, y, z) - RD(y, z, x)) / (2 (z - x))`` (partial fractions in
the integral) and ``dRD/dz`` from homogeneity (``sum x_i d/dx_i RD = -3/2 RD``);
``elliprg``, ``ellipkinc``, ``ellipeinc`` and ``agm`` are differentiated
through those; ``ellipj`` in ``u``: ``sn' = cn dn``, ``cn' = -sn dn``,
``dn' = -m sn cn``, ``am' = dn``.  ``elliprj`` and ``ellipj``'s ``m`` carry no
derivative here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import (
    chunked,
    entry_point,
    eps_of,
    is_double,
    iterate,
    nondiff,
    partitioned,
    polyval,
    tangent,
)
from ._declare import declare
from ._elliptic import ellipe, ellipk

__all__ = [
    "WRAPPERS",
    "agm",
    "ellipeinc",
    "ellipj",
    "ellipkinc",
    "elliprc",
    "elliprd",
    "elliprf",
    "elliprg",
    "elliprj",
]

_MAX_DUP = 1200  # duplications (bounded by the exponent range; ~30 typical)


def _tol(x: jax.Array) -> float:
    return 2.5e-3 if is_double(x) else 5e-2


def _lam(x: jax.Array, y: jax.Array, z: jax.Array) -> jax.Array:
    sx, sy, sz = jnp.sqrt(x), jnp.sqrt(y), jnp.sqrt(z)
    return sx * sy + sy * sz + sz * sx


def _in_chunks(fn: Callable[..., jax.Array], *args: jax.Array) -> jax.Array:
    """``fn(*args)`` for an elementwise duplication kernel, run by :func:`chunked`: the
    ``while_loop`` state of a 2048-element chunk stays in cache and each chunk stops at
    its own slowest element (the whole batch lock-step costs twice as much at 1e6)."""
    return chunked(lambda *a: (fn(*a),), *args)[0]


# ---------------------------------------------------------------- RF
def _rf_impl(x: jax.Array, y: jax.Array, z: jax.Array) -> jax.Array:
    bad = (x < 0.0) | (y < 0.0) | (z < 0.0) | jnp.isnan(x + y + z)
    zeros = ((x == 0.0).astype(jnp.int32) + (y == 0.0) + (z == 0.0)) >= 2
    inf = jnp.isinf(x) | jnp.isinf(y) | jnp.isinf(z)
    ok = ~(bad | zeros | inf)
    x0, y0, z0 = (jnp.where(ok, v, 1.0) for v in (x, y, z))
    tol = _tol(x)

    def step(_: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        a, b, c = st
        lam = _lam(a, b, c)
        return (a + lam) * 0.25, (b + lam) * 0.25, (c + lam) * 0.25

    def converged(st: tuple[jax.Array, ...]) -> jax.Array:
        a, b, c = st
        m = (a + b + c) / 3.0
        return jnp.maximum(jnp.maximum(jnp.abs(m - a), jnp.abs(m - b)), jnp.abs(m - c)) < tol * m

    init: tuple[jax.Array, ...] = (x0, y0, z0)
    a, b, c = iterate(step, init, converged, _MAX_DUP, x.dtype)
    m = (a + b + c) / 3.0
    dx, dy = 1.0 - a / m, 1.0 - b / m
    dz = -(dx + dy)
    e2 = dx * dy - dz * dz
    e3 = dx * dy * dz
    poly = 1.0 - e2 / 10.0 + e3 / 14.0 + e2 * e2 / 24.0 - 3.0 * e2 * e3 / 44.0
    out = poly / jnp.sqrt(m)
    out = jnp.where(inf & ~bad, 0.0, out)
    return jnp.where(bad, jnp.nan, jnp.where(zeros & ~bad, jnp.inf, out))


# ---------------------------------------------------------------- RD
def _rd_impl(x: jax.Array, y: jax.Array, z: jax.Array) -> jax.Array:
    bad = (x < 0.0) | (y < 0.0) | (z < 0.0) | jnp.isnan(x + y + z)
    sing = ((x == 0.0) & (y == 0.0)) | (z == 0.0)
    inf = jnp.isinf(x) | jnp.isinf(y) | jnp.isinf(z)
    ok = ~(bad | sing | inf)
    x0, y0, z0 = (jnp.where(ok, v, 1.0) for v in (x, y, z))
    tol = _tol(x)
    one = jnp.ones_like(x0)

    def step(_: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        a, b, c, s, f = st
        lam = _lam(a, b, c)
        s = s + f / (jnp.sqrt(c) * (c + lam))
        return (a + lam) * 0.25, (b + lam) * 0.25, (c + lam) * 0.25, s, f * 0.25

    def converged(st: tuple[jax.Array, ...]) -> jax.Array:
        a, b, c = st[:3]
        m = (a + b + 3.0 * c) / 5.0
        spread = jnp.maximum(jnp.maximum(jnp.abs(m - a), jnp.abs(m - b)), jnp.abs(m - c))
        return spread < tol * m

    init: tuple[jax.Array, ...] = (x0, y0, z0, 0.0 * one, one)
    a, b, c, s, f = iterate(step, init, converged, _MAX_DUP, x.dtype)
    m = (a + b + 3.0 * c) / 5.0
    dx, dy = 1.0 - a / m, 1.0 - b / m
    dz = -(dx + dy) / 3.0
    xy = dx * dy
    z2 = dz * dz
    e2 = xy - 6.0 * z2
    e3 = (3.0 * xy - 8.0 * z2) * dz
    e4 = 3.0 * (xy - z2) * z2
    e5 = xy * z2 * dz
    poly = (
        1.0
        - 3.0 * e2 / 14.0
        + e3 / 6.0
        + 9.0 * e2 * e2 / 88.0
        - 3.0 * e4 / 22.0
        - 9.0 * e2 * e3 / 52.0
        + 3.0 * e5 / 26.0
    )
    out = f * poly / (m * jnp.sqrt(m)) + 3.0 * s
    out = jnp.where(inf & ~bad & ~sing, 0.0, out)
    return jnp.where(bad, jnp.nan, jnp.where(sing & ~bad, jnp.inf, out))


@jax.custom_jvp
def _rf(x: jax.Array, y: jax.Array, z: jax.Array) -> jax.Array:
    return _in_chunks(_rf_impl, x, y, z)


@_rf.defjvp
def _rf_jvp(
    primals: tuple[jax.Array, ...], tangents: tuple[jax.Array, ...]
) -> tuple[jax.Array, jax.Array]:
    x, y, z = primals
    dx, dy, dz = tangents
    d = -(_rd(y, z, x) * dx + _rd(x, z, y) * dy + _rd(x, y, z) * dz) / 6.0
    return _rf(x, y, z), d


@jax.custom_jvp
def _rd(x: jax.Array, y: jax.Array, z: jax.Array) -> jax.Array:
    return _in_chunks(_rd_impl, x, y, z)


@_rd.defjvp
def _rd_jvp(
    primals: tuple[jax.Array, ...], tangents: tuple[jax.Array, ...]
) -> tuple[jax.Array, jax.Array]:
    x, y, z = primals
    dx, dy, dz = tangents
    r = _rd(x, y, z)
    ddx = (r - _rd(y, z, x)) / (2.0 * (z - x))
    ddy = (r - _rd(x, z, y)) / (2.0 * (z - y))
    ddz = (-1.5 * r - x * ddx - y * ddy) / z
    return r, ddx * dx + ddy * dy + ddz * dz


# ---------------------------------------------------------------- RC
# Taylor coefficients of ``(asin(t) - t) / t**3`` in ``z = t**2`` (highest degree first):
# ``asin(t) = sum_n binom(2n, n) t**(2n+1) / (4**n (2n+1))``.  On ``|t| <= 1/2`` the terms
# fall by 4 per degree: 24 terms reach 2e-18 (float64), 10 reach 3e-8 (float32).
_ASIN = [math.comb(2 * n, n) / (4.0**n * (2 * n + 1)) for n in range(24, 0, -1)]


def _asin(t: jax.Array) -> jax.Array:
    """``asin(t)`` for ``|t| <= 1`` from a polynomial: about a tenth of the time of XLA's
    ``asin`` on CPU, and the same rounding in scalar and vector code (only ``+``, ``*``,
    ``sqrt``).  ``|t| > 1/2`` by ``asin(t) = pi/2 - 2 asin(sqrt((1 - |t|) / 2))``."""
    coeffs = _ASIN if is_double(t) else _ASIN[-9:]
    a = jnp.abs(t)
    big = a > 0.5
    r = jnp.where(big, jnp.sqrt((1.0 - a) * 0.5), a)
    z = r * r
    v = r + r * z * polyval(z, coeffs)
    v = jnp.where(big, 0.5 * math.pi - 2.0 * v, v)
    return jnp.where(t < 0.0, -v, v)


def _rc_pos(x: jax.Array, y: jax.Array) -> jax.Array:
    """``RC(x, y)`` for ``x >= 0, y > 0`` in closed form (DLMF 19.2.18-19.2.20).

    With ``w = sqrt|y - x|``: ``RC = acos(sqrt(x / y)) / w`` for ``x < y``, the angle taken
    by ``asin`` of whichever of ``w / sqrt(y)`` and ``sqrt(x / y)`` is below ``sqrt(1/2)``
    (where ``asin`` is well conditioned); ``RC = log1p(t) / w`` for ``x > y`` with
    ``t = (w + (x - y) / (sqrt x + sqrt y)) / sqrt y`` (``= sqrt(x / y) - 1 + w / sqrt y``,
    free of cancellation).  ``y - x`` is exact near ``x = y``, so neither form cancels.
    """
    sx, sy = jnp.sqrt(x), jnp.sqrt(y)
    diff = x - y
    w = jnp.sqrt(jnp.abs(diff))
    ws = jnp.where(w == 0.0, 1.0, w)
    # x < y: the angle whose sine is w / sy and cosine sx / sy.
    steep = w > sx
    theta = _asin(jnp.where(steep, sx, w) / sy)
    theta = jnp.where(steep, 0.5 * math.pi - theta, theta)
    # x > y: acosh(sqrt(x / y)) = log1p(t); past ~1e308 the ratio overflows.
    t = (w + diff / (sx + sy)) / sy
    hyp = jnp.where(jnp.isinf(t), jnp.log(sx + w) - jnp.log(sy), jnp.log1p(t))
    out = jnp.where(diff > 0.0, hyp, theta) / ws
    return jnp.where(w == 0.0, 1.0 / sy, out)


@jax.custom_jvp
def _rc_p(x: jax.Array, y: jax.Array) -> jax.Array:
    return _rc_pos(x, y)


@_rc_p.defjvp
def _rc_p_jvp(
    primals: tuple[jax.Array, ...], tangents: tuple[jax.Array, ...]
) -> tuple[jax.Array, jax.Array]:
    x, y = primals
    dx, dy = tangents
    return _rc_p(x, y), -_rd(y, y, x) * dx / 6.0 - _rd(x, y, y) * dy / 3.0


def _rc(x: jax.Array, y: jax.Array) -> jax.Array:
    bad = (x < 0.0) | (y == 0.0) | jnp.isnan(x) | jnp.isnan(y)
    neg = y < 0.0
    # Cauchy principal value: RC(x, y) = sqrt(x / (x - y)) RC(x - y, -y).
    xa = jnp.where(neg, x - y, x)
    ya = jnp.where(neg, -y, y)
    ok = ~bad & jnp.isfinite(xa) & jnp.isfinite(ya)
    v = _rc_p(jnp.where(ok, xa, 1.0), jnp.where(ok, ya, 1.0))
    # Both branches are differentiated: the unused one must stay finite.
    v = jnp.where(neg, jnp.sqrt(jnp.where(ok & neg, x / (x - y), 1.0)) * v, v)
    v = jnp.where(~bad & ~ok, 0.0, v)
    return jnp.where(bad | (neg & jnp.isinf(x)), jnp.nan, v)


# ---------------------------------------------------------------- RJ
def _atan_pos(r: jax.Array) -> jax.Array:
    """``atan(r)`` for ``r >= 0`` through :func:`_asin` of an argument below
    ``sqrt(1/2)`` (XLA's CPU ``atan`` rounds differently in vectorised and scalar
    loops, which would make values depend on the batch shape)."""
    inv = r > 1.0
    t = jnp.where(inv, 1.0 / r, r)
    a = _asin(t / jnp.sqrt(1.0 + t * t))
    return jnp.where(inv, 0.5 * math.pi - a, a)


def _rc1_series(e: jax.Array) -> jax.Array:
    """``RC(1, 1 + e) = sum_k (-e)^k / (2k + 1)`` for ``|e| < 0.1``."""
    series = jnp.zeros_like(e)
    for k in reversed(range(16)):
        series = series * (-e) + 1.0 / (2 * k + 1)
    return series


def _rc1(e: jax.Array) -> jax.Array:
    """``RC(1, 1 + e)`` for ``e > -1`` in closed form, by its series near 0."""
    small = jnp.abs(e) < 0.1
    es = jnp.where(small, e, 0.0)
    series = _rc1_series(es)
    el = jnp.where(small, 1.0, e)
    r = jnp.sqrt(jnp.abs(el))
    big = jnp.where(el > 0.0, _atan_pos(r) / r, jnp.arctanh(jnp.minimum(r, 1.0)) / r)
    return jnp.where(small, series, big)


def _rj_impl(x: jax.Array, y: jax.Array, z: jax.Array, p: jax.Array) -> jax.Array:
    bad = (x < 0.0) | (y < 0.0) | (z < 0.0) | (p <= 0.0) | jnp.isnan(x + y + z + p)
    zeros = ((x == 0.0).astype(jnp.int32) + (y == 0.0) + (z == 0.0)) >= 2
    inf = jnp.isinf(x) | jnp.isinf(y) | jnp.isinf(z) | jnp.isinf(p)
    ok = ~(bad | zeros | inf)
    x0, y0, z0, p0 = (jnp.where(ok, v, 1.0) for v in (x, y, z, p))
    tol = _tol(x)
    one = jnp.ones_like(x0)

    def step(_: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        a, b, c, q, s, f, delta = st
        sa, sb, sc, sq = jnp.sqrt(a), jnp.sqrt(b), jnp.sqrt(c), jnp.sqrt(q)
        lam = sa * sb + sb * sc + sc * sa
        d = (sq + sa) * (sq + sb) * (sq + sc)
        # (p_m - x_m)(p_m - y_m)(p_m - z_m) = 4^(-3m) delta_0: carried, not recomputed
        # from the converging arguments (which would cancel).
        e = delta / (d * d)
        # e falls by ~64 per step: past the first steps every element of a chunk is on
        # the series, and the closed forms (atan, atanh) need not be computed.  Both
        # branches give an element the same value.
        rc = lax.cond(jnp.all(jnp.abs(e) < 0.1), _rc1_series, _rc1, e)
        s = s + f * rc / d
        quarter = (a + lam) * 0.25, (b + lam) * 0.25, (c + lam) * 0.25, (q + lam) * 0.25
        return (*quarter, s, f * 0.25, delta * (1.0 / 64.0))

    def converged(st: tuple[jax.Array, ...]) -> jax.Array:
        a, b, c, q = st[:4]
        m = (a + b + c + 2.0 * q) / 5.0
        spread = jnp.maximum(
            jnp.maximum(jnp.abs(m - a), jnp.abs(m - b)), jnp.maximum(jnp.abs(m - c), jnp.abs(m - q))
        )
        return spread < tol * m

    init: tuple[jax.Array, ...] = (
        x0,
        y0,
        z0,
        p0,
        0.0 * one,
        one,
        (p0 - x0) * (p0 - y0) * (p0 - z0),
    )
    a, b, c, q, s, f, _ = iterate(step, init, converged, _MAX_DUP, x.dtype)
    m = (a + b + c + 2.0 * q) / 5.0
    dx, dy, dz = 1.0 - a / m, 1.0 - b / m, 1.0 - c / m
    dp = -(dx + dy + dz) / 2.0
    e2 = dx * dy + dx * dz + dy * dz - 3.0 * dp * dp
    e3 = dx * dy * dz + 2.0 * e2 * dp + 4.0 * dp * dp * dp
    e4 = (2.0 * dx * dy * dz + e2 * dp + 3.0 * dp * dp * dp) * dp
    e5 = dx * dy * dz * dp * dp
    poly = (
        1.0
        - 3.0 * e2 / 14.0
        + e3 / 6.0
        + 9.0 * e2 * e2 / 88.0
        - 3.0 * e4 / 22.0
        - 9.0 * e2 * e3 / 52.0
        + 3.0 * e5 / 26.0
    )
    out = f * poly / (m * jnp.sqrt(m)) + 6.0 * s
    out = jnp.where(inf & ~bad, 0.0, out)
    out = jnp.where(bad, jnp.nan, jnp.where(zeros & ~bad, jnp.inf, out))
    # p = -inf: 0 like SciPy (the principal value's limit).
    xyz_ok = (x >= 0.0) & (y >= 0.0) & (z >= 0.0) & ~zeros
    return jnp.where((p == -jnp.inf) & xyz_ok, 0.0, out)


# ---------------------------------------------------------------- RG
def _rg(x: jax.Array, y: jax.Array, z: jax.Array) -> jax.Array:
    lo = jnp.minimum(jnp.minimum(x, y), z)
    hi = jnp.maximum(jnp.maximum(x, y), z)
    mid = x + y + z - lo - hi
    mid = jnp.where(jnp.isinf(hi) | jnp.isnan(mid), jnp.maximum(lo, jnp.minimum(x, y)), mid)
    ok = mid > 0.0
    ms = jnp.where(ok, mid, 1.0)
    los, his = jnp.where(ok, lo, 1.0), jnp.where(ok, hi, 1.0)
    rf = _rf(los, his, ms)
    rd = _rd(los, his, ms)
    val = 0.5 * (
        ms * rf + (ms - los) * (his - ms) * rd / 3.0 + jnp.sqrt(los) * jnp.sqrt(his) / jnp.sqrt(ms)
    )
    val = jnp.where(ok, val, 0.5 * jnp.sqrt(hi))
    bad = (lo < 0.0) | jnp.isnan(x + y + z)
    return jnp.where(bad, jnp.nan, jnp.where(jnp.isinf(hi), jnp.inf, val))


# ---------------------------------------------------- ellipkinc / ellipeinc
def _reduce(phi: jax.Array) -> tuple[jax.Array, jax.Array]:
    n = jnp.round(phi / math.pi)
    return n, phi - n * math.pi


def _incomplete(phi: jax.Array, m: jax.Array, second: bool) -> jax.Array:
    finite = jnp.isfinite(phi)
    n, r = _reduce(jnp.where(finite, phi, 0.0))
    s, c = jnp.sin(r), jnp.cos(r)
    delta = 1.0 - m * s * s
    ok = delta >= 0.0
    d = jnp.where(ok, delta, 1.0)
    rf = _rf(c * c, d, jnp.ones_like(d))
    if second:
        rd = _rd(c * c, d, jnp.ones_like(d))
        part = s * rf - m * s * s * s * rd / 3.0
        full = ellipe(m)
    else:
        part = s * rf
        full = ellipk(m)
    out = jnp.where(n == 0.0, part, 2.0 * n * full + part)
    out = jnp.where(ok, out, jnp.nan)
    out = jnp.where(finite, out, jnp.where(m < 1.0, phi, jnp.nan))
    # m = -inf: the integrand vanishes (F) or is infinite (E) off phi = 0.
    if second:
        out = jnp.where(m == -jnp.inf, jnp.inf, out)  # SciPy: inf for every phi
    else:
        out = jnp.where(m == -jnp.inf, 0.0 * phi, out)
    return jnp.where(jnp.isnan(phi) | jnp.isnan(m), jnp.nan, out)


def _ellipkinc_impl(phi: jax.Array, m: jax.Array) -> jax.Array:
    return _incomplete(phi, m, second=False)


def _ellipeinc_impl(phi: jax.Array, m: jax.Array) -> jax.Array:
    return _incomplete(phi, m, second=True)


# ---------------------------------------------------------------- ellipj
# Landen levels: from the last m below 1, c_k / a_k falls below float64's epsilon at k = 9.
_LANDEN = 9


def _ellipj_impl(u: jax.Array, m: jax.Array) -> tuple[jax.Array, ...]:
    ok = (m >= 0.0) & (m <= 1.0) & jnp.isfinite(u)
    ms = jnp.where(ok, m, 0.5)
    us = jnp.where(ok, u, 0.0)
    eps = eps_of(u)
    # Each element takes the AGM steps until its own c_k / a_k <= eps (at least one):
    # ``go[k]`` marks the levels it uses, so its value does not depend on the batch.
    a, b, c = jnp.ones_like(ms), jnp.sqrt(1.0 - ms), jnp.sqrt(ms)
    go = jnp.ones_like(ms, dtype=bool)
    ratios: list[jax.Array] = []
    gos: list[jax.Array] = []
    top, scale = a, a
    for k in range(1, _LANDEN + 1):
        if k > 1:
            go = go & (c > eps * a)
        a, b, c = 0.5 * (a + b), jnp.sqrt(a * b), 0.5 * (a - b)
        ratios.append(c / a)
        gos.append(go)
        top = jnp.where(go, a, top)
        scale = jnp.where(go, 2.0**k, scale)
    phi = scale * top * us

    def back(
        carry: tuple[jax.Array, jax.Array], level: tuple[jax.Array, jax.Array]
    ) -> tuple[tuple[jax.Array, jax.Array], None]:
        phi, _ = carry
        ratio, use = level
        new = 0.5 * (phi + _asin(ratio * jnp.sin(phi)))
        return (jnp.where(use, new, phi), phi), None

    # A loop, not unrolled code: XLA would fuse the unrolled chain into each of the
    # consumers below and compute it several times over (ten times the work, measured).
    # ``prev`` ends as phi_1 (level 1 is always taken).
    levels = (jnp.stack(ratios[::-1]), jnp.stack(gos[::-1]))
    (phi, prev), _ = lax.scan(back, (phi, phi), levels)
    sn, cn = jnp.sin(phi), jnp.cos(phi)
    # The amplitude carries an absolute error (~eps |u|), so cn is relatively inexact
    # near its zeros and sn near its extrema.  dn = cn / cos(phi_1 - phi_0) (Landen) is
    # free of the cancellation in 1 - m sn^2 but inherits cn's relative error: where
    # |cn| < |sn|, dn^2 = (1 - m) + m cn^2 instead, whose error is cn's absolute one
    # (cn ~ 1e-3 in float32 lost 4e-4 of dn through the quotient).  Not (1 - m) + m (1 -
    # sn)(1 + sn): sn rounds to +-1 an ulp short, and float32 dn(10 | 1 - 1.2e-7) came
    # out 3.45e-4 for 4.19e-4.
    m1 = 1.0 - ms
    from_cn = jnp.sqrt(m1 + ms * (cn * cn))
    dn = jnp.where(jnp.abs(cn) < jnp.abs(sn), from_cn, cn / jnp.cos(prev - phi))
    # m within (1 - m) cosh(u)^2 < 1e-7 of 1 (m == 1 included, where the AGM does not
    # converge): the first order in 1 - m about sn = tanh, cn = dn = sech, am = gd(u)
    # (A&S 16.15; the neglected second order, ~((1 - m) cosh(u)^2)^2 / 64, is below
    # 2e-16).  The Landen amplitude carries ~eps 2^N a_N |u| absolute there, which
    # cn ~ sech(u) cannot afford.
    sh, ch, th = jnp.sinh(us), jnp.cosh(us), jnp.tanh(us)
    se = 1.0 / ch
    near = m1 * ch * ch < 1e-7
    first = near & (m1 > 0.0)  # ch * sh is finite there
    q = 0.25 * m1
    minus = jnp.where(first, q * (sh * ch - us), 0.0)
    plus = jnp.where(first, q * (sh * ch + us), 0.0)
    gd = _atan_pos(jnp.abs(sh))
    sn = jnp.where(near, th + minus * se * se, sn)
    cn = jnp.where(near, se - minus * th * se, cn)
    dn = jnp.where(near, se + plus * th * se, dn)
    phi = jnp.where(near, jnp.where(us < 0.0, -gd, gd) + minus * se, phi)
    outs = (sn, cn, dn, phi)
    return tuple(jnp.where(ok, o, jnp.nan) for o in outs)


@jax.custom_jvp
def _ellipj(u: jax.Array, m: jax.Array) -> tuple[jax.Array, ...]:
    return _ellipj_impl(u, m)


def _ellipj_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[object, object]
) -> tuple[tuple[jax.Array, ...], tuple[jax.Array, ...]]:
    u, m = primals
    du, dm = tangents
    nondiff(dm, "ellipj", "m")
    sn, cn, dn, ph = _ellipj(u, m)
    t = tangent(du, u)
    return (sn, cn, dn, ph), (cn * dn * t, -sn * dn * t, -m * sn * cn * t, dn * t)


_ellipj.defjvp(_ellipj_jvp, symbolic_zeros=True)


# ------------------------------------------------------------------- agm
_AGM_STEPS = 20


def _agm_impl(a: jax.Array, b: jax.Array) -> jax.Array:
    neg = (a < 0.0) & (b < 0.0)
    x = jnp.where(neg, -a, a)
    y = jnp.where(neg, -b, b)
    ok = (x > 0.0) & (y > 0.0) & jnp.isfinite(x) & jnp.isfinite(y)
    xs, ys = jnp.where(ok, x, 1.0), jnp.where(ok, y, 1.0)
    for _ in range(_AGM_STEPS):
        xs, ys = 0.5 * xs + 0.5 * ys, jnp.sqrt(xs) * jnp.sqrt(ys)
    out = 0.5 * xs + 0.5 * ys
    zero = ((x == 0.0) | (y == 0.0)) & (x >= 0.0) & (y >= 0.0)
    out = jnp.where(zero, 0.0, out)
    infs = (jnp.isinf(x) | jnp.isinf(y)) & (x > 0.0) & (y > 0.0)
    out = jnp.where(infs, jnp.inf, out)
    bad = ~(ok | zero | infs) | (zero & (jnp.isinf(x) | jnp.isinf(y)))
    out = jnp.where(bad, jnp.nan, out)
    return jnp.where(neg, -out, out)


_ELLIPRF = entry_point(_rf)
_ELLIPRD = entry_point(_rd)
_ELLIPRC = entry_point(_rc)


_RJ_CLASSES = 256  # 16 x 16, see _rj_class


def _rj_class(x: jax.Array, y: jax.Array, z: jax.Array, p: jax.Array) -> jax.Array:
    """``elliprj``'s cost class for :func:`partitioned`: the duplication runs until the
    spread of the arguments (which falls by exactly 4 a step) is below ``tol`` times their
    mean, and the ``RC`` terms need their closed form (not the series) while the spread
    is large beside ``lambda``.  So the class is the pair of binary logarithms of
    ``spread / mean`` and ``spread / lambda`` at the start (16 classes each)."""
    m = (x + y + z + 2.0 * p) / 5.0
    spread = jnp.maximum(
        jnp.maximum(jnp.abs(m - x), jnp.abs(m - y)), jnp.maximum(jnp.abs(m - z), jnp.abs(m - p))
    )

    def klass(ratio: jax.Array, offset: float) -> jax.Array:
        k = jnp.floor(jnp.log2(ratio) + offset)
        return jnp.clip(jnp.where(jnp.isnan(k), 0.0, k), 0.0, 15.0).astype(jnp.int32)

    return klass(spread / m, 8.0) * 16 + klass(spread / _lam(x, y, z), 4.0)


def _rj_grouped(x: jax.Array, y: jax.Array, z: jax.Array, p: jax.Array) -> jax.Array:
    """``_rj_impl`` with elements grouped by :func:`_rj_class`: the 2048-element chunks'
    lock-step loops then stop near their typical element's count (arguments log-uniform
    over six decades, as in the bench: 7.0 instead of 13.0 duplication steps a chunk, 1.6
    instead of 7.7 of them with the closed-form ``RC``, counted in NumPy)."""
    key = _rj_class(x, y, z, p)
    return partitioned(lambda *a: (_rj_impl(*a),), key, _RJ_CLASSES, x, y, z, p)[0]


_ELLIPRJ = entry_point(_rj_grouped)
_ELLIPRG = entry_point(_rg)
_ELLIPKINC = entry_point(_ellipkinc_impl)
_ELLIPEINC = entry_point(_ellipeinc_impl)
_ELLIPJ = entry_point(_ellipj)
_AGM = entry_point(_agm_impl)


def elliprf(x: ArrayLike, y: ArrayLike, z: ArrayLike) -> jax.Array:
    """Carlson's ``R_F(x, y, z)``, mirroring ``scipy.special.elliprf`` (real ``x, y, z >= 0``).

    Differentiable in all three: ``dR_F/dx = -R_D(y, z, x) / 6``.
    """
    return _ELLIPRF(x, y, z)


def elliprd(x: ArrayLike, y: ArrayLike, z: ArrayLike) -> jax.Array:
    """Carlson's ``R_D(x, y, z)``, mirroring ``scipy.special.elliprd`` (real, ``z > 0``).

    Differentiable in all three (closed forms in ``R_D`` itself; they divide by
    ``z - x`` and ``z - y`` and lose accuracy where those nearly vanish).
    """
    return _ELLIPRD(x, y, z)


def elliprc(x: ArrayLike, y: ArrayLike) -> jax.Array:
    """Carlson's ``R_C(x, y)``, mirroring ``scipy.special.elliprc`` (real; ``y < 0``:
    the Cauchy principal value).  Differentiable in both (``y > 0``)."""
    return _ELLIPRC(x, y)


def elliprj(x: ArrayLike, y: ArrayLike, z: ArrayLike, p: ArrayLike) -> jax.Array:
    """Carlson's ``R_J(x, y, z, p)``, mirroring ``scipy.special.elliprj`` for real
    ``x, y, z >= 0`` and ``p > 0`` (``p <= 0`` gives nan here; SciPy returns the
    principal value).  Accurate to ~1e-15 for arguments within a ratio of ~1e6 of
    each other (checked on ``[1e-3, 1e3]^4``); spreads beyond ~1e20 lose up to 7e-6
    relative (SciPy's Boost table).  Not differentiable (no rule is registered)."""
    return _ELLIPRJ(x, y, z, p)


def elliprg(x: ArrayLike, y: ArrayLike, z: ArrayLike) -> jax.Array:
    """Carlson's ``R_G(x, y, z)``, mirroring ``scipy.special.elliprg`` (real ``>= 0``).

    Differentiable in all three, through ``R_F`` and ``R_D``.
    """
    return _ELLIPRG(x, y, z)


def ellipkinc(phi: ArrayLike, m: ArrayLike) -> jax.Array:
    """Incomplete elliptic integral of the first kind ``F(phi | m)``, mirroring
    ``scipy.special.ellipkinc``.  Differentiable in both, through ``R_F``."""
    return _ELLIPKINC(phi, m)


def ellipeinc(phi: ArrayLike, m: ArrayLike) -> jax.Array:
    """Incomplete elliptic integral of the second kind ``E(phi | m)``, mirroring
    ``scipy.special.ellipeinc``.  Differentiable in both, through ``R_F`` and ``R_D``."""
    return _ELLIPEINC(phi, m)


def ellipj(u: ArrayLike, m: ArrayLike) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Jacobi elliptic functions ``(sn, cn, dn, am)`` of ``u`` for parameter
    ``0 <= m <= 1``, mirroring ``scipy.special.ellipj`` (other ``m``: nan).

    Differentiable in ``u`` only.
    """
    sn, cn, dn, ph = _ELLIPJ(u, m)
    return sn, cn, dn, ph


def agm(a: ArrayLike, b: ArrayLike) -> jax.Array:
    """Arithmetic-geometric mean of ``a`` and ``b``, mirroring ``scipy.special.agm``.

    Both negative: ``-agm(-a, -b)``; opposite signs: nan.  Differentiable in both.
    """
    return _AGM(a, b)


_POS3 = Domain(((1e-3, 1e3), (1e-3, 1e3), (1e-3, 1e3)), log=True)

WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "elliprf",
        elliprf,
        domains=(_POS3, Domain(((0.0, 2.0), (0.1, 2.0), (0.1, 2.0)))),
        differentiable=(0, 1, 2),
        edge_cases=(EdgeCase((0.0, 0.0, 1.0)), EdgeCase((1.0, 1.0, 1.0))),
    ),
    declare(
        "elliprd",
        elliprd,
        domains=(_POS3,),
        differentiable=(0, 1, 2),
        edge_cases=(EdgeCase((0.0, 0.0, 1.0)), EdgeCase((1.0, 1.0, 1.0))),
    ),
    declare(
        "elliprc",
        elliprc,
        domains=(Domain(((1e-3, 1e3), (1e-3, 1e3)), log=True), Domain(((0.0, 5.0), (-5.0, -0.01)))),
        differentiable=(0, 1),
        edge_cases=(EdgeCase((1.0, 1.0)), EdgeCase((0.0, 1.0))),
    ),
    declare(
        "elliprj",
        elliprj,
        domains=(Domain(((1e-3, 1e3),) * 4, log=True),),
        # float32: the duplication's rounding adds up over its steps.  On 2000 log-uniform
        # points of the domain it is within 4.3e-6 on CPU and on an H100 (jax 0.11.2), but
        # at the edge point (500, 500, 500, 1e-3) 4.2e-6 on CPU and 1.3e-5 on the H100.
        tolerances={"float64": (1e-12, 1e-300), "float32": (3e-5, 1e-30)},
        edge_cases=(EdgeCase((1.0, 1.0, 1.0, 1.0)),),
    ),
    declare(
        "elliprg",
        elliprg,
        domains=(_POS3, Domain(((0.0, 2.0), (0.0, 2.0), (0.1, 2.0)))),
        differentiable=(0, 1, 2),
        edge_cases=(EdgeCase((0.0, 0.0, 1.0)), EdgeCase((1.0, 1.0, 1.0))),
    ),
    declare(
        "ellipkinc",
        ellipkinc,
        domains=(Domain(((-10.0, 10.0), (-5.0, 0.99))),),
        differentiable=(0, 1),
        edge_cases=(EdgeCase((1.0, 2.0)), EdgeCase((0.5, 1.0)), EdgeCase((10.0, 0.5))),
    ),
    declare(
        "ellipeinc",
        ellipeinc,
        domains=(Domain(((-10.0, 10.0), (-5.0, 1.0))),),
        differentiable=(0, 1),
        edge_cases=(EdgeCase((1.0, 2.0)), EdgeCase((0.5, 1.0)), EdgeCase((10.0, 0.5))),
    ),
    declare(
        "agm",
        agm,
        domains=(Domain(((1e-3, 1e3), (1e-3, 1e3)), log=True),),
        differentiable=(0, 1),
        edge_cases=(EdgeCase((-1.0, -2.0)), EdgeCase((1.0, -2.0)), EdgeCase((1e300, 1e-300))),
    ),
)
