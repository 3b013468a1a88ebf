"""Student t distribution CDF ``stdtr``.

Method: for ``t < 0``, ``stdtr(df, t) = I_x(df/2, 1/2) / 2`` with
``x = df / (df + t^2)`` (regularised incomplete beta), and
``stdtr(df, t) = 1 - stdtr(df, -t)``.  ``I_x(a, b)`` is evaluated with the
even contraction of the classical continued fraction (Abramowitz & Stegun
26.5.8; Didonato & Morris 1992, ``BFRAC``) by the modified Lentz algorithm,
directly when ``x < (a+1)/(a+b+2)`` and otherwise through
``I_x(a, b) = 1 - I_{1-x}(b, a)``; ``1 - x = t^2 / (df + t^2)`` is formed
without cancellation.  The prefactor ``x^a (1-x)^b / B(a, b)`` uses
``Gamma(a + 1/2) / Gamma(a)`` from a Stirling-series difference (shifted
upwards by the recurrence for small ``a``), not ``lgamma``, and carries
``t^2/df`` and the exponent ``(df/2) log1p(t^2/df)`` as exact double-word
values, to keep full relative accuracy for large ``df`` and in the tails.
Large inputs are grouped by expected continued-fraction length before being
processed in chunks (see ``_common.partitioned``).

Derivative in ``t``: the Student t density.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, ScipyWrapper

from ._common import (
    entry_point,
    eps_of,
    is_double,
    iterate,
    log1pmx,
    nondiff,
    partitioned,
    polyval,
    stirling_corr,
    tangent,
    tiny_of,
    two_prod,
    two_sum,
)
from ._declare import declare
from ._erf import ndtr

__all__ = ["WRAPPERS", "betainc_cf", "gamma_ratio_half", "stdtr"]

_SHIFT = 10  # Stirling series used for arguments >= _SHIFT
_LentzState = tuple[jax.Array, jax.Array, jax.Array, jax.Array]


def gamma_ratio_half(a: jax.Array) -> jax.Array:
    """``Gamma(a + 1/2) / Gamma(a)`` for ``a > 0`` to a few ulp.

    For ``z >= 10``: ``log R(z) = z log1p(1/(2z)) - 1/2 + log(z)/2 + S(z+1/2) - S(z)``
    with ``S`` the Stirling remainder; smaller ``a`` use
    ``R(a) = R(a + 10) prod_{k<10} (a + k) / (a + k + 1/2)``.
    """
    small = a < _SHIFT
    z = jnp.where(small, a + _SHIFT, a)
    w = 0.5 / z
    # z*log1p(w) - 1/2 = z*(log1p(w) - w), computed without cancellation.
    expo = z * log1pmx(w) + (stirling_corr(z + 0.5) - stirling_corr(z))
    big = jnp.sqrt(z) * jnp.exp(expo)
    num = jnp.ones_like(a)
    den = jnp.ones_like(a)
    for k in range(_SHIFT):
        num = num * (a + k)
        den = den * (a + (k + 0.5))
    return jnp.where(small, big * (num / den), big)


def betainc_cf(
    a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array, max_iter: int | None = None
) -> jax.Array:
    """Continued fraction ``F`` with ``I_x(a, b) = x^a y^b / (B(a, b) F)``, ``y = 1 - x``.

    This is the even contraction of the classical fraction (A&S 26.5.8), as
    used in Didonato & Morris (1992, TOMS 708, ``BFRAC``)::

        F = beta_0 + alpha_1 / (beta_1 + alpha_2 / (beta_2 + ...))
        alpha_m = (a+m-1)(a+b+m-1) m (b-m) x^2 / (a+2m-1)^2
        beta_m  = m + m (b-m) x / (a+2m-1) + (a+m)(a y - b x + 1 + m (2-x)) / (a+2m+1)

    with ``beta_0 = a (a y - b x + 1) / (a + 1)``; ``y`` is passed separately so
    callers can form it without cancellation.  Evaluated by the modified Lentz
    algorithm in a ``lax.while_loop`` that stops once every element has
    converged (relative step within 4 ulp of 1: the vectorised steps carry a
    few ulp of rounding noise) or after ``max_iter`` terms (by default 100
    (float64) / 80 (float32), enough for ``stdtr``); it converges quickly for
    ``x < (a+1)/(a+b+2)``.  Each element stops at its own convergence, so its
    value does not depend on the rest of the batch.
    """
    eps = eps_of(x)
    tiny = tiny_of(x)
    if max_iter is None:
        max_iter = 100 if is_double(x) else 80
    lam1 = a * y - b * x + 1.0
    apb = a + b
    x2m = 2.0 - x

    def clamp(v: jax.Array) -> jax.Array:
        return jnp.where(jnp.abs(v) < tiny, tiny, v)

    def step(m: jax.Array, st: _LentzState) -> _LentzState:
        cc, dd, f, _ = st
        # a + (m - 1), not (a + m) - 1: at m = 1 the latter loses an a below eps (the
        # whole fraction is proportional to a there: I_x(1e-16, 0.5) was 1.5% off).
        den = a + (2.0 * m - 1.0)
        r = 1.0 / (den * (den + 2.0))
        rden = (den + 2.0) * r  # 1 / den
        rden2 = den * r  # 1 / (den + 2)
        # Ordered so that huge b and tiny x cannot overflow/underflow to inf * 0.
        alpha = (m * (a + (m - 1.0)) * rden) * ((apb + (m - 1.0)) * x * rden) * ((b - m) * x)
        beta = m + m * (b - m) * x * rden + (a + m) * (lam1 + m * x2m) * rden2
        dd = 1.0 / clamp(beta + alpha * dd)
        cc = clamp(beta + alpha / cc)
        delta = cc * dd
        return cc, dd, f * delta, delta

    def converged(st: _LentzState) -> jax.Array:
        return jnp.abs(st[3] - 1.0) <= 4.0 * eps

    f0 = clamp(a * lam1 / (a + 1.0))
    init: _LentzState = (f0, jnp.zeros_like(x), f0, jnp.zeros_like(x))
    return iterate(step, init, converged, max_iter, x.dtype, unroll=2)[2]


# log(2) split so that k * _LN2_HI is exact for |k| < 2**8 in float32.
_LN2_HI = 0.693145751953125
_LN2_LO = math.log(2.0) - _LN2_HI


def _log1p_dw(r_hi: jax.Array, r_lo: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``log1p(r_hi + r_lo)`` as a double-word ``(hi, lo)`` for ``r_hi >= 0``.

    ``1 + r = 2^k f`` with ``f`` in ``[sqrt(1/2), sqrt(2))`` carried as a
    double-word; ``log f = 2 atanh(s)``, ``s = (f - 1) / (f + 1)``, with the
    leading ``2 s`` carried as a double-word and the series remainder
    ``2 s^3 (1/3 + s^2/5 + ...)`` (at most 1% of the total) in working
    precision; ``k log 2`` uses a split constant.  Used for float32, where
    the exponent of ``x^(df/2)`` (up to ~87) magnifies every ulp of ``log1p``.
    """
    # XLA's algebraic simplifier reassociates additions of constants
    # ((r + 1) - 1 becomes r), which would erase the rounding errors that
    # the double-word steps recover: the ones go through a barrier.
    one: jax.Array = lax.optimization_barrier(jnp.ones_like(r_hi))  # type: ignore[no-untyped-call]
    u_hi, u_lo = two_sum(one, r_hi)
    u_lo = u_lo + r_lo
    mant, expo = jnp.frexp(u_hi)  # u_hi = mant 2^expo, mant in [1/2, 1)
    low = mant < math.sqrt(0.5)
    expo = jnp.where(low, expo - 1, expo)
    scale = jnp.ldexp(jnp.ones_like(u_hi), -expo)  # exact power of two
    f_hi = u_hi * scale
    f_lo = u_lo * scale
    num_hi, num_lo = two_sum(f_hi - one, f_lo)  # f_hi - 1 is exact (Sterbenz)
    den_hi, den_lo = two_sum(f_hi, one)
    den_lo = den_lo + f_lo
    s_hi = num_hi / den_hi
    p_hi, p_lo = two_prod(s_hi, den_hi)
    s_lo = (((num_hi - p_hi) - p_lo) + num_lo - s_hi * den_lo) / den_hi
    s2 = s_hi * s_hi
    series = polyval(s2, [1.0 / (2 * j + 3) for j in reversed(range(6))])
    rest = 2.0 * s_lo + 2.0 * s_hi * s2 * series
    k = expo.astype(r_hi.dtype)
    hi, lo = two_sum(k * _LN2_HI, 2.0 * s_hi)
    lo = lo + (rest + k * _LN2_LO)
    return two_sum(hi, lo)


