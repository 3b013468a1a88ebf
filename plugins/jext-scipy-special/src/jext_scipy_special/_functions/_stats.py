"""``scipy.stats`` quantiles for the gamma family: ``chi2.ppf``, ``chi2.isf``, ``gamma.ppf``,
``gamma.isf``, registered in the ``stats`` scope next to ``jax.scipy.stats``' own methods.

``ppf`` inverts the lower incomplete gamma function (the plugin's ``gammaincinv``) and
``isf`` the upper one (``chdtri``), so each tail keeps its relative accuracy:
``isf(1e-300)`` is not ``ppf(1 - 1e-300) = ppf(1)``.  Arguments as ``scipy.stats``
takes them: ``(q, <shape>, loc=0, scale=1)``; ``q`` outside ``[0, 1]``, a shape
``<= 0`` or ``scale <= 0`` give nan.  Differentiable in ``q``, ``loc`` and ``scale``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import as_float_arrays
from ._declare import declare
from ._gamma import gammaincinv
from ._gammadist import chdtri

__all__ = ["WRAPPERS", "chi2_isf", "chi2_ppf", "gamma_isf", "gamma_ppf"]


def _finish(
    x: jax.Array, q: jax.Array, shape: jax.Array, loc: jax.Array, scale: jax.Array
) -> jax.Array:
    bad = (q < 0.0) | (q > 1.0) | (shape <= 0.0) | (scale <= 0.0) | jnp.isnan(q)
    return jnp.where(bad, jnp.nan, loc + scale * x)


def gamma_ppf(
    q: ArrayLike, a: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Gamma distribution quantile, mirroring ``scipy.stats.gamma.ppf``."""
    q, a, loc, scale = as_float_arrays(q, a, loc, scale)
    return _finish(gammaincinv(a, q), q, a, loc, scale)


def gamma_isf(
    q: ArrayLike, a: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Gamma distribution inverse survival function, mirroring ``scipy.stats.gamma.isf``."""
    q, a, loc, scale = as_float_arrays(q, a, loc, scale)
    return _finish(0.5 * chdtri(2.0 * a, q), q, a, loc, scale)


def chi2_ppf(
    q: ArrayLike, df: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Chi-square quantile, mirroring ``scipy.stats.chi2.ppf``."""
    q, df, loc, scale = as_float_arrays(q, df, loc, scale)
    return _finish(2.0 * gammaincinv(0.5 * df, q), q, df, loc, scale)


def chi2_isf(
    q: ArrayLike, df: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
) -> jax.Array:
    """Chi-square inverse survival function, mirroring ``scipy.stats.chi2.isf``."""
    q, df, loc, scale = as_float_arrays(q, df, loc, scale)
    return _finish(chdtri(df, q), q, df, loc, scale)


def _declarations() -> tuple[ScipyWrapper, ...]:
    domains = (
        Domain(((0.001, 0.999), (0.2, 300.0), (0.0, 0.0), (1.0, 1.0))),
        # loc >= 0: loc + scale x with loc < 0 cancels in float32 (in SciPy's float64 too).
        Domain(((0.01, 0.99), (1.0, 50.0), (0.0, 5.0), (0.1, 10.0))),
    )
    tails = tuple(
        EdgeCase((q, s, 0.0, 1.0)) for s in (0.5, 4.0, 60.0) for q in (1e-300, 1e-30, 1e-8)
    )
    out = []
    for dist, method, fn in (
        ("chi2", "ppf", chi2_ppf),
        ("chi2", "isf", chi2_isf),
        ("gamma", "ppf", gamma_ppf),
        ("gamma", "isf", gamma_isf),
    ):
        out.append(
            declare(
                f"{dist}.{method}",
                fn,
                scope="stats",
                domains=domains,
                differentiable=(0,),
                edge_cases=tails,
                # float32: the quantile of a float32 probability deep in a tail carries
                # the float32 rounding of its exponent (as in the gamma family).
                tolerances={"float64": (1e-12, 1e-300), "float32": (3e-5, 1e-30)},
            )
        )
    return tuple(out)


WRAPPERS: tuple[ScipyWrapper, ...] = _declarations()
