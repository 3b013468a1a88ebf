"""Regularised incomplete gamma functions ``P(a, x)``, ``Q(a, x)`` and the inverse of ``Q``.

Method (the classical one, e.g. Numerical Recipes 6.2 and DiDonato & Morris 1986):
``D = x^a e^{-x} / Gamma(a+1)`` times the power series
``P = D sum_n x^n / ((a+1)...(a+n))`` for ``x < a + 1``, or the Legendre
continued fraction ``Q = a D / (x+1-a - 1(1-a)/(x+3-a - ...))`` (modified
Lentz) otherwise; the complement by ``1 - .`` except for ``a < 1`` and
``x < a + 1``, where ``Q`` comes from DiDonato & Morris' cancellation-free
small-``a`` formula.  ``log D`` is formed without ``lgamma`` (Temme's
``log1pmx`` form for ``a >= 10``; see ``_gamma._log_prefactor``).

Unlike ``jax.scipy.special.gammainc`` (whose ``lgamma``-based prefactor is
good to ~1e-12 absolute in the exponent, ~3e-12 relative in the result),
this keeps ~1e-14 relative over ``0 < a <= 1e4``.

Every loop freezes an element once it has converged (``jnp.where(done, old,
new)``), so an element's value is the same bits whatever else is in the batch.

The inverse of ``Q`` solves on ``log Q`` (upper half) or on ``log P`` in
``log x`` (lower half) with a fixed number of Newton steps from the plugin's
``gammaincinv`` starting point (within ~1e-1 relative), so it has no
batch-dependent loop either.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ._common import partitioned
from ._gamma import (
    _BIG_A,
    _log_prefactor,
    _log_prefactor_big,
    _log_prefactor_small,
    _p_series,
    _q_cf,
    _q_small_a,
    log_gamma1p,
)

__all__ = ["gamma_pq", "gammaincc_inv"]


def _pq_parts(a: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(P, Q, P / (a D), Q / (a D))`` for ``0 < a < inf``, ``0 < x < inf``.

    The ratios to ``a D = x * density`` come straight from the series or the
    fraction, so they stay finite where ``D`` underflows.
    """
    use_ser = x < a + 1.0
    s = _p_series(a, x, use_ser)
    f = _q_cf(a, x, ~use_ser)
    # ``gamma_pq`` keeps ``a < 10`` and ``a >= 10`` in separate chunks: each chunk forms
    # only its own form of ``log D`` (the same operations as ``_log_prefactor``, so the
    # same bits), not both, and the ``lgamma`` part only where it is used.
    big = a >= _BIG_A
    zero = jnp.zeros_like(x)
    log_d_big = lax.cond(jnp.any(big), lambda: _log_prefactor_big(a, x), lambda: zero)
    log_d_small = lax.cond(
        jnp.any(~big), lambda: _log_prefactor_small(a, x, log_gamma1p(a)), lambda: zero
    )
    d = jnp.exp(jnp.where(big, log_d_big, log_d_small))
    p_ser = d * s
    q_cf = a * d * f
    small = use_ser & (a < 1.0)
    # Only where a chunk holds such elements (``gamma_pq`` groups them together): the
    # fixed 30-term sum is as dear as a whole series elsewhere.
    q_small = lax.cond(
        jnp.any(small),
        lambda: _q_small_a(jnp.where(small, a, 0.5), jnp.where(small, x, 1.0)),
        lambda: jnp.ones_like(x),
    )
    p = jnp.where(use_ser, p_ser, 1.0 - q_cf)
    q = jnp.where(use_ser, jnp.where(small, q_small, 1.0 - p_ser), q_cf)
    ad = a * d
    rp = jnp.where(use_ser, s / a, p / ad)
    rq = jnp.where(use_ser, q / ad, f)
    return p, q, rp, rq


#: Iteration counts that separate the cost classes of one method (see :func:`_cost_class`).
_COST_EDGES = (6.0, 10.0, 16.0, 25.0, 40.0, 64.0)
_NCOST = len(_COST_EDGES) + 1
_NCOST_ALL = 2 * _NCOST + 1  # classes of one form of ``log D``


def _cost_class(a: jax.Array, x: jax.Array) -> jax.Array:
    """Which chunks an element joins (``partitioned``): the method (series for
    ``x < a + 1``, with ``a < 1`` apart for its extra sum; else the continued fraction)
    and a rough iteration count, measured on the ``gdtr`` bench domain
    (``tools/incgamma_cost.py``): series terms until ``(x/(a+1))^n`` or the Gaussian
    ``exp(-n^2/2a)`` reaches ``eps`` (about ``36 / log((a+1)/x)`` or ``9 sqrt(a+1)``);
    fraction steps about ``60 / sqrt(x) + 3 a / (x - a)``."""
    ser = x < a + 1.0
    xs = jnp.maximum(x, 1e-30)
    n_ser = jnp.minimum(36.0 / jnp.maximum(jnp.log((a + 1.0) / xs), 1e-3), 9.0 * jnp.sqrt(a + 1.0))
    n_cf = 4.0 + 60.0 / jnp.sqrt(xs) + 3.0 * a / jnp.maximum(x - a, 1e-3)
    n = jnp.where(ser, n_ser, n_cf)
    cls = jnp.zeros(n.shape, jnp.int32)
    for edge in _COST_EDGES:
        cls = cls + (n > edge).astype(jnp.int32)
    cls = jnp.where(ser, jnp.where(a < 1.0, 2 * _NCOST, cls), _NCOST + cls)
    # ``a >= 10`` apart too: ``log D`` has a different form there (see ``_pq_parts``).
    return cls + (_NCOST_ALL * (a >= _BIG_A)).astype(jnp.int32)


