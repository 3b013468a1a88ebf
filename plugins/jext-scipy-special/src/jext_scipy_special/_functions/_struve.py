"""Struve functions of real order: ``struve`` (``H_v``) and ``modstruve`` (``L_v``).

Methods, for ``x > 0`` (``s = -1`` for ``H``, ``+1`` for ``L``):

* ``x < X_A(v) = max(37, 1.5 v)`` (float32: ``max(18, 1.5 v)``): the power series (DLMF
  11.2.1, 11.2.2) ``t_0 sum_k r_k``, ``t_0 = 2 (x/2)^(v+1) / (sqrt(pi) Gamma(v + 3/2))``,
  ``r_0 = 1``, ``r_(k+1) = r_k s (x/2)^2 / ((k + 3/2)(k + v + 3/2))``, summed in
  double-word arithmetic (``H``'s alternating terms reach ``~e^x`` times the sum: at
  ``x = 37`` sixteen digits cancel, which double-word's 32 absorb).  The prefactor ``t_0``
  is applied once, in working precision.  Each element stops when its terms are below
  ``eps/16`` of its sum and can no longer grow.
* ``x >= X_A(v)``: ``H_v = Y_v + S``, ``L_v = I_v + S`` with the asymptotic series of
  DLMF 11.6.1 / 11.6.2, ``S ~ sum_k c_k``, ``c_0 = -s (x/2)^(v-1) / (sqrt(pi) Gamma(v +
  1/2))``, ``c_(k+1) = c_k (-s)(k + 1/2)(v - 1/2 - k) / (x/2)^2``, summed while its terms
  decrease (their smallest is ``~e^(-x)`` times the first for ``x >= 1.5 v``).  SciPy
  pairs ``L`` with ``I_v`` where the DLMF has ``I_(-v)``: they differ by ``(2/pi) sin(pi v)
  K_v(x)``, ``e^(-2x)`` relative, below the last bit here.  ``Y_v`` and ``I_v`` are the
  plugin's own kernels (:mod:`._bessel_jy`, :mod:`._bessel_family`).
* ``v = -n - 1/2`` (``n >= 1``): ``H_v = (-1)^n J_(n+1/2)``, ``L_v = I_(n+1/2)`` (DLMF 11.4.4,
  11.4.5; the power series' prefactor has a pole there).

SciPy's conventions elsewhere: nan for ``x < 0`` unless ``v`` is an integer (then
``(-1)^(v+1) f(v, -x)``); at ``x = 0``, ``0`` for ``v > -1``, ``2/pi`` at ``v = -1``,
``sign(Gamma(v + 3/2)) inf`` below (nan where ``v + 3/2`` is a negative integer, ``inf``
at ``v = -3/2``); at ``x = +inf``, ``inf`` for ``v >= 1`` and nan below; at infinite order,
``0`` for ``0 < x < 2`` (``L`` also at ``v = -inf``) and nan otherwise.

Derivative in ``x``: ``f_v' = f_(v-1) - (v/x) f_v`` for both (from ``(x^v f_v)' = x^v
f_(v-1)``, DLMF 11.4.27, 11.4.29), one kernel call on the stacked orders ``v, v - 1``;
the order carries no derivative.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._bessel_family import _ive_impl
from ._bessel_jy import jy
from ._common import (
    entry_point,
    eps_of,
    fast_two_sum,
    is_double,
    iterate,
    nondiff,
    partitioned,
    tangent,
    two_prod,
    two_sum,
)
from ._declare import declare
from ._gamma_family import _rgamma_impl

__all__ = ["HARD_POINTS", "WRAPPERS", "modstruve", "struve"]

Pair = tuple[jax.Array, jax.Array]

_SQRT_PI = math.sqrt(math.pi)
_SERIES_CAP = 2000  # power-series terms; about 2x are needed
_SERIES_CLASSES = 8  # cost classes of the power series, by x in steps of 6
_ASYMP_TERMS = 48  # the asymptotic series' terms decrease for at most ~x/2 of them


def _dd_mul(a: Pair, b: Pair) -> Pair:
    p, e = two_prod(a[0], b[0])
    return fast_two_sum(p, e + (a[0] * b[1] + a[1] * b[0]))


def _dd_div(a: Pair, b: Pair) -> Pair:
    q1 = a[0] / b[0]
    p, e = two_prod(q1, b[0])
    r = (((a[0] - p) - e) + a[1]) - q1 * b[1]
    return fast_two_sum(q1, r / b[0])


def _dd_add(a: Pair, b: Pair) -> Pair:
    s, e = two_sum(a[0], b[0])
    return fast_two_sum(s, e + (a[1] + b[1]))


def _power_times(base: jax.Array, power: jax.Array, factor: jax.Array) -> jax.Array:
    """``base^power * factor`` with the power applied in two halves (either half may be
    out of range where the product is not)."""
    half = jnp.power(base, 0.5 * power)
    return (half * factor) * half


def _series_sum(v: jax.Array, x: jax.Array, sign: float) -> jax.Array:
    """``sum_k r_k`` of the power series in double-word arithmetic (``x > 0``)."""
    h = 0.5 * x
    z2 = two_prod(h, h)
    z2 = (sign * z2[0], sign * z2[1])
    tol = eps_of(x) / 16.0
    one = jnp.ones_like(x)
    zero = jnp.zeros_like(x)

    def step(_: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        k, r_hi, r_lo, s_hi, s_lo, _ = st
        a = k + 1.5  # exact
        b = two_sum(a, v)
        d = two_prod(a, b[0])
        d = fast_two_sum(d[0], d[1] + a * b[1])
        r = _dd_div(_dd_mul((r_hi, r_lo), z2), d)
        s = _dd_add((s_hi, s_lo), r)
        # Done when the term is negligible and no later term can grow again (every later
        # denominator is positive and larger than (x/2)^2).
        settled = (b[0] > 0.0) & (a * b[0] > h * h)
        done = (jnp.abs(r[0]) <= tol * jnp.abs(s[0])) & settled
        return (k + 1.0, r[0], r[1], s[0], s[1], done | ~jnp.isfinite(s[0]))

    state: tuple[jax.Array, ...] = (zero, one, zero, one, zero, jnp.zeros(x.shape, bool))
    out = iterate(step, state, lambda st: st[5], _SERIES_CAP, x.dtype, unroll=1)
    return out[3] + out[4]


def _asymptotic_sum(v: jax.Array, x: jax.Array, sign: float) -> jax.Array:
    """``f_v - (Y_v or I_v)`` from its asymptotic series, summed while the terms decrease."""
    h = 0.5 * x
    h2 = h * h
    c0 = _power_times(h, v - 1.0, -sign * _rgamma_impl(v + 0.5) / _SQRT_PI)

    def add(k: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        c, total, live = st
        kf = k.astype(x.dtype)
        nxt = c * (-sign * (kf + 0.5) * (v - 0.5 - kf)) / h2
        live = live & (jnp.abs(nxt) < jnp.abs(c))
        return nxt, total + jnp.where(live, nxt, 0.0), live

    init: tuple[jax.Array, ...] = (c0, c0, jnp.ones(x.shape, bool))
    total: jax.Array = lax.fori_loop(0, _ASYMP_TERMS, add, init)[1]
    return total


def _struve_kernel(v: jax.Array, x: jax.Array, is_h: bool) -> jax.Array:
    """``H_v(x)`` (``is_h``) or ``L_v(x)`` for real ``v`` and ``x``, SciPy's edge values."""
    sign = -1.0 if is_h else 1.0
    ax = jnp.abs(x)
    finite = jnp.isfinite(v) & (ax > 0.0) & (ax < jnp.inf)
    n_half = -v - 0.5
    half_int = finite & (n_half == jnp.round(n_half)) & (n_half >= 1.0)
    x_a = jnp.maximum(37.0 if is_double(x) else 18.0, 1.5 * v)
    asym = finite & (ax >= x_a) & ~half_int
    series = finite & ~asym & ~half_int
    # Power series.
    vs = jnp.where(series, v, 0.0)
    xs = jnp.where(series, ax, 1.0)
    t0 = _power_times(0.5 * xs, vs + 1.0, (2.0 / _SQRT_PI) * _rgamma_impl(vs + 1.5))
    # Grouped by x (the number of terms, ~x): each chunk's loop stops at its own slowest.
    key = jnp.clip(jnp.floor(xs * (1.0 / 6.0)), 0.0, _SERIES_CLASSES - 1.0).astype(jnp.int32)
    (total,) = partitioned(lambda a, b: (_series_sum(a, b, sign),), key, _SERIES_CLASSES, vs, xs)
    by_series = t0 * total
    # Bessel functions: the asymptotic region's Y_v or I_v, and the half-integer orders.
    bessel = asym | half_int
    vb = jnp.where(half_int, n_half + 0.5, jnp.where(asym, v, 0.0))
    xb = jnp.where(bessel, ax, 1.0)  # elsewhere a cheap point
    if is_h:
        j, y = jy(vb, xb)
        odd = jnp.mod(n_half, 2.0) == 1.0
        by_half = jnp.where(odd, -j, j)
        base = y
    else:
        e_half = jnp.exp(0.5 * xb)
        base = (_ive_impl(vb, xb) * e_half) * e_half
        by_half = base
    va = jnp.where(asym, v, 0.0)
    by_asym = base + _asymptotic_sum(va, jnp.where(asym, ax, 40.0), sign)
    out = jnp.where(asym, by_asym, jnp.where(half_int, by_half, by_series))
    # x < 0: (-1)^(v+1) f(v, |x|) for integer v, nan otherwise.
    vint = v == jnp.round(v)
    even = jnp.mod(v, 2.0) == 0.0
    out = jnp.where(x < 0.0, jnp.where(vint, jnp.where(even, -out, out), jnp.nan), out)
    # x = 0 (SciPy: 0 above v = -1, 2/pi at -1, sign(Gamma(v + 3/2)) inf below, where
    # Gamma's sign is nan at its poles and + at v = -3/2).
    g = v + 1.5
    g_pole = (g < 0.0) & (g == jnp.round(g))
    g_neg = (g < 0.0) & (jnp.mod(jnp.floor(g), 2.0) == 1.0)
    below = jnp.where(g_pole, jnp.nan, jnp.where(g_neg, -jnp.inf, jnp.inf))
    at0 = jnp.where(v > -1.0, 0.0, jnp.where(v == -1.0, 2.0 / math.pi, below))
    out = jnp.where(x == 0.0, at0, out)
    # x = +-inf: inf for v >= 1 (-inf at x = -inf for even v), nan otherwise.
    at_inf = jnp.where(v >= 1.0, jnp.inf, jnp.nan)
    at_ninf = jnp.where(vint & (v >= 1.0), jnp.where(even, -jnp.inf, jnp.inf), jnp.nan)
    out = jnp.where(x == jnp.inf, at_inf, jnp.where(x == -jnp.inf, at_ninf, out))
    # Infinite order: 0 for 0 < x < 2 (H: only v = +inf), nan otherwise.
    inf_ok = (v == jnp.inf) if is_h else jnp.isinf(v)
    at_vinf = jnp.where(inf_ok & (x > 0.0) & (x < 2.0), 0.0, jnp.nan)
    out = jnp.where(jnp.isinf(v), at_vinf, out)
    return jnp.where(jnp.isnan(v) | jnp.isnan(x), jnp.nan, out)


