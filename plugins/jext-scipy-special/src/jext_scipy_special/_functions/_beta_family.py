"""The incomplete beta family: ``betainc``, ``betaincc``, ``betaincinv``, ``betainccinv``, the
binomial, negative binomial and F distribution functions (SciPy's ``cdflib``/Cephes names),
``stdtrit``, and the ``scipy.stats`` methods built on them (``t``, ``f``, ``beta``).
``betainc`` and ``beta.{cdf,sf,logcdf,logsf}`` replace ``jax.scipy``'s own (see
:data:`REPLACES_JAX`).

All rest on one kernel (``_beta``): ``I_x(a, b)`` by the continued fraction with each
element stopping at its own convergence (``jax.scipy.special.betainc`` iterates until the
whole batch converges, so its values depend on the batch), and its inverse by Halley's
method in ``log x``.  The definitions, as SciPy's:

* ``bdtr(k, n, p) = I_{1-p}(n-k, k+1)``, ``bdtrc = I_p(k+1, n-k)``, ``bdtri`` their inverse
  in ``p``; ``nbdtr(k, n, p) = I_p(n, k+1)``, ``nbdtrc`` its complement (``k`` and ``n``
  are floored, as SciPy does);
* ``fdtr(a, b, x) = I_w(a/2, b/2)`` with ``w = a x / (b + a x)`` (``1 - w = b / (b + a x)``
  is formed without cancellation), ``fdtrc``, ``fdtri``;
* ``stdtrit(df, p)``: ``t = -+sqrt(df (1 - x) / x)``, ``x = betaincinv(df/2, 1/2, 2 min(p, 1-p))``.

Derivatives (``jax.custom_jvp``): in the continuous variable (``x``, ``p``, ``y``) the
density, in a quantile's probability one over the density at the quantile.  Shape
parameters, degrees of freedom and counts are not differentiated (``NotImplementedError``).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._beta import (
    beta_density,
    beta_inv,
    beta_log_density,
    beta_log_pq,
    beta_pq,
    log_small_root,
)
from ._common import as_float_arrays, entry_point, nondiff, tangent, tiny_of, twice
from ._declare import declare, quiet_oracle
from ._erf import ndtri
from ._t import _stdtr_pdf, stdtr

__all__ = [
    "WRAPPERS",
    "bdtr",
    "bdtrc",
    "bdtri",
    "betainc",
    "betaincc",
    "betainccinv",
    "betaincinv",
    "fdtr",
    "fdtrc",
    "fdtri",
    "nbdtr",
    "nbdtrc",
    "stdtrit",
]

_Partial = Callable[..., jax.Array]


def _function(
    name: str,
    argnames: Sequence[str],
    value: Callable[..., jax.Array],
    partials: dict[int, _Partial],
) -> Callable[..., jax.Array]:
    """``value`` as a jitted ``custom_jvp`` function, differentiable in the arguments that
    ``partials`` maps to ``d value / d arg = partial(*args, value)``."""

    @jax.custom_jvp
    def f(*args: jax.Array) -> jax.Array:
        return value(*args)

    def jvp(
        primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
    ) -> tuple[jax.Array, jax.Array]:
        out = f(*primals)
        total = jnp.zeros_like(out)
        for i, (arg, t) in enumerate(zip(argnames, tangents, strict=True)):
            if i in partials:
                total = total + partials[i](*primals, out) * tangent(t, out)
            else:
                nondiff(t, name, arg)
        return out, total

    f.defjvp(jvp, symbolic_zeros=True)
    # Padded to full vector lanes: see entry_point.
    return entry_point(f)


# ------------------------------------------------------------- incomplete beta
def _dens(a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    return beta_density(a, b, x, 1.0 - x)


_BETAINC = _function(
    "betainc",
    ("a", "b", "x"),
    lambda a, b, x: beta_pq(a, b, x)[0],
    {2: lambda a, b, x, out: _dens(a, b, x)},
)
_BETAINCC = _function(
    "betaincc",
    ("a", "b", "x"),
    lambda a, b, x: beta_pq(a, b, x)[1],
    {2: lambda a, b, x, out: -_dens(a, b, x)},
)
_BETAINCINV = _function(
    "betaincinv",
    ("a", "b", "y"),
    lambda a, b, y: beta_inv(a, b, y, 1.0 - y)[0],
    {2: lambda a, b, y, x: 1.0 / _dens(a, b, x)},
)
_BETAINCCINV = _function(
    "betainccinv",
    ("a", "b", "y"),
    lambda a, b, y: beta_inv(a, b, 1.0 - y, y)[0],
    {2: lambda a, b, y, x: -1.0 / _dens(a, b, x)},
)


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> jax.Array:
    """Regularised incomplete beta ``I_x(a, b)``, mirroring ``scipy.special.betainc`` (and
    replacing ``jax.scipy.special.betainc``).  Domain ``a, b >= 0`` (not both 0 or both
    inf), ``0 <= x <= 1`` (else nan).  Differentiable in ``x``."""
    return _BETAINC(a, b, x)


def betaincc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> jax.Array:
    """Complemented regularised incomplete beta ``1 - I_x(a, b)``, mirroring
    ``scipy.special.betaincc``.  Domain ``a, b >= 0`` (not both 0 or both inf),
    ``0 <= x <= 1`` (else nan).  Differentiable in ``x``."""
    return _BETAINCC(a, b, x)


def betaincinv(a: ArrayLike, b: ArrayLike, y: ArrayLike) -> jax.Array:
    """``x`` with ``I_x(a, b) = y``, mirroring ``scipy.special.betaincinv``.  Domain
    ``a, b > 0``, ``0 <= y <= 1``.  Differentiable in ``y``."""
    return _BETAINCINV(a, b, y)


def betainccinv(a: ArrayLike, b: ArrayLike, y: ArrayLike) -> jax.Array:
    """``x`` with ``1 - I_x(a, b) = y``, mirroring ``scipy.special.betainccinv``; keeps full
    relative accuracy for tiny ``y``.  Differentiable in ``y``."""
    return _BETAINCCINV(a, b, y)


# ----------------------------------------------------------------- binomial
def _binomial_args(k: jax.Array, n: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(k + 1, n - k, invalid)`` with ``k`` and ``n`` floored as SciPy does."""
    kk = jnp.floor(k)
    nn = jnp.floor(n)
    bad = ~(kk >= 0.0) | ~(kk <= nn) | ~(nn < jnp.inf)
    return kk + 1.0, nn - kk, bad


