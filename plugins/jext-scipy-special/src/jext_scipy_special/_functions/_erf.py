"""Inverse complementary error function ``erfcinv`` (and a private ``ndtri``).

Method: SciPy defines ``erfcinv(y) = -ndtri(y / 2) / sqrt(2)``; ``ndtri`` is the
Cephes rational approximation (S. L. Moshier): ``w + w^3 R(w^2)/S(w^2)`` with
``w = y - 1/2`` in the centre and ``z - log(z)/z - P(1/z)/(z Q(1/z))`` with
``z = sqrt(-2 log y)`` in the tails.  Only the published coefficients are
carried over.

Derivative: ``d erfcinv(y)/dy = -(sqrt(pi)/2) exp(erfcinv(y)**2)``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import (
    BelowNormal,
    entry_point,
    half_below_normal,
    is_double,
    polyval,
    polyval1,
    subnormal_parts,
)
from ._declare import declare
from ._ndtri_exp_coeffs import TAIL_SERIES

__all__ = ["WRAPPERS", "erfcinv", "ndtr", "ndtri", "ndtri_exp"]

_S2PI = 2.50662827463100050242
_EXPM2 = 0.13533528323661269189  # exp(-2)
_LOG1M_EXPM2 = math.log1p(-_EXPM2)
_LOG_2PI = math.log(2.0 * math.pi)
#: log 2 in two words per precision, ``{double: (hi, lo)}``: ``y + hi`` is exact for ``y``
#: in [-2 log 2, -log(2)/2] (Sterbenz) and ``lo = log 2 - hi`` (mpmath, 40 digits) carries
#: the next bits.  Each ``hi`` must be representable in its own dtype: float32 rounds
#: float64's ``hi`` up by 1.9e-9, which would then be added unaccounted for.
_LN2_SPLIT = {
    True: (0.6931471805599453, 2.319046813846299615495e-17),
    False: (0.693147182464599609375, -1.904654299957767878542e-9),
}
#: Cephes' second tail fit holds for z = sqrt(-2 log p) up to 64; the series beyond.
_FAR_TAIL = 64.0

_P0 = (
    -5.99633501014107895267e1,
    9.80010754185999661536e1,
    -5.66762857469070293439e1,
    1.39312609387279679503e1,
    -1.23916583867381258016e0,
)
_Q0 = (
    1.95448858338141759834e0,
    4.67627912898881538453e0,
    8.63602421390890590575e1,
    -2.25462687854119370527e2,
    2.00260212380060660359e2,
    -8.20372256168333339912e1,
    1.59056225126211695515e1,
    -1.18331621121330003142e0,
)
_P1 = (
    4.05544892305962419923e0,
    3.15251094599893866154e1,
    5.71628192246421288162e1,
    4.40805073893200834700e1,
    1.46849561928858024014e1,
    2.18663306850790267539e0,
    -1.40256079171354495875e-1,
    -3.50424626827848203418e-2,
    -8.57456785154685413611e-4,
)
_Q1 = (
    1.57799883256466749731e1,
    4.53907635128879210584e1,
    4.13172038254672030440e1,
    1.50425385692907503408e1,
    2.50464946208309415979e0,
    -1.42182922854787788574e-1,
    -3.80806407691578277194e-2,
    -9.33259480895457427372e-4,
)
_P2 = (
    3.23774891776946035970e0,
    6.91522889068984211695e0,
    3.93881025292474443415e0,
    1.33303460815807542389e0,
    2.01485389549179081538e-1,
    1.23716634817820021358e-2,
    3.01581553508235416007e-4,
    2.65806974686737550832e-6,
    6.23974539184983293730e-9,
)
_Q2 = (
    6.02427039364742014255e0,
    3.67983563856160859403e0,
    1.37702099489081330271e0,
    2.16236993594496635890e-1,
    1.34204006088543189037e-2,
    3.28014464682127739104e-4,
    2.89247864745380683936e-6,
    6.79019408009981274425e-9,
)


def _ndtri_parts(
    w: jax.Array, z: jax.Array, log_z: jax.Array, central: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Numerator and denominator of the fraction in Cephes ``ndtri``'s two forms, so that
    one division serves both: where ``central``, ``w^2 P(w^2) / Q(w^2)`` (then
    ``x = sqrt(2 pi) (w + w ratio)``); elsewhere ``log(z)/z + P(1/z) / (z Q(1/z))`` (then
    ``|x| = z - ratio``), with the powers of ``1/z`` cleared into powers of ``z``, which
    spares the division ``1/z`` (``z`` is at most 64 where the tail form is used)."""
    w2 = w * w
    # The two tail fits (z < 8 and z >= 8) have the same degrees: one evaluation with
    # per-element coefficients serves both.
    near = z < 8.0
    num = jnp.where(near, _P1[-1], _P2[-1])
    for c1, c2 in zip(_P1[-2::-1], _P2[-2::-1], strict=True):
        num = num * z + jnp.where(near, c1, c2)
    den = jnp.where(near, _Q1[-1], _Q2[-1])
    for c1, c2 in zip((*_Q1[-2::-1], 1.0), (*_Q2[-2::-1], 1.0), strict=True):
        den = den * z + jnp.where(near, c1, c2)
    top = jnp.where(central, w2 * polyval(w2, _P0), num + log_z * den)
    bottom = jnp.where(central, polyval1(w2, _Q0), z * den)
    return top, bottom