def _with_derivative(is_h: bool) -> jax.custom_jvp[jax.Array]:
    name = "struve" if is_h else "modstruve"

    @jax.custom_jvp
    def f(v: jax.Array, x: jax.Array) -> jax.Array:
        return _struve_kernel(v, x, is_h)

    def f_jvp(primals: Pair, tangents: tuple[object, object]) -> Pair:
        v, x = primals
        dv, dx = tangents
        nondiff(dv, name, "v")
        # One kernel on the orders v and v - 1 (one copy of it in the program).
        both = _struve_kernel(jnp.stack([v, v - 1.0]), jnp.stack([x, x]), is_h)
        out, lower = both[0], both[1]
        return out, (lower - v / x * out) * tangent(dx, x)

    f.defjvp(f_jvp, symbolic_zeros=True)
    return f


_STRUVE = entry_point(_with_derivative(True))
_MODSTRUVE = entry_point(_with_derivative(False))


def struve(v: ArrayLike, x: ArrayLike) -> jax.Array:
    """Struve function ``H_v(x)`` of real order, mirroring ``scipy.special.struve``.

    nan for ``x < 0`` unless ``v`` is an integer (``H_v(-x) = (-1)^(v+1) H_v(x)``).
    Differentiable in ``x``: ``H_v' = H_(v-1) - (v/x) H_v``; not in ``v``.
    """
    return _STRUVE(v, x)