def _bdtr_value(upper: bool) -> Callable[..., jax.Array]:
    def value(k: jax.Array, n: jax.Array, p: jax.Array) -> jax.Array:
        a, b, bad = _binomial_args(k, n)
        full = b == 0.0  # k = n: every outcome is <= k
        cdf, sf = beta_pq(a, jnp.where(full, 1.0, b), p)
        out = jnp.where(full, 0.0 if upper else 1.0, cdf if upper else sf)
        out = jnp.where(bad | ~(p >= 0.0) | ~(p <= 1.0), jnp.nan, out)
        if upper:  # SciPy: bdtrc(k < 0) = 1
            out = jnp.where((k < 0.0) & (p >= 0.0) & (p <= 1.0) & (n >= 0.0), 1.0, out)
        return out

    return value


def _bdtr_partial(sign: float) -> _Partial:
    def partial(k: jax.Array, n: jax.Array, p: jax.Array, out: jax.Array) -> jax.Array:
        a, b, _ = _binomial_args(k, n)
        return sign * _dens(a, b, p)

    return partial


def _bdtri_value(k: jax.Array, n: jax.Array, y: jax.Array) -> jax.Array:
    a, b, bad = _binomial_args(k, n)
    p = beta_inv(a, jnp.where(b > 0.0, b, 1.0), 1.0 - y, y)[0]
    return jnp.where(bad | (b == 0.0), jnp.nan, p)


_BDTR = _function("bdtr", ("k", "n", "p"), _bdtr_value(False), {2: _bdtr_partial(-1.0)})
_BDTRC = _function("bdtrc", ("k", "n", "p"), _bdtr_value(True), {2: _bdtr_partial(1.0)})
_BDTRI = _function(
    "bdtri",
    ("k", "n", "y"),
    _bdtri_value,
    {2: lambda k, n, y, p: 1.0 / _bdtr_partial(-1.0)(k, n, p, p)},
)


