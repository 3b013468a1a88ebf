"""Kolmogorov-Smirnov distributions: ``kolmogorov, kolmogi, smirnov, smirnovi``.

Methods:

* ``kolmogorov(x)``, the survival function of the limiting Kolmogorov distribution, from
  its two theta series: ``x > 1``: ``2 sum_k (-1)^(k-1) exp(-2 k^2 x^2)`` (5 terms), with
  ``x^2`` split exactly into ``s + r`` so that ``exp(-2 x^2) = exp(-2 s) (1 - 2 r)`` keeps
  full relative precision down to underflow; ``x <= 1``: ``1 - cdf``, ``cdf = sqrt(2 pi)/x
  sum_k exp(-(2k-1)^2 pi^2 / (8 x^2))`` (4 terms).  Its derivative is minus the density,
  the derivative of the same series.
* ``kolmogi(p)``: Newton's method on ``log sf(x) = log p`` (``p <= 1/2``) or ``log cdf(x)
  = log(1 - p)`` (``p > 1/2``), where both logarithms are nearly quadratic in ``x`` or
  ``1/x``, from the leading term's inverse; a fixed number of steps, 5 (no element waits on
  another).  Derivative ``-1 / pdf(kolmogi(p))``.
* ``smirnov(n, e)``, the exact one-sided statistic's survival function (Birnbaum & Tingey
  1951): ``e sum_{j=0}^{floor(n(1-e))} C(n, j) (1 - e - j/n)^(n-j) (e + j/n)^(j-1)``, all
  terms positive.  The terms are built by their ratio from ``T_0 = (1 - e)^n`` (with a
  power-of-two scale carried beside them, so that none under- or overflows; ``n A_j = n -
  j - n e`` from the exact product ``n e``, so a small ``A_j`` keeps its bits), and an
  element stops adding once its terms have passed their peak and fall below its sum's last
  bit.  Its ``e``-derivative is the same sum with ``T_j (1/e - (n-j)/A_j + (j-1)/B_j)``.
* ``smirnovi(n, p)``: Newton's method with bisection safeguard on ``log smirnov(n, e) =
  log p`` from Maag & Dicaire's approximation ``e = (sqrt(-18 n log p) - 1) / (6 n)``
  (kept between the bounds ``1 - p^(1/n)`` and ``sqrt(-log(p) / (2n))``), each element
  until its own step is below its last bits or, quadratic convergence being under way,
  below ``sqrt(eps)/10`` of ``e``.  Derivative ``-1 / pdf``.

``n`` is truncated to an integer as SciPy does, and carries no derivative.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import (
    entry_point,
    eps_of,
    is_double,
    iterate,
    nondiff,
    partitioned,
    subnormal_log,
    tangent,
    tiny_of,
    two_prod,
)
from ._declare import declare, quiet_oracle

__all__ = ["WRAPPERS", "kolmogi", "kolmogorov", "smirnov", "smirnovi"]

Pair = tuple[jax.Array, jax.Array]

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_PI2_8 = math.pi**2 / 8.0
_LOG2 = math.log(2.0)


def _log1p(x: jax.Array) -> jax.Array:
    """``log(1 + x)`` to ~1 ulp: XLA's ``log1p`` is 2.7e-14 relative off near ``x = -0.41``;
    beyond ``|x| = 0.3`` the rounding of ``u = 1 + x`` is corrected to first order instead."""
    u = 1.0 + x
    return jnp.where(jnp.abs(x) < 0.3, jnp.log1p(x), jnp.log(u) - ((u - 1.0) - x) / u)


def _series_terms(x: jax.Array) -> tuple[jax.Array, ...]:
    """The two theta series at ``x > 0``, each where it suits (the other gets a dummy)."""
    big = x > 1.0
    # x > 1: sf = 2 e^(-2 x^2) S, S = sum (-1)^(k-1) e^(-2 (k^2-1) x^2).
    xb = jnp.where(big, x, 2.0)
    s, r = two_prod(xb, xb)
    # x <= 1: cdf = sqrt(2 pi)/x e^(-a_1/x^2) C, C = sum e^(-(a_k - a_1)/x^2).
    xs = jnp.where(big, 0.5, x)
    w = 1.0 / (xs * xs)
    # One exponential serves both leading factors.
    lead_any = jnp.exp(jnp.where(big, -2.0 * s, -_PI2_8 * w))
    lead = lead_any * (1.0 - 2.0 * r)
    # The terms e^(-2 (k^2-1) x^2) are powers of e = e^(-2 x^2) <= e^-2 (k^2 - 1 = 3, 8,
    # 15, 24): products instead of one exp each.  Their relative rounding (a few ulp)
    # weighs at most e^-6 = 2.5e-3 against the leading 1.
    e1 = lead
    e2 = e1 * e1
    e3 = e2 * e1
    e8 = (e2 * e2) * (e2 * e2)
    powers = (e3, e8, e8 * e3 * e3 * e1, e8 * e8 * e8)  # k = 2..5
    alt = jnp.zeros_like(xb)
    dalt = jnp.zeros_like(xb)
    for k in range(5, 0, -1):  # smallest terms first
        term = powers[k - 2] if k > 1 else jnp.ones_like(xb)
        sign = 1.0 if k % 2 else -1.0
        alt = alt + sign * term
        dalt = dalt + sign * (k * k) * term
    # a_k - a_1 = k (k-1) pi^2 / 2: the terms are f^2, f^6, f^12 with f = e^(-pi^2/(2x^2))
    # = (e^(-pi^2/(8 x^2)))^4 <= 7.2e-3 (rounding of the products: relative 1e-15 of at
    # most 5e-5 of the sum).
    lead_s = jnp.where(big, 1.0, lead_any)
    f1 = (lead_s * lead_s) * (lead_s * lead_s)
    f2 = f1 * f1
    f6 = f2 * f2 * f2
    small_terms = (f2, f6, f6 * f6)  # k = 2..4
    tot = jnp.zeros_like(xs)
    dtot = jnp.zeros_like(xs)
    for k in range(4, 0, -1):
        a = (2 * k - 1) ** 2 * _PI2_8
        term = small_terms[k - 2] if k > 1 else jnp.ones_like(xs)
        tot = tot + term
        dtot = dtot + term * (2.0 * a * w - 1.0)
    sf_big = 2.0 * lead * alt
    pdf_big = 8.0 * xb * lead * dalt
    cdf_small = _SQRT_2PI / xs * lead_s * tot
    pdf_small = _SQRT_2PI * w * lead_s * dtot
    return big, s, r, alt, sf_big, pdf_big, xs, w, tot, cdf_small, pdf_small


def _kolmogorov_parts(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(sf, pdf, log sf, log cdf)`` at ``x > 0`` (each from the series that suits it)."""
    big, s, r, alt, sf_big, pdf_big, xs, w, tot, cdf_small, pdf_small = _series_terms(x)
    sf = jnp.where(big, sf_big, 1.0 - cdf_small)
    pdf = jnp.where(big, pdf_big, pdf_small)
    # log sf where sf is the series (x > 1), log cdf where cdf is (x <= 1), and the
    # logarithm of the complement of the other: one log and one _log1p serve all four.
    log_series = jnp.log(jnp.where(big, alt, tot))
    logsf_big = _LOG2 - 2.0 * s - 2.0 * r + log_series
    logcdf_small = math.log(_SQRT_2PI) - jnp.log(xs) - _PI2_8 * w + log_series
    log_other = _log1p(jnp.where(big, -sf_big, -cdf_small))
    log_sf = jnp.where(big, logsf_big, log_other)
    log_cdf = jnp.where(big, log_other, logcdf_small)
    return sf, pdf, log_sf, log_cdf