def modstruve(v: ArrayLike, x: ArrayLike) -> jax.Array:
    """Modified Struve function ``L_v(x)`` of real order, mirroring
    ``scipy.special.modstruve``.

    nan for ``x < 0`` unless ``v`` is an integer (``L_v(-x) = (-1)^(v+1) L_v(x)``).
    Differentiable in ``x``: ``L_v' = L_(v-1) - (v/x) L_v``; not in ``v``.
    """
    return _MODSTRUVE(v, x)


# Absolute floor as the Bessel functions' (zeros of H_v, and of L_v for v < -1/2).
# SciPy's own float64 error (against mpmath at 40 digits) reaches 3.2e-12 for H and
# 1.6e-11 for L on these domains, around x ~ 10..30 where its methods hand over; the
# wrappers are within 2e-14 of mpmath there (tests/test_special_struve.py), so they are
# held to SciPy at 2e-11 (H) and 5e-11 (L).  float32: the prefactor (x/2)^(v+1) /
# Gamma(v + 3/2) in float32 carries ~|v log x| ulp (SciPy computes float32 in double).
_TOL_H = {"float64": (2e-11, 1e-14), "float32": (2e-5, 1e-6)}
_TOL_L = {"float64": (5e-11, 1e-14), "float32": (2e-5, 1e-6)}
_DOMAINS = (
    Domain(((-10.0, 20.0), (1e-3, 60.0))),
    Domain(((-5.0, 5.0), (1e-3, 1e3)), log=True),
)
#: Where SciPy's own answer is 1e-12 .. 2e-11 off (found against mpmath), the method
#: boundaries (x = 37 between the series and the asymptotic expansion, x = 1.5 v), a
#: half-integer order and the cancelling region of H's series (x ~ 35, small v): the
#: plugin's tests hold these to mpmath as well.
HARD_POINTS: tuple[tuple[float, float], ...] = (
    (0.5273736445498471, 12.780228019833261),
    (-6.481293883123273, 14.591461668803735),
    (-5.044088598585911, 26.633917052186074),
    (-3.867438756075334, 14.371605595817703),
    (-0.5217, 13.94),
    (0.0, 36.99),
    (0.0, 37.01),
    (30.0, 44.99),
    (30.0, 45.01),
    (-2.5, 7.3),
    (-1.935, 35.01),
    (18.64, 42.23),
)
_EDGES = tuple(
    EdgeCase(p)
    for p in (
        (-1.0, 0.0),
        (-1.5, 0.0),
        (-2.5, 0.0),
        (-2.0, 0.0),
        (2.0, -3.0),
        (3.0, -3.0),
        *HARD_POINTS,
    )
)

WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "struve",
        struve,
        domains=_DOMAINS,
        differentiable=(1,),
        tolerances=_TOL_H,
        edge_cases=_EDGES,
    ),
    declare(
        "modstruve",
        modstruve,
        domains=_DOMAINS,
        differentiable=(1,),
        tolerances=_TOL_L,
        edge_cases=_EDGES,
    ),
)
