"""Bessel functions of the first and second kind of real order, ``J_v(x)`` and ``Y_v(x)``.

With ``nu = |v|``, ``n = round(nu)`` and ``mu = nu - n`` in ``[-1/2, 1/2]``, for ``x > 0``:

* the pair ``(Y_mu, Y_{mu+1})`` comes from Temme's series for ``x <= 2`` (Temme 1976,
  J. Comput. Phys. 21, 343; the form of Numerical Recipes' ``bessjy``) and, for
  ``x > 2``, from Steed's continued fraction CF2 with the Thompson-Barnett sum
  evaluated at ``z = -ix`` (``H^(1)_mu(x) = (2/pi) e^{-i pi (mu+1)/2} K_mu(-ix)``), which
  gives the whole Hankel pair ``H^(1)_mu = J_mu + i Y_mu`` and ``H^(1)_{mu+1}`` at once.
  For ``x >= 25`` (12 in float32) Hankel's asymptotic expansion gives the same pair
  without a loop (:func:`._bessel.hankel_sums`);
* ``Y_nu`` by forward recurrence (stable for ``Y``);
* ``J_nu`` by one of three methods, by region: the power series at order ``nu`` where
  ``x^2/4 <= nu + 1`` (its cancellation is at most a factor ``e``, and ``J_nu`` has no
  zero there); forward recurrence from the CF2 pair where ``nu <= x`` (both solutions
  oscillate: the recurrence is neutral); otherwise (``x < nu``, ``x^2/4 > nu + 1``) the
  continued fraction CF1 for ``J_{nu+1}/J_nu``, backward recurrence down to ``mu`` and the
  Wronskian ``J_{mu+1} Y_mu - J_mu Y_{mu+1} = 2/(pi x)`` for the normalisation.

Negative orders: ``J_{-nu} = cos(pi nu) J_nu - sin(pi nu) Y_nu`` and
``Y_{-nu} = sin(pi nu) J_nu + cos(pi nu) Y_nu`` with ``sin``/``cos`` of ``pi nu``
reduced exactly (0 at integers and half-integers).  Negative ``x``: ``(-1)^v J_v(|x|)``
for integer ``v``, nan otherwise (``Y`` is nan), as SciPy's real-argument functions.

Every loop stops per element (``_bessel.iterate_kept`` or a per-element step count), so an
element's value does not depend on the rest of its batch.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from ._bessel import _sinhc, asym_region, hankel_sums, iterate_kept
from ._bessel01 import jy01_pos
from ._common import (
    chunked,
    cos_pi,
    eps_of,
    is_double,
    partitioned,
    rgamma1p_parts,
    rgamma1p_small,
    sin_pi,
)

__all__ = ["MAX_ORDER", "jy", "y_integer"]

#: Largest ``|v|`` computed (the recurrences take ``round(|v|)`` steps); beyond it nan.
MAX_ORDER = 1.0e5
_X_TEMME = 2.0
_CF_CAP = 100000  # CF1 steps (about x are needed near nu = x)

Pair = tuple[jax.Array, jax.Array]


def _temme_y(mu: jax.Array, x: jax.Array) -> Pair:
    """``(Y_mu(x), Y_{mu+1}(x))`` for ``|mu| <= 1/2``, ``0 < x <= 2`` (Temme's series)."""
    nterms = 24 if is_double(x) else 13
    half = 0.5 * x
    lx = -jnp.log(half)
    sigma = mu * lx
    gam1, gam2 = rgamma1p_parts(mu)
    rg_plus = gam2 - mu * gam1  # 1 / Gamma(1 + mu)
    rg_minus = gam2 + mu * gam1  # 1 / Gamma(1 - mu)
    sinhc = _sinhc(sigma)
    fact = 1.0 / jnp.sinc(mu)  # pi mu / sin(pi mu)
    ff = (2.0 / math.pi) * fact * (gam1 * jnp.cosh(sigma) + gam2 * sinhc * lx)
    e = jnp.exp(sigma)
    p = e / (rg_plus * math.pi)
    q = 1.0 / (e * math.pi * rg_minus)
    sinc_half = jnp.sinc(0.5 * mu)  # sin(pi mu / 2) / (pi mu / 2)
    r = (0.5 * math.pi * math.pi) * mu * sinc_half * sinc_half
    d = -half * half
    mu2 = mu * mu

    def body(k: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        ff, p, q, c, total, total1 = st
        i = k.astype(x.dtype)
        ff = (i * ff + p + q) / (i * i - mu2)
        c = c * d / i
        p = p / (i - mu)
        q = q / (i + mu)
        term = c * (ff + r * q)
        return ff, p, q, c, total + term, total1 + (c * p - i * term)

    init = (ff, p, q, jnp.ones_like(x), ff + r * q, p)
    total, total1 = lax.fori_loop(1, nterms + 1, body, init)[4:]
    return -total, -total1 * (2.0 / x)


_SteedState = tuple[jax.Array, ...]


def _hankel_cf2(mu: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(J_mu, Y_mu, J_{mu+1}, Y_{mu+1})`` at ``x > 2``, ``|mu| <= 1/2``.

    Steed's algorithm for ``K_mu(z)`` (CF2 with the Thompson-Barnett normalisation sum,
    as in :mod:`._bessel`) at ``z = -ix``, in real arithmetic on (real, imaginary) pairs.
    With ``s`` the sum and ``h`` the continued fraction,
    ``H^(1)_mu = sqrt(2/(pi x)) e^{i theta} / s``, ``theta = x - pi mu/2 - pi/4``, and
    ``H^(1)_{mu+1} = -i H^(1)_mu (mu + 1/2 + z - a1 h) / z``.
    """
    eps = eps_of(x)
    max_iter = 2000 if is_double(x) else 1000
    a1 = 0.25 - mu * mu
    zero = jnp.zeros_like(x)
    # b = 2 (1 + z) = 2 - 2ix
    br, bi = jnp.full_like(x, 2.0), -2.0 * x
    den = br * br + bi * bi
    dr, di = br / den, -bi / den  # d = 1/b

    def step(i: jax.Array, st: _SteedState) -> _SteedState:
        a, c, br, bi, dr, di, hr, hi, delr, deli, qr, qi, q1r, q1i, q2r, q2i, sr, si, done = st
        a = a - 2.0 * i
        c = -a * c / (i + 1.0)
        # qnew = (q1 - b q2) / a
        qnr = (q1r - (br * q2r - bi * q2i)) / a
        qni = (q1i - (br * q2i + bi * q2r)) / a
        qr = qr + c * qnr
        qi = qi + c * qni
        br = br + 2.0
        # d = 1 / (b + a d)
        tr, ti = br + a * dr, bi + a * di
        den = tr * tr + ti * ti
        dr, di = tr / den, -ti / den
        # delh = (b d - 1) delh
        fr = br * dr - bi * di - 1.0
        fi = br * di + bi * dr
        delr, deli = fr * delr - fi * deli, fr * deli + fi * delr
        hr, hi = hr + delr, hi + deli
        dsr = qr * delr - qi * deli
        dsi = qr * deli + qi * delr
        sr, si = sr + dsr, si + dsi
        small = dsr * dsr + dsi * dsi <= (eps * eps) * (sr * sr + si * si)
        return (a, c, br, bi, dr, di, hr, hi, delr, deli, qr, qi, q2r, q2i, qnr, qni, sr, si,
                done | small)  # fmt: skip

    q0 = a1 + zero
    init: _SteedState = (
        -a1 + zero, a1 + zero, br, bi, dr, di, dr, di, dr, di, q0, zero, zero, zero,
        jnp.ones_like(x), zero, 1.0 + q0 * dr, q0 * di, jnp.zeros(x.shape, bool),
    )  # fmt: skip
    # Only h and s are frozen once an element is done (the rest runs on unread).
    out = iterate_kept(step, init, (6, 7, 16, 17), max_iter, unroll=2)
    hr, hi, sr, si = out[6], out[7], out[16], out[17]
    amp = jnp.sqrt(2.0 / (math.pi * x))
    # e^{i theta} = e^{ix} e^{-i phi}, phi = pi (mu/2 + 1/4) in [0, pi/2]
    phi = math.pi * (0.5 * mu + 0.25)
    cx, sx = jnp.cos(x), jnp.sin(x)
    cp, sp = jnp.cos(phi), jnp.sin(phi)
    er, ei = cx * cp + sx * sp, sx * cp - cx * sp
    den = sr * sr + si * si
    # H0 = amp e^{i theta} / s
    h0r = amp * (er * sr + ei * si) / den
    h0i = amp * (ei * sr - er * si) / den
    # H1_{mu+1} = -i H1_mu u / z with u = mu + 1/2 + z - a1 h and z = -ix: -i u / z = u / x.
    ur = mu + 0.5 - a1 * hr
    ui = -x - a1 * hi
    rr, ri = ur / x, ui / x
    h1r = h0r * rr - h0i * ri
    h1i = h0r * ri + h0i * rr
    return h0r, h0i, h1r, h1i


def _hankel_asym(mu: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(J_mu, Y_mu, J_{mu+1}, Y_{mu+1})`` where :func:`._bessel.asym_region` holds for
    ``|mu|`` (``x >= 25``, 12 in float32), by Hankel's expansion: ``H^(1)_nu = sqrt(2/(pi
    x)) e^{i theta} (P + iQ)``, ``theta = x - pi nu/2 - pi/4`` (loop-free)."""
    amp = jnp.sqrt(2.0 / (math.pi * x))
    phi = math.pi * (0.5 * mu + 0.25)
    cx, sx = jnp.cos(x), jnp.sin(x)
    cp, sp = jnp.cos(phi), jnp.sin(phi)
    er, ei = cx * cp + sx * sp, sx * cp - cx * sp  # e^{i theta} at order mu

    def hankel(nu: jax.Array, er: jax.Array, ei: jax.Array) -> Pair:
        s0, s1, s2, s3 = hankel_sums(nu, x)
        p, q = s0 - s2, s1 - s3
        return amp * (p * er - q * ei), amp * (p * ei + q * er)

    j0, y0 = hankel(mu, er, ei)
    # theta at order mu + 1 is theta - pi/2: e^{i theta} times -i.
    j1, y1 = hankel(mu + 1.0, ei, -er)
    return j0, y0, j1, y1


def _series_sum(nu: jax.Array, x: jax.Array) -> jax.Array:
    """``sum_k (-x^2/4)^k / (k! (nu+1)_k)`` for ``x^2/4 <= nu + 1`` (terms below ``1/k!``)."""
    nterms = 22 if is_double(x) else 12
    w = -0.25 * x * x

    def body(k: jax.Array, st: Pair) -> Pair:
        t, total = st
        i = k.astype(x.dtype)
        t = t * w / (i * (nu + i))
        return t, total + t

    one = jnp.ones_like(x)
    total: jax.Array = lax.fori_loop(1, nterms + 1, body, (one, one))[1]
    return total


def _forward(
    mu: jax.Array, n: jax.Array, x: jax.Array, y0: jax.Array, y1: jax.Array, j0: jax.Array,
    j1: jax.Array, lead: jax.Array,
) -> tuple[jax.Array, jax.Array, jax.Array]:  # fmt: skip
    """Forward recurrences over ``k = 1 .. n``: ``(Y_nu, J_nu, lead * prod (x/2)/(mu+k))``.

    ``Y`` stops at the first infinite value (its sign is that of ``Y_nu``); the
    ``J`` recurrence is only used where ``nu <= x``.
    """
    half = 0.5 * x
    nmax = jnp.max(n)

    def body(st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        k, ya, yb, ja, jb, ld, stopped = st
        go = k <= n
        c = 2.0 * (mu + k) / x
        ygo = go & jnp.isfinite(yb)
        stopped = stopped | (go & ~ygo)
        ynew = c * yb - ya
        ya, yb = jnp.where(ygo, yb, ya), jnp.where(ygo, ynew, yb)
        jnew = c * jb - ja
        ja, jb = jnp.where(go, jb, ja), jnp.where(go, jnew, jb)
        ld = jnp.where(go, ld * (half / (mu + k)), ld)
        return k + 1.0, ya, yb, ja, jb, ld, stopped

    def cond(st: tuple[jax.Array, ...]) -> jax.Array:
        return st[0] <= nmax

    stopped = ~jnp.isfinite(y1) & (n > 0)
    init: tuple[jax.Array, ...] = (jnp.asarray(1.0, x.dtype), y0, y1, j0, j1, lead, stopped)
    _, ya, yb, ja, _, ld, stopped = lax.while_loop(cond, body, init)
    # An overflow stopped Y before order nu: yb holds the infinity of Y_nu's sign.
    return jnp.where(stopped, yb, ya), ja, ld


def _cf1_ratio(nu: jax.Array, x: jax.Array) -> jax.Array:
    """``J_nu(x) / J_{nu+1}(x)`` for ``nu > x > 0`` (modified Lentz on
    ``b_1 - 1/(b_2 - 1/(b_3 - ...))``, ``b_k = 2 (nu + k) / x``)."""
    eps = eps_of(x)
    tiny = 1e-250 if is_double(x) else 1e-30
    rx = 2.0 / x

    def clamp(t: jax.Array) -> jax.Array:
        return jnp.where(jnp.abs(t) < tiny, tiny, t)

    def step(i: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        c, d, f, done = st
        b = (nu + i + 1.0) * rx
        d = 1.0 / clamp(b - d)
        c = clamp(b - 1.0 / c)
        delta = c * d
        return c, d, f * delta, done | (jnp.abs(delta - 1.0) <= eps)

    b1 = (nu + 1.0) * rx
    init: tuple[jax.Array, ...] = (b1, jnp.zeros_like(x), b1, jnp.zeros(x.shape, bool))
    return iterate_kept(step, init, (2,), _CF_CAP, unroll=2)[2]


def _backward_j(
    mu: jax.Array, n: jax.Array, x: jax.Array, ratio: jax.Array, y0: jax.Array, y1: jax.Array
) -> jax.Array:
    """``J_nu`` from ``J_nu / J_{nu+1} = ratio``: backward recurrence from ``(1, 1/ratio)``
    down to ``mu``, normalised by the Wronskian with ``(Y_mu, Y_{mu+1})``."""
    double = is_double(x)
    big = 2.0**300 if double else 2.0**60

    def body(st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        k, lo, hi, m = st  # lo = j_{mu+k}, hi = j_{mu+k+1}
        go = k >= 1.0
        new = (2.0 * (mu + k) / x) * lo - hi
        lo, hi = jnp.where(go, new, lo), jnp.where(go, lo, hi)
        over = jnp.abs(lo) > big
        lo = jnp.where(over, lo / big, lo)
        hi = jnp.where(over, hi / big, hi)
        return k - 1.0, lo, hi, m + jnp.where(over, 1.0, 0.0)

    def cond(st: tuple[jax.Array, ...]) -> jax.Array:
        return jnp.any(st[0] >= 1.0)

    init: tuple[jax.Array, ...] = (n, jnp.ones_like(x), 1.0 / ratio, jnp.zeros_like(x))
    _, lo, hi, m = lax.while_loop(cond, body, init)
    wr = hi * y0 - lo * y1
    scale = (2.0 / (math.pi * x)) / wr
    # The start value 1 was divided by big m times: J_nu = scale * big^-m.
    return jnp.where(m > 0.0, scale * jnp.exp2(-math.log2(big) * m), scale)


def _jy_positive(nu: jax.Array, x: jax.Array) -> Pair:
    """``(J_nu(x), Y_nu(x))`` for ``0 <= nu <= MAX_ORDER``, ``0 < x < inf``."""
    n = jnp.round(nu)
    mu = nu - n
    # Integer orders start from the loop-free order-0/1 kernels; the others from Temme's
    # series or CF2 (each run only where some element of the chunk needs it).
    whole = mu == 0.0
    temme = (x <= _X_TEMME) & ~whole
    asym = asym_region(jnp.abs(mu), x) & ~whole
    cf2 = (x > _X_TEMME) & ~whole & ~asym
    series = x * x <= 4.0 * (nu + 1.0)
    upward = ~series & (nu <= x)
    cf1 = ~series & ~upward
    zeros = jnp.zeros_like(x)
    yt0, yt1 = lax.cond(
        jnp.any(temme), lambda: _temme_y(mu, jnp.where(temme, x, 1.0)), lambda: (zeros, zeros)
    )
    jc0, yc0, jc1, yc1 = lax.cond(
        jnp.any(cf2),
        lambda: _hankel_cf2(mu, jnp.where(cf2, x, 50.0)),  # 50: few CF2 steps
        lambda: (zeros, zeros, zeros, zeros),
    )
    ja0, ya0, ja1, ya1 = lax.cond(
        jnp.any(asym), lambda: _hankel_asym(mu, jnp.where(asym, x, 50.0)), lambda: (zeros,) * 4
    )
    jc0, yc0 = jnp.where(asym, ja0, jc0), jnp.where(asym, ya0, yc0)
    jc1, yc1 = jnp.where(asym, ja1, jc1), jnp.where(asym, ya1, yc1)
    jw0, jw1, yw0, yw1 = lax.cond(
        jnp.any(whole), lambda: jy01_pos(jnp.where(whole, x, 1.0)), lambda: (zeros,) * 4
    )
    y0 = jnp.where(whole, yw0, jnp.where(temme, yt0, yc0))
    y1 = jnp.where(whole, yw1, jnp.where(temme, yt1, yc1))
    j0 = jnp.where(whole, jw0, jnp.where(temme, 0.0, jc0))
    j1 = jnp.where(whole, jw1, jnp.where(temme, 0.0, jc1))
    lead0 = jnp.where(series, jnp.power(0.5 * x, mu) * rgamma1p_small(mu), 0.0)
    ynu, jup, lead = _forward(mu, n, x, y0, y1, j0, j1, lead0)
    jser = lead * _series_sum(nu, jnp.where(series, x, 0.0))
    jcf = lax.cond(
        jnp.any(cf1),
        lambda: _backward_j(
            mu,
            jnp.where(cf1, n, 0.0),
            jnp.where(cf1, x, 3.0),
            _cf1_ratio(jnp.where(cf1, nu, 4.0), jnp.where(cf1, x, 3.0)),
            jnp.where(cf1, y0, 1.0),
            jnp.where(cf1, y1, 1.0),
        ),
        lambda: zeros,
    )
    jnu = jnp.where(series, jser, jnp.where(upward, jup, jcf))
    return jnu, ynu


#: Work classes by argument: Temme's series, then CF2 by decreasing length.
_CLASS_EDGES = (_X_TEMME, 3.0, 5.0, 10.0, 25.0)


def _cost_class(x: jax.Array) -> jax.Array:
    cls = jnp.zeros(x.shape, jnp.int32)
    for edge in _CLASS_EDGES:
        cls = cls + (x > edge).astype(jnp.int32)
    return cls


def _reduced(v: jax.Array, x: jax.Array) -> Pair:
    """``(|v|, |x|)`` where both are in the kernels' range, else ``(0, 1)``."""
    nu = jnp.abs(v)
    ax = jnp.abs(x)
    ok = (nu <= MAX_ORDER) & (ax > 0.0) & (ax < jnp.inf)  # False for nan
    return jnp.where(ok, nu, 0.0), jnp.where(ok, ax, 1.0)


def jy(v: jax.Array, x: jax.Array) -> Pair:
    """``(J_v(x), Y_v(x))`` for real ``v`` and ``x``, with the edge values of SciPy's real
    ``jv`` and ``yv``."""
    nus, xs = _reduced(v, x)
    jnu, ynu = partitioned(_jy_positive, _cost_class(xs), len(_CLASS_EDGES) + 1, nus, xs)
    return _with_edges(v, x, jnu, ynu)


def _y_forward(n: jax.Array, x: jax.Array) -> tuple[jax.Array]:
    """``Y_n(x)`` by forward recurrence from ``Y_0, Y_1``, ``_Y_UNROLL`` steps per loop
    trip: every element runs to its chunk's largest order and keeps ``Y_k`` at
    ``k = n``.  Past an overflow the recurrence gives inf or nan: ``Y_n`` is then
    ``-inf`` (it overflows only where ``x`` is far below the first zero, ``Y_n < 0``)."""
    _, _, y0, y1 = jy01_pos(x)
    rx = 2.0 / x
    nmax = jnp.max(n)

    def body(st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        k, ya, yb, out = st  # Y_{k-1}, Y_k
        for _ in range(_Y_UNROLL):
            ya, yb = yb, (k * rx) * yb - ya
            k = k + 1.0
            out = jnp.where(k == n, yb, out)
        return k, ya, yb, out

    def cond(st: tuple[jax.Array, ...]) -> jax.Array:
        return st[0] < nmax

    init: tuple[jax.Array, ...] = (jnp.asarray(1.0, x.dtype), y0, y1, jnp.where(n == 0.0, y0, y1))
    out = lax.while_loop(cond, body, init)[3]
    return (jnp.where(jnp.isfinite(out), out, -jnp.inf),)


_Y_UNROLL = 4
#: Elements per chunk of the Y_n recurrence (measured: 4096 to 8192 are fastest; sorting
#: the chunks by order, as :func:`partitioned` does, did not pay for itself).
_Y_CHUNK = 4096


def y_integer(n: jax.Array, x: jax.Array) -> jax.Array:
    """``Y_n(x)`` for integer-valued ``n`` (``jy(n, x)[1]`` without ``J``): forward
    recurrence from the order-0/1 kernels, in chunks (each runs to its own largest
    order)."""
    nus, xs = _reduced(n, x)
    (ynu,) = chunked(_y_forward, nus, xs, chunk=_Y_CHUNK)
    # J_n is not needed for Y_n at integer n (sin(pi n) = 0 multiplies it).
    return _with_edges(n, x, jnp.zeros_like(ynu), ynu)[1]


def _with_edges(v: jax.Array, x: jax.Array, jnu: jax.Array, ynu: jax.Array) -> Pair:
    """``(J_v, Y_v)`` from ``(J_|v|, Y_|v|)`` at ``|x|``: negative orders and arguments
    and SciPy's edge values."""
    nu = jnp.abs(v)
    nuf = jnp.where(nu <= MAX_ORDER, nu, 0.0)  # the order, also where x is 0 or inf
    s, c = sin_pi(nuf), cos_pi(nuf)

    def times(a: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.where(a == 0.0, 0.0, a * b)  # exact zeros kill infinities

    neg = v < 0.0
    jv = jnp.where(neg, times(c, jnu) - times(s, ynu), jnu)
    yv = jnp.where(neg, times(s, jnu) + times(c, ynu), ynu)
    vint = nuf == jnp.round(nuf)
    odd = jnp.mod(jnp.round(nuf), 2.0) == 1.0
    jv = jnp.where(x < 0.0, jnp.where(vint, jnp.where(odd, -jv, jv), jnp.nan), jv)
    yv = jnp.where(x < 0.0, jnp.nan, yv)
    # x = 0: J is 1 at v = 0, 0 for v > 0 or integer v, +-inf for negative
    # non-integer v (the sign of sin(pi |v|)); Y is -inf (for v < 0: the sign of
    # -cos(pi |v|), SciPy's -sin(pi |v|) at half-integers).
    j_at0 = jnp.where(
        v == 0.0, 1.0, jnp.where((v > 0.0) | vint, 0.0, jnp.where(s > 0.0, jnp.inf, -jnp.inf))
    )
    ysign = jnp.where(neg, jnp.where(c == 0.0, s, c), 1.0)
    y_at0 = jnp.where(ysign > 0.0, -jnp.inf, jnp.inf)
    at0 = x == 0.0
    jv = jnp.where(at0, j_at0, jv)
    yv = jnp.where(at0, jnp.where(jnp.isinf(v), -jnp.inf, y_at0), yv)
    jv = jnp.where(at0 & jnp.isinf(v), 0.0, jv)
    # Infinite order at finite x != 0: J is 0 (x > 0), Y nan; beyond MAX_ORDER nan.
    bad = jnp.isnan(v) | jnp.isnan(x) | jnp.isinf(x) | ((nu > MAX_ORDER) & ~at0)
    # SciPy (Cephes) gives J = 0 at infinite order for 0 < x <= 2 only, nan beyond.
    jv = jnp.where(jnp.isinf(v) & (x > 0.0) & (x <= 2.0), 0.0, jnp.where(bad, jnp.nan, jv))
    yv = jnp.where(bad, jnp.nan, yv)
    return jv, yv