def _kolmogorov_pair(x: jax.Array) -> Pair:
    pos = x > 0.0
    xp = jnp.where(pos & jnp.isfinite(x), x, 1.0)
    sf, pdf, _, _ = _kolmogorov_parts(xp)
    sf = jnp.where(pos, sf, 1.0)
    pdf = jnp.where(pos, pdf, 0.0)
    sf = jnp.where(x == jnp.inf, 0.0, sf)
    pdf = jnp.where(x == jnp.inf, 0.0, pdf)
    nan = jnp.isnan(x)
    return jnp.where(nan, jnp.nan, sf), jnp.where(nan, jnp.nan, pdf)


@jax.custom_jvp
def _kolmogorov(x: jax.Array) -> jax.Array:
    return _kolmogorov_pair(x)[0]


@_kolmogorov.defjvp
def _kolmogorov_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    sf, pdf = _kolmogorov_pair(x)
    return sf, -pdf * dx


_KOLMOGI_STEPS = 5  # 4 reach 4e-15 over [1e-300, 1 - 1e-16] (3: 2e-9 near p = 1/2)


def _kolmogi_impl(p: jax.Array) -> jax.Array:
    inner = (p > 0.0) & (p < 1.0)
    pp = jnp.where(inner, p, 0.5)
    upper = pp <= 0.5  # solve log sf(x) = log p, x >= 0.83
    q = 1.0 - pp  # exact for p > 1/2
    log_target = jnp.where(upper, jnp.log(pp), jnp.log(q))
    # First guesses: the leading terms' inverses (sf ~ 2 e^(-2x^2); cdf ~ sqrt(2pi)/x
    # e^(-pi^2/(8x^2)), solved for t = pi^2/(8x^2) by two fixed-point steps).
    x_up = jnp.sqrt(jnp.maximum(0.5 * (_LOG2 - log_target), 0.35))
    t = jnp.maximum(-log_target, 0.2)
    for _ in range(2):
        t = jnp.maximum(math.log(_SQRT_2PI) - 0.5 * jnp.log(_PI2_8 / t) - log_target, 0.2)
    x_low = jnp.sqrt(_PI2_8 / t)
    x = jnp.where(upper, x_up, x_low)
    for _ in range(_KOLMOGI_STEPS):
        sf, pdf, log_sf, log_cdf = _kolmogorov_parts(x)
        # Newton on the logarithm: f = log sf - log p (f' = -pdf/sf), or log cdf - log q.
        step = jnp.where(
            upper, (log_sf - log_target) * sf / pdf, -(log_cdf - log_target) * (1.0 - sf) / pdf
        )
        x = jnp.maximum(x + step, 0.5 * x)
    # Below 4 tiny sf's leading factor e^(-2x^2) = p/2 underflows (Newton's sf/pdf is 0/0)
    # and a subnormal p reads as 0 (its log comes from the bits): there sf = 2 e^(-2x^2)
    # to the last bit (the next term is (p/2)^3 relative), x = sqrt(log(2/p)/2).  (SciPy
    # runs Newton in subnormal arithmetic there: inf at 5e-324, up to 2e-4 off below 2e-322.)
    sub, log_sub = subnormal_log(p)
    deep = ((p > 0.0) & (p < 4.0 * tiny_of(p))) | sub
    log_p = jnp.where(sub, log_sub, jnp.log(jnp.where(deep, p, 1.0)))
    x = jnp.where(deep, jnp.sqrt(0.5 * (_LOG2 - log_p)), x)
    x = jnp.where((p == 0.0) & ~sub, jnp.inf, x)
    x = jnp.where(p == 1.0, 0.0, x)
    return jnp.where(
        inner | (p == 0.0) | (p == 1.0), jnp.where(sub & jnp.signbit(p), jnp.nan, x), jnp.nan
    )