def _x_pow_a(df: jax.Array, t: jax.Array) -> jax.Array:
    """``(df / (df + t^2))^(df/2) = exp(-(df/2) log1p(t^2/df))``.

    The exponent reaches several hundred in the tails, where every ulp of it
    is an ulp-sized relative error times its magnitude.  ``t^2 / df`` and the
    product with ``df/2`` are therefore carried as exact double-word values
    (:func:`._common.two_prod`), leaving only the rounding of ``log1p`` itself.
    """
    double = is_double(t)
    a = 0.5 * df
    t2 = t * t
    r = t2 / df
    plain = jnp.exp(-a * jnp.log1p(r))
    safe = (jnp.abs(t) < (1e150 if double else 1e15)) & (df < (1e290 if double else 1e30))
    ts = jnp.where(safe, t, 1.0)
    dfs = jnp.where(safe, df, 1.0)
    t2_hi, t2_lo = two_prod(ts, ts)
    r_hi = t2_hi / dfs
    p_hi, p_lo = two_prod(r_hi, dfs)
    r_lo = (((t2_hi - p_hi) - p_lo) + t2_lo) / dfs  # t^2/df - r_hi
    if double:
        l_hi = jnp.log1p(r_hi)
        l_lo = r_lo / (1.0 + r_hi)
    else:
        l_hi, l_lo = _log1p_dw(r_hi, r_lo)
    e_hi, e_lo = two_prod(0.5 * dfs, l_hi)
    e_lo = e_lo + 0.5 * dfs * l_lo
    compensated = jnp.exp(-e_hi) * (1.0 - e_lo)
    return jnp.where(safe, compensated, plain)