def ndtri(y: jax.Array, small: BelowNormal | None = None) -> jax.Array:
    """Inverse of the standard normal CDF (Cephes ``ndtri``); ``y`` a float array.

    ``ndtri(0) = -inf``, ``ndtri(1) = inf``, outside ``[0, 1]`` nan.  XLA on CPU reads a
    subnormal ``y`` as 0 (``-inf``), while ``ndtri`` is finite there (~-38.5): its log is
    read from the bits.  ``small`` instead names the elements whose true argument is a
    positive number below the normal range and gives it (``erfcinv``'s ``y / 2``, which
    underflows where ``y`` itself does not).  One ``log`` serves both.
    """
    if small is None:
        sub, m, log_scale = subnormal_parts(y)
        negative = sub & jnp.signbit(y)  # nan like SciPy, not ndtri(0)
        small = (sub & ~negative, m, log_scale)
    else:
        negative = jnp.zeros(y.shape, bool)
    is_small, m_small, log_scale = small
    upper = y > 1.0 - _EXPM2
    yt = jnp.where(upper, 1.0 - y, y)
    central = yt > _EXPM2
    # Central region: w = y - 1/2; tails: z = sqrt(-2 log y).
    w = jnp.where(central, yt - 0.5, 0.0)
    ys = jnp.where(central | (yt <= 0.0), _EXPM2, yt)
    log_ys = jnp.log(jnp.where(is_small, m_small, ys)) - jnp.where(is_small, log_scale, 0.0)
    z = jnp.sqrt(-2.0 * log_ys)
    top, bottom = _ndtri_parts(w, z, jnp.log(z), central)
    ratio = top / bottom
    tail = z - ratio
    x = jnp.where(central, (w + w * ratio) * _S2PI, jnp.where(upper, tail, -tail))
    x = jnp.where((y == 0.0) & ~is_small, -jnp.inf, x)
    x = jnp.where(y == 1.0, jnp.inf, x)
    return jnp.where((y < 0.0) | (y > 1.0) | jnp.isnan(y) | negative, jnp.nan, x)


