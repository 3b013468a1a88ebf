"""Real branches of the Lambert W function: ``lambertw(z, k)`` for ``k in (0, -1)``.

Method (Corless, Gonnet, Hare, Jeffrey & Knuth 1996; Fritsch, Shafer &
Crowley 1973):

* near the branch point, ``p = sqrt(2 (e z + 1))`` is formed from
  ``z + 1/e`` with ``1/e`` split into two floats (so ``e z + 1`` has no
  cancellation) and ``W = sum mu_j (+-p)^j`` (Corless et al. eq. 4.22; the
  ``mu_j`` are generated exactly with ``fractions`` at import time);
* elsewhere an initial guess (Winitzki's approximation for ``k = 0``,
  the branch series or ``L1 - L2 + L2/L1`` for ``k = -1``) is refined by a
  fixed number of Fritsch iterations, which converge at fourth order.

Derivative: ``dW/dz = W / (z (1 + W))`` (``1`` at ``z = 0``).
"""

from __future__ import annotations

import importlib
import math
from fractions import Fraction
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, ScipyWrapper

from ._common import entry_point, is_double, polyval
from ._declare import declare

__all__ = ["WRAPPERS", "lambertw"]


def _branch_series_coeffs(n: int) -> list[float]:
    """``mu_0 .. mu_{n-1}`` of ``W(p) = sum mu_j p^j`` (Corless et al. 4.23-4.24)."""
    mu = [Fraction(-1), Fraction(1)]
    alpha = [Fraction(2), Fraction(-1)]
    for k in range(2, n):
        alpha.append(sum((mu[j] * mu[k + 1 - j] for j in range(2, k)), Fraction(0)))
        mu.append(
            Fraction(k - 1, k + 1) * (mu[k - 2] / 2 + alpha[k - 2] / 4)
            - alpha[k] / 2
            - mu[k - 1] / (k + 1)
        )
    return [float(m) for m in mu[:n]]


_MU = _branch_series_coeffs(26)
_SERIES_P = 0.3  # use the branch-point series alone for p < 0.3
# 1/e as an unevaluated sum hi + lo, per dtype.
_INV_E_64 = (0.36787944117144233, -1.2428753672788363e-17)
_INV_E_32 = (float(np.float32(0.36787945)), -9.149755188170102e-09)


def _series(p: jax.Array, nterms: int) -> jax.Array:
    return polyval(p, _MU[:nterms][::-1])


def _fritsch(w: jax.Array, z: jax.Array, iters: int, split_log: bool) -> jax.Array:
    """Fritsch-Shafer-Crowley iterations for ``w exp(w) = z`` (``z / w > 0``).

    ``log(z / w)`` is accurate when ``z / w = exp(w)`` is not tiny (``k = 0``);
    on ``k = -1`` it can be subnormal, so ``log|z| - log|w|`` is used instead.
    """
    logz = jnp.log(jnp.abs(z))
    for _ in range(iters):
        zn = (logz - jnp.log(jnp.abs(w)) if split_log else jnp.log(z / w)) - w
        wp1 = 1.0 + w
        q = 2.0 * wp1 * (wp1 + (2.0 / 3.0) * zn)
        en = zn / wp1 * (q - zn) / (q - 2.0 * zn)
        w = w * (1.0 + en)
    return w


def _lambertw_impl(z: jax.Array, k: int) -> jax.Array:
    double = is_double(z)
    hi, lo = _INV_E_64 if double else _INV_E_32
    nser = 26 if double else 12
    iters = 3 if double else 2
    # Exact near the branch point (Sterbenz).  The barrier stops XLA from
    # reassociating (z + hi) + lo into z + (hi + lo), which would drop lo.
    delta_f: jax.Array = lax.optimization_barrier(z + hi)  # type: ignore[no-untyped-call]
    # z + 1/e; the float nearest -1/e is treated as the branch point itself.
    delta = jnp.where(delta_f > 0.0, delta_f + lo, 0.0)
    p = jnp.sqrt((2.0 * math.e) * delta)
    outside = delta_f < 0.0
    near = p < _SERIES_P
    if k == 0:
        w_near = _series(p, nser)
        l1p = jnp.log1p(jnp.maximum(z, -0.25))
        guess_far = l1p * (1.0 - jnp.log1p(l1p) / (2.0 + l1p))
        guess = jnp.where(z < -0.25, _series(p, 10), guess_far)
        zs = jnp.where(near | (z == 0.0) | jnp.isinf(z) | outside, 1.0, z)
        gs = jnp.where(near | (z == 0.0) | jnp.isinf(z) | outside, 0.5, guess)
        w = jnp.where(near, w_near, _fritsch(gs, zs, iters, split_log=False))
        w = jnp.where(z == 0.0, z, w)  # keeps the sign of -0.0 like SciPy
        w = jnp.where(z == jnp.inf, jnp.inf, w)
        bad = outside | jnp.isnan(z)
    else:
        w_near = _series(-p, nser)
        l1 = jnp.log(jnp.where(z < 0.0, -z, 0.5))
        l2 = jnp.log(-jnp.minimum(l1, -0.5))
        guess_far = l1 - l2 + l2 / l1
        guess = jnp.where(z < -0.25, _series(-p, 10), guess_far)
        valid = (z < 0.0) & ~near & ~outside
        zs = jnp.where(valid, z, -0.2)
        gs = jnp.where(valid, guess, -2.5)
        w = jnp.where(near, w_near, _fritsch(gs, zs, iters, split_log=True))
        w = jnp.where(z == 0.0, -jnp.inf, w)
        bad = outside | (z > 0.0) | jnp.isnan(z)
    return jnp.where(bad, jnp.nan, w)


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _lambertw(z: jax.Array, k: int) -> jax.Array:
    return _lambertw_impl(z, k)