def _stdtr_impl(df: jax.Array, t: jax.Array) -> jax.Array:
    a = 0.5 * df
    t2 = t * t
    r = t2 / df  # t^2 / df
    rinv = df / t2
    x = 1.0 / (1.0 + r)  # df / (df + t^2)
    y = 1.0 / (1.0 + rinv)  # t^2 / (df + t^2)
    sqrt_y = jnp.sqrt(y)
    xa = _x_pow_a(df, t)  # x ** a
    ratio = gamma_ratio_half(a)
    # The direct fraction converges fastest for x < (a+1)/(a+b+2) = (a+1)/(a+2.5)
    # (i.e. t^2 (df+2) > 3 df), but near that switch the other form gives
    # I_x = 1 - I_y ~ 0.1 with a 10x cancellation.  float64 can afford it;
    # float32 switches at x < (a+1)/(a+1.5), i.e. t^2 (df+2) > df (I_x ~ 0.3,
    # at most ~30 more terms).
    direct = x < (a + 1.0) / (a + (2.5 if is_double(t) else 1.5))
    pa = jnp.where(direct, a, 0.5)
    pb = jnp.where(direct, 0.5, a)
    px = jnp.where(direct, x, y)
    py = jnp.where(direct, y, x)
    # x^a y^(1/2) / B(a, 1/2) is symmetric in the two forms.
    pref = xa * sqrt_y * ratio * (1.0 / math.sqrt(math.pi))
    ival = pref / betainc_cf(pa, pb, px, py)
    tail = 0.5 * jnp.where(direct, ival, 1.0 - ival)  # P(T < -|t|)
    p = jnp.where(t < 0.0, tail, 1.0 - tail)
    p = jnp.where(jnp.isinf(df) & (df > 0), ndtr(t), p)
    p = jnp.where(t == jnp.inf, 1.0, p)
    p = jnp.where(t == -jnp.inf, 0.0, p)
    return jnp.where((df <= 0.0) | jnp.isnan(df) | jnp.isnan(t), jnp.nan, p)


