"""Modified Bessel functions built on ``kv``/``kve``: ``iv``, ``ive``, ``k0``, ``k0e``,
``k1``, ``k1e``, ``kn``.

Method for ``I_v(x)``, ``v >= 0``, ``x > 0`` (Temme 1975; Numerical Recipes'
``bessik``): the ratio ``f = I_{v+1}/I_v`` from the continued fraction
``1/(2(v+1)/x + 1/(2(v+2)/x + ...))`` (modified Lentz, each element stopping
on its own; about ``x`` terms), then the Wronskian
``I_v K_{v+1} + I_{v+1} K_v = 1/x`` with the exponentially scaled pair
``(e^x K_v, e^x K_{v+1})`` of :mod:`._bessel`, which gives ``e^-x I_v``
directly: ``ive = 1 / (x (kve_{v+1} + f kve_v))``.  Two loop-free methods take over
where they are accurate: Hankel's asymptotic expansion ``e^-x I_nu(x) sqrt(2 pi x) ~
sum_k (-1)^k a_k(nu) / x^k`` for ``x >= 25``, ``(nu + 1)^2 <= 4 x`` (12 in float32; it
gives ``kve`` too, :func:`._bessel.hankel_sums`), and the power series for ``v >= 0`` (or
integer), ``nu <= 30``, ``x^2/4 <= nu + 1``.  Elements are grouped by method and cost
(``partitioned``).  Negative orders:
``I_{-v} = I_v + (2/pi) sin(pi v) K_v``; negative ``x``: ``(-1)^v I_v(|x|)``
for integer ``v`` (nan otherwise), like SciPy.

``k0, k0e, k1, k1e`` have their own loop-free kernels (:mod:`._bessel_k01`: series to 2,
a fitted polynomial in ``2/x`` beyond), and ``kn`` builds on them.

Derivatives in ``x``: ``I_v' = (I_{v-1} + I_{v+1}) / 2``; ``K_0' = -K_1``,
``K_1' = -K_0 - K_1/x`` (scaled forms: product rule with ``e^x``).  Orders carry no
derivative.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._bessel import MAX_ORDER, _kv_pair_kernel, asym_region, hankel_sums, iterate_kept
from ._bessel_k01 import k0_from_log_half, k01_pos
from ._common import (
    chunked,
    entry_point,
    eps_of,
    half_below_normal,
    is_double,
    nondiff,
    partitioned,
    reciprocal_of_subnormal,
    rgamma1p_small,
    sin_pi,
    subnormal_parts,
    tangent,
    tiny_of,
)
from ._declare import declare

__all__ = ["WRAPPERS", "iv", "ive", "k0", "k0e", "k1", "k1e", "kn"]

_CF1_CAP = 20000  # Lentz steps; about x are needed


def _cf1(v: jax.Array, x: jax.Array) -> jax.Array:
    """``I_{v+1}(x) / I_v(x)`` for ``v >= 0``, ``x > 0`` (modified Lentz)."""
    eps = eps_of(x)
    tiny = tiny_of(x) * 1e10
    rx = 1.0 / x

    def clamp(t: jax.Array) -> jax.Array:
        return jnp.where(jnp.abs(t) < tiny, tiny, t)

    def step(i: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        c, d, f, done = st
        b = 2.0 * (v + i + 1.0) * rx  # the i-th step adds b_{i+1}
        d = 1.0 / clamp(b + d)
        c = clamp(b + 1.0 / c)
        delta = c * d
        return c, d, f * delta, done | (jnp.abs(delta - 1.0) <= 2.0 * eps)

    # I_{v+1}/I_v = 1/F with F = b_1 + 1/(b_2 + 1/(b_3 + ...)), b_k = 2 (v + k) / x.
    b1 = 2.0 * (v + 1.0) * rx
    init: tuple[jax.Array, ...] = (b1, jnp.zeros_like(x), b1, jnp.zeros(x.shape, bool))
    big_f = iterate_kept(step, init, (2,), _CF1_CAP)[2]
    return 1.0 / big_f


#: The power series is used where ``x^2/4 <= (nu + 1)`` and ``nu <= _SERIES_MAX_ORDER``
#: (its terms then fall below ``1/k!``: ``N`` terms); ``{double: N}``.
_SERIES_TERMS = {True: 20, False: 12}
_SERIES_MAX_ORDER = 30


def _series_ive(nu: jax.Array, x: jax.Array) -> jax.Array:
    """``e^-x I_nu(x)`` by its power series ``(x/2)^nu / Gamma(nu+1) sum_k (x^2/4)^k /
    (k! (nu+1)_k)`` for ``nu <= 30``, ``x^2/4 <= nu + 1`` (positive terms, fixed count).
    ``(x/2)^nu / Gamma(nu + 1)`` is ``(x/2)^mu / Gamma(1 + mu)`` times ``(x/2)^n /
    prod_k (mu + k)``, the products unrolled over the orders up to 30."""
    n = jnp.round(nu)
    mu = nu - n
    half = 0.5 * x
    num = jnp.power(half, mu) * rgamma1p_small(mu)
    den = jnp.ones_like(x)
    for k in range(1, _SERIES_MAX_ORDER + 1):
        on = k <= n
        num = num * jnp.where(on, half, 1.0)
        den = den * jnp.where(on, mu + float(k), 1.0)
    w = half * half
    t = jnp.ones_like(x)
    total = t
    for k in range(1, _SERIES_TERMS[is_double(x)] + 1):
        t = t * w / (float(k) * (nu + float(k)))
        total = total + t
    return (num / den) * total * jnp.exp(-x)


def _ive_pos(v: jax.Array, nu: jax.Array, x: jax.Array) -> tuple[jax.Array]:
    """``e^-x I_v(x)`` for ``nu = |v| <= MAX_ORDER`` and ``0 < x < inf``, by region:
    Hankel's expansion (where :func:`._bessel.asym_region`), the power series (``v >= 0``
    or integer, small ``x``), else CF1 with the Wronskian.  Negative non-integer orders
    outside the expansion's region need ``K_nu`` (the reflection), from ``kve``'s kernel."""
    asym = asym_region(nu, x)
    reflect = (v < 0.0) & (nu != jnp.round(nu))
    series = ~asym & (0.25 * x * x <= nu + 1.0) & (nu <= _SERIES_MAX_ORDER) & ~reflect
    cf1 = ~asym & ~series
    need_k = cf1 | (reflect & ~asym)
    zero = jnp.zeros_like(x)
    # Each method only runs where some element of this chunk needs it.
    s0, s1, s2, s3 = lax.cond(
        jnp.any(asym), lambda: hankel_sums(nu, x), lambda: (zero, zero, zero, zero)
    )
    root = jnp.sqrt(2.0 * math.pi * x)
    ive_a = ((s0 - s1) + (s2 - s3)) / root
    kve_a = (math.pi / root) * (((s0 + s1) + s2) + s3)
    ive_s: jax.Array = lax.cond(
        jnp.any(series), lambda: _series_ive(nu, jnp.where(series, x, 1.0)), lambda: zero
    )
    # Elsewhere x = 50, nu = 0: the pair needs no recurrence and few CF2 steps.
    xk, nk = jnp.where(need_k, x, 50.0), jnp.where(need_k, nu, 0.0)
    k0, k1 = lax.cond(
        jnp.any(need_k), lambda: _kv_pair_kernel(nk, xk, scaled=True), lambda: (zero, zero)
    )
    # CF1 takes about x steps: 1 elsewhere, so it ends with this chunk's own elements.
    xf = jnp.where(cf1, x, 1.0)
    f: jax.Array = lax.cond(jnp.any(cf1), lambda: _cf1(jnp.where(cf1, nu, 0.0), xf), lambda: zero)
    ive_c = 1.0 / (xk * (k1 + f * k0))
    ive = jnp.where(asym, ive_a, jnp.where(series, ive_s, ive_c))
    # I_{-v} = I_v + (2/pi) sin(pi v) K_v, scaled: K_v e^-x = kve e^-2x.
    kve = jnp.where(asym, kve_a, k0)
    refl = (2.0 / math.pi) * sin_pi(nu) * kve * jnp.exp(-2.0 * x)
    return (jnp.where(v < 0.0, ive + refl, ive),)


_IV_CLASS_EDGES = (5.0, 10.0, 25.0, 50.0)
_IV_NCLASS = 2 * len(_IV_CLASS_EDGES) + 3


def _iv_cost_class(v: jax.Array, nu: jax.Array, x: jax.Array) -> jax.Array:
    """Work class: Hankel's expansion (no loop), the power series (no loop), then CF1 by
    ``x`` (about ``x`` steps), negative orders (which also need ``kve``) apart."""
    cls = jnp.zeros(x.shape, jnp.int32)
    for edge in _IV_CLASS_EDGES:
        cls = cls + (x > edge).astype(jnp.int32)
    cls = cls + jnp.where(v < 0.0, len(_IV_CLASS_EDGES) + 1, 0)
    series = (0.25 * x * x <= nu + 1.0) & (nu <= _SERIES_MAX_ORDER) & (v >= 0.0)
    cls = jnp.where(series, 0, cls + 1)
    return jnp.where(asym_region(nu, x), 0, cls)


def _ive_impl(v: jax.Array, x: jax.Array) -> jax.Array:
    nu = jnp.abs(v)
    ax = jnp.abs(x)
    ok = (ax > 0.0) & (ax < jnp.inf) & (nu <= MAX_ORDER)
    vs = jnp.where(ok, v, 0.0)
    nus = jnp.where(ok, nu, 0.0)
    xs = jnp.where(ok, ax, 1.0)
    cls = _iv_cost_class(vs, nus, xs)
    (ive,) = partitioned(_ive_pos, cls, _IV_NCLASS, vs, nus, xs)
    # Beyond kve's largest order (whose recurrence would be needed) nan, as before.
    ive = jnp.where(nu > MAX_ORDER, jnp.nan, ive)
    vint = v == jnp.round(v)
    odd = jnp.abs(jnp.mod(v, 2.0)) == 1.0
    ive = jnp.where(x < 0.0, jnp.where(vint, jnp.where(odd, -ive, ive), jnp.nan), ive)
    # ive(v, 0) for negative non-integer v is nan in SciPy (iv gives inf).
    at0 = jnp.where(v == 0.0, 1.0, jnp.where((v > 0.0) | vint, 0.0, jnp.nan))
    ive = jnp.where(x == 0.0, at0, ive)
    return jnp.where(jnp.isnan(v) | jnp.isnan(x) | jnp.isinf(x) | jnp.isinf(v), jnp.nan, ive)


def _iv_edges(v: jax.Array, x: jax.Array, val: jax.Array) -> jax.Array:
    """SciPy's ``iv`` at infinite order (0 for finite ``x``) and at ``x = 0`` for
    negative non-integer order (inf)."""
    pole = (x == 0.0) & (v < 0.0) & (v != jnp.round(v))
    return jnp.where(jnp.isinf(v) & jnp.isfinite(x), 0.0, jnp.where(pole, jnp.inf, val))


@jax.custom_jvp
def _ive(v: jax.Array, x: jax.Array) -> jax.Array:
    return _ive_impl(v, x)


def _ive_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[object, object]
) -> tuple[jax.Array, jax.Array]:
    v, x = primals
    dv, dx = tangents
    nondiff(dv, "ive", "v")
    out = _ive(v, x)
    d = 0.5 * (_ive(v - 1.0, x) + _ive(v + 1.0, x)) - jnp.sign(x) * out
    return out, d * tangent(dx, x)


_ive.defjvp(_ive_jvp, symbolic_zeros=True)


def _iv_of(v: jax.Array, x: jax.Array) -> jax.Array:
    half = jnp.exp(0.5 * jnp.abs(x))
    return _iv_edges(v, x, _ive(v, x) * half * half)


@jax.custom_jvp
def _iv(v: jax.Array, x: jax.Array) -> jax.Array:
    return _iv_of(v, x)


def _iv_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[object, object]
) -> tuple[jax.Array, jax.Array]:
    v, x = primals
    dv, dx = tangents
    nondiff(dv, "iv", "v")
    d = 0.5 * (_iv(v - 1.0, x) + _iv(v + 1.0, x))
    return _iv(v, x), d * tangent(dx, x)


_iv.defjvp(_iv_jvp, symbolic_zeros=True)

_IV = entry_point(_iv)
_IVE = entry_point(_ive)


def iv(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Modified Bessel function of the first kind ``I_v(z)`` of real order, mirroring
    ``scipy.special.iv`` for real ``z``.

    Domain (checked): ``|v| <= 20``, ``|z| <= 500``; outside the loop-free regions
    (large ``|z|`` against ``v**2``, small ``|z|``) the cost grows with ``|z|``
    (continued fraction of ~``|z|`` terms) and with ``|v|`` (``kv``'s recurrence).
    ``z < 0`` with non-integer ``v`` and ``z = +-inf`` give nan like SciPy.
    Differentiable in ``z``: ``(I_{v-1} + I_{v+1}) / 2``.
    """
    return _IV(v, z)