def ndtri_exp(y: jax.Array) -> jax.Array:
    """``ndtri(exp(y))`` without forming ``exp(y)`` where that loses accuracy; ``y`` a float
    array (``y > 0`` or nan gives nan, ``0 -> inf``, ``-inf -> -inf``).

    ``ndtri``'s three regions in ``y``: above ``log(1 - e^-2)`` the upper tail of
    ``q = -expm1(y)``; in the centre ``w = p - 1/2 = expm1(y + log 2) / 2`` (exact where
    ``p`` is near 1/2, where rounding ``p`` would cost ``x`` its relative accuracy);
    below ``y = -2`` the lower tail with ``z = sqrt(-2 y)`` (no rounding of ``e^y``, and
    no underflow), by Cephes' fit up to ``z = 64`` and beyond by the asymptotic series
    of ``_ndtri_exp_coeffs.py``.
    """
    upper = y > _LOG1M_EXPM2
    lower = y <= -2.0
    central = ~(upper | lower)
    # y + log 2 exact near y = -log 2 with a split log 2 (the barrier keeps XLA from
    # folding the two constants back into one).
    ln2_hi, ln2_lo = _LN2_SPLIT[is_double(y)]
    shifted: jax.Array = lax.optimization_barrier(  # type: ignore[no-untyped-call]
        jnp.where(central, y, -1.0) + ln2_hi
    )
    e = jnp.expm1(jnp.where(upper, y, shifted + ln2_lo))
    w = jnp.where(central, 0.5 * e, 0.0)
    # z^2 / 4 = -log(q) / 2 in the upper tail and -y / 2 in the lower one: z = 2 sqrt(z^2/4)
    # is sqrt(z^2) rounded, but finite up to y = -max (and 1 / z^2 is then 0).
    log_q = jnp.log(jnp.where(upper, -e, 1.0))
    quarter = jnp.where(upper, -0.5 * log_q, jnp.where(lower, -0.5 * y, 1.0))
    z = 2.0 * jnp.sqrt(quarter)
    z2 = 4.0 * quarter
    log_z = jnp.log(z)
    top, bottom = _ndtri_parts(w, z, log_z, central)
    # Far tail: the same division gives u = 1/z^2 for the series in u and A.
    far = z >= _FAR_TAIL
    ratio = jnp.where(far, 1.0, top) / jnp.where(far, z2, bottom)
    big_a = log_z + 0.5 * _LOG_2PI
    series = jnp.zeros_like(ratio)
    for coeffs in reversed(TAIL_SERIES):
        series = (series + polyval(big_a, coeffs)) * ratio
    tail = jnp.where(far, z - (big_a + series) * (z * ratio), z - ratio)
    x = jnp.where(central, (w + w * ratio) * _S2PI, jnp.where(upper, tail, -tail))
    x = jnp.where(y == 0.0, jnp.inf, x)
    x = jnp.where(y == -jnp.inf, -jnp.inf, x)
    return jnp.where(jnp.isnan(y) | (y > 0.0), jnp.nan, x)


def ndtr(x: jax.Array) -> jax.Array:
    """Standard normal CDF ``0.5 erfc(-x / sqrt(2))`` (as SciPy evaluates it)."""
    return 0.5 * lax.erfc(-x * (1.0 / math.sqrt(2.0)))


@jax.custom_jvp
def _erfcinv(y: jax.Array) -> jax.Array:
    x = -ndtri(0.5 * y, half_below_normal(y)) * (1.0 / math.sqrt(2.0))
    # A negative subnormal y reads as 0 (inf): nan like SciPy.
    sub = subnormal_parts(y)[0]
    return jnp.where(sub & jnp.signbit(y), jnp.nan, x)


@_erfcinv.defjvp
def _erfcinv_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (y,) = primals
    (dy,) = tangents
    x = _erfcinv(y)
    return x, (-0.5 * math.sqrt(math.pi)) * jnp.exp(x * x) * dy


_ERFCINV = entry_point(_erfcinv)


def erfcinv(y: ArrayLike) -> jax.Array:
    """Inverse complementary error function, mirroring ``scipy.special.erfcinv``.

    Returns ``x`` with ``erfc(x) = y``, computed like SciPy as
    ``-ndtri(y/2) / sqrt(2)``.

    Domain: ``0 <= y <= 2``; ``erfcinv(0) = inf``, ``erfcinv(2) = -inf``,
    ``erfcinv(1) = -0.0``; outside ``[0, 2]`` or nan gives nan.

    Accuracy (vs SciPy, ``y`` uniform in (0, 2) plus ``y`` and ``2 - y``
    log-uniform down to 1e-300 / 1e-37 and machine epsilon): max relative error
    1.0e-15 in float64 and 3.9e-7 in float32 (relative accuracy holds through
    the zero at ``y = 1`` too, as ``y/2 - 1/2`` is exact).

    Differentiable in ``y``: ``-(sqrt(pi)/2) exp(erfcinv(y)**2)``.
    """
    return _ERFCINV(y)


# ------------------------------------------------------------- declarations
#: Why ``erfcinv`` replaces ``jax.scipy.special.erfcinv`` where JAX has one (jax 0.12 added
#: it; ``jext list`` shows this): the same values on every JAX jext supports, and SciPy's
#: finite values at subnormal ``y`` (``erfcinv(1e-310)`` is 26.6), where jax.scipy's reads
#: ``y`` as 0 on XLA:CPU and gives inf (tests/test_special_subnormals.py).
REPLACES_JAX = "the same values on every JAX; finite as SciPy's at subnormal y (jax.scipy's: inf)"

WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "erfcinv",
        erfcinv,
        domains=(Domain(((1e-6, 1.999999),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.0,)), EdgeCase((2.5,)), EdgeCase((-0.5,))),
        replaces_jax=REPLACES_JAX,
    ),
)