def gamma_pq(a: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(P(a, x), Q(a, x))`` with SciPy's conventions at the edges (see ``_gamma_pq``).

    Large inputs are grouped by method and expected iteration count before they are
    processed in chunks: the loops run in lock-step until a chunk's slowest element
    converges, and an unsorted chunk nearly always holds one slow element of each kind.
    """
    key = _cost_class(jnp.where(a > 0.0, a, 1.0), jnp.where(x > 0.0, x, 1.0))
    p, q = partitioned(_gamma_pq, key, 2 * _NCOST_ALL, a, x)
    return p, q


def _gamma_pq(a: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(P(a, x), Q(a, x))`` with SciPy's conventions at the edges.

    ``a = 0``: ``P = 1``, ``Q = 0`` for ``x > 0`` (nan at ``x = 0``);
    ``x = 0``: ``P = 0``, ``Q = 1``; ``x = inf``: ``P = 1``; ``a = inf`` with
    finite ``x``: ``P = 0``; ``a < 0``, ``x < 0`` or nan: nan.
    """
    valid = (a > 0.0) & (a < jnp.inf) & (x > 0.0) & (x < jnp.inf)
    a_ = jnp.where(valid, a, 1.0)
    x_ = jnp.where(valid, x, 1.0)
    p, q, _, _ = _pq_parts(a_, x_)
    # Edges, in SciPy's order of precedence.
    p = jnp.where(valid, p, jnp.nan)
    q = jnp.where(valid, q, jnp.nan)
    finite_a = (a >= 0.0) & (a < jnp.inf)
    p = jnp.where((x == 0.0) & (a > 0.0), 0.0, p)
    q = jnp.where((x == 0.0) & (a > 0.0), 1.0, q)
    p = jnp.where((a == 0.0) & (x > 0.0), 1.0, p)
    q = jnp.where((a == 0.0) & (x > 0.0), 0.0, q)
    p = jnp.where((x == jnp.inf) & finite_a, 1.0, p)
    q = jnp.where((x == jnp.inf) & finite_a, 0.0, q)
    p = jnp.where((a == jnp.inf) & (x >= 0.0) & (x < jnp.inf), 0.0, p)
    q = jnp.where((a == jnp.inf) & (x >= 0.0) & (x < jnp.inf), 1.0, q)
    bad = jnp.isnan(a) | jnp.isnan(x) | (a < 0.0) | (x < 0.0)
    return jnp.where(bad, jnp.nan, p), jnp.where(bad, jnp.nan, q)


def gamma_pdf_ratio(a: jax.Array, x: jax.Array) -> jax.Array:
    """``x^(a-1) e^{-x} / Gamma(a)`` (the gamma density), for ``a > 0``, ``x > 0``."""
    return a / x * jnp.exp(_log_prefactor(a, x, log_gamma1p(a)))


def _temme_lambda(eta: jax.Array) -> jax.Array:
    """``lambda`` with ``lambda - 1 - log(lambda) = eta^2 / 2`` on the side of 1 that
    ``eta`` says: Temme's ``x / a`` for ``Q(a, x) = erfc(eta sqrt(a/2)) / 2``.

    Newton from a point on the far side of the (convex) function's root, so
    it converges monotonically: ``1 + r + sqrt(2 r)`` above 1 (``e^s >= 1 + s + s^2/2``),
    ``exp(-1 - r)`` below.
    """
    r = 0.5 * eta * eta
    up = eta > 0.0
    lam = jnp.where(up, 1.0 + r + jnp.sqrt(2.0 * r), jnp.exp(-1.0 - r))
    for _ in range(12):
        f = lam - 1.0 - jnp.log(lam) - r
        fp = 1.0 - 1.0 / lam
        lam = jnp.where(fp != 0.0, lam - f / jnp.where(fp != 0.0, fp, 1.0), lam)
    return lam


def gammaincc_inv(a: jax.Array, q: jax.Array) -> jax.Array:
    """``x`` with ``Q(a, x) = q``: the plugin's ``gammainccinv`` kernel (held to SciPy's tables).

    One inverse for the whole plugin: the family functions (``chdtri``, ``pdtri`` and
    the gamma ``ppf``/``isf``) share its accuracy in both tails.
    """
    from ._gamma import _gammainccinv  # noqa: PLC0415 - _gamma imports this module

    return _gammainccinv(a, q)