@jax.custom_jvp
def _kolmogi(p: jax.Array) -> jax.Array:
    return _kolmogi_impl(p)


@_kolmogi.defjvp
def _kolmogi_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (p,), (dp,) = primals, tangents
    x = _kolmogi(p)
    _, pdf = _kolmogorov_pair(x)
    return x, -dp / pdf


# ---------------------------------------------------------------- smirnov
_SMIRNOV_MAX_TERMS = 10**7


def _smirnov_pair(n: jax.Array, e: jax.Array, with_pdf: bool) -> Pair:
    """``(sf, pdf)`` for whole ``n >= 1`` and ``0 < e < 1`` (the caller masks the rest)."""
    dtype = e.dtype
    # n e = ne_hi + ne_lo exactly: n A_j = n - j - n e and n B_j = n e + j are then exact
    # to the last bit even where A_j is a small difference of large numbers.
    ne_hi, ne_lo = two_prod(n, e)
    log_t0 = n * _log1p(-e)
    k0 = jnp.floor(log_t0 / _LOG2)
    m0 = jnp.exp(log_t0 - k0 * _LOG2)
    # T_0 contributes nothing to the derivative's 1/e + (j-1)/B_j part (B_0 = e).
    d0 = m0 * (-n / (1.0 - e))
    bits = 200.0 if is_double(e) else 50.0  # the terms' power-of-two rescaling step
    big, small = 2.0**bits, 2.0**-bits
    tiny = eps_of(e) * 1e-2
    # state: (j, term, sum, derivative sum, exponent k, done); done at once when n e > n - 1
    # (the sum is its first term).
    state: tuple[jax.Array, ...] = (
        jnp.zeros_like(e),
        m0,
        m0,
        d0,
        k0,
        ((n - 1.0) - ne_hi) - ne_lo < 0.0,
    )

    def step(_: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        j, m, acc, dacc, k, _ = st
        j1 = j + 1.0
        na = ((n - j) - ne_hi) - ne_lo  # n A_j
        na1 = ((n - j1) - ne_hi) - ne_lo  # n A_{j+1} = n A_j - 1
        nb = (j + ne_hi) + ne_lo  # n B_j
        nb1 = (j1 + ne_hi) + ne_lo
        alive = na1 > 0.0
        na1s = jnp.where(alive, na1, 1.0)
        # T_{j+1}/T_j = (n-j)/(j+1) (A_{j+1}/A_j)^(n-j-1) (B_{j+1}/B_j)^(j-1) B_{j+1}/A_j;
        # log(A_{j+1}/A_j) = log1p(-1/(n A_j)), directly where that is close to -1.
        log_a = jnp.where(na > 2.0, _log1p(-1.0 / na), jnp.log(na1s / na))
        log_ratio = (n - j - 1.0) * log_a + (j - 1.0) * _log1p(1.0 / nb)
        ratio = (n - j) / j1 * jnp.exp(log_ratio) * (nb1 / na)
        m_new = jnp.where(alive, m * ratio, 0.0)
        acc_new = acc + m_new
        dacc_new = dacc
        if with_pdf:
            dacc_new = dacc + m_new * (1.0 / e + n * ((j1 - 1.0) / nb1 - (n - j1) / na1s))
        up = m_new > big
        down = (m_new < small) & (m_new > 0.0)
        f = jnp.where(up, small, jnp.where(down, big, 1.0))
        k_new = k + jnp.where(up, bits, jnp.where(down, -bits, 0.0))
        fading = (ratio < 1.0) & (m_new <= tiny * acc_new)
        return (j1, m_new * f, acc_new * f, dacc_new * f, k_new, ~alive | fading)

    # One step per loop turn: the loop sits inside smirnovi's Newton loop (compile time).
    _, _, acc, dacc, k, _ = iterate(
        step, state, lambda st: st[5], _SMIRNOV_MAX_TERMS, dtype, unroll=1
    )
    # Apply the exponent in two halves (2^k alone may underflow while the product is normal).
    half = jnp.exp2(jnp.floor(0.5 * k))
    rest = jnp.exp2(k - jnp.floor(0.5 * k))
    sf = (acc * half) * rest
    pdf = -((dacc * half) * rest) if with_pdf else jnp.zeros_like(sf)
    return sf, pdf


def _smirnov_masked(n: jax.Array, e: jax.Array, with_pdf: bool) -> Pair:
    n = jnp.trunc(n)
    ok = (n >= 1.0) & (e >= 0.0) & (e <= 1.0) & jnp.isfinite(n)
    inner = ok & (e > 0.0) & (e < 1.0)
    nn = jnp.where(inner, n, 1.0)
    ee = jnp.where(inner, e, 0.5)
    sf, pdf = _smirnov_pair(nn, ee, with_pdf)
    sf = jnp.where(e == 0.0, 1.0, jnp.where(e == 1.0, 0.0, sf))
    # At e = 0 and e = 1 the density is n and 0 (n = 1: 1); only the interior is used.
    pdf = jnp.where(inner, pdf, 0.0)
    return jnp.where(ok, sf, jnp.nan), jnp.where(ok, pdf, jnp.nan)


def _n_class(n: jax.Array) -> jax.Array:
    """Cost class for ``partitioned``: the sums run over up to ``n`` terms, so elements
    are grouped by ``2 log2 n`` (capped): a chunk then waits for elements of its own size."""
    nn = jnp.where(jnp.isfinite(n) & (n >= 1.0), n, 1.0)
    return jnp.minimum(jnp.floor(2.0 * jnp.log2(nn)), float(_N_CLASSES - 1)).astype(jnp.int32)


_N_CLASSES = 16


@jax.custom_jvp
def _smirnov(n: jax.Array, e: jax.Array) -> jax.Array:
    return partitioned(
        lambda nn, ee: (_smirnov_masked(nn, ee, False)[0],), _n_class(n), _N_CLASSES, n, e
    )[0]


def _smirnov_jvp(primals: Pair, tangents: tuple[object, object]) -> Pair:
    n, e = primals
    dn, de = tangents
    nondiff(dn, "smirnov", "n")
    sf, pdf = _smirnov_masked(n, e, True)
    return sf, -pdf * tangent(de, e)


_smirnov.defjvp(_smirnov_jvp, symbolic_zeros=True)

_SMIRNOVI_MAX_STEPS = 60


def _smirnovi_impl(n: jax.Array, p: jax.Array) -> jax.Array:
    n = jnp.trunc(n)
    ok = (n >= 1.0) & jnp.isfinite(n) & (p >= 0.0) & (p <= 1.0)
    inner = ok & (p > 0.0) & (p < 1.0)
    nn = jnp.where(inner, n, 1.0)
    pp = jnp.where(inner, p, 0.5)
    eps = eps_of(p)
    log_p = jnp.log(pp)
    # The root lies between 1 - p^(1/n) (sf >= its first term (1 - e)^n: exact for n = 1)
    # and 1; its first guess is Maag & Dicaire's sf ~ exp(-(6 n e + 1)^2 / (18 n)) solved
    # for e, kept below sqrt(-log(p) / (2 n)), the inverse of the leading exp(-2 n e^2).
    lower = -jnp.expm1(log_p / nn)
    guess = (jnp.sqrt(-18.0 * nn * log_p) - 1.0) / (6.0 * nn)
    upper = jnp.minimum(jnp.sqrt(-log_p / (2.0 * nn)), 1.0 - 0.5 * eps)
    e0 = jnp.where(nn == 1.0, lower, jnp.maximum(jnp.minimum(guess, upper), lower))
    lo, hi = lower, jnp.ones_like(pp)
    # Once a Newton step is below sqrt(eps)/10 of e (and log sf within 1e-3 of log p), the
    # error it leaves is ~ (step / e)^2 / 2 < eps / 200: stop there rather than wait for a
    # step below the last bits, which the sums' rounding may never allow (such elements
    # would run to the step limit and hold their chunk there).
    settled = 0.1 * math.sqrt(eps)

    def step(_: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        e, lo, hi, _ = st
        sf, pdf = _smirnov_pair(nn, e, True)
        above = sf > pp  # the root is to the right of e
        lo = jnp.where(above, e, lo)
        hi = jnp.where(above, hi, e)
        # Newton on log sf(e) = log p (log sf is nearly quadratic in e, sf is not).
        resid = jnp.log(sf) - log_p
        newton = e + resid * sf / pdf
        inside = (newton >= lo) & (newton <= hi) & jnp.isfinite(newton)
        e_new = jnp.where(inside, newton, 0.5 * (lo + hi))
        e_new = jnp.where(sf == pp, e, e_new)
        change = jnp.abs(e_new - e)
        done = (change <= 2.0 * eps * e) | (
            inside & (change <= settled * e) & (jnp.abs(resid) <= 1e-3)
        )
        return (e_new, lo, hi, done)

    state: tuple[jax.Array, ...] = (e0, lo, hi, jnp.zeros(pp.shape, bool))
    e = iterate(step, state, lambda st: st[3], _SMIRNOVI_MAX_STEPS, pp.dtype, unroll=1)[0]
    e = jnp.where(p == 0.0, 1.0, jnp.where(p == 1.0, 0.0, e))
    return jnp.where(ok, e, jnp.nan)


@jax.custom_jvp
def _smirnovi(n: jax.Array, p: jax.Array) -> jax.Array:
    # Grouped by n and chunked: the Newton loop and the sums inside it otherwise run over
    # the whole array until its slowest element is done.
    return partitioned(lambda nn, pp: (_smirnovi_impl(nn, pp),), _n_class(n), _N_CLASSES, n, p)[0]


def _smirnovi_jvp(primals: Pair, tangents: tuple[object, object]) -> Pair:
    n, p = primals
    dn, dp = tangents
    nondiff(dn, "smirnovi", "n")
    e = _smirnovi(n, p)
    _, pdf = _smirnov_masked(n, e, True)
    return e, -tangent(dp, p) / pdf


_smirnovi.defjvp(_smirnovi_jvp, symbolic_zeros=True)

_KOLMOGOROV = entry_point(_kolmogorov)
_KOLMOGI = entry_point(_kolmogi)
_SMIRNOV = entry_point(_smirnov)
_SMIRNOVI = entry_point(_smirnovi)


def kolmogorov(y: ArrayLike) -> jax.Array:
    """Complementary CDF of the Kolmogorov distribution, mirroring
    ``scipy.special.kolmogorov`` (1 for ``y <= 0``).  Differentiable: minus the density."""
    return _KOLMOGOROV(y)


def kolmogi(p: ArrayLike) -> jax.Array:
    """Inverse of :func:`kolmogorov` in ``y``, mirroring ``scipy.special.kolmogi`` (``inf`` at
    0, 0 at 1, nan outside ``[0, 1]``).  Differentiable: ``-1 / pdf``."""
    return _KOLMOGI(p)


def smirnov(n: ArrayLike, d: ArrayLike) -> jax.Array:
    """Exact one-sided Kolmogorov-Smirnov survival function ``P(D_n^+ >= d)``, mirroring
    ``scipy.special.smirnov`` (``n`` truncated to an integer, nan for ``n < 1`` or ``d``
    outside ``[0, 1]``).  Differentiable in ``d``.  The sum has ``n (1 - d)`` terms at most."""
    return _SMIRNOV(n, d)


def smirnovi(n: ArrayLike, p: ArrayLike) -> jax.Array:
    """Inverse of :func:`smirnov` in ``d``, mirroring ``scipy.special.smirnovi``.
    Differentiable in ``p``: ``-1 / pdf``."""
    return _SMIRNOVI(n, p)


WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "kolmogorov",
        kolmogorov,
        domains=(Domain(((0.02, 20.0),), log=True), Domain(((0.5, 3.0),))),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.0,)), EdgeCase((-1.0,)), EdgeCase((19.3,)), EdgeCase((27.5,))),
    ),
    declare(
        "kolmogi",
        kolmogi,
        # Down to 1e-37 (float32's normal range: XLA flushes subnormal inputs to 0); the
        # float64 tail to 1e-300 is in the edge cases.
        domains=(Domain(((1e-37, 1.0),), log=True), Domain(((0.0, 1.0),))),
        differentiable=(0,),
        edge_cases=tuple(EdgeCase((p,)) for p in (0.5, 1.5, 1e-300, 1e-200, 1e-100, 1 - 1e-15)),
    ),
    declare(
        "smirnov",
        smirnov,
        domains=(
            Domain(((1.0, 50.0), (0.0, 1.0)), integers=(0,)),
            Domain(((50.0, 1000.0), (0.0, 0.2)), integers=(0,)),
        ),
        differentiable=(1,),
        # float32: the first term (1 - d)^n = exp(n log(1 - d)) carries the float32 rounding
        # of an exponent of up to ~50, and every term inherits it: ~|log sf| 6e-8 relative.
        # Known short: the sum runs over ~n terms built by their ratios, and float32
        # rounding accumulates along them (against SciPy at d = t/sqrt(n), t in [0.3, 3]:
        # 4e-6 at n = 1e3, 7e-6 at 1e4, 8.5e-5 at 1e5, 1.7e-3 at 1e6); the domains stop at
        # n = 1000.  A fix carries the terms' logarithms and the sum as double words.
        # On an H100 (jax 0.11.2) the rounding adds up differently: 2.1e-5 at n = 774,
        # d = 0.0815 (7.7e-6 on CPU), so float32 is held to 5e-5.
        tolerances={"float64": (1e-12, 1e-300), "float32": (5e-5, 1e-30)},
        oracle=quiet_oracle("special.smirnov", RuntimeWarning),
        edge_cases=(EdgeCase((5.0, 0.2)), EdgeCase((1.0, 0.3)), EdgeCase((0.0, 0.5))),
    ),
    declare(
        "smirnovi",
        smirnovi,
        domains=(
            Domain(((1.0, 50.0), (0.0, 1.0)), integers=(0,)),
            # To n = 300 only: each Newton step is an n-term sum (the check's time).
            Domain(((50.0, 300.0), (1e-30, 1.0)), integers=(0,), log=True),
        ),
        differentiable=(1,),
        # Near p = 1 the root d is small and ill-conditioned (d' = -1/pdf, pdf ~ 1): an ulp
        # of p moves it by ~1e-16 absolute, and SciPy's answer is no closer (both give
        # smirnov within an ulp of p); float32 as smirnov's, with its ulp of p.
        tolerances={"float64": (1e-12, 1e-15), "float32": (2e-5, 1e-6)},
        oracle=quiet_oracle("special.smirnovi", RuntimeWarning),
        edge_cases=(EdgeCase((5.0, 0.2)), EdgeCase((1.0, 0.3)), EdgeCase((0.0, 0.5))),
    ),
)