def ive(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Exponentially scaled ``I_v(z) exp(-|z|)``, mirroring ``scipy.special.ive`` (real ``z``).

    Same domain and method as :func:`iv`.  Differentiable in ``z``.
    """
    return _IVE(v, z)


# Orders 0 and 1 have their own loop-free kernels (``_bessel_k01``), with the derivatives
# K0' = -K1, K1' = -K0 - K1/x, and for the scaled forms (times e^x) k0e' = k0e - k1e,
# k1e' = k1e - k0e - k1e/x.  SciPy's edges: inf at 0, nan below 0 and at nan, 0 at +inf.
# XLA on CPU reads a subnormal x as 0, where K is finite (K0 ~ -log(x/2) - gamma, K1 ~
# 1/x: finite down to x = 5.6e-309): those values come from x's bits, with SciPy's own
# rounding of x/2 (K0(5e-324) = inf, K1(5e-324) = nan there, as in SciPy).
def _k_edges(x: jax.Array, which: int) -> jax.Array:
    ok = (x >= tiny_of(x)) & (x < jnp.inf)
    val = k01_pos(jnp.where(ok, x, 1.0))[which]
    sub = subnormal_parts(x)[0]
    halved, m_half, log_scale = half_below_normal(x)
    if which in (0, 2):  # K0 and e^x K0: the series' constant terms at t = x^2/4 = 0
        small = jnp.where(halved, k0_from_log_half(jnp.log(m_half) - log_scale), jnp.inf)
    else:  # K1 and e^x K1: 1/x, the other terms are below the last bit
        small = jnp.where(halved, reciprocal_of_subnormal(x), jnp.nan)
    small = jnp.where(jnp.signbit(x), jnp.nan, small)
    edge = jnp.where(x >= 0.0, jnp.where(x == jnp.inf, 0.0, jnp.inf), jnp.nan)
    return jnp.where(ok, val, jnp.where(sub, small, edge))


@jax.custom_jvp
def _k0(x: jax.Array) -> jax.Array:
    return _k_edges(x, 0)


@jax.custom_jvp
def _k1(x: jax.Array) -> jax.Array:
    return _k_edges(x, 1)


@jax.custom_jvp
def _k0e(x: jax.Array) -> jax.Array:
    return _k_edges(x, 2)


@jax.custom_jvp
def _k1e(x: jax.Array) -> jax.Array:
    return _k_edges(x, 3)


Pair = tuple[jax.Array, jax.Array]


@_k0.defjvp
def _k0_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    return _k0(x), -_k1(x) * dx


@_k1.defjvp
def _k1_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    k1 = _k1(x)
    return k1, (-_k0(x) - k1 / x) * dx


@_k0e.defjvp
def _k0e_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    k0e = _k0e(x)
    return k0e, (k0e - _k1e(x)) * dx


@_k1e.defjvp
def _k1e_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    k1e = _k1e(x)
    return k1e, (k1e - _k0e(x) - k1e / x) * dx


_K0 = entry_point(_k0)
_K1 = entry_point(_k1)
_K0E = entry_point(_k0e)
_K1E = entry_point(_k1e)


def k0(x: ArrayLike) -> jax.Array:
    """``K_0(x)``, mirroring ``scipy.special.k0``.  Differentiable: ``-K_1``."""
    return _K0(x)


def k0e(x: ArrayLike) -> jax.Array:
    """``K_0(x) e^x``, mirroring ``scipy.special.k0e``.  Differentiable."""
    return _K0E(x)


def k1(x: ArrayLike) -> jax.Array:
    """``K_1(x)``, mirroring ``scipy.special.k1``.  Differentiable: ``-K_0 - K_1/x``."""
    return _K1(x)


def k1e(x: ArrayLike) -> jax.Array:
    """``K_1(x) e^x``, mirroring ``scipy.special.k1e``.  Differentiable."""
    return _K1E(x)


#: Largest ``x`` at which ``kn``'s recurrence runs on ``K`` itself (``K_0(700)`` is
#: ``1e-306``, ``K_0(60)`` ``1e-27``: still normal in float64, float32); beyond, on
#: ``e^x K`` and scaled back at the end.
_KN_UNSCALED_MAX = {True: 700.0, False: 60.0}
_KN_UNROLL = 4
#: Elements per chunk of the ``kn`` recurrence (as ``yn``'s).
_KN_CHUNK = 4096


#: ``kn``'s recurrence rescales its pair by ``2**-bits`` once ``K_k`` passes ``2**bits``
#: (checked once per loop trip, where it grows by at most ``2**46``, ``2**68`` in float32
#: up to ``kv``'s largest order), so that ``e^x K_n`` beyond 700 (whose ``K_n`` may be
#: finite) does not overflow.
_KN_RESCALE_BITS = {True: 600, False: 60}
#: ``log 2`` in two words, the first with 32 significant bits (fdlibm's split).
_LOG2_HI = 6.93147180369123816490e-01
_LOG2_LO = 1.90821492927058770002e-10


#: ``(k, K_{k-1}, K_k, rescalings, K_n, its rescalings)``.
_KnState = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]


def _k_forward(n: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(m, e)`` with ``K_n(x) = m 2**(bits e)`` (``x <= 700``, 60 in float32; ``e^x K_n(x)``
    beyond) by forward recurrence ``K_{k+1} = K_{k-1} + (2k/x) K_k`` from ``K_0, K_1``
    (stable: ``K`` grows with the order), ``_KN_UNROLL`` steps per loop trip.  Every
    element runs to its chunk's largest order and keeps ``K_k`` at ``k = n``; the loop also
    stops once every element is done or infinite (the recurrence keeps an infinity
    infinite), so the value of an element does not depend on its chunk."""
    k0, k1, k0e, k1e = k01_pos(x)
    scaled = x > _KN_UNSCALED_MAX[is_double(x)]
    ka, kb = jnp.where(scaled, k0e, k0), jnp.where(scaled, k1e, k1)
    rx = 2.0 / x
    nmax = jnp.max(n)
    bits = _KN_RESCALE_BITS[is_double(x)]
    big, down = 2.0**bits, 2.0**-bits

    def body(st: _KnState) -> _KnState:
        k, ka, kb, e, out, e_out = st  # K_{k-1}, K_k (times 2**(-bits e))
        start = k
        for _ in range(_KN_UNROLL):
            ka, kb = kb, (k * rx) * kb + ka
            k = k + 1.0
            out = jnp.where(k == n, kb, out)
        e_out = jnp.where((n > start) & (n <= k), e, e_out)
        over = kb > big
        ka, kb = jnp.where(over, ka * down, ka), jnp.where(over, kb * down, kb)
        return k, ka, kb, e + over.astype(e.dtype), out, e_out

    def cond(st: _KnState) -> jax.Array:
        k, _, kb = st[:3]
        return (k < nmax) & jnp.any((k < n) & (kb < jnp.inf))

    zero = jnp.zeros_like(x)
    one = jnp.asarray(1.0, x.dtype)
    init: _KnState = (one, ka, kb, zero, jnp.where(n == 0.0, ka, kb), zero)
    k, _, kb, e, out, e_out = lax.while_loop(cond, body, init)
    past = n > k  # stopped early: K_k, hence K_n, is infinite
    return jnp.where(past, kb, out), jnp.where(past, e, e_out)


def k_integer(n: jax.Array, x: jax.Array) -> jax.Array:
    """``K_n(x)`` for integer-valued ``n`` with SciPy's edges (``K_{-n} = K_n``; inf at 0,
    nan below 0 and at nan, 0 at +inf; nan beyond ``kv``'s largest order, like ``kv``)."""
    nu = jnp.abs(n)
    ok = (nu <= MAX_ORDER) & (x >= tiny_of(x)) & (x < jnp.inf)  # False for nan
    nus, xs = jnp.where(ok, nu, 0.0), jnp.where(ok, x, 1.0)
    m, e = chunked(_k_forward, nus, xs, chunk=_KN_CHUNK)
    double = is_double(xs)
    bits = _KN_RESCALE_BITS[double]
    # Unscaled: m 2**(bits e) (overflowing to inf as K_n does).  Scaled: m e^-x 2**(bits e)
    # = m exp(a) (1 + l) with a = e bits log2_hi - x exact (log2_hi has 32 bits) and
    # l = e bits log2_lo, exp(a) taken in halves so that neither underflows early.
    unscaled = m * jnp.exp2(bits * e)
    h = jnp.exp(0.5 * (e * (bits * _LOG2_HI) - xs))
    scaled_val = (m * h) * h * (1.0 + e * (bits * _LOG2_LO))
    val = jnp.where(xs > _KN_UNSCALED_MAX[double], scaled_val, unscaled)
    # 0 and subnormal x (see _k_edges): inf; +inf: 0; x < 0, nan x or order: nan.
    edge = jnp.where(x >= 0.0, jnp.where(x == jnp.inf, 0.0, jnp.inf), jnp.nan)
    edge = jnp.where(nu <= MAX_ORDER, edge, jnp.nan)
    return jnp.where(ok, val, edge)


@jax.custom_jvp
def _kn_int(n: jax.Array, x: jax.Array) -> jax.Array:
    return k_integer(n, x)


@_kn_int.defjvp
def _kn_int_jvp(primals: Pair, tangents: Pair) -> Pair:
    n, x = primals
    _, dx = tangents
    # K_n' = -(K_{n-1} + K_{n+1}) / 2, one kernel on both orders.
    km, kp = _kn_int(jnp.stack([n - 1.0, n + 1.0]), jnp.stack([x, x]))
    return _kn_int(n, x), -0.5 * (km + kp) * dx


def _kn(n: jax.Array, x: jax.Array) -> jax.Array:
    return _kn_int(lax.stop_gradient(jnp.trunc(n)), x)


_KN = entry_point(_kn)


def kn(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """``K_n(x)`` for integer order, mirroring ``scipy.special.kn``: a real ``n`` is
    truncated towards 0 (SciPy truncates with a warning).  Forward recurrence from the
    order-0/1 kernels.  Differentiable in ``x``: ``-(K_{n-1} + K_{n+1}) / 2``."""
    return _KN(n, x)


def _kn_oracle(n: Any, x: Any) -> Any:
    # kn(n, x) = kv(n, x) for integer n; SciPy's kn warns on non-integer n.
    return importlib.import_module("scipy.special").kv(jnp.trunc(jnp.asarray(n)), x)


_ORDERS_X = Domain(((-20.0, 20.0), (1e-3, 500.0)))
_SMALL_X = Domain(((-5.0, 20.0), (1e-2, 10.0)))

WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "iv",
        iv,
        domains=(_ORDERS_X, _SMALL_X, Domain(((-5.0, 5.0), (-20.0, -1e-3)))),
        differentiable=(1,),
        edge_cases=(EdgeCase((2.0, -1.5)), EdgeCase((-2.5, 0.0)), EdgeCase((3.0, -2.0))),
    ),
    declare(
        "ive",
        ive,
        domains=(_ORDERS_X, _SMALL_X),
        # float32 loses up to 1.5e-5 for negative non-integer orders near |z| = 1 (the
        # reflection term cancels); float64 meets 1e-12.
        tolerances={"float64": (1e-12, 1e-300), "float32": (3e-5, 1e-30)},
        differentiable=(1,),
        edge_cases=(EdgeCase((2.0, -1.5)), EdgeCase((-2.5, 0.0))),
    ),
    declare("k0", k0, domains=(Domain(((1e-6, 700.0),), log=True),), differentiable=(0,)),
    declare("k0e", k0e, domains=(Domain(((1e-6, 1e4),), log=True),), differentiable=(0,)),
    declare("k1", k1, domains=(Domain(((1e-6, 700.0),), log=True),), differentiable=(0,)),
    declare("k1e", k1e, domains=(Domain(((1e-6, 1e4),), log=True),), differentiable=(0,)),
    declare(
        "kn",
        kn,
        domains=(Domain(((-20.0, 20.0), (1e-3, 100.0))),),
        differentiable=(1,),
        oracle=_kn_oracle,
    ),
)