def bdtr(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> jax.Array:
    """Binomial CDF ``sum_{j <= k} C(n, j) p^j (1-p)^(n-j) = I_{1-p}(n-k, k+1)``, mirroring
    ``scipy.special.bdtr`` (``k``, ``n`` floored; ``0 <= k <= n``, ``0 <= p <= 1``, else
    nan).  Differentiable in ``p``."""
    return _BDTR(k, n, p)


def bdtrc(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> jax.Array:
    """Binomial survival function ``I_p(k+1, n-k)``, mirroring ``scipy.special.bdtrc``
    (``bdtrc(k < 0) = 1``).  Differentiable in ``p``."""
    return _BDTRC(k, n, p)


def bdtri(k: ArrayLike, n: ArrayLike, y: ArrayLike) -> jax.Array:
    """The ``p`` with ``bdtr(k, n, p) = y``, mirroring ``scipy.special.bdtri``
    (``0 <= k < n``).  Differentiable in ``y``."""
    return _BDTRI(k, n, y)


# -------------------------------------------------------- negative binomial
def _nb_args(k: jax.Array, n: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(n, k + 1, invalid)`` with ``k`` and ``n`` floored as SciPy does."""
    kk = jnp.floor(k)
    nn = jnp.floor(n)
    bad = ~(kk >= 0.0) | ~(nn >= 1.0) | ~(kk < jnp.inf) | ~(nn < jnp.inf)
    return nn, kk + 1.0, bad


def _nbdtr_value(upper: bool) -> Callable[..., jax.Array]:
    def value(k: jax.Array, n: jax.Array, p: jax.Array) -> jax.Array:
        a, b, bad = _nb_args(k, n)
        cdf, sf = beta_pq(a, b, p)
        return jnp.where(bad, jnp.nan, sf if upper else cdf)

    return value


def _nbdtr_partial(sign: float) -> _Partial:
    def partial(k: jax.Array, n: jax.Array, p: jax.Array, out: jax.Array) -> jax.Array:
        a, b, _ = _nb_args(k, n)
        return sign * _dens(a, b, p)

    return partial


_NBDTR = _function("nbdtr", ("k", "n", "p"), _nbdtr_value(False), {2: _nbdtr_partial(1.0)})
_NBDTRC = _function("nbdtrc", ("k", "n", "p"), _nbdtr_value(True), {2: _nbdtr_partial(-1.0)})


def nbdtr(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> jax.Array:
    """Negative binomial CDF ``I_p(n, k+1)`` (at most ``k`` failures before the ``n``-th
    success), mirroring ``scipy.special.nbdtr`` (``k``, ``n`` floored; ``k >= 0``,
    ``n >= 1``).  Differentiable in ``p``."""
    return _NBDTR(k, n, p)


def nbdtrc(k: ArrayLike, n: ArrayLike, p: ArrayLike) -> jax.Array:
    """Negative binomial survival function ``1 - I_p(n, k+1)``, mirroring
    ``scipy.special.nbdtrc``.  Differentiable in ``p``."""
    return _NBDTRC(k, n, p)


# ----------------------------------------------------------------------- F
def _f_args(
    a: jax.Array, b: jax.Array, x: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(a/2, b/2, w, 1 - w, invalid)`` with ``w = a x / (b + a x)``."""
    bad = ~(a > 0.0) | ~(b > 0.0) | ~(a < jnp.inf) | ~(b < jnp.inf) | ~(x >= 0.0)
    xs = jnp.where(x == jnp.inf, 1.0, x)
    ax = a * xs
    w = ax / (b + ax)
    y = b / (b + ax)
    return 0.5 * a, 0.5 * b, w, y, bad


def _fdtr_value(upper: bool) -> Callable[..., jax.Array]:
    def value(a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
        ha, hb, w, y, bad = _f_args(a, b, x)
        cdf, sf = beta_pq(ha, hb, w, y)
        out = jnp.where(x == jnp.inf, 0.0 if upper else 1.0, sf if upper else cdf)
        return jnp.where(bad, jnp.nan, out)

    return value


def _f_density(a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
    ha, hb, w, y, _ = _f_args(a, b, x)
    return beta_density(ha, hb, w, y) * (a / b) * y * y  # dw/dx = (a/b) (1-w)^2


def _fdtri_pair(a: jax.Array, b: jax.Array, p: jax.Array, q: jax.Array) -> jax.Array:
    bad = ~(a > 0.0) | ~(b > 0.0) | ~(a < jnp.inf) | ~(b < jnp.inf)
    w, y = beta_inv(0.5 * a, 0.5 * b, p, q)
    return jnp.where(bad, jnp.nan, b * w / (a * y))


_FDTR = _function(
    "fdtr",
    ("dfn", "dfd", "x"),
    _fdtr_value(False),
    {2: lambda a, b, x, out: _f_density(a, b, x)},
)
_FDTRC = _function(
    "fdtrc",
    ("dfn", "dfd", "x"),
    _fdtr_value(True),
    {2: lambda a, b, x, out: -_f_density(a, b, x)},
)
_FDTRI = _function(
    "fdtri",
    ("dfn", "dfd", "p"),
    lambda a, b, p: _fdtri_pair(a, b, p, 1.0 - p),
    {2: lambda a, b, p, x: 1.0 / _f_density(a, b, x)},
)
_FDTRI_C = _function(
    "f.isf",
    ("q", "dfn", "dfd"),
    lambda q, a, b: _fdtri_pair(a, b, 1.0 - q, q),
    {0: lambda q, a, b, x: -1.0 / _f_density(a, b, x)},
)


def fdtr(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> jax.Array:
    """F distribution CDF ``I_w(dfn/2, dfd/2)``, ``w = dfn x / (dfd + dfn x)``, mirroring
    ``scipy.special.fdtr``.  Domain ``dfn, dfd > 0`` finite, ``x >= 0``.  Differentiable
    in ``x``."""
    return _FDTR(dfn, dfd, x)


def fdtrc(dfn: ArrayLike, dfd: ArrayLike, x: ArrayLike) -> jax.Array:
    """F distribution survival function, mirroring ``scipy.special.fdtrc``.
    Differentiable in ``x``."""
    return _FDTRC(dfn, dfd, x)


def fdtri(dfn: ArrayLike, dfd: ArrayLike, p: ArrayLike) -> jax.Array:
    """The ``x`` with ``fdtr(dfn, dfd, x) = p``, mirroring ``scipy.special.fdtri``
    (``fdtri(., ., 1) = inf``).  Differentiable in ``p``."""
    return _FDTRI(dfn, dfd, p)


# ------------------------------------------------------------------ Student t
def _t_start(df: jax.Array, tail: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(use, x0, 1 - x0)``: ``x0 = df / (df + t^2)`` from the Cornish-Fisher expansion of
    the t quantile in the normal one (A&S 26.7.5, three terms), used for ``df >= 8`` and
    ``z^2 <= df``, where it is within ~1e-2 relative of ``t`` (the power-law start of
    ``beta_inv`` for ``b = 1/2`` is ~1/4 off in ``log x``)."""
    z = ndtri(tail)
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    t = z + (g1 + (g2 + g3 / df) / df) / df
    t2 = t * t
    use = (df >= 8.0) & (z2 <= df) & (df < jnp.inf)
    return use, df / (df + t2), t2 / (df + t2)


def _stdtrit_value(df: jax.Array, p: jax.Array) -> jax.Array:
    # 1 - p is exact for p >= 1/2.  A select, not jnp.minimum, and 2 tail by the bits:
    # XLA on CPU flushes a subnormal p in both (stdtrit(25, 5e-324) was -inf; -1.7e13).
    tail = jnp.where(p <= 1.0 - p, p, 1.0 - p)
    two_tail = twice(tail)
    half = jnp.full_like(df, 0.5)
    x, y = beta_inv(0.5 * df, half, two_tail, 1.0 - two_tail, _t_start(df, tail))
    t = jnp.sqrt(df * y / x)
    # Far in the tail of a small df the root x = df / (df + t^2) leaves the normal range
    # while t does not (stdtrit(0.5, 2.7e-85) is -4.7e153, and was -inf): t from log x
    # there, where y = 1 to the last bit.  Only a call holding such a point pays for it.
    far = x < tiny_of(x) * 2.0**40

    def from_log_x() -> jax.Array:
        log_x = log_small_root(0.5 * df, half, jnp.where(far, two_tail, 0.5))
        return jnp.where(far, jnp.exp(0.5 * (jnp.log(df) - log_x)), t)

    magnitude: jax.Array = lax.cond(jnp.any(far), from_log_x, lambda: t)
    t = jnp.where(p < 0.5, -magnitude, magnitude)
    t = jnp.where(p == 0.5, 0.0, t)
    t = jnp.where(df == jnp.inf, ndtri(p), t)
    return jnp.where(~(df > 0.0) | ~(p >= 0.0) | ~(p <= 1.0), jnp.nan, t)


_STDTRIT = _function(
    "stdtrit", ("df", "p"), _stdtrit_value, {1: lambda df, p, t: 1.0 / _stdtr_pdf(df, t)}
)


def stdtrit(df: ArrayLike, p: ArrayLike) -> jax.Array:
    """The ``t`` with ``stdtr(df, t) = p``, mirroring ``scipy.special.stdtrit``.  Domain
    ``df > 0`` (``inf``: the normal quantile), ``0 <= p <= 1``; ``stdtrit(df, 0) = -inf``
    (SciPy 1.17 returns ``+inf`` there, cdflib's bound).  Differentiable in ``p``."""
    return _STDTRIT(df, p)


# ------------------------------------------------------------- scipy.stats
def _located(x: jax.Array, loc: jax.Array, scale: jax.Array) -> jax.Array:
    return jnp.where(scale > 0.0, (x - loc) / scale, jnp.nan)


def _quantile(
    x: jax.Array, q: jax.Array, loc: jax.Array, scale: jax.Array, *shapes: jax.Array
) -> jax.Array:
    bad = ~(q >= 0.0) | ~(q <= 1.0) | ~(scale > 0.0)
    for s in shapes:
        bad = bad | ~(s > 0.0)
    return jnp.where(bad, jnp.nan, loc + scale * x)


def t_cdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> jax.Array:
    """Student t CDF, mirroring ``scipy.stats.t.cdf``."""
    x, df, loc, scale = as_float_arrays(x, df, loc, scale)
    return stdtr(df, _located(x, loc, scale))


def t_sf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> jax.Array:
    """Student t survival function, mirroring ``scipy.stats.t.sf``."""
    x, df, loc, scale = as_float_arrays(x, df, loc, scale)
    return stdtr(df, -_located(x, loc, scale))


def t_ppf(q: ArrayLike, df: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> jax.Array:
    """Student t quantile, mirroring ``scipy.stats.t.ppf``."""
    q, df, loc, scale = as_float_arrays(q, df, loc, scale)
    return _quantile(stdtrit(df, q), q, loc, scale, df)


def t_isf(q: ArrayLike, df: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> jax.Array:
    """Student t inverse survival function, mirroring ``scipy.stats.t.isf``."""
    q, df, loc, scale = as_float_arrays(q, df, loc, scale)
    return _quantile(-stdtrit(df, q), q, loc, scale, df)


def f_cdf(
    x: ArrayLike, dfn: ArrayLike, dfd: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """F distribution CDF, mirroring ``scipy.stats.f.cdf``."""
    x, dfn, dfd, loc, scale = as_float_arrays(x, dfn, dfd, loc, scale)
    z = _located(x, loc, scale)
    return jnp.where(z < 0.0, 0.0, fdtr(dfn, dfd, jnp.maximum(z, 0.0)))


def f_sf(
    x: ArrayLike, dfn: ArrayLike, dfd: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """F distribution survival function, mirroring ``scipy.stats.f.sf``."""
    x, dfn, dfd, loc, scale = as_float_arrays(x, dfn, dfd, loc, scale)
    z = _located(x, loc, scale)
    return jnp.where(z < 0.0, 1.0, fdtrc(dfn, dfd, jnp.maximum(z, 0.0)))


def f_ppf(
    q: ArrayLike, dfn: ArrayLike, dfd: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """F distribution quantile, mirroring ``scipy.stats.f.ppf``."""
    q, dfn, dfd, loc, scale = as_float_arrays(q, dfn, dfd, loc, scale)
    return _quantile(fdtri(dfn, dfd, q), q, loc, scale, dfn, dfd)


def f_isf(
    q: ArrayLike, dfn: ArrayLike, dfd: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """F distribution inverse survival function, mirroring ``scipy.stats.f.isf``."""
    q, dfn, dfd, loc, scale = as_float_arrays(q, dfn, dfd, loc, scale)
    return _quantile(_FDTRI_C(q, dfn, dfd), q, loc, scale, dfn, dfd)


def beta_ppf(
    q: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Beta distribution quantile, mirroring ``scipy.stats.beta.ppf``."""
    q, a, b, loc, scale = as_float_arrays(q, a, b, loc, scale)
    return _quantile(betaincinv(a, b, q), q, loc, scale, a, b)


def beta_isf(
    q: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Beta distribution inverse survival function, mirroring ``scipy.stats.beta.isf``."""
    q, a, b, loc, scale = as_float_arrays(q, a, b, loc, scale)
    return _quantile(betainccinv(a, b, q), q, loc, scale, a, b)


def _beta_method(
    kernel: Callable[..., jax.Array],
    below: float,
    above: float,
    *args: ArrayLike,
) -> jax.Array:
    """A ``scipy.stats.beta`` method from its ``kernel(a, b, z)`` on ``0 < z < 1``, ``z = (x -
    loc) / scale``; as SciPy: ``below`` for ``z <= 0`` and ``above`` for ``z >= 1`` whatever
    the shapes (``a = b = inf`` included), nan for ``a`` or ``b`` not positive or
    ``scale <= 0``."""
    x, a, b, loc, scale = as_float_arrays(*args)
    z = _located(x, loc, scale)
    # z clipped to the support: the kernel's values at 0 and 1 are SciPy's outside it, and
    # its derivative there is the density's 0 (nan for a log at -inf, as finite differences).
    out = kernel(a, b, jnp.clip(z, 0.0, 1.0))
    # Except for a = b = inf, where the kernel answers nan (a point mass it cannot place).
    point = (a == jnp.inf) & (b == jnp.inf)
    out = jnp.where(point & (z <= 0.0), below, jnp.where(point & (z >= 1.0), above, out))
    return jnp.where(~(a > 0.0) | ~(b > 0.0), jnp.nan, out)


def _log_slope(a: jax.Array, b: jax.Array, x: jax.Array, log_p: jax.Array) -> jax.Array:
    """``density / p``, the derivative of ``log p``, as ``exp(log density - log p)`` (finite
    where both underflow); nan where ``p = 0`` (``log p = -inf``: as finite differences)."""
    return jnp.exp(beta_log_density(a, b, x, 1.0 - x) - log_p)


_LOG_BETAINC = _function(
    "beta.logcdf",
    ("a", "b", "x"),
    lambda a, b, x: beta_log_pq(a, b, x)[0],
    {2: _log_slope},
)
_LOG_BETAINCC = _function(
    "beta.logsf",
    ("a", "b", "x"),
    lambda a, b, x: beta_log_pq(a, b, x)[1],
    {2: lambda a, b, x, out: -_log_slope(a, b, x, out)},
)


def beta_cdf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Beta distribution CDF, mirroring ``scipy.stats.beta.cdf``."""
    return _beta_method(betainc, 0.0, 1.0, x, a, b, loc, scale)


def beta_sf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Beta distribution survival function, mirroring ``scipy.stats.beta.sf``."""
    return _beta_method(betaincc, 1.0, 0.0, x, a, b, loc, scale)


def beta_logcdf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Log of the beta distribution CDF, mirroring ``scipy.stats.beta.logcdf``, to full
    relative accuracy near ``cdf = 1`` (SciPy's ``log(cdf)`` is ``eps / |logcdf|`` off
    there) and where the CDF underflows (``log`` of the prefactor less ``log`` of the
    continued fraction: finite in float32 far beyond 1e-38)."""
    return _beta_method(_LOG_BETAINC, -math.inf, 0.0, x, a, b, loc, scale)


def beta_logsf(
    x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Log of the beta distribution survival function, mirroring ``scipy.stats.beta.logsf``,
    accurate as :func:`beta_logcdf`."""
    return _beta_method(_LOG_BETAINCC, 0.0, -math.inf, x, a, b, loc, scale)


# ----------------------------------------------------------- declarations
def _stdtrit_oracle(df: Any, p: Any) -> Any:
    """SciPy's ``stdtrit``, with ``-inf`` at ``p = 0`` where SciPy 1.17 returns ``+inf``."""
    out = np.asarray(importlib.import_module("scipy.special").stdtrit(df, p), np.float64)
    return np.where((np.asarray(p) == 0.0) & ~np.isnan(out), -np.inf, out)


#: Why ``betainc`` and ``beta.{cdf,sf,logcdf,logsf}`` replace ``jax.scipy``'s (``jext list``
#: shows it): measured against mpmath at a, b ~ 1e5..1e7 (tests/test_special_beta_family.py).
REPLACES_JAX = (
    "within 5e-14 of mpmath at a, b up to 1e7 (jax.scipy's: up to 2e-3 off); batch-independent"
)


def _log_oracle(method: str) -> Callable[..., Any]:
    """``scipy.stats.beta.<method>`` (``logcdf``/``logsf``) taken as ``log1p(-sf)`` (or
    ``log1p(-cdf)``) where the probability is above 1/2: SciPy's own is ``log`` of the rounded
    probability, ``eps / |log p|`` relative off near ``p = 1``."""

    def oracle(*args: Any) -> Any:
        beta = importlib.import_module("scipy.stats").beta
        p, q = (beta.cdf(*args), beta.sf(*args))
        if method == "logsf":
            p, q = q, p
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(p > 0.5, np.log1p(-q), np.log(p))

    return oracle


#: SciPy's (Boost's) ``betainc`` loses relative accuracy for results below ~1e-250
#: (``I_0.1606(401.54, 36.17) = 2.6308977e-270`` by mpmath; SciPy 2.630891e-270): the
#: absolute floor is raised to 1e-250 in float64.  float32: the results carry the float32
#: rounding of exponents up to ~80 (as the gamma family).
TOL = {"float64": (1e-12, 1e-250), "float32": (5e-5, 1e-30)}


def _declarations() -> tuple[ScipyWrapper, ...]:
    ab = (Domain(((0.1, 1000.0), (0.1, 1000.0), (0.0, 1.0))),)
    ab_log = Domain(((0.1, 1000.0), (0.1, 1000.0), (1e-20, 1.0)), log=True)
    inv_tails = tuple(
        EdgeCase((a, b, y))
        for a, b in ((0.5, 3.0), (20.0, 0.7), (300.0, 40.0))
        for y in (1e-300, 1e-20, 1e-8)
    )
    binom = (Domain(((0.0, 60.0), (60.0, 120.0), (0.0, 1.0))),)
    bdtri_dom = (Domain(((0.0, 60.0), (61.0, 120.0), (1e-3, 0.999))),)
    nbin = (Domain(((0.0, 100.0), (1.0, 50.0), (0.0, 1.0))),)
    fdom = (Domain(((0.2, 500.0), (0.2, 500.0), (1e-3, 100.0)), log=True),)
    fq = (Domain(((0.2, 500.0), (0.2, 500.0), (1e-3, 0.999)), log=True),)
    tq = (Domain(((0.5, 1000.0), (1e-6, 0.999999)), log=True), Domain(((0.5, 50.0), (0.0, 1.0))))
    special = [
        declare(
            "betainc",
            betainc,
            tolerances=TOL,
            domains=(*ab, ab_log),
            differentiable=(2,),
            replaces_jax=REPLACES_JAX,
        ),
        declare("betaincc", betaincc, tolerances=TOL, domains=(*ab, ab_log), differentiable=(2,)),
        declare(
            "betaincinv",
            betaincinv,
            tolerances=TOL,
            domains=ab,
            differentiable=(2,),
            edge_cases=inv_tails,
        ),
        declare(
            "betainccinv",
            betainccinv,
            tolerances=TOL,
            domains=ab,
            differentiable=(2,),
            edge_cases=inv_tails,
        ),
        *(
            declare(
                fn.__name__,
                fn,
                # SciPy warns where it floors a count (RuntimeWarning for k,
                # DeprecationWarning for n); the wrappers floor it silently.
                oracle=quiet_oracle(f"special.{fn.__name__}"),
                tolerances=TOL,
                domains=dom,
                differentiable=(2,),
            )
            for fn, dom in (
                (bdtr, binom),
                (bdtrc, binom),
                (bdtri, bdtri_dom),
                (nbdtr, nbin),
                (nbdtrc, nbin),
            )
        ),
        declare("fdtr", fdtr, tolerances=TOL, domains=fdom, differentiable=(2,)),
        declare("fdtrc", fdtrc, tolerances=TOL, domains=fdom, differentiable=(2,)),
        declare("fdtri", fdtri, tolerances=TOL, domains=fq, differentiable=(2,)),
        declare(
            "stdtrit",
            stdtrit,
            oracle=_stdtrit_oracle,
            tolerances=TOL,
            domains=tq,
            differentiable=(1,),
        ),
    ]
    stats = []
    for dist, method, fn, shapes, first in (
        ("t", "cdf", t_cdf, ((0.5, 100.0),), (-20.0, 20.0)),
        ("t", "sf", t_sf, ((0.5, 100.0),), (-20.0, 20.0)),
        ("t", "ppf", t_ppf, ((0.5, 100.0),), (0.001, 0.999)),
        ("t", "isf", t_isf, ((0.5, 100.0),), (0.001, 0.999)),
        ("f", "cdf", f_cdf, ((0.5, 100.0), (0.5, 100.0)), (0.0, 30.0)),
        ("f", "sf", f_sf, ((0.5, 100.0), (0.5, 100.0)), (0.0, 30.0)),
        ("f", "ppf", f_ppf, ((0.5, 100.0), (0.5, 100.0)), (0.001, 0.999)),
        ("f", "isf", f_isf, ((0.5, 100.0), (0.5, 100.0)), (0.001, 0.999)),
        ("beta", "cdf", beta_cdf, ((0.2, 50.0), (0.2, 50.0)), (0.0, 1.0)),
        ("beta", "sf", beta_sf, ((0.2, 50.0), (0.2, 50.0)), (0.0, 1.0)),
        ("beta", "logcdf", beta_logcdf, ((0.2, 50.0), (0.2, 50.0)), (0.0, 1.0)),
        ("beta", "logsf", beta_logsf, ((0.2, 50.0), (0.2, 50.0)), (0.0, 1.0)),
        ("beta", "ppf", beta_ppf, ((0.2, 50.0), (0.2, 50.0)), (0.001, 0.999)),
        ("beta", "isf", beta_isf, ((0.2, 50.0), (0.2, 50.0)), (0.001, 0.999)),
    ):
        options: dict[str, Any] = {}
        if dist == "beta" and method in ("cdf", "sf", "logcdf", "logsf"):
            options["replaces_jax"] = REPLACES_JAX
        if method in ("logcdf", "logsf"):
            options["oracle"] = _log_oracle(method)
        stats.append(
            declare(
                f"{dist}.{method}",
                fn,
                scope="stats",
                **options,
                domains=(
                    Domain((first, *shapes, (0.0, 0.0), (1.0, 1.0))),
                    # loc >= 0, and 0 for t (signed values): loc + scale x cancels in
                    # float32 (in SciPy's float64 too).
                    Domain((first, *shapes, (0.0, 0.0 if dist == "t" else 5.0), (0.1, 10.0))),
                ),
                differentiable=(0,),
                tolerances=TOL,
            )
        )
    return (*special, *stats)


WRAPPERS: tuple[ScipyWrapper, ...] = _declarations()
