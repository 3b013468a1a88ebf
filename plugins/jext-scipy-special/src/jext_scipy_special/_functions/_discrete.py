"""``scipy.stats`` methods of the discrete distributions ``binom``, ``poisson`` and ``nbinom``:
``cdf`` and ``sf`` where ``jax.scipy.stats`` lacks them, ``ppf`` and ``isf``.

Arguments as ``scipy.stats`` takes them: ``(k or q, <shapes>, loc=0)``.  The functions at
integers: ``binom.cdf(k, n, p) = I_{1-p}(n-k, k+1)`` (``n`` a whole number, as SciPy
requires), ``nbinom.cdf(k, n, p) = I_p(n, k+1)`` (``n > 0`` real, as ``scipy.stats``
takes it, unlike ``scipy.special.nbdtr``), ``poisson.sf(k, mu) = P(k+1, mu)``, with ``k``
floored; the incomplete beta and gamma kernels stop per element, so no value depends on
the batch.

Quantiles follow ``rv_discrete``'s conventions: ``ppf(q)`` is the smallest integer ``k``
of the support with ``cdf(k) >= q`` and ``isf(q)`` the smallest with ``sf(k) <= q``, both
decided by this module's own ``cdf``/``sf`` at integers, on the smaller tail ``t``
(``sf(k) <= 1 - q`` for ``ppf`` above ``q = 1/2``) within ``512 eps t`` (plus half an
ulp of ``q`` above ``q = 1/2``, the rounding of a ``cdf`` value near 1): ``q`` taken from a ``cdf``
value (SciPy's, or an exact one such as ``1/16`` for ``binom(4, 1/2)`` at ``k = 0``)
gives that ``k`` back, as SciPy's Boost quantile does, though the incomplete beta here is
good to ~6e-14 relative in deep tails, not to 1 ulp.
``ppf(0) = isf(1) = -1 + loc`` (one below the support), ``ppf(1) = isf(0)``
the upper end of the support (``n`` or ``inf``) plus ``loc``.  The search starts from
the Cornish-Fisher approximation (usually the answer or one off), then gallops with
doubling steps and bisects, each element stopping once its own bracket is one wide.
``isf`` uses ``sf`` directly, so tiny ``q`` keep their quantile where SciPy loses it
(the only places where this module differs from SciPy on purpose): SciPy's
``poisson.isf`` goes through ``ppf(1 - q)`` and returns nan for ``q < 1.1e-16``, and its
``binom.isf`` returns ``n`` once ``q`` is below ~1e-17 (``binom.isf(1e-20, 120, 0.5)``
is 120; the smallest ``k`` with ``sf(k) <= 1e-20`` is 107).  float32 quantiles may be
one off where ``q`` lies within the float32 ``cdf``'s own error of a ``cdf`` value.

Derivatives: ``cdf``/``sf`` in ``p`` (``mu``) by the closed forms
``d/dp binom.cdf = -(n-k) C(n,k) p^k (1-p)^(n-k-1)``,
``d/dmu poisson.sf = mu^k e^-mu / k!`` and ``d/dp nbinom.cdf = p^(n-1) (1-p)^k / B(n, k+1)``;
in ``k`` and ``loc`` they are 0 (piecewise constant); the quantiles are piecewise constant
in ``q`` and the shapes (derivative 0) and move with ``loc`` (derivative 1).  The count
``n`` of ``binom`` and the real ``n`` of ``nbinom`` are not differentiated in ``cdf``/``sf``
(``NotImplementedError``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._beta import beta_density, beta_pq
from ._common import entry_point, eps_of, nondiff, partitioned, subnormal_parts, tangent
from ._declare import declare, scipy_function
from ._erf import ndtri
from ._incgamma import gamma_pdf_ratio, gamma_pq

__all__ = [
    "WRAPPERS",
    "binom_cdf",
    "binom_isf",
    "binom_ppf",
    "binom_sf",
    "nbinom_cdf",
    "nbinom_isf",
    "nbinom_ppf",
    "nbinom_sf",
    "poisson_isf",
    "poisson_ppf",
    "poisson_sf",
]

#: ``(cdf, sf)`` at whole numbers ``k`` inside the support, valid shapes.
_Pair = tuple[jax.Array, jax.Array]
_Tail = Callable[[jax.Array, jax.Array, jax.Array], _Pair]
_Slope = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
_Row = tuple[
    str, str, Callable[..., jax.Array], tuple[Domain, ...], tuple[int, ...], tuple[EdgeCase, ...]
]


# ------------------------------------------------------- the three families
class _Family:
    """One distribution: its validity test, support end, tails, slope and moments.

    Every function takes ``(k, s1, s2)``: ``binom (n, p)``, ``nbinom (n, p)`` and
    ``poisson (mu, unused)``; ``k`` is a whole number inside the support.
    """

    def __init__(
        self,
        name: str,
        shapes: tuple[str, ...],
        valid: Callable[[jax.Array, jax.Array], jax.Array],
        upper: Callable[[jax.Array, jax.Array], jax.Array],
        tails: _Tail,
        slope: _Slope,
        moments: Callable[[jax.Array, jax.Array], tuple[jax.Array, jax.Array, jax.Array]],
    ) -> None:
        self.name = name
        self.shapes = shapes
        self.valid = valid
        self.upper = upper
        self.tails = tails
        self.slope = slope
        self.moments = moments


def _binom_tails(k: jax.Array, n: jax.Array, p: jax.Array) -> _Pair:
    full = k >= n  # every outcome is <= k
    # Half the bench's draws lie outside the support (p = 0 here, see _distribution).
    sf, cdf = beta_pq(k + 1.0, jnp.where(full, 1.0, n - k), p, skip_edges=True)
    return jnp.where(full, 1.0, cdf), jnp.where(full, 0.0, sf)


def _binom_slope(k: jax.Array, n: jax.Array, p: jax.Array) -> jax.Array:
    # d/dp I_p(k+1, n-k) = the beta density; the cdf falls by as much.
    inside = k < n
    b = jnp.where(inside, n - k, 1.0)
    return jnp.where(inside, -beta_density(k + 1.0, b, p, 1.0 - p), 0.0)


def _binom_moments(n: jax.Array, p: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    sd = jnp.sqrt(n * p * (1.0 - p))
    return n * p, sd, (1.0 - 2.0 * p) / sd


def _poisson_tails(k: jax.Array, mu: jax.Array, _: jax.Array) -> _Pair:
    sf, cdf = gamma_pq(k + 1.0, mu)
    return cdf, sf


def _poisson_slope(k: jax.Array, mu: jax.Array, _: jax.Array) -> jax.Array:
    ok = (mu > 0.0) & (mu < jnp.inf)
    d = gamma_pdf_ratio(k + 1.0, jnp.where(ok, mu, 1.0))
    # mu = 0: the density of P(k+1, .) at 0 is 1 for k = 0, else 0.
    return jnp.where(ok, -d, jnp.where((mu == 0.0) & (k == 0.0), -1.0, 0.0))


def _poisson_moments(mu: jax.Array, _: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    sd = jnp.sqrt(mu)
    return mu, sd, 1.0 / sd


def _nbinom_tails(k: jax.Array, n: jax.Array, p: jax.Array) -> _Pair:
    return beta_pq(n, k + 1.0, p)


def _nbinom_slope(k: jax.Array, n: jax.Array, p: jax.Array) -> jax.Array:
    return beta_density(n, k + 1.0, p, 1.0 - p)


def _nbinom_moments(n: jax.Array, p: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    sd = jnp.sqrt(n * (1.0 - p)) / p
    return n * (1.0 - p) / p, sd, (2.0 - p) / jnp.sqrt(n * (1.0 - p))


_BINOM = _Family(
    "binom",
    ("n", "p"),
    # SciPy: a whole n >= 0 and 0 <= p <= 1.
    lambda n, p: (n >= 0.0) & (n == jnp.floor(n)) & (p >= 0.0) & (p <= 1.0),
    lambda n, p: n,
    _binom_tails,
    _binom_slope,
    _binom_moments,
)
_POISSON = _Family(
    "poisson",
    ("mu",),
    lambda mu, _: mu >= 0.0,
    lambda mu, _: jnp.full_like(mu, jnp.inf),
    _poisson_tails,
    _poisson_slope,
    _poisson_moments,
)
_NBINOM = _Family(
    "nbinom",
    ("n", "p"),
    lambda n, p: (n > 0.0) & (p > 0.0) & (p <= 1.0),
    lambda n, p: jnp.full_like(n, jnp.inf),
    _nbinom_tails,
    _nbinom_slope,
    _nbinom_moments,
)


# ---------------------------------------------------------------- cdf / sf
def _distribution(family: _Family, upper: bool) -> Callable[..., jax.Array]:
    """``cdf`` (or ``sf``) of ``k - loc``, with ``rv_discrete``'s edges, as a jitted
    ``custom_jvp`` function of ``(k, s1, s2, loc)``."""
    method = "sf" if upper else "cdf"

    def parts(k: jax.Array, s1: jax.Array, s2: jax.Array, loc: jax.Array) -> tuple[jax.Array, ...]:
        x = k - loc
        ok = family.valid(s1, s2)
        top = family.upper(s1, s2)
        inside = ok & (x >= 0.0) & (x < top) & jnp.isfinite(x)
        kk = jnp.where(inside, jnp.floor(x), 0.0)
        s1_ = jnp.where(ok, s1, 1.0)
        s2_ = jnp.where(ok, s2, 0.5)
        return x, ok, top, inside, kk, s1_, s2_

    @jax.custom_jvp
    def f(k: jax.Array, s1: jax.Array, s2: jax.Array, loc: jax.Array) -> jax.Array:
        x, ok, top, inside, kk, s1_, s2_ = parts(k, s1, s2, loc)
        # The incomplete gamma and beta kernels group their elements by cost themselves;
        # p = 0 outside the support (whose value is set below) makes it an edge element
        # of the incomplete beta, which binom's tails skip by whole chunks.
        live_p = jnp.where(inside, s2_, 0.0) if family is _BINOM else s2_
        cdf, sf = family.tails(kk, s1_, live_p)
        val = jnp.clip(sf if upper else cdf, 0.0, 1.0)
        # SciPy's binom and nbinom take n = inf as valid and give nan inside the support.
        if family is not _POISSON:
            val = jnp.where(s1 < jnp.inf, val, jnp.nan)
        below = (x < 0.0) | (x == -jnp.inf)
        out = jnp.where(x >= top, 0.0 if upper else 1.0, jnp.where(below, 1.0 if upper else 0.0, 0))
        out = jnp.where(inside, val, out)
        return jnp.where(~ok | jnp.isnan(x), jnp.nan, out)

    def jvp(
        primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
    ) -> tuple[jax.Array, jax.Array]:
        k, s1, s2, loc = primals
        out = f(*primals)
        # k and loc: piecewise constant.  The real parameter is p (binom, nbinom: the
        # second shape) or mu (poisson: the first); counts are not differentiated.
        real = 0 if family is _POISSON else 1
        _, _, _, inside, kk, s1_, s2_ = parts(k, s1, s2, loc)
        slope = jnp.where(inside, family.slope(kk, s1_, s2_), 0.0)
        slope = -slope if upper else slope
        total = jnp.zeros_like(out)
        for i, (name, t) in enumerate(zip(family.shapes, tangents[1:3], strict=False)):
            if i == real:
                total = total + slope * tangent(t, out)
            else:
                nondiff(t, f"{family.name}.{method}", name)
        return out, total

    f.defjvp(jvp, symbolic_zeros=True)
    return entry_point(f)


# --------------------------------------------------------------- quantiles
#: Search steps (gallop and bisection) before giving up: enough for supports up to 2^53.
_SEARCH_CAP = 240

_SearchState = tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]


def _search(family: _Family, upper: bool) -> Callable[..., tuple[jax.Array]]:
    """Kernel ``(q, s1, s2) -> (k,)``: the smallest whole ``k`` in the support with
    ``cdf(k) >= q`` (``upper``: ``sf(k) <= q``), for ``0 < q < 1`` and valid shapes."""

    def kernel(q: jax.Array, s1: jax.Array, s2: jax.Array) -> tuple[jax.Array]:
        top = family.upper(s1, s2)
        mean, sd, skew = family.moments(s1, s2)
        z = -ndtri(q) if upper else ndtri(q)
        guess = jnp.floor(mean + sd * (z + skew * (z * z - 1.0) / 6.0) + 0.5)
        guess = jnp.where(jnp.isfinite(guess), guess, jnp.floor(mean))
        guess = jnp.clip(jnp.where(jnp.isfinite(guess), guess, 0.0), 0.0, top - 1.0)
        guess = jnp.maximum(guess, 0.0)

        # Decided on the smaller tail t (1 - q is exact for q >= 1/2) within a slack:
        # q taken from a cdf value (SciPy's, or exactly 1/16 for binom(4, 1/2) at 0)
        # must give that k back.  The incomplete beta and gamma here are good to ~6e-14
        # relative in the deep tails (512 ulp of t), and a q near 1 carries the rounding
        # of a cdf value near 1 (half an ulp of q, absolute).
        eps = eps_of(q)
        by_cdf = (q > 0.5) if upper else (q <= 0.5)
        t = jnp.where(by_cdf != upper, q, 1.0 - q)
        slack = 512.0 * eps * t + jnp.where(q > 0.5, 0.25 * eps * q, 0.0)

        def good(k: jax.Array) -> jax.Array:
            cdf, sf = family.tails(k, s1, s2)
            return jnp.where(by_cdf, cdf >= t - slack, sf <= t + slack)

        def cond(st: _SearchState) -> jax.Array:
            i, _, _, _, _, done = st
            return (i < _SEARCH_CAP) & ~jnp.all(done)

        def body(st: _SearchState) -> _SearchState:
            i, k, lo, hi, step, done = st
            g = good(k)
            nlo = jnp.where(g, lo, k)
            nhi = jnp.where(g, k, hi)
            # Gallop away from the guess, bisect once the next step leaves the bracket.
            cand = jnp.where(g, k - step, k + step)
            mid = jnp.floor(0.5 * nlo + 0.5 * nhi)
            cand = jnp.where((cand <= nlo) | (cand >= nhi), mid, cand)
            ndone = nhi - nlo <= 1.0
            keep = done
            return (
                i + 1,
                jnp.where(keep, k, cand),
                jnp.where(keep, lo, nlo),
                jnp.where(keep, hi, nhi),
                jnp.where(keep, step, 2.0 * step),
                done | ndone,
            )

        lo = jnp.full_like(q, -1.0)  # cdf(-1) = 0 < q: below the answer
        init: _SearchState = (
            jnp.asarray(0, jnp.int32),
            guess,
            lo,
            top,
            jnp.ones_like(q),
            top - lo <= 1.0,
        )
        return (lax.while_loop(cond, body, init)[3],)

    return kernel


#: ``|q - 1/2|`` at ``|z| = 1, 2, 3``: the search's cost classes (see :func:`_quantile`).
_TAIL_EDGES = (0.3413, 0.4772, 0.49865)


def _quantile(family: _Family, upper: bool) -> Callable[..., jax.Array]:
    """``ppf`` (or ``isf``) of ``(q, s1, s2, loc)`` with ``rv_discrete``'s edges, jitted."""
    kernel = _search(family, upper)

    def f(q: jax.Array, s1: jax.Array, s2: jax.Array, loc: jax.Array) -> jax.Array:
        # Piecewise constant in q and the shapes: only loc carries a derivative.
        q, s1, s2 = (lax.stop_gradient(a) for a in (q, s1, s2))
        ok = family.valid(s1, s2) & ~jnp.isnan(loc)
        # A positive subnormal q (XLA on CPU reads it as 0) is inside: its search reads it
        # as 0 as well, which gives the first k whose cdf is normal (SciPy's 0 for
        # poisson.ppf(5e-324, 150), where ppf(0) = -1), and for isf the first k whose sf
        # underflows (at most SciPy's k, whose sf is below q).
        inner = ok & ((q > 0.0) | subnormal_parts(q)[0] & ~jnp.signbit(q)) & (q < 1.0)
        args = (jnp.where(inner, q, 0.5), jnp.where(inner, s1, 1.0), jnp.where(inner, s2, 0.5))
        # Grouped by how far into a tail q lies (|z| < 1, 2, 3, beyond), where the
        # Cornish-Fisher start is further off and the search takes more steps.
        dist = jnp.abs(args[0] - 0.5)
        key = sum((dist > edge).astype(jnp.int32) for edge in _TAIL_EDGES)
        k = partitioned(kernel, jnp.asarray(key), len(_TAIL_EDGES) + 1, *args)[0]
        top = family.upper(s1, s2)
        first, last = (1.0, 0.0) if upper else (0.0, 1.0)
        out = jnp.where(q == first, -1.0, jnp.where(q == last, top, jnp.nan))
        out = jnp.where(ok, out, jnp.nan)
        # An infinite n or mu passes SciPy's argument check, but has no interior quantile.
        k = jnp.where(s1 < jnp.inf, k, jnp.nan)
        return jnp.where(inner, k, out) + loc

    return entry_point(f)