def _stdtr_pdf(df: jax.Array, t: jax.Array) -> jax.Array:
    a = 0.5 * df
    dfs = jnp.where(jnp.isinf(df), 1.0, df)
    dens = gamma_ratio_half(0.5 * dfs) / jnp.sqrt(math.pi * dfs)
    dens = dens * jnp.exp(-(0.5 * dfs + 0.5) * jnp.log1p(t * t / dfs))
    normal = jnp.exp(-0.5 * t * t) * (1.0 / math.sqrt(2.0 * math.pi))
    dens = jnp.where(jnp.isinf(df) & (df > 0), normal, dens)
    return jnp.where((a <= 0.0) | jnp.isnan(df) | jnp.isnan(t), jnp.nan, dens)


def _cost_class(df: jax.Array, t: jax.Array) -> jax.Array:
    """Work class from ``r = t^2 (df+5) / (3 df)``, which is 1 where the two
    continued-fraction forms meet: the fraction needs at most ~5 terms for
    ``|log r| > 5``, ~8 for ``|log r| > 3``, ~23 for ``|log r| > 1`` and up to
    ~50 (``df = 1000``) otherwise."""
    r = t * t * (df + 5.0) / (3.0 * df)
    cls = jnp.zeros(df.shape, jnp.int32)
    for bound in (1.0, 3.0, 5.0):
        near = (r < math.exp(bound)) & (r > math.exp(-bound))
        cls = cls + near.astype(jnp.int32)
    return cls


@jax.custom_jvp
def _stdtr(df: jax.Array, t: jax.Array) -> jax.Array:
    return partitioned(lambda d, u: (_stdtr_impl(d, u),), _cost_class(df, t), 4, df, t)[0]


def _stdtr_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[object, object]
) -> tuple[jax.Array, jax.Array]:
    df, t = primals
    ddf, dt = tangents
    nondiff(ddf, "stdtr", "df")
    return _stdtr(df, t), _stdtr_pdf(df, t) * tangent(dt, t)


_stdtr.defjvp(_stdtr_jvp, symbolic_zeros=True)


_STDTR = entry_point(_stdtr)


def stdtr(df: ArrayLike, t: ArrayLike) -> jax.Array:
    """Student t cumulative distribution function, mirroring ``scipy.special.stdtr``.

    ``stdtr(df, t) = P(T <= t)`` for ``T`` Student-t distributed with ``df``
    (real, positive) degrees of freedom.

    Domain: ``df > 0`` (``df = inf`` gives the normal CDF), any ``t``;
    ``stdtr(df, inf) = 1``, ``stdtr(df, -inf) = 0``, ``stdtr(df, 0) = 0.5``;
    ``df <= 0`` or a nan argument gives nan.

    Accuracy (vs SciPy, ``df`` log-uniform in [0.5, 1e3], ``t`` uniform in
    [-50, 50] plus log-uniform ``|t|`` in [1e-8, 50]): max relative error
    1.6e-13 in float64 (absolute floor 1e-300), 1.4e-6 in float32 down to
    float32's underflow (absolute floor 1e-30): there ``log1p`` of the exponent
    of ``(df/(df+t^2))^(df/2)`` (up to ~87) is carried as a double-word.

    Differentiable in ``t`` only (derivative: the Student t density);
    differentiating with respect to ``df`` raises ``NotImplementedError``.
    """
    return _STDTR(df, t)


# ------------------------------------------------------------- declarations
WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare("stdtr", stdtr, domains=(Domain(((0.5, 1000.0), (-50.0, 50.0))),), differentiable=(1,)),
)
