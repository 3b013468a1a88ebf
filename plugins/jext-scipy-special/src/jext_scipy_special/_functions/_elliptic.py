"""Complete elliptic integrals ``ellipk``, ``ellipkm1`` and ``ellipe``.

Method: the Cephes polynomial approximations (S. L. Moshier) in the
complementary parameter ``p = 1 - m``::

    K = P_K(p) - log(p) Q_K(p),       E = P_E(p) - p log(p) Q_E(p),   0 <= p <= 1

and, for ``p > 1`` (``m < 0``), the imaginary-modulus transformations
``K(p) = K(1/p) / sqrt(p)`` and ``E(p) = E(1/p) sqrt(p)``.  Only the published
coefficients are carried over.

Derivatives (Legendre): ``dK/dm = (E - (1-m) K) / (2 m (1-m))`` and
``dE/dm = (E - K) / (2 m)``; both are replaced by their Taylor series for
``|m| < 0.02`` where the closed forms cancel.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import entry_point, polyval
from ._declare import declare

__all__ = ["WRAPPERS", "ellipe", "ellipk", "ellipkm1"]

_PK = (
    1.37982864606273237150e-4,
    2.28025724005875567385e-3,
    7.97404013220415179367e-3,
    9.85821379021226008714e-3,
    6.87489687449949877925e-3,
    6.18901033637687613229e-3,
    8.79078273952743772254e-3,
    1.49380448916805252718e-2,
    3.08851465246711995998e-2,
    9.65735902811690126535e-2,
    1.38629436111989062502e0,
)
_QK = (
    2.94078955048598507511e-5,
    9.14184723865917226571e-4,
    5.94058303753167793257e-3,
    1.54850516649762399335e-2,
    2.39089602715924892727e-2,
    3.01204715227604046988e-2,
    3.73774314173823228969e-2,
    4.88280347570998239232e-2,
    7.03124996963957469739e-2,
    1.24999999999870820058e-1,
    4.99999999999999999821e-1,
)
_PE = (
    1.53552577301013293365e-4,
    2.50888492163602060990e-3,
    8.68786816565889628429e-3,
    1.07350949056076193403e-2,
    7.77395492516787092951e-3,
    7.58395289413514708519e-3,
    1.15688436810574127319e-2,
    2.18317996015557253103e-2,
    5.68051945617860553470e-2,
    4.43147180560990850618e-1,
    1.00000000000000000299e0,
)
_QE = (
    3.27954898576485872656e-5,
    1.00962792679356715133e-3,
    6.50609489976927491433e-3,
    1.68862163993311317300e-2,
    2.61769742454493659583e-2,
    3.34833904888224918614e-2,
    4.27180926518931511717e-2,
    5.85936634471101055642e-2,
    9.37499997197644278445e-2,
    2.49999999999888314361e-1,
)

# Taylor series about m = 0 of dK/dm and dE/dm (in units of pi/2):
# K = pi/2 sum a_n m^n, E = pi/2 sum a_n m^n / (1 - 2n), a_n = (binom(2n, n) / 4^n)^2.
_NSER = 10
_A = [(math.comb(2 * n, n) / 4.0**n) ** 2 for n in range(_NSER + 1)]
_DK_SERIES = [math.pi / 2 * n * _A[n] for n in range(_NSER, 0, -1)]
_DE_SERIES = [math.pi / 2 * n * _A[n] / (1 - 2 * n) for n in range(_NSER, 0, -1)]
_SERIES_RADIUS = 0.02


def _k_of_p(p: jax.Array) -> jax.Array:
    """K as a function of the complementary parameter ``p = 1 - m`` (Cephes ``ellpk``)."""
    big = p > 1.0
    q = jnp.where(big, 1.0 / p, p)
    # log(1/p) as -log(p): 1/p is subnormal (flushed to 0 by XLA on CPU) for
    # p > 1/tiny, where K(p) ~ (log 4 + log(p)/2) / sqrt(p) is still normal.
    # One logarithm serves both branches (log(q) = log(p) where p <= 1).
    log_q = jnp.where(big, -1.0, 1.0) * jnp.log(p)
    k = polyval(q, _PK) - log_q * polyval(q, _QK)
    k = jnp.where(big, k / jnp.sqrt(p), k)
    return jnp.where(p == jnp.inf, 0.0, k)


def _e_of_p(p: jax.Array) -> jax.Array:
    """E as a function of ``p = 1 - m`` (Cephes ``ellpe`` with the ``m < 0`` extension)."""
    big = p > 1.0
    q = jnp.where(big, 1.0 / p, p)
    qs = jnp.where(q == 0.0, 1.0, q)
    e = polyval(q, _PE) - jnp.log(qs) * (q * polyval(q, _QE))
    e = jnp.where(big, e * jnp.sqrt(p), e)
    e = jnp.where(p == 0.0, 1.0, e)
    e = jnp.where(p == jnp.inf, jnp.inf, e)
    return jnp.where(p < 0.0, jnp.nan, e)


def _dk_dm(m: jax.Array, p: jax.Array, k: jax.Array, e: jax.Array) -> jax.Array:
    small = jnp.abs(m) < _SERIES_RADIUS
    ms = jnp.where(small, 1.0, m)
    closed = (e - p * k) / (2.0 * ms * p)
    d = jnp.where(small, polyval(jnp.where(small, m, 0.0), _DK_SERIES), closed)
    return jnp.where(p == 0.0, jnp.inf, d)


def _de_dm(m: jax.Array, p: jax.Array, k: jax.Array, e: jax.Array) -> jax.Array:
    small = jnp.abs(m) < _SERIES_RADIUS
    ms = jnp.where(small, 1.0, m)
    closed = (e - k) / (2.0 * ms)
    d = jnp.where(small, polyval(jnp.where(small, m, 0.0), _DE_SERIES), closed)
    return jnp.where(p == 0.0, -jnp.inf, d)


@jax.custom_jvp
def _ellipk(m: jax.Array) -> jax.Array:
    return _k_of_p(1.0 - m)


@_ellipk.defjvp
def _ellipk_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (m,) = primals
    (dm,) = tangents
    p = 1.0 - m
    k = _ellipk(m)
    e = _e_of_p(p)
    return k, _dk_dm(m, p, k, e) * dm


@jax.custom_jvp
def _ellipkm1(p: jax.Array) -> jax.Array:
    return _k_of_p(p)


@_ellipkm1.defjvp
def _ellipkm1_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (p,) = primals
    (dp,) = tangents
    k = _ellipkm1(p)
    e = _e_of_p(p)
    m = 1.0 - p
    return k, -_dk_dm(m, p, k, e) * dp


@jax.custom_jvp
def _ellipe(m: jax.Array) -> jax.Array:
    return _e_of_p(1.0 - m)


@_ellipe.defjvp
def _ellipe_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (m,) = primals
    (dm,) = tangents
    p = 1.0 - m
    e = _ellipe(m)
    k = _k_of_p(p)
    return e, _de_dm(m, p, k, e) * dm


_ELLIPK = entry_point(_ellipk)
_ELLIPKM1 = entry_point(_ellipkm1)
_ELLIPE = entry_point(_ellipe)


def ellipk(m: ArrayLike) -> jax.Array:
    """Complete elliptic integral of the first kind, mirroring ``scipy.special.ellipk``.

    ``K(m) = integral_0^{pi/2} (1 - m sin^2 t)^{-1/2} dt`` with the parameter
    convention ``m = k**2``.

    Domain: ``m <= 1``; ``K(1) = inf``, ``K(-inf) = 0``, ``m > 1`` or nan gives nan
    (like SciPy).  Computed as ``ellipkm1(1 - m)``.

    Accuracy (vs SciPy, ``m`` uniform in [-10, 1) plus ``1 - m`` log-uniform
    down to machine epsilon): max relative error 4.4e-16 in float64 and 2.4e-7
    in float32.

    Differentiable in ``m``: ``dK/dm = (E - (1-m) K) / (2 m (1-m))`` (series near 0).
    """
    return _ELLIPK(m)


def ellipkm1(p: ArrayLike) -> jax.Array:
    """``K(1 - p)``, mirroring ``scipy.special.ellipkm1``.

    Accurate for ``p`` near 0 (``m`` near 1) where ``1 - m`` would lose digits.

    Domain: ``p >= 0``; ``ellipkm1(0) = inf``, ``ellipkm1(inf) = 0``, ``p < 0`` or nan
    gives nan.

    Accuracy (vs SciPy, ``p`` log-uniform in [1e-300, 1] (float32: [1e-37, 1])
    plus uniform in [0, 11]): max relative error 4.4e-16 in float64 and 2.4e-7
    in float32.  Subnormal ``p`` is flushed to 0 by XLA on CPU (giving inf).

    Differentiable in ``p``: ``d/dp K(1-p) = -(E - p K) / (2 p (1 - p))``.
    """
    return _ELLIPKM1(p)


def ellipe(m: ArrayLike) -> jax.Array:
    """Complete elliptic integral of the second kind, mirroring ``scipy.special.ellipe``.

    ``E(m) = integral_0^{pi/2} (1 - m sin^2 t)^{1/2} dt``.

    Domain: ``m <= 1``; ``E(1) = 1``, ``E(-inf) = inf``, ``m > 1`` or nan gives nan.

    Accuracy (vs SciPy, same sample as :func:`ellipk`): max relative error
    5.3e-16 in float64 and 2.2e-7 in float32.

    Differentiable in ``m``: ``dE/dm = (E - K) / (2 m)`` (series near 0).
    """
    return _ELLIPE(m)


# ------------------------------------------------------------- declarations
WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "ellipk",
        ellipk,
        domains=(Domain(((-10.0, 0.999),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.0,)), EdgeCase((1.5,))),
    ),
    declare(
        "ellipkm1",
        ellipkm1,
        domains=(Domain(((1e-30, 1.0),), log=True), Domain(((0.0, 11.0),))),
        differentiable=(0,),
        edge_cases=(EdgeCase((-1.0,)),),
    ),
    declare(
        "ellipe",
        ellipe,
        domains=(Domain(((-10.0, 1.0),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.5,)),),
    ),
)