# --------------------------------------------------------------- public API
_BINOM_CDF = _distribution(_BINOM, False)
_BINOM_SF = _distribution(_BINOM, True)
_BINOM_PPF = _quantile(_BINOM, False)
_BINOM_ISF = _quantile(_BINOM, True)
_POISSON_SF = _distribution(_POISSON, True)
_POISSON_PPF = _quantile(_POISSON, False)
_POISSON_ISF = _quantile(_POISSON, True)
_NBINOM_CDF = _distribution(_NBINOM, False)
_NBINOM_SF = _distribution(_NBINOM, True)
_NBINOM_PPF = _quantile(_NBINOM, False)
_NBINOM_ISF = _quantile(_NBINOM, True)


def binom_cdf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Binomial CDF, mirroring ``scipy.stats.binom.cdf``.  Differentiable in ``p``."""
    return _BINOM_CDF(k, n, p, loc)


def binom_sf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Binomial survival function, mirroring ``scipy.stats.binom.sf``.  Differentiable in
    ``p``."""
    return _BINOM_SF(k, n, p, loc)


def binom_ppf(q: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Binomial quantile, mirroring ``scipy.stats.binom.ppf``."""
    return _BINOM_PPF(q, n, p, loc)


def binom_isf(q: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Binomial inverse survival function, mirroring ``scipy.stats.binom.isf``."""
    return _BINOM_ISF(q, n, p, loc)


def poisson_sf(k: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Poisson survival function, mirroring ``scipy.stats.poisson.sf``.  Differentiable
    in ``mu``."""
    return _POISSON_SF(k, mu, jnp.zeros_like(jnp.asarray(mu)), loc)


def poisson_ppf(q: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Poisson quantile, mirroring ``scipy.stats.poisson.ppf``."""
    return _POISSON_PPF(q, mu, jnp.zeros_like(jnp.asarray(mu)), loc)


def poisson_isf(q: ArrayLike, mu: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Poisson inverse survival function, mirroring ``scipy.stats.poisson.isf`` (which
    returns nan for ``q < 1.1e-16``; this gives the quantile there too)."""
    return _POISSON_ISF(q, mu, jnp.zeros_like(jnp.asarray(mu)), loc)


def nbinom_cdf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Negative binomial CDF, mirroring ``scipy.stats.nbinom.cdf`` (``n > 0`` real).
    Differentiable in ``p``."""
    return _NBINOM_CDF(k, n, p, loc)


def nbinom_sf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Negative binomial survival function, mirroring ``scipy.stats.nbinom.sf``.
    Differentiable in ``p``."""
    return _NBINOM_SF(k, n, p, loc)


def nbinom_ppf(q: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Negative binomial quantile, mirroring ``scipy.stats.nbinom.ppf``."""
    return _NBINOM_PPF(q, n, p, loc)


def nbinom_isf(q: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0.0) -> jax.Array:
    """Negative binomial inverse survival function, mirroring ``scipy.stats.nbinom.isf``."""
    return _NBINOM_ISF(q, n, p, loc)


# ------------------------------------------------------------- declarations
def _poisson_isf_oracle(q: Any, mu: Any, loc: Any = 0.0) -> Any:
    """SciPy's ``poisson.isf``, except below ``q = 1e-10``, where SciPy's ``ppf(1 - q)``
    loses ``q`` (nan below 1.1e-16): there the smallest ``k`` with SciPy's
    ``pdtrc(k, mu) <= q``, found by doubling and bisection."""
    sc = importlib.import_module("scipy.special")
    q, mu, loc = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in (q, mu, loc)))
    out = np.array(scipy_function("stats.poisson.isf")(q, mu, loc), np.float64, ndmin=1)
    flat = out.reshape(-1)
    for i in np.flatnonzero((q.reshape(-1) > 0.0) & (q.reshape(-1) < 1e-10)):
        qi, mi = q.reshape(-1)[i], mu.reshape(-1)[i]
        if not (0.0 <= mi < np.inf):
            continue
        lo, hi = -1.0, max(1.0, np.floor(mi))
        while sc.pdtrc(hi, mi) > qi:
            lo, hi = hi, 2.0 * hi + 1.0
        while hi - lo > 1.0:
            mid = np.floor(0.5 * (lo + hi))
            lo, hi = (lo, mid) if sc.pdtrc(mid, mi) <= qi else (mid, hi)
        flat[i] = hi + loc.reshape(-1)[i]
    return flat.reshape(q.shape)


#: float64: SciPy's (Boost's) incomplete beta underflows or loses relative accuracy
#: below ~1e-250 (the beta family's floor).  float32: the tails carry the float32
#: rounding of exponents up to ~80 (as the gamma and beta families).
TOL = {"float64": (1e-12, 1e-250), "float32": (5e-5, 1e-30)}
#: Quantiles in float32 may be one off where ``q`` lies within the float32 ``cdf``'s
#: error (1e-7 to 2e-5 relative) of ``cdf(k)``; float64 quantiles equal SciPy's.
QTOL = {"float64": (1e-12, 1e-250), "float32": (5e-6, 1.0)}


def _exact_quartiles(upper: bool) -> tuple[EdgeCase, ...]:
    """``q`` exactly at a binomial ``cdf`` (``sf``) value: ``n = 4``, ``p = 1/2`` gives
    sixteenths, which the search must not round past."""
    return tuple(EdgeCase((j / 16.0, 4.0, 0.5, 0.0)) for j in (1, 5, 11, 15))


def _declarations() -> tuple[ScipyWrapper, ...]:
    binom_k = (
        Domain(((-2.0, 125.0), (0.0, 120.0), (0.01, 0.99), (0.0, 0.0)), integers=(1,)),
        Domain(((-2.0, 60.0), (0.0, 50.0), (0.01, 0.99), (-3.0, 3.0)), integers=(1,)),
    )
    binom_q = (
        Domain(((0.0, 1.0), (0.0, 120.0), (0.0, 1.0), (0.0, 0.0)), integers=(1,)),
        Domain(((0.0, 1.0), (0.0, 50.0), (0.0, 1.0), (-3.0, 3.0)), integers=(1,)),
    )
    poisson_k = (
        Domain(((-2.0, 400.0), (1e-3, 300.0), (0.0, 0.0))),
        Domain(((-2.0, 30.0), (0.1, 20.0), (-3.0, 3.0))),
    )
    poisson_q = (
        Domain(((0.0, 1.0), (1e-3, 300.0), (0.0, 0.0))),
        Domain(((0.0, 1.0), (0.1, 20.0), (-3.0, 3.0))),
    )
    nbinom_k = (
        Domain(((-2.0, 400.0), (0.1, 100.0), (0.01, 0.99), (0.0, 0.0))),
        Domain(((-2.0, 30.0), (0.5, 20.0), (0.05, 0.99), (-3.0, 3.0))),
    )
    nbinom_q = (
        Domain(((0.0, 1.0), (0.1, 100.0), (0.01, 1.0), (0.0, 0.0))),
        Domain(((0.0, 1.0), (0.5, 20.0), (0.05, 1.0), (-3.0, 3.0))),
    )
    tails3 = tuple(
        EdgeCase((q, s, 0.0)) for s in (0.5, 4.0, 60.0) for q in (1e-300, 1e-30, 1e-8, 1 - 1e-12)
    )
    tails4 = tuple(
        EdgeCase((q, n, p, 0.0))
        for n, p in ((3.0, 0.2), (40.0, 0.5), (100.0, 0.97))
        for q in (1e-300, 1e-30, 1e-8, 1 - 1e-12)
    )
    table: tuple[_Row, ...] = (
        ("binom", "cdf", binom_cdf, binom_k, (2,), ()),
        ("binom", "sf", binom_sf, binom_k, (2,), ()),
        ("binom", "ppf", binom_ppf, binom_q, (0, 3), (*tails4, *_exact_quartiles(False))),
        ("binom", "isf", binom_isf, binom_q, (0, 3), (*tails4, *_exact_quartiles(True))),
        ("poisson", "sf", poisson_sf, poisson_k, (1,), ()),
        ("poisson", "ppf", poisson_ppf, poisson_q, (0, 2), tails3),
        ("poisson", "isf", poisson_isf, poisson_q, (0, 2), tails3),
        ("nbinom", "cdf", nbinom_cdf, nbinom_k, (2,), ()),
        ("nbinom", "sf", nbinom_sf, nbinom_k, (2,), ()),
        ("nbinom", "ppf", nbinom_ppf, nbinom_q, (0, 3), tails4),
        ("nbinom", "isf", nbinom_isf, nbinom_q, (0, 3), tails4),
    )
    return tuple(
        declare(
            f"{dist}.{method}",
            fn,
            scope="stats",
            oracle=_poisson_isf_oracle if (dist, method) == ("poisson", "isf") else None,
            domains=domains,
            differentiable=diff,
            edge_cases=edges,
            tolerances=QTOL if method in ("ppf", "isf") else TOL,
        )
        for dist, method, fn, domains, diff, edges in table
    )


WRAPPERS: tuple[ScipyWrapper, ...] = _declarations()
