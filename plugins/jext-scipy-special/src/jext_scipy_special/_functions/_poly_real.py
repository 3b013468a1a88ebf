"""Jacobi-type and Laguerre functions of real (non-integer) degree.

SciPy defines them through the hypergeometric functions
(``scipy/special/orthogonal_eval.pxd``):

* ``P^(a,b)_v(x) = binom(v + a, v) 2F1(-v, v + a + b + 1; a + 1; (1 - x)/2)``; Legendre
  is ``a = b = 0``, Gegenbauer ``C^(g)_v = binom(v + 2g - 1, v) 2F1(-v, v + 2g; g + 1/2; .)``
  (the Jacobi ``2F1`` with ``a = b = g - 1/2``);
* ``L^(a)_v(x) = binom(v + a, v) 1F1(-v; a + 1; x)``.

Method: write ``v = v1 + m`` with ``v1`` in ``[1, 2)`` (or ``v1 = v`` below 1).  The two
hypergeometric values at ``v1 - 1`` and ``v1`` are summed as Gauss / Kummer series (small
first parameter: after the first two terms every term has the same sign, so the sum
only cancels near a zero of the function); above ``x = 1`` Pfaff's transformation
``2F1(A, B; C; z) = (1 - z)^-A 2F1(A, C - B; C; z / (z - 1))`` makes the argument
positive.  Then the three-term recurrences in the degree (contiguous relations of the
hypergeometric functions, valid for any degree: DLMF 18.9.2 and 13.3.1 with the
normalisation divided out) carry them up to ``v``; on ``[-1, 1]`` both solutions of the
Jacobi recurrence oscillate with the same size, above 1 and for Laguerre the wanted
solution dominates, so the forward recurrence is stable.  The normalising binomial is
``Gamma``-ratio at ``v1`` times the product of the recurrence's ratios.

The Gauss series is summed to ``z <= 1/2`` (and ``x <= 79`` through Pfaff); below
``x = 0`` the connection formula about ``z = 1`` (DLMF 15.8.4, with its logarithmic
case 15.8.10 as a limit, see ``_connection``) gives the two starting values, at a degree
chosen so that the recurrence up from it is stable (see ``jacobi_type_real``).  At
``x = -1`` the limit (Gauss's sum or a signed infinity); below -1 nan (complex).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax import lax

from ._common import cos_pi, iterate, sin_pi

__all__ = ["genlaguerre_real", "jacobi_type_real", "rgamma", "steps"]

#: Largest Gauss-series argument after Pfaff's transformation (``x <= 79``):
#: 0.975^1600 < 1e-17.
Z_MAX = 0.975
#: Above this ``z = (1 - x)/2`` (``x < 0``) the connection formula about ``z = 1`` takes
#: over; both series then converge at least like ``0.5^k``.
Z_SWITCH = 0.5
_TERMS = 1700
_TINY = 2.0**-56

_NO_LIMIT = 2**30  # the loops stop when every element has taken its own steps
#: Recurrence steps per loop trip.  (With one, XLA compiles the step so that it rounds
#: differently, and SciPy's Legendre and Laguerre tables miss their tolerance.)
_UNROLL = 4

State = tuple[jax.Array, ...]


def steps(step: Callable[[jax.Array, State], State], state: State, count: jax.Array) -> State:
    """``state = step(k, state)`` for ``k = 1 .. count`` (per element; 0 steps where
    ``count`` is not finite).  Elements are frozen after their own ``count`` steps."""
    count = jnp.where(jnp.isfinite(count), count, 0.0)

    def counted(k: jax.Array, st: State) -> State:
        return (*step(k, st[:-1]), jnp.broadcast_to(k, count.shape))

    def done(st: State) -> jax.Array:
        return st[-1] >= count

    return iterate(
        counted, (*state, jnp.zeros_like(count)), done, _NO_LIMIT, count.dtype, unroll=_UNROLL
    )[:-1]


def rgamma(x: jax.Array) -> jax.Array:
    """``1 / Gamma(x)``, 0 at the poles."""
    pole = (x <= 0.0) & (x == jnp.floor(x))
    return jnp.where(pole, 0.0, 1.0 / jsp.gamma(jnp.where(pole, 0.5, x)))


def _two_series(
    a0: jax.Array, a1: jax.Array, b0: jax.Array, b1: jax.Array, c: jax.Array, z: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``pFq(a_i, b_i; c; z) - 1`` for ``i = 0, 1`` summed together (``b_i`` nan:
    ``1F1``).  Without the leading 1, so that the difference of the two keeps its
    relative accuracy where both are near 1.

    Stops per element once the terms decrease and the last one is below ``2^-56``
    times the sum (times ``1 - z``, the tail's geometric bound)."""
    kummer = jnp.isnan(b0)
    b0 = jnp.where(kummer, 0.0, b0)
    b1 = jnp.where(kummer, 0.0, b1)
    tail = jnp.where(kummer, 0.5, 1.0 - jnp.abs(z))

    def ratio(j: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
        return (j + a) * jnp.where(kummer, 1.0, j + b) * z / ((j + c) * (j + 1.0))

    def step(_: jax.Array, st: State) -> State:
        j, s0, t0, s1, t1 = st
        t0 = t0 * ratio(j, a0, b0)
        t1 = t1 * ratio(j, a1, b1)
        return j + 1.0, s0 + t0, t0, s1 + t1, t1

    def small(j: jax.Array, s: jax.Array, t: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
        return (jnp.abs(t) <= _TINY * tail * jnp.abs(1.0 + s)) & (jnp.abs(ratio(j, a, b)) < 1.0)

    def done(st: State) -> jax.Array:
        j, s0, t0, s1, t1 = st
        settled = j > -jnp.minimum(a0, a1) + 1.0  # past the sign changes of (j + a_i)
        converged = settled & small(j, s0, t0, a0, b0) & small(j, s1, t1, a1, b1)
        return converged | ~jnp.isfinite(s0 + s1)

    one = jnp.ones_like(z)
    zero = 0.0 * one
    start: State = (zero, zero, one, zero, one)
    _, s0, _, s1, _ = iterate(step, start, done, _TERMS, z.dtype)
    return s0, s1


def _split(n: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(v1, m)``: ``n = v1 + m`` with ``v1`` in ``[1, 2)`` and ``m >= 0`` steps (below 1:
    ``v1 = n``, no steps)."""
    m = jnp.where(n >= 1.0, jnp.floor(n) - 1.0, 0.0)
    return n - m, m


#: Stirling's series of ``ln Gamma``: ``B_2k / (2k (2k - 1))``, k = 1..6.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360)
#: ``_gamma_ratio`` shifts its argument up by this many steps first (arguments above
#: -3: Stirling's series then runs at ``x >= 11``, where its seventh term is below 1e-16).
_SHIFT = 14


def _l1(u: jax.Array) -> jax.Array:
    """``log1p(u) / u`` (1 at 0)."""
    zero = u == 0.0
    return jnp.where(zero, 1.0, jnp.log1p(u) / jnp.where(zero, 1.0, u))


def _e1(u: jax.Array) -> jax.Array:
    """``expm1(u) / u`` (1 at 0)."""
    zero = u == 0.0
    return jnp.where(zero, 1.0, jnp.expm1(u) / jnp.where(zero, 1.0, u))


def _gamma_ratio(x: jax.Array, e: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``r = Gamma(x + e) / Gamma(x)`` and ``(r - 1) / e``, both to full relative accuracy
    for any small ``e`` (0 included), for ``x > -3`` (not a pole).

    ``Gamma(x + e) / Gamma(x) = prod_i (x + i) / (x + i + e)`` times the ratio at ``x +
    14``, whose logarithm Stirling's series gives as ``e`` times a sum without
    cancellation; each factor's ``(f - 1) / e = -1 / (x + i + e)`` is exact, so the
    product's ``(r - 1) / e`` follows without ever dividing by ``e``."""
    big = x + float(_SHIFT)
    inv = 1.0 / big
    lu = _l1(e * inv) * inv  # log1p(e / X) / e
    # ln Gamma(X + e) - ln Gamma(X) = e * slope.
    slope = (big - 0.5) * lu + jnp.log(big + e) - 1.0
    for k, c in enumerate(_STIRLING, start=1):
        p = 1.0 - 2.0 * k
        slope = slope + c * big**p * _e1(p * e * lu) * p * lu
    log_r = e * slope
    r = jnp.exp(log_r)
    t = _e1(log_r) * slope
    for i in range(_SHIFT):
        f = (x + float(i)) / (x + float(i) + e)
        r, t = r * f, t * f - 1.0 / (x + float(i) + e)
    return r, t


def _start_gap(big_a: jax.Array, big_b: jax.Array, m: jax.Array, d: jax.Array) -> jax.Array:
    """``(R - 1) / d`` for ``R = e_0 / f_0`` of ``_connection``, without dividing by ``d``."""
    # R = G(A-d)/G(A) G(B-d)/G(B) G(1+m+d)/G(1+m) / G(1-d), A = -w by reflection:
    # G(A-d)/G(A) = G(1-A)/G(1-A+d) sin(pi A)/sin(pi (A-d)).
    r, t = _gamma_ratio(jnp.stack([1.0 - big_a, big_b, 1.0 + m, 1.0 - d]), jnp.stack([d, -d, d, d]))
    sin_ad = sin_pi(big_a - d)
    r_sin = sin_pi(big_a) / sin_ad
    t_sin = jnp.pi * cos_pi(big_a - 0.5 * d) * jnp.sinc(0.5 * d) / sin_ad
    # (r1 r2 - 1)/d = t1 r2 + t2: the first ratio inverted, the second's e = -d negated.
    big_r, t_r = 1.0 / r[0], -t[0] / r[0]
    for r_i, t_i in ((r_sin, t_sin), (r[1], -t[1]), (r[2], t[2]), (r[3], t[3])):
        big_r, t_r = big_r * r_i, t_r * r_i + t_i
    return t_r


def _connection(w: jax.Array, a: jax.Array, b: jax.Array, y: jax.Array) -> jax.Array:
    """``2F1(-w, w + a + b + 1; a + 1; 1 - y)`` for small ``y = (1 + x)/2`` by the
    connection formula about ``z = 1`` (DLMF 15.8.4), in a form that stays accurate as
    ``s = c - a - b = -b`` nears an integer and at one (the logarithmic case, DLMF
    15.8.10, as the limit of the same expressions).

    With ``A = -w, B = w + a + b + 1, C = a + 1``, ``m = max(round(b), 0)``,
    ``d = b - m``, the two series of 15.8.4 paired term by term::

        F = G(C) / (G(A) G(B)) y^-b sum_{k<m} (A-b)_k (B-b)_k (-1)^k G(b-k) y^k / k!
            + sum_j y^j ((y^-d - 1) q_j + (q_j - p_j))

    where ``p_j``, ``q_j`` are the ``j``-th and ``(m + j)``-th terms of the two series
    over ``sin(pi b)``: ``q_j - p_j`` vanishes with ``d``, and it is carried as
    ``g_j = (e_j - f_j) / d`` with ``e = d q``, ``f = d p`` by the ratio recurrences of
    ``e`` and ``f`` and an exact form of the difference of their ratios.  Its start
    ``g_0 = f_0 (R - 1) / d`` with ``R = e_0 / f_0`` a product of four ``Gamma`` ratios
    (``_gamma_ratio``).  ``w``, ``a``, ``b`` must keep ``A - b``, ``B - b`` and ``1 + b``
    off the poles of ``Gamma`` where ``g_0`` is needed (a measure-zero set).
    """
    m = jnp.maximum(jnp.round(b), 0.0)
    d = b - m
    big_a = -w
    big_b = w + a + b + 1.0
    gc = jsp.gamma(a + 1.0)
    sign = jnp.where(jnp.mod(m, 2.0) == 0.0, 1.0, -1.0)
    k0 = sign * gc / jnp.sinc(d)
    # The finite part and (A - b)_m (B - b)_m / m! in one loop of m steps.
    am, bm = big_a - b, big_b - b

    def finite(k: jax.Array, st: State) -> State:
        poch, h, total = st
        j = k - 1.0
        poch = poch * ((am + j) * (bm + j) / k)
        total = total + h
        h = -h * ((am + j) * (bm + j) * y / (k * (b - k)))
        return poch, h, total

    one = jnp.ones_like(y)
    poch, _, total = steps(finite, (one, jsp.gamma(jnp.where(m > 0.0, b, 1.0)) * one, 0.0 * one), m)
    ra, rb = rgamma(big_a), rgamma(big_b)
    lny = jnp.log(jnp.where(y > 0.0, y, 1.0))
    head = jnp.where(m > 0.0, gc * ra * rb * jnp.exp(-b * lny) * total, 0.0)
    e0 = k0 * poch * ra * rb * rgamma(1.0 - d)
    f0 = k0 * rgamma(am) * rgamma(bm) * rgamma(1.0 + b)
    t_r = _start_gap(big_a, big_b, m, d)
    g0 = jnp.where(f0 == 0.0, e0 / d, f0 * t_r)
    log_term = _e1(-d * lny) * -lny  # (y^-d - 1) / d
    # Far from an integer b the plain difference (y^-d e - f) / d loses less: with
    # b < 0 and y small, y^-d e is negligible and both parts of the paired form are not.
    paired = jnp.abs(d) < 0.25
    y_d = jnp.exp(-d * lny)
    inv_d = 1.0 / jnp.where(paired, 1.0, d)

    def term(e: jax.Array, f: jax.Array, g: jax.Array) -> jax.Array:
        return jnp.where(paired, log_term * e + g, (y_d * e - f) * inv_d)

    def step(_: jax.Array, st: State) -> State:
        j, e, f, g, total = st
        al, be, p, q = big_a + j, big_b + j, j + 1.0, m + j + 1.0
        den = q * (p - d) * p * (q + d)
        r_q = (al - d) * (be - d) * p * (q + d) / den * y
        r_p = al * be * q * (p - d) / den * y
        gap = (
            al * be * (p + q) - (al + be) * p * q + d * (p * q - (al + be) * p) + d * d * p
        ) / den
        g = g * r_q + f * gap * y
        e, f = e * r_q, f * r_p
        total = total + term(e, f, g)
        return j + 1.0, e, f, g, total

    def done(st: State) -> jax.Array:
        j, e, f, g, total = st
        al, be = big_a + j, big_b + j
        # Past the sign change of B + j and the terms' peak: from a term ratio below 1
        # on, every later ratio is below 1 too.
        past = (j > 1.0 - big_b) & (jnp.abs(al * be) * y < (j + 1.0) * (m + j + 1.0))
        small = jnp.abs(term(e, f, g)) <= _TINY * (1.0 - y) * jnp.abs(total)
        return (past & small) | ~jnp.isfinite(total)

    zero = 0.0 * one
    start: State = (zero, e0, f0, g0, term(e0, f0, g0))
    _, _, _, _, series = iterate(step, start, done, _TERMS, y.dtype)
    return head + series


def _direct(v1: jax.Array, a: jax.Array, b: jax.Array, z: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``F(v1 - 1)`` and ``F(v1) - F(v1 - 1)`` by the Gauss series at ``z`` (Pfaff's form
    for ``z < 0``)."""
    s = a + b + 1.0
    neg = z < 0.0
    w = jnp.where(neg, z / (z - 1.0), z)
    # Pfaff for z < 0: (1 - z)^v 2F1(-v, a + 1 - v - s; a + 1; w).
    s0, s1 = _two_series(
        1.0 - v1,
        -v1,
        jnp.where(neg, a + 2.0 - v1 - s, v1 - 1.0 + s),
        jnp.where(neg, a + 1.0 - v1 - s, v1 + s),
        a + 1.0,
        w,
    )
    # Above x = 1 (Pfaff's factors) the function dominates: the plain difference will do.
    f0 = jnp.where(neg, (1.0 + s0) * (1.0 - z) ** (v1 - 1.0), 1.0 + s0)
    f1 = jnp.where(neg, (1.0 + s1) * (1.0 - z) ** v1, 1.0 + s1)
    return f1, jnp.where(neg, f1 - f0, s1 - s0)


def _at_minus_one(n: jax.Array, a: jax.Array, b: jax.Array) -> jax.Array:
    """``F(n)`` at ``x = -1``: Gauss's sum ``G(a+1) G(-b) / (G(a+1+n) G(-n-b))`` for
    ``b < 0``, else infinite with the sign of the ``y^-b`` (or ``log y``) term's
    coefficient ``1 / (G(-n) G(n+a+b+1))``."""
    gauss = jsp.gamma(a + 1.0) * jsp.gamma(jnp.where(b < 0.0, -b, 0.5)) * rgamma(a + 1.0 + n)
    gauss = gauss * rgamma(-n - b)
    lead = rgamma(-n) * rgamma(n + a + b + 1.0)
    return jnp.where(b < 0.0, gauss, jnp.where(lead == 0.0, jnp.nan, lead * jnp.inf))


def jacobi_type_real(n: jax.Array, a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    """``2F1(-n, n + a + b + 1; a + 1; (1 - x)/2)`` for real ``n`` (the normalised Jacobi
    function) on ``x >= -1`` (nan below)."""
    v1, m = _split(n)
    z = 0.5 - 0.5 * x
    y = 0.5 + 0.5 * x  # exact: not 1 - z
    near = z > Z_SWITCH  # x near -1: the connection formula about z = 1
    far = jnp.where(z < 0.0, z / (z - 1.0) <= Z_MAX, True) & jnp.isfinite(z)
    # x = -1 and below by y, which is exact there: z = 1 - y rounds to 1 one ulp either
    # side of x = -1 (and in float32 up to y = 3e-8).
    ok = far & (y >= 0.0)
    # Near -1 the recurrence starts at the highest degree v0 = v1 + k0 with
    # t = 2 (v0 + (a + b + 1)/2) sqrt(y) <= max(b, 2).  Near -1 the function behaves like
    # a Bessel function of order b in t (DLMF 18.15.2): below t = b its y^-b part (the
    # Y_b-like one) dominates and its regular part (J_b-like) grows faster with the
    # degree, so that starting lower would amplify the start's rounding by about
    # (t1 / b)^-2b; from t = b on both parts are alike.
    reach = 0.5 * jnp.maximum(b, 2.0) * lax.rsqrt(jnp.where(near & ok, y, 1.0))
    reach = jnp.floor(reach - 0.5 * (a + b + 1.0) - v1)
    k0 = jnp.where(near & ok, jnp.clip(reach, 0.0, m), 0.0)
    v0 = v1 + k0

    def direct() -> tuple[jax.Array, jax.Array]:
        return _direct(v1, a, b, jnp.where(near | ~ok, 0.0, z))

    def connection() -> tuple[jax.Array, jax.Array]:
        w = jnp.stack([v0 - 1.0, v0])
        y_in = jnp.where(near & ok, y, 0.0)
        both = _connection(w, *(jnp.broadcast_to(u, w.shape) for u in (a, b, y_in)))
        return both[1], both[1] - both[0]

    skip = (jnp.zeros_like(z), jnp.zeros_like(z))
    f_dir, d_dir = lax.cond(jnp.all(near), lambda: skip, direct)
    f_con, d_con = lax.cond(jnp.any(near & ok), connection, lambda: skip)
    f1 = jnp.where(near, f_con, f_dir)
    d1 = jnp.where(near, d_con, d_dir)
    sig = a + b
    xm1 = x - 1.0

    def step(k: jax.Array, st: State) -> State:
        # The increment form of DLMF 18.9.2 divided by binom(v + a, v) (as SciPy's
        # integer recurrence): d_{v+1} = F_{v+1} - F_v from d_v = F_v - F_{v-1}.
        p, d = st
        v = v0 + k - 1.0
        t = 2.0 * v + sig
        d = (t * (t + 1.0) * (t + 2.0) * xm1 * p + 2.0 * v * (v + b) * (t + 2.0) * d) / (
            2.0 * (v + a + 1.0) * (v + sig + 1.0) * t
        )
        return p + d, d

    out, _ = steps(step, (f1, d1), jnp.where(y > 0.0, m - k0, 0.0))
    out = jnp.where(y == 0.0, _at_minus_one(n, a, b), out)
    return jnp.where(ok, out, jnp.nan)


def genlaguerre_real(n: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
    """``1F1(-n; a + 1; x)`` for real ``n`` (the normalised Laguerre function)."""
    v1, m = _split(n)
    nan = jnp.full_like(x, jnp.nan)
    s0, s1 = _two_series(1.0 - v1, -v1, nan, nan, a + 1.0, x)

    def step(k: jax.Array, st: State) -> State:
        # DLMF 13.3.1 over binom(v + a, v), in increment form: d_{v+1} = F_{v+1} - F_v.
        p, d = st
        v = v1 + k - 1.0
        d = (v * d - x * p) / (v + a + 1.0)
        return p + d, d

    return steps(step, (1.0 + s1, s1 - s0), m)[0]
