"""Regularised incomplete beta function ``I_x(a, b)``, its complement and its inverse.

Method:

* ``I_x(a, b) = x^a y^b / (B(a, b) F)`` (``y = 1 - x``) with ``F`` the even contraction of
  the classical continued fraction (``_t.betainc_cf``, modified Lentz), evaluated directly
  for ``x < (a+1)/(a+b+2)`` and through ``I_x(a, b) = 1 - I_y(b, a)`` otherwise.  Each
  element stops iterating at its own convergence: unlike ``jax.scipy.special.betainc``
  (which iterates until the whole batch has converged), an element's value is the same
  bits whatever else is in the batch.
* Where the fraction's first parameter ``s`` is tiny (``s (1 + |log x|) < 1e-5 min(1, b)``
  in its frame) the complement ``1 - pre / F`` ~ ``s`` is a series in ``s``
  (:func:`_tiny_complement`), not ``1 - I`` by cancellation (relative, not absolute).
* The prefactor ``x^a y^b / B(a, b)`` is formed in logarithms without ``lgamma``
  differences: for ``a, b >= 10`` in the form
  ``a phi(x (a+b)/a) + b phi(y (a+b)/b) + log(ab/(2 pi (a+b)))/2 + S(a+b) - S(a) - S(b)``
  with ``phi(r) = log r - r + 1`` (``log1pmx`` near ``r = 1``) and ``S`` the Stirling
  remainder (as TOMS 708's ``brcomp``); with one parameter ``s < 10`` and the other
  ``L >= 10``, ``log Gamma(L+s) - log Gamma(L)`` from a Stirling difference; otherwise
  from ``log Gamma(1+z)`` reduced to ``[1/2, 3/2]`` (``_gamma.log_gamma1p``).
  ``log x`` is ``log1p(-y)`` for small ``y`` (and likewise ``log y``).
* The inverse solves ``I_x = p`` (or ``1 - I_x = q``, whichever target is below 1/2) by
  Halley's method in ``log x`` on ``log I`` (or ``log (1 - I)``), in the frame
  (``(a, b, p, q)`` or ``(b, a, q, p)``) whose unknown is below about 1/2, so that both
  ``x`` and ``1 - x`` are returned to full relative accuracy.  Starting points: the
  small-``x`` tail ``x^a / (a B(a, b))``, Numerical Recipes' normal approximation
  (``a, b >= 1``) or its two-piece power approximation (otherwise).  Each element stops at
  its own convergence.

Derivative in ``x``: the beta density ``x^(a-1) y^(b-1) / B(a, b)``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax import lax

from ._common import (
    CHUNK_SIZE,
    is_double,
    iterate,
    log1pmx,
    log_positive,
    partitioned,
    rgamma1p_small,
    stirling_corr,
    subnormal_parts,
    tiny_of,
    two_prod,
    two_sum,
)
from ._erf import ndtri
from ._t import betainc_cf

__all__ = [
    "BetaConst",
    "beta_const",
    "beta_density",
    "beta_inv",
    "beta_log_density",
    "beta_log_pq",
    "beta_pq",
    "log_beta",
    "log_beta_prefactor",
    "log_small_root",
]

_BIG = 10.0  # Stirling forms for parameters >= _BIG
#: ``a + b`` above which the offset from the centre is formed in double word (see
#: :func:`_centre_offset`); below it the rounded form's error is under ~3e-15.
_EXACT_CENTRE = 2000.0
_LOG_2PI = math.log(2.0 * math.pi)
_CF_CAP = (3000, 1000)  # continued-fraction terms (float64, float32); ~2 sqrt(a b / (a+b))
_HALLEY_CAP = (40, 20)
_MAX_STEP = 10.0  # largest step in log x
_Pair = tuple[jax.Array, jax.Array]


def _lgamma_small(z: jax.Array) -> jax.Array:
    """``log Gamma(z)`` for ``0 < z < 10`` with a small absolute error, in one ``log``:
    ``Gamma(z) = Gamma(1+f) (f+1) ... (f+n-1)`` with ``n = round(z)``, ``f = z - n``
    (``Gamma(1+z) / z`` for ``n = 0``) and ``1/Gamma(1+f)`` from its Taylor series."""
    n = jnp.round(z)
    f = z - n
    prod = jnp.where(n >= 1.0, 1.0, 1.0 / z)
    for j in range(1, int(_BIG)):
        prod = jnp.where(n > j, prod * (f + j), prod)
    return jnp.log(prod / rgamma1p_small(f))


def _phi(r: jax.Array, num: jax.Array, den: jax.Array) -> jax.Array:
    """``log r - r + 1`` for ``r = 1 + num/den``; ``num`` (exact near ``r = 1``) avoids
    forming ``r - 1`` with cancellation."""
    near = (r > 0.5) & (r < 2.0)
    return jnp.where(near, log1pmx(num / den), jnp.log(r) - r + 1.0)


def _centre_offset(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    """``x (a+b) - a = b x - a y`` to a rounding of the result itself, from whichever of
    ``x``, ``y`` is below 1/2 (taken as exact, the other as its complement): the
    exponent ``a phi + b phi ~ -d^2 (a+b) / (2ab)`` of the prefactor carries an error
    ``d (a+b)/(ab)`` times that of ``d``, and ``b x - a y`` rounded loses ``~a eps``:
    ``~z sqrt(a+b) eps`` relative (``z`` standard deviations out), 1e-12 at ``a+b ~ 1e7``."""
    s_hi, s_lo = two_sum(a, b)
    lower = x <= 0.5
    v = jnp.where(lower, x, y)
    p_hi, p_lo = two_prod(v, s_hi)
    p_lo = p_lo + v * s_lo
    # p_hi - a (or b - p_hi) is exact where d is small against a (Sterbenz).
    return jnp.where(lower, (p_hi - a) + p_lo, (b - p_hi) - p_lo)


class BetaConst(NamedTuple):
    """The parts of ``log(x^a y^b / B(a, b))`` that do not depend on ``x`` (see
    :func:`beta_const`), so that an iteration in ``x`` computes them once."""

    c: jax.Array  # the x-free sum of the element's form
    lp: jax.Array  # one small parameter s, one large L: log1p(s / L)
    sum_: jax.Array  # a + b


def beta_const(a: jax.Array, b: jax.Array) -> BetaConst:
    """The ``x``-free parts of :func:`log_beta_prefactor` for ``0 < a, b < inf``
    (symmetric in ``a`` and ``b``)."""
    big_a = a >= _BIG
    big_b = b >= _BIG
    s_ab = a + b
    small_ab = s_ab < _BIG
    # lgamma of the parameters below _BIG, the Stirling remainder of those above.
    lg_a = _lgamma_small(jnp.where(big_a, 1.0, a))
    lg_b = _lgamma_small(jnp.where(big_b, 1.0, b))
    lg_ab = _lgamma_small(jnp.where(small_ab, s_ab, 1.0))
    st_a = stirling_corr(jnp.where(big_a, a, _BIG))
    st_b = stirling_corr(jnp.where(big_b, b, _BIG))
    st_ab = stirling_corr(jnp.where(small_ab, _BIG, s_ab))
    log_ab = jnp.log(s_ab)
    # Both large.
    both = 0.5 * (jnp.log(a) + jnp.log(b) - log_ab - _LOG_2PI) + (st_ab - st_a - st_b)
    # One large (L), one small (s): log Gamma(L+s) - log Gamma(L) by a Stirling difference.
    small = jnp.where(big_a, b, a)
    lp = jnp.log1p(small / jnp.where(big_a, a, b))
    mixed = -small - 0.5 * lp + (st_ab - jnp.where(big_a, st_a, st_b))
    mixed = mixed - jnp.where(big_a, lg_b, lg_a)
    # Both small (a + b may be large).
    lg_sum = jnp.where(small_ab, lg_ab, (s_ab - 0.5) * log_ab - s_ab + 0.5 * _LOG_2PI + st_ab)
    none = lg_sum - lg_a - lg_b
    c = jnp.where(big_a & big_b, both, jnp.where(big_a | big_b, mixed, none))
    return BetaConst(c, lp, s_ab)


def log_beta(a: jax.Array, b: jax.Array, k: BetaConst | None = None) -> jax.Array:
    """``log B(a, b)`` for ``0 < a, b < inf`` from :func:`beta_const` (``lgamma``-free):
    :func:`log_beta_prefactor` at ``x = a / (a + b)``, where its ``x``-dependent part is
    ``a log x + b log y`` less a closed form (0 for two large parameters, ``s log s``
    for one small one ``s``)."""
    k = beta_const(a, b) if k is None else k
    big_a = a >= _BIG
    big_b = b >= _BIG
    both = a * jnp.log(a / k.sum_) + b * jnp.log(b / k.sum_)
    large = jnp.where(big_a, a, b)
    small = jnp.where(big_a, b, a)
    mixed = -large * k.lp - small * jnp.log(k.sum_)
    xpart = jnp.where(big_a & big_b, both, jnp.where(big_a | big_b, mixed, 0.0))
    return xpart - k.c


def log_beta_prefactor(
    a: jax.Array,
    b: jax.Array,
    x: jax.Array,
    y: jax.Array,
    k: BetaConst | None = None,
    *,
    exact_centre: bool = True,
) -> jax.Array:
    """``log(x^a y^b / B(a, b))`` for ``0 < a, b < inf``, ``0 < x, y``, ``x + y = 1``;
    ``k = beta_const(a, b)`` (formed here unless given).  ``exact_centre=False``: the
    offset from the centre rounded for every ``a + b`` (the inverse's Halley steps, whose
    root's error is that of ``I`` over its large ``d log I / d log x``)."""
    k = beta_const(a, b) if k is None else k
    # log1p(-v) only for small v: XLA's CPU log1p is ~100 ulp off on (-1/2, -0.3).
    lx = jnp.where(y < 0.25, jnp.log1p(-y), jnp.log(x))
    ly = jnp.where(x < 0.25, jnp.log1p(-x), jnp.log(y))
    big_a = a >= _BIG
    big_b = b >= _BIG
    # Both large: a phi(x (a+b)/a) + b phi(y (a+b)/b).
    both_ = big_a & big_b
    ab = jnp.where(both_, a, _BIG)
    bb = jnp.where(both_, b, _BIG)
    sb = ab + bb
    diff = bb * x - ab * y  # x (a+b) - a
    if exact_centre:
        diff = jnp.where(sb > _EXACT_CENTRE, _centre_offset(ab, bb, x, y), diff)
    both = ab * _phi(x * sb / ab, diff, ab) + bb * _phi(y * sb / bb, -diff, bb)
    # One large (L, paired with log of its variable), one small (s, with variable v).
    large = jnp.where(big_a, a, b)
    small = jnp.where(big_a, b, a)
    l_large = jnp.where(big_a, lx, ly)
    v_small = jnp.where(big_a, y, x)
    mixed = large * (l_large + k.lp) + small * jnp.log(v_small * k.sum_)
    # Both small.
    none = a * lx + b * ly
    xpart = jnp.where(both_, both, jnp.where(big_a | big_b, mixed, none))
    return xpart + k.c


def _pq_core(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array, pre: jax.Array) -> _Pair:
    """``(I_x(a, b), 1 - I_x(a, b))`` for ``0 < a, b < inf`` and ``0 < x, y < 1``, given
    the prefactor ``pre = x^a y^b / B(a, b)``."""
    swap, cf, small, tiny = _fraction(a, b, x, y)
    val = pre / cf
    comp = jnp.where(small, tiny, 1.0 - val)
    return jnp.where(swap, comp, val), jnp.where(swap, val, comp)


def _fraction(
    a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(swap, F, small, comp)``: the continued fraction of ``I_x(a, b) = pre / F``
    where ``x`` is below the mean ``(a+1)/(a+b+2)``, else (``swap``) of
    ``I_y(b, a) = pre / F``; where the fraction's first parameter ``pa`` is tiny
    (``small``), its complement ``comp = 1 - pre / F`` (:func:`_tiny_complement`), to
    full relative accuracy, not by cancellation."""
    swap = x > (a + 1.0) / (a + b + 2.0)
    pa = jnp.where(swap, b, a)
    pb = jnp.where(swap, a, b)
    px = jnp.where(swap, y, x)
    py = jnp.where(swap, x, y)
    cap = _CF_CAP[0] if is_double(x) else _CF_CAP[1]
    # The expansion is in pa log px and pa / pb (through psi(pb)).
    bound = _TINY_REL[0 if is_double(x) else 1] * jnp.minimum(pb, 1.0)

    def series() -> _Pair:
        small = pa * (1.0 + jnp.abs(jnp.log(px))) < bound
        tiny = _tiny_complement(
            jnp.where(small, pa, 0.0), jnp.where(small, pb, 1.0), jnp.where(small, px, 0.0)
        )
        return small, tiny

    def none() -> _Pair:
        return jnp.zeros(px.shape, bool), jnp.zeros_like(px)

    # Only a batch (a chunk of partitioned's) with a tiny parameter pays for the series'
    # digamma and trigamma: they would cost the common case ~40% of the kernel's time.
    small, tiny = lax.cond(jnp.any(pa < bound), series, none)
    return swap, betainc_cf(pa, pb, px, py, max_iter=cap), small, tiny


#: Largest ``a (1 + |log x|) / min(b, 1)`` for which :func:`_tiny_complement` is used
#: (float64, float32), ``a L`` for short: its neglected ``(a L)^2`` (relative) against the
#: ``~5 eps / (a L)`` of ``1 - I`` rounded (measured), equal near ``a L ~ (5 eps)^(1/3)``:
#: up to ~3e-10 relative there (tests/test_special_beta_family.py holds what is reached).
_TINY_REL = (1e-5, 3e-3)
_EULER = 0.5772156649015329
_ZETA2 = math.pi**2 / 6.0
_Series = tuple[jax.Array, jax.Array, jax.Array, jax.Array]  # n, u_n, S1, S2


def _tiny_complement(a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    """``1 - I_x(a, b)`` to second order in a tiny ``a`` (TOMS 708's ``apser`` carried one
    order further), for ``x`` below about ``1 / (b + 2)``: with ``1/B(a, b) = a (1 +
    a c + O(a^2))``, ``c = psi(b) + gamma``, and ``t^(a-1) = t^-1 (1 + a log t + ...)``,
    ``1 - I = a J + a^2 (c J + J1) + O(a^3)`` where (``u_n = (1-b)_n x^n / n!``)

    * ``J = int_x^1 (1-t)^(b-1) / t dt = -log x - c - S1``, ``S1 = sum_n u_n / n``;
    * ``J1 = int_x^1 log t (1-t)^(b-1) / t dt = -(log x)^2 / 2 + (c^2 + zeta(2) -
      psi'(b)) / 2 - S1 log x + S2``, ``S2 = sum_n u_n / n^2`` (the constant:
      ``-sum_n (1-b)_n / (n! n^2)``, from ``B(a, b)``'s expansion in ``a``).

    The series' terms fall as ``(b x)^n / n!`` or ``x^n``.  ``x = 0`` (unused elements):
    junk, nan-free.  Formed as ``a (J + a K)``, not in logarithms: ``exp(log a + ...)``
    would carry ``|log a| eps`` (2e-14 at ``a = 1e-100``)."""
    tol = 1e-17 if is_double(x) else 1e-8

    # An element stops once its terms no longer change S1, and the unused ones (x = 0)
    # at once: the loop costs nothing where no parameter is tiny.
    def live(st: _Series) -> jax.Array:
        n, u, s1, _ = st
        return jnp.abs(u) > tol * n * jnp.abs(s1)

    def body(st: _Series) -> _Series:
        n, u, s1, s2 = st
        go = live(st)
        u_new = u * (n - b) * x / n
        s1 = jnp.where(go, s1 + u_new / n, s1)
        s2 = jnp.where(go, s2 + u_new / (n * n), s2)
        return n + 1.0, jnp.where(go, u_new, 0.0), s1, s2

    def cond(st: _Series) -> jax.Array:
        return (st[0] < 400.0) & jnp.any(live(st))

    u1 = (1.0 - b) * x
    init = (jnp.asarray(2.0, x.dtype), u1, u1, u1)
    _, _, s1, s2 = lax.while_loop(cond, body, init)
    lx = jnp.log(jnp.where(x > 0.0, x, 1.0))
    c = jsp.digamma(b) + _EULER
    j = -lx - c - s1
    j1 = -0.5 * lx * lx + 0.5 * (c * c + _ZETA2 - jsp.polygamma(1, b)) - s1 * lx + s2
    return a * jnp.maximum(j + a * (c * j + j1), tiny_of(x))


#: Predicted continued-fraction lengths that separate the cost classes of ``beta_pq``.
_CF_EDGES = (5.0, 8.0, 12.0, 18.0, 27.0)


def _cf_class(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    """Cost class for ``partitioned``: the fraction's length, fitted on the bench domains
    (``a, b`` up to 1e3, the binomial and F rows) as ``3.2 + 6.0 r + 1.9 r s - 0.7 s
    + 0.5 log1p(s)`` with ``r = x (a+b+2)/(a+1) <= 1`` and ``s = sqrt(b x)`` in the
    frame the fraction runs in.  ``tools/beta_cf_cost.py`` re-derives it (least squares
    on counted steps: coefficients within 0.25 of these, 2.7 steps rms) and prints the
    step counts per class."""
    swap = x > (a + 1.0) / (a + b + 2.0)
    pa = jnp.where(swap, b, a)
    pb = jnp.where(swap, a, b)
    px = jnp.where(swap, y, x)
    r = px * (pa + pb + 2.0) / (pa + 1.0)
    s = jnp.sqrt(pb * px)
    n = 3.2 + 6.0 * r + 1.9 * r * s - 0.7 * s + 0.5 * jnp.log1p(s)
    cls = jnp.zeros(n.shape, jnp.int32)
    for edge in _CF_EDGES:
        cls = cls + (n > edge).astype(jnp.int32)
    return cls


def _pq_inner(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> _Pair:
    return _pq_core(a, b, x, y, jnp.exp(log_beta_prefactor(a, b, x, y)))


def _log_pq_inner(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> _Pair:
    """``(log I_x(a, b), log(1 - I_x(a, b)))``: the side the fraction gives as
    ``log pre - log F`` (no underflow of ``pre``), the other as ``log(1 - I)``."""
    swap, cf, small, tiny = _fraction(a, b, x, y)
    direct = log_beta_prefactor(a, b, x, y) - jnp.log(cf)
    val = jnp.exp(jnp.minimum(direct, 0.0))  # rounded above 1: log(1 - val) = -inf, not nan
    # log1p only for small val: XLA's CPU log1p is ~100 ulp off on (-1/2, -0.3).
    other = jnp.where(val < 0.25, jnp.log1p(-val), jnp.log(1.0 - val))
    # Beside a tiny parameter both from its series: log I ~ -tiny needs log1p, not log F.
    other = jnp.where(small, jnp.log(tiny), other)
    direct = jnp.where(small, jnp.log1p(-tiny), direct)
    return jnp.where(swap, other, direct), jnp.where(swap, direct, other)


def _grouped(
    inner: Callable[..., _Pair],
    a: jax.Array,
    b: jax.Array,
    x: jax.Array,
    y: jax.Array,
    skip_edges: bool,
) -> _Pair:
    """``inner(a, b, x, y)`` on the elements ``0 < a, b < inf``, ``0 < x < 1`` (the others:
    placeholder values, set by the caller), grouped by the fraction's length."""
    inner_el = (a > 0.0) & (b > 0.0) & (a < jnp.inf) & (b < jnp.inf) & (x > 0.0) & (x < 1.0)
    args = (
        jnp.where(inner_el, a, 1.0),
        jnp.where(inner_el, b, 1.0),
        jnp.where(inner_el, x, 0.5),
        jnp.where(inner_el, y, 0.5),
    )
    # Grouped by the fraction's length: its loop runs until a chunk's slowest element.
    if skip_edges:
        # The edge elements (values set by the caller) as class 0, whose chunks are not run.
        key = jnp.where(inner_el, _cf_class(*args) + 1, 0)
        p, q = partitioned(inner, key, len(_CF_EDGES) + 2, *args, skip_first=True)
    else:
        p, q = partitioned(inner, _cf_class(*args), len(_CF_EDGES) + 1, *args)
    return p, q


def _edges(a: jax.Array, b: jax.Array, x: jax.Array, pq: _Pair, zero: float, one: float) -> _Pair:
    """SciPy's conventions at the edges (see :func:`beta_pq`) over the pair ``pq``, with
    ``zero`` and ``one`` the values of 0 and 1 (``-inf`` and 0 for logarithms)."""
    p, q = pq
    to_one = ((a == 0.0) | (b == jnp.inf)) & (x > 0.0)
    to_zero = ((b == 0.0) | (a == jnp.inf)) & (x < 1.0)
    p = jnp.where(to_one, one, jnp.where(to_zero, zero, p))
    q = jnp.where(to_one, zero, jnp.where(to_zero, one, q))
    p = jnp.where(x == 0.0, zero, jnp.where(x == 1.0, one, p))
    q = jnp.where(x == 0.0, one, jnp.where(x == 1.0, zero, q))
    bad = (
        ~(x >= 0.0)
        | ~(x <= 1.0)
        | ~(a >= 0.0)
        | ~(b >= 0.0)
        | ((a == 0.0) & (b == 0.0))
        | ((a == jnp.inf) & (b == jnp.inf))
    )
    return jnp.where(bad, jnp.nan, p), jnp.where(bad, jnp.nan, q)


def beta_log_pq(a: jax.Array, b: jax.Array, x: jax.Array) -> _Pair:
    """``(log I_x(a, b), log(1 - I_x(a, b)))``, each to full relative accuracy where the
    probability underflows (``log pre - log F``) and near 1 (``log1p``); edges as
    :func:`beta_pq` (0 as ``-inf``)."""
    lp, lq = _grouped(_log_pq_inner, a, b, x, 1.0 - x, skip_edges=False)
    # log(1 - I) of a complement rounded to just above 1 (see beta_pq): at most 0.
    return _edges(a, b, x, (jnp.minimum(lp, 0.0), jnp.minimum(lq, 0.0)), -jnp.inf, 0.0)


def beta_pq(
    a: jax.Array,
    b: jax.Array,
    x: jax.Array,
    y: jax.Array | None = None,
    *,
    skip_edges: bool = False,
) -> _Pair:
    """``(I_x(a, b), 1 - I_x(a, b))`` with SciPy's conventions at the edges; ``y = 1 - x``
    (formed here unless the caller has it to better relative accuracy).  ``skip_edges``:
    a large batch groups the edge elements below apart and does not evaluate chunks of
    them only (for callers with many, e.g. ``x = 0`` outside a distribution's support).

    ``x = 0``: ``(0, 1)``; ``x = 1``: ``(1, 0)``; ``a = 0 < b``: ``(1, 0)`` for ``x > 0``;
    ``b = 0 < a``: ``(0, 1)`` for ``x < 1``; ``a = inf`` (finite ``b``): ``(0, 1)`` for
    ``x < 1``; ``b = inf`` (finite ``a``): ``(1, 0)`` for ``x > 0``; ``x`` outside
    ``[0, 1]``, ``a`` or ``b`` negative, both zero or both infinite, or nan: nan.
    """
    y = 1.0 - x if y is None else y
    p, q = _grouped(_pq_inner, a, b, x, y, skip_edges)
    # A complement formed as 1 - I by cancellation (I ~ 1 within its rounding, e.g. a tiny
    # a, or b tiny with x near 1) can land an ulp or so outside [0, 1].
    return _edges(a, b, x, (jnp.clip(p, 0.0, 1.0), jnp.clip(q, 0.0, 1.0)), 0.0, 1.0)


def beta_density(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    """``x^(a-1) y^(b-1) / B(a, b)`` for ``0 < a, b < inf``; 0 outside ``(0, 1)``."""
    ok = (a > 0.0) & (b > 0.0) & (a < jnp.inf) & (b < jnp.inf) & (x > 0.0) & (y > 0.0)
    a_ = jnp.where(ok, a, 1.0)
    b_ = jnp.where(ok, b, 1.0)
    x_ = jnp.where(ok, x, 0.5)
    y_ = jnp.where(ok, y, 0.5)
    d = jnp.exp(log_beta_prefactor(a_, b_, x_, y_)) / (x_ * y_)
    return jnp.where(ok, d, 0.0)


def beta_log_density(a: jax.Array, b: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    """``log(x^(a-1) y^(b-1) / B(a, b))`` for ``0 < a, b < inf``; ``-inf`` outside ``(0, 1)``
    (where the density itself would underflow, e.g. a float32 tail, it stays finite)."""
    ok = (a > 0.0) & (b > 0.0) & (a < jnp.inf) & (b < jnp.inf) & (x > 0.0) & (y > 0.0)
    a_ = jnp.where(ok, a, 1.0)
    b_ = jnp.where(ok, b, 1.0)
    x_ = jnp.where(ok, x, 0.5)
    y_ = jnp.where(ok, y, 0.5)
    d = log_beta_prefactor(a_, b_, x_, y_) - jnp.log(x_) - jnp.log(y_)
    return jnp.where(ok, d, -jnp.inf)


class _Scaled(NamedTuple):
    """A probability ``v`` that may be subnormal, as ``v = w e^-off``: ``w = v`` and ``off
    = 0`` where ``v`` is normal, else ``w = m`` and ``off = k log 2`` for ``v = m 2^-k``
    (:func:`subnormal_parts`).  XLA on CPU reads a subnormal as 0; ``log v = log w - off``
    is then right for both, and the same operations as ``log v`` where normal."""

    sub: jax.Array
    w: jax.Array
    off: jax.Array

    def log(self) -> jax.Array:
        return jnp.log(self.w) - self.off

    def inside(self, keep: jax.Array) -> _Scaled:
        """1/2 (as the solver's placeholder) where not ``keep``."""
        return _Scaled(
            self.sub & keep, jnp.where(keep, self.w, 0.5), jnp.where(keep, self.off, 0.0)
        )


def _scaled(v: jax.Array) -> _Scaled:
    sub, m, log_scale = subnormal_parts(v)
    sub = sub & ~jnp.signbit(v)
    return _Scaled(sub, jnp.where(sub, m, v), jnp.where(sub, log_scale, 0.0))


#: Below this parameter ``log(a B(a, b))`` is taken from its expansion in ``a``
#: (:func:`_log_a_beta`): ``log a + log B(a, b)`` cancels to ``~a``, with an error of
#: ``~eps |log a|`` that the guess divides by ``a``.
_TINY_PARAM = 1e-6
#: Below this parameter the guess takes its tail form as far as ``x ~ 1/2``.
_SMALL_PARAM = 1e-2


def _log_a_beta(a: jax.Array, b: jax.Array, lbeta: jax.Array) -> jax.Array:
    """``log(a B(a, b))`` for ``0 < a, b < inf``, accurate to ``O(a^2)`` absolutely where
    ``a`` is tiny: there ``a B(a, b) = Gamma(1+a) Gamma(1+b) / Gamma(1+a+b) (a+b) / b``,
    whose log is ``log1p(a / b) - a (gamma + psi(1+b)) + O(a^2)``.  (``betaincinv(0.5,
    1e-20, 8.29e-20)`` was 5e-127 for 0.999: the root's ``log(1-x)`` is this, over
    ``b``.)  ``lbeta``: ``log B(a, b)``."""
    tiny = a < _TINY_PARAM
    direct = jnp.log(a) + lbeta

    def series() -> jax.Array:
        b_ = jnp.where(tiny, b, 1.0)
        return jnp.where(tiny, jnp.log1p(a / b_) - a * (_EULER + jsp.digamma(1.0 + b_)), direct)

    # Only a call with a tiny parameter pays for digamma: in every call, betaincinv's
    # bench row (no tiny shape) took 1.2x as long.
    out: jax.Array = lax.cond(jnp.any(tiny), series, lambda: direct)
    return out


def log_small_root(a: jax.Array, b: jax.Array, p: jax.Array) -> jax.Array:
    """``log x`` for the root of ``I_x(a, b) = p`` where it is far below an ulp (below the
    normal range, where :func:`beta_inv`'s ``x`` underflows though a quantity built on
    it, such as Student's ``t = sqrt(df (1 - x) / x)``, need not): the power law
    ``I_x(a, b) = x^a / (a B(a, b)) (1 + O(x))`` solved in logs (``p`` subnormal
    included)."""
    _, lp = log_positive(p)
    return (lp + _log_a_beta(a, b, log_beta(a, b))) / a


class _Logs(NamedTuple):
    """What :func:`beta_inv`'s start and its underflow test take the logs of."""

    lp: jax.Array  # log p: from the bits where subnormal, by log1p(-q) near 1
    lq: jax.Array  # log q, likewise
    lab: jax.Array  # log(a B(a, b)), :func:`_log_a_beta`
    lba: jax.Array  # log(b B(a, b))


def _logs(
    a: jax.Array, b: jax.Array, p: jax.Array, q: jax.Array, ps: _Scaled, qs: _Scaled
) -> _Logs:
    """:class:`_Logs` for ``0 < a, b < inf``, ``0 < p, q < 1``.  A tiny parameter divides
    them (betainccinv(1e-20, 0.5, 1e-18) needs log p = -1e-18, not log(1 - 1e-18) = 0)."""
    lbeta = log_beta(a, b)
    return _Logs(
        jnp.where(p > 0.5, jnp.log1p(-q), ps.log()),
        jnp.where(q > 0.5, jnp.log1p(-p), qs.log()),
        _log_a_beta(a, b, lbeta),
        _log_a_beta(b, a, lbeta),
    )


def _guess(a: jax.Array, b: jax.Array, p: jax.Array, q: jax.Array, logs: _Logs) -> _Pair:
    """Starting ``(x, 1 - x)`` for ``I_x(a, b) = p`` (Numerical Recipes' ``invbetai``,
    with the lower-tail power law where it is closer).  Every power below is formed from
    sums that stay accurate for a tiny ``a`` or ``b``: its exponent is divided by that
    parameter."""
    lp, lq, lab, lba = logs
    # a, b >= 1: normal approximation (A&S 26.5.22).  A select, not jnp.minimum: XLA's
    # minimum flushes a subnormal operand, ndtri reads it from the bits.
    t = -ndtri(jnp.where(p < q, p, q))
    t = jnp.where(p < q, t, -t)
    al = (t * t - 3.0) / 6.0
    ra = 1.0 / (2.0 * a - 1.0)
    rb = 1.0 / (2.0 * b - 1.0)
    h = 2.0 / (ra + rb)
    w = t * jnp.sqrt(jnp.maximum(al + h, 0.0)) / h - (rb - ra) * (al + 5.0 / 6.0 - 2.0 / (3.0 * h))
    # x = a / (a + b e^{-2w}) without overflow: log(b/a) - 2w decides.
    z = jnp.log(b / a) + 2.0 * w
    x_n = jnp.exp(-jnp.logaddexp(0.0, z))
    y_n = jnp.exp(-jnp.logaddexp(0.0, -z))
    # Otherwise: two power laws meeting at x = a / (a + b), x^a / (a W) and y^b / (b W)
    # with W = e^lt + e^lu; log(a W) = a log(a / (a+b)) + softplus(lu - lt).
    lt = a * jnp.log(a / (a + b)) - jnp.log(a)
    lu = b * jnp.log(b / (a + b)) - jnp.log(b)
    lt_w = -jnp.logaddexp(0.0, lu - lt)  # lt - log W
    low = lp < lt_w
    x_p = jnp.exp((lp + a * jnp.log(a / (a + b)) - lt_w) / a)
    y_p = jnp.exp((lq + b * jnp.log(b / (a + b)) + jnp.logaddexp(0.0, lt - lu)) / b)
    x_p, y_p = jnp.where(low, x_p, 1.0 - y_p), jnp.where(low, 1.0 - x_p, y_p)
    normal = (a >= 1.0) & (b >= 1.0)
    x0 = jnp.where(normal, x_n, x_p)
    y0 = jnp.where(normal, y_n, y_p)
    # Lower tail: I ~ x^a / (a B(a, b)) (an under-estimate of x for b > 1).
    x_t = jnp.exp((lp + lab) / a)
    y_t = jnp.exp((lq + lba) / b)
    # Used where the series' first correction, about (b - 1) x, is small.  Failing that,
    # for a small a, as far as x ~ 1/2: the power laws meet at a / (a + b) ~ 0 and
    # cannot serve (betainccinv(1e-300, 0.5, 2.4e-300) started at 1e-300 for 0.3 and
    # never got there).  Never before the other side's own tail: there the series is
    # all correction (betainccinv(1e-10, 2, 6.6e-29) is 1 - 1.1e-9, x_t 0.37).
    tail_x = (x_t < 1e-2) & (x_t * jnp.abs(b - 1.0) < 0.1)
    tail_y = (y_t < 1e-2) & (y_t * jnp.abs(a - 1.0) < 0.1) & ~tail_x
    wide_x = (a < _SMALL_PARAM) & (x_t < 0.5) & (x_t * jnp.abs(b - 1.0) < 1.0)
    wide_y = (b < _SMALL_PARAM) & (y_t < 0.5) & (y_t * jnp.abs(a - 1.0) < 1.0)
    tail_x |= wide_x & ~tail_y
    tail_y |= wide_y & ~tail_x
    x0 = jnp.where(tail_x, x_t, jnp.where(tail_y, 1.0 - y_t, x0))
    y0 = jnp.where(tail_x, 1.0 - x_t, jnp.where(tail_y, y_t, y0))
    return jnp.clip(x0, 1e-300 if is_double(p) else 1e-37, 1.0), y0


def _halley(
    a: jax.Array,
    b: jax.Array,
    p: jax.Array,
    q: jax.Array,
    target: jax.Array,
    s0: jax.Array,
    d0: jax.Array,
    *,
    cap: int | jax.Array,
) -> _Pair:
    """Up to ``cap`` Halley steps from ``s0``, the ``log x`` of ``I_x(a, b) = p``
    (``1 - I_x = q``), ``x`` about below 1/2; ``target``: the log of the smaller of ``p``
    and ``q`` (read from the bits where it is subnormal); ``d0``: the size of the step
    that gave ``s0`` (an element with ``|d0| <= tol`` has converged and stays as it is).
    Returns the new ``(s, the last step taken)``."""
    double = is_double(p)
    lower = p <= q
    smax = math.log1p(-(2.0**-52 if double else 2.0**-23))
    k = beta_const(a, b)  # the same at every step
    # Near the log of the smallest normal number (within 10%, float32: 50%; a subnormal p
    # or q, or one near it) I near the root would underflow, or on the way there (XLA on
    # CPU flushes it to 0; float32's betaincinv(500, 3.16, 1e-32) was 0.80 for 0.85): the
    # prefactor, and with it I, are scaled by e^shift.  Only where the I solved on is the
    # fraction's own value (pre / fraction, not its complement, which _pq_core forms on
    # the other side of its swap): the complement is not small there, and scaled it would
    # be wrong.  Elsewhere shift is 0 and the steps are as they were (a shift at all
    # p < 1e-154 cost 1.2x in the median error of the root there).
    near = (0.9 if double else 0.5) * math.log(tiny_of(p))
    shift = jnp.where(target < near, jnp.round(-0.5 * target), 0.0)
    tol = _halley_tol(p)

    def step(_: jax.Array, st: _Pair) -> _Pair:
        s, last = st
        x = jnp.exp(s)
        y = -jnp.expm1(s)
        # _pq_core's swap: its I is the fraction's value unless swapped, its 1 - I if so.
        frac_side = (x > (a + 1.0) / (a + b + 2.0)) != lower
        sh = jnp.where(frac_side, shift, 0.0)
        pre = jnp.exp(log_beta_prefactor(a, b, x, y, k, exact_centre=False) + sh)
        i, ic = _pq_core(a, b, x, y, pre)
        val = jnp.where(lower, i, ic)
        g = jnp.log(val) - (target + sh)
        xf = pre / y  # x * density
        d1 = jnp.where(lower, xf / val, -xf / val)
        d2 = d1 * (a - (b - 1.0) * x / y - d1)
        c = jnp.clip(g * d2 / (2.0 * d1 * d1), -0.5, 0.5)
        ds = jnp.clip(-g / (d1 * (1.0 - c)), -_MAX_STEP, _MAX_STEP)
        # An underflowed value (log 0), or a density that underflows where the value does
        # not (d1 = 0, a nan step), says only which way the root lies: a full step that
        # way, never "converged" (betaincinv(818, 10.7, 1.7e-200) stopped at 0.398, where
        # I is 2.8e-308, for 0.541).
        uphill = jnp.where(lower, _MAX_STEP, -_MAX_STEP)  # the way to a larger val
        blind = (val <= 0.0) | (~jnp.isfinite(ds) & jnp.isfinite(g) & (g != 0.0))
        ds = jnp.where(blind, jnp.where(g < 0.0, uphill, -uphill), ds)
        ok = jnp.isfinite(ds)
        # A step back, longer than the step that came here, is Halley overshooting where
        # log I is far from linear in log x: half the way back instead.  Unchecked, the
        # steps cycled (betaincinv(27567, 20.2, 2.3e-260) through y = 0.06, 3e-6, 2e-3,
        # stopping after 40 steps at 1 - 1.6e-6 for 0.9755).  A converging start's steps
        # shrink, so it never meets this.
        back = (ds * last < 0.0) & (jnp.abs(ds) >= jnp.abs(last))
        ds = jnp.where(back, -0.5 * last, ds)
        new = jnp.where(ok, jnp.minimum(s + ds, 0.5 * (s + smax)), s)
        return new, new - s  # the step taken, after the clamp (0 where not ok)

    def converged(st: _Pair) -> jax.Array:
        return jnp.abs(st[1]) <= tol

    # Stops once a step is below tol: the error left after that step is ~tol^3 (Halley's
    # order), far below the rounding of I_x, so no further step changes the root.
    return iterate(step, (s0, d0), converged, cap, p.dtype, unroll=1)


def _halley_tol(p: jax.Array) -> float:
    return 1e-7 if is_double(p) else 2e-3


#: Halley steps in the first stages of :func:`beta_inv`'s solve (the last: up to the cap);
#: after 2 steps ~60% of the bench's elements have converged and the rest need 1-3 more.
_STAGES = (2,)


def beta_inv(
    a: jax.Array,
    b: jax.Array,
    p: jax.Array,
    q: jax.Array,
    start: tuple[jax.Array, jax.Array, jax.Array] | None = None,
) -> _Pair:
    """``(x, 1 - x)`` with ``I_x(a, b) = p``, given ``p`` and ``q = 1 - p`` (each used
    on its own side, so pass both to full relative accuracy).  ``start = (use, x0, y0)``:
    a caller's closer starting point ``(x0, 1 - x0)``, taken where ``use`` holds.

    ``p = 0``: ``(0, 1)``; ``q = 0``: ``(1, 0)``; ``a`` or ``b`` not positive, both
    infinite, ``p`` or ``q`` outside ``[0, 1]`` or nan: nan.  One infinite parameter
    with ``0 < p < 1``: nan (the distribution is a point mass), as in SciPy.
    """
    # A subnormal p or q (XLA on CPU reads it as 0) enters by its log, read from the bits:
    # betaincinv(500, 500, 5e-324) is 0.29, not 0.
    ps, qs = _scaled(p), _scaled(q)
    inner = (a > 0.0) & (b > 0.0) & (a < jnp.inf) & (b < jnp.inf)
    inner = inner & ((p > 0.0) | ps.sub) & ((q > 0.0) | qs.sub)
    a_ = jnp.where(inner, a, 1.0)
    b_ = jnp.where(inner, b, 1.0)
    p_ = jnp.where(inner, p, 0.5)
    q_ = jnp.where(inner, q, 0.5)
    ps, qs = ps.inside(inner), qs.inside(inner)
    logs = _logs(a_, b_, p_, q_, ps, qs)
    x0, y0 = _guess(a_, b_, p_, q_, logs)
    use = jnp.zeros(x0.shape, bool)
    if start is not None:
        use = start[0] & inner & (start[1] > 0.0) & (start[2] > 0.0)
        x0 = jnp.where(use, start[1], x0)
        y0 = jnp.where(use, start[2], y0)
    swap = x0 > 0.5
    # The side _halley solves on (its ``p <= q`` after the swap), in the caller's order:
    # p, else q; its log is _halley's target.
    on_p = jnp.where(swap, q_ > p_, p_ <= q_)
    args = (
        jnp.where(swap, b_, a_),
        jnp.where(swap, a_, b_),
        jnp.where(swap, q_, p_),
        jnp.where(swap, p_, q_),
        jnp.log(jnp.where(on_p, ps.w, qs.w)) - jnp.where(on_p, ps.off, qs.off),
        jnp.where(swap, y0, x0),
    )
    # Grouped by the fraction's length at the starting point (each step runs it) and by
    # the starting point's quality, i.e. the Halley steps: measured on the bench domain,
    # at most ~2 for a, b > 10 (normal approximation), ~3 for a, b >= 1, ~4 otherwise.
    lo = jnp.minimum(a_, b_)
    quality = jnp.where(use | (lo > 10.0), 0, jnp.where(lo >= 1.0, 1, 2))
    key = 3 * _cf_class(args[0], args[1], args[5], 1.0 - args[5]) + quality
    nkeys = 3 * (len(_CF_EDGES) + 1)
    cap = _HALLEY_CAP[0] if is_double(p) else _HALLEY_CAP[1]
    s, d = jnp.log(args[5]), jnp.full_like(args[5], jnp.inf)  # no step yet
    if s.size <= CHUNK_SIZE:  # one chunk: nothing to group
        s, _ = _halley(*args[:5], s, d, cap=cap)
    else:
        # In stages: a chunk steps in lock-step until its slowest element has converged,
        # and a few elements need 4-5 steps where most need 2-3.  After each stage the
        # elements still moving are grouped again (converged ones first, then by the
        # fraction's length where they stand), so that only their chunks run the next
        # stage.  A converged element is left as it is: the result is the one of a single
        # loop.  One loop over the stages keeps one copy of the kernel to compile.
        caps = jnp.asarray((*_STAGES, cap - sum(_STAGES)), jnp.int32)

        def stage(j: jax.Array, st: _Pair) -> _Pair:
            s, d = st
            moving = jnp.abs(d) > _halley_tol(p)
            again = 1 + _cf_class(args[0], args[1], jnp.exp(s), -jnp.expm1(s))
            k = jnp.where(j == 0, key, jnp.where(moving, again, 0))
            s, d = partitioned(functools.partial(_halley, cap=caps[j]), k, nkeys, *args[:5], s, d)
            return s, d

        s, _ = lax.fori_loop(0, len(_STAGES) + 1, stage, (s, d))
    u = jnp.exp(s)
    v = -jnp.expm1(s)
    x = jnp.where(swap, v, u)
    y = jnp.where(swap, u, v)
    # Roots below the smallest normal number: 0 (the solver cannot step past underflow).
    log_tiny = math.log(tiny_of(p))
    x_under = (logs.lp + logs.lab) / a_ < log_tiny
    y_under = (logs.lq + logs.lba) / b_ < log_tiny
    p_zero = (p == 0.0) & ~ps.sub
    q_zero = (q == 0.0) & ~qs.sub
    x = jnp.where(p_zero, 0.0, jnp.where(q_zero, 1.0, x))
    y = jnp.where(p_zero, 1.0, jnp.where(q_zero, 0.0, y))
    x = jnp.where(inner & x_under, 0.0, jnp.where(inner & y_under, 1.0, x))
    y = jnp.where(inner & x_under, 1.0, jnp.where(inner & y_under, 0.0, y))
    bad = (
        ~(a > 0.0)
        | ~(b > 0.0)
        | ~(p >= 0.0)
        | ~(q >= 0.0)
        | ~(p <= 1.0)
        | ~(q <= 1.0)
        | (((a == jnp.inf) | (b == jnp.inf)) & (p > 0.0) & (q > 0.0))
    )
    return jnp.where(bad, jnp.nan, x), jnp.where(bad, jnp.nan, y)