@_lambertw.defjvp
def _lambertw_jvp(
    k: int, primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (z,) = primals
    (dz,) = tangents
    w = _lambertw(z, k)
    zs = jnp.where(z == 0.0, 1.0, z)
    dw = jnp.where(z == 0.0, 1.0, w / (zs * (1.0 + w)))
    return w, dw * dz


_LAMBERTW = {
    0: entry_point(lambda z: _lambertw(z, 0)),
    -1: entry_point(lambda z: _lambertw(z, -1)),
}


def lambertw(z: ArrayLike, k: int = 0) -> jax.Array:
    """Real branches of the Lambert W function, mirroring ``scipy.special.lambertw``.

    Solves ``w * exp(w) = z`` for real ``z`` on the principal branch ``k = 0``
    (``w >= -1``) or the lower real branch ``k = -1`` (``w <= -1``).

    Unlike SciPy, which always returns complex numbers, this returns real
    values and nan wherever SciPy's value is complex (i.e. it equals
    ``scipy.special.lambertw(z, k).real`` where the imaginary part is 0):

    * ``k = 0``: domain ``z >= -1/e``; ``W(0) = 0`` (sign of zero kept),
      ``W(inf) = inf``; ``z < -1/e``, ``-inf`` and nan give nan.
    * ``k = -1``: domain ``-1/e <= z <= 0``; ``W(0) = -inf``; ``z > 0`` and
      nan give nan.
    * ``z`` equal to the float nearest ``-1/e`` gives ``-1`` on both branches
      (SciPy returns ``nan + nan j`` there from a 0/0 in its Halley step).

    Accuracy (vs SciPy on ``k = 0``: ``z`` uniform in [-1/e + 1e-4, 10],
    log-uniform in [10, 1e300] (float32: 1e38), ``z + 1/e`` log-uniform in
    [1e-4, 0.3] and ``|z|`` log-uniform in [1e-300, 0.3]; ``k = -1``: the
    analogous sample of [-1/e + 1e-4, -1e-300]): max relative error 6.1e-15 in
    float64 and 4.1e-7 in float32.  The float64 maximum is SciPy's own error
    near the branch point (its Halley iteration loses accuracy like
    ``1e-16 / |1 + W|``, reaching 1e-8 right at it); against mpmath this
    implementation stays within ~7e-16 everywhere, including ``z + 1/e`` down
    to 1e-16 where it uses the branch-point series.

    Differentiable in ``z``: ``dW/dz = W / (z (1 + W))``.  ``k`` must be the
    Python int 0 or -1 (static); other branches are complex and unsupported.
    """
    if k not in (0, -1) or isinstance(k, bool):
        raise ValueError("lambertw: only the real branches k=0 and k=-1 are supported")
    return _LAMBERTW[int(k)](z)


# ------------------------------------------------------------- declarations
def _real_lambertw(z: Any, k: int = 0) -> Any:
    """SciPy's lambertw where it is real, nan where it is complex (the wrapper is real)."""
    # Imported when a check calls it: SciPy is the oracle, not a runtime need.
    w = np.asarray(importlib.import_module("scipy.special").lambertw(z, k))
    return np.where(np.imag(w) == 0, np.real(w), np.nan)


_INV_E = math.exp(-1.0)

WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "lambertw",
        lambertw,
        domains=(
            Domain(((-_INV_E + 1e-4, 10.0),), kwargs={"k": 0}),
            Domain(((-_INV_E + 1e-4, -1e-3),), kwargs={"k": -1}),
        ),
        differentiable=(0,),
        oracle=_real_lambertw,
    ),
)
