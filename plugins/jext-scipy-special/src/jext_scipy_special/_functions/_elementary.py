"""Elementary functions of ``scipy.special``: exponentials, degree trigonometry, losses, Box-Cox.

Each is a short composition of ``jax.numpy`` operations chosen to avoid the
cancellations of the textbook formula (``expm1``/``log1p`` forms, exact
argument reduction in degrees), so the results are within a few ulp.  They
are elementwise without data-dependent loops, so an element's value does not
depend on the rest of the batch, and differentiable by JAX's own rules
(``jnp.where`` guards keep the unused branches' derivatives finite).

Special values follow SciPy's (Cephes') conventions: ``tandg(90) = +inf``
for either sign of the argument, ``cotdg(0) = +inf``, the degree functions
return 0 for ``|x| > 1e14`` (where a degree has no significant fraction
left), ``pseudo_huber(delta, r)`` is ``inf`` for ``delta < 0``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import as_float_arrays, eps_of, is_double, subnormal_parts, two_prod, two_sum
from ._declare import declare

__all__ = [
    "WRAPPERS",
    "cbrt",
    "cosdg",
    "cosm1",
    "cotdg",
    "exp2",
    "exp10",
    "exprel",
    "huber",
    "inv_boxcox",
    "inv_boxcox1p",
    "pseudo_huber",
    "radian",
    "sindg",
    "tandg",
]

_PI180 = math.pi / 180.0
_PI648000 = math.pi / 648000.0  # per arcsecond
#: Largest argument of :func:`radian`'s exact sum (4096 times it stays finite).
_RADIAN_INSIDE = {jnp.dtype(t): float(np.finfo(t).max) / 1e4 for t in (np.float32, np.float64)}
_LOSSTH = 1.0e14  # Cephes' limit for the degree functions (no fraction left above it)
_LN10_HI = 2.302585092994045684  # float64 rounding of log(10)
_LN10_LO = -2.1707562233822494e-16  # log(10) - _LN10_HI


def exprel(x: ArrayLike) -> jax.Array:
    """Relative error exponential ``(exp(x) - 1) / x``, mirroring ``scipy.special.exprel``.

    ``exprel(0) = 1``; ``inf`` above 717 (SciPy's cut-off), ``0`` at ``-inf``.
    Differentiable: ``(x e^x - e^x + 1) / x^2``.
    """
    (x,) = as_float_arrays(x)
    tiny = jnp.abs(x) < eps_of(x)
    xs = jnp.where(tiny, 1.0, x)
    out = jnp.where(tiny, 1.0 + 0.5 * x, jnp.expm1(xs) / xs)
    if not is_double(x):
        # float32 expm1 overflows above 88.7 while exprel stays finite up to
        # ~93; exp(x/2) (exp(x/2) / x) keeps both factors in range.  (SciPy's
        # float64 expm1(x)/x overflows above 709.78 too, and float64 mirrors it.)
        half = jnp.exp(0.5 * jnp.where(x > 20.0, x, 0.0))
        out = jnp.where(x > 20.0, half * (half / xs), out)
    return jnp.where(x > 717.0, jnp.inf, out)


def cosm1(x: ArrayLike) -> jax.Array:
    """``cos(x) - 1`` without cancellation near 0 (``-2 sin(x/2)^2``), mirroring
    ``scipy.special.cosm1``.  Differentiable: ``-sin(x)``."""
    (x,) = as_float_arrays(x)
    # Also near multiples of 2 pi, where cos(x) - 1 would cancel as well.
    s = jnp.sin(0.5 * x)
    return -2.0 * s * s


def exp2(x: ArrayLike) -> jax.Array:
    """``2**x``, mirroring ``scipy.special.exp2``.  Differentiable."""
    (x,) = as_float_arrays(x)
    return jnp.exp2(x)


def exp10(x: ArrayLike) -> jax.Array:
    """``10**x``, mirroring ``scipy.special.exp10``.

    ``x log(10)`` is formed as an exact double-word product, so the result
    keeps full relative accuracy up to the overflow threshold (a plain
    ``exp(x * log(10))`` loses ``|x log 10|`` ulp).  Differentiable.
    """
    (x,) = as_float_arrays(x)
    if not is_double(x):
        return jnp.exp(x * math.log(10.0))
    big = jnp.abs(x) < 1e300
    xs = jnp.where(big, x, 0.0)
    p, err = two_prod(xs, jnp.full_like(xs, _LN10_HI))
    err = err + xs * _LN10_LO
    # exp(p + err) = exp(p) (1 + err); split the exponent so exp(p) cannot
    # overflow before the correction when the result is just below the limit.
    out = jnp.exp(p) * (1.0 + err)
    return jnp.where(big, out, jnp.exp(x))


def cbrt(x: ArrayLike) -> jax.Array:
    """Real cube root, mirroring ``scipy.special.cbrt``.  Differentiable (not at 0).

    Correctly rounded (but within about ``1e-8`` ulp of a halfway point) whatever XLA's
    own ``cbrt`` rounds: that is only a first guess, up to 3 ulp off in float64 on some
    CPUs (an AVX-512 Xeon, jax 0.10.2) and 115 ulp near the subnormals in older JAX, and
    one Newton step on an accurate residual ``y^3 - x`` corrects any guess within a few
    ulp (checked on XLA:CPU).
    A subnormal ``x`` (XLA on CPU reads it as 0) is ``m 2^-1074`` (float32: ``2m 2^-150``)
    with the integer ``m`` from its bits, and its root ``cbrt(m) 2^-358`` (``cbrt(2m)
    2^-50``): ``cbrt(5e-324) = 1.7e-108`` as SciPy's, not 0.
    """
    (x,) = as_float_arrays(x)
    return _cbrt(x)


def _keep_leading(v: jax.Array, drop: int) -> jax.Array:
    """``v`` with the last ``drop`` bits of its significand cleared (truncated)."""
    itype = jnp.int64 if is_double(v) else jnp.int32
    bits = lax.bitcast_convert_type(v, itype)
    return lax.bitcast_convert_type(bits & ~((1 << drop) - 1), v.dtype)


def _cube_residual(y: jax.Array, f: jax.Array) -> jax.Array:
    """``y^3 - f`` to about ``2^-30`` of itself, for ``y`` within a few ulp of ``cbrt(f)``.

    float64: ``y = a + b1 + b2`` with 17, 17 and 19 significant bits makes ``a^3``,
    ``3 a^2 b1`` and ``a^3 - f`` exact (Sterbenz: ``a`` is within ``2^-16`` of ``y``) and
    leaves only terms ``2^-34`` of ``f`` to round; XLA contracting a product into a
    fused multiply-add only makes a step more exact.  float32's 24 bits do not split
    into such thirds: double words (:func:`two_prod`) instead, twice the work.
    """
    if not is_double(y):
        sq, sq_lo = two_prod(y, y)
        cube, cube_lo = two_prod(y, sq)
        return (cube - f) + (cube_lo + y * sq_lo)
    a = _keep_leading(y, 36)
    b = y - a
    b1 = _keep_leading(b, 36)
    a2 = a * a
    a2x3 = 3.0 * a2
    return ((a2 * a - f) + a2x3 * b1) + (a2x3 * (b - b1) + b * b * (3.0 * a + b))


@jax.custom_jvp
def _cbrt(x: jax.Array) -> jax.Array:
    sub, m, _ = subnormal_parts(x)
    # Scaled by 2^(3k) into the range where the residual's smallest terms stay normal and
    # y^3 cannot overflow, the root then scaled back by 2^k (both exact).  A subnormal's
    # exponent made a multiple of 3 (1074 = 3 * 358; 149 + 1 = 3 * 50).
    if is_double(x):
        lead, scale, tiny_below, up, down = 1.0, 2.0**-358, 2.0**-900, 2.0**999, 2.0**-333
    else:
        lead, scale, tiny_below, up, down = 2.0, 2.0**-50, 2.0**-90, 2.0**99, 2.0**-33
    tiny = ~sub & (jnp.abs(x) < tiny_below)
    huge = jnp.abs(x) > 1.0 / tiny_below
    scaled = jnp.where(jnp.signbit(x), -m, m) * lead
    arg = jnp.where(sub, scaled, jnp.where(tiny, x * up, jnp.where(huge, x * (1.0 / up), x)))
    y = jnp.cbrt(arg)
    step = _cube_residual(y, arg) / (3.0 * (y * y))
    # 0, +-inf and nan (where the step is nan) are their own roots.
    y = jnp.where(jnp.isfinite(step), y - step, y)
    return y * jnp.where(sub, scale, jnp.where(tiny, down, jnp.where(huge, 1.0 / down, 1.0)))


@_cbrt.defjvp
def _cbrt_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, jax.Array]:
    # jnp.cbrt's own rule, t / (3 y^2), from the value: finite at a subnormal x too,
    # where y is normal (jnp.cbrt's would be that of 0, inf).
    (x,), (t,) = primals, tangents
    y = _cbrt(x)
    return y, t * ((1.0 / 3.0) * lax.integer_pow(y, -2))


def _reduce_degrees(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``|x| = 90 q + r`` with integer ``q`` (mod 4) and ``r`` in ``[0, 90)``, exactly.

    ``fmod`` by 360 is exact in floating point, and so is the subtraction of a
    multiple of 90 from a number below 360.
    """
    ax = jnp.fmod(jnp.abs(x), 360.0)
    q = jnp.floor(ax / 90.0)
    r = ax - 90.0 * q
    return q, r


def _sin_cos_deg(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(sin, cos)`` of ``|x|`` degrees from the octant reduction: the argument
    passed to ``sin``/``cos`` is at most 45 degrees, and exact zeros and ones
    come out at multiples of 90."""
    q, r = _reduce_degrees(x)
    upper = r > 45.0
    z = jnp.where(upper, 90.0 - r, r) * _PI180
    s, c = jnp.sin(z), jnp.cos(z)
    s0 = jnp.where(upper, c, s)  # sin(r degrees)
    c0 = jnp.where(upper, s, c)  # cos(r degrees)
    qi = q.astype(jnp.int32)
    sin_v = jnp.select([qi == 0, qi == 1, qi == 2], [s0, c0, -s0], -c0)
    cos_v = jnp.select([qi == 0, qi == 1, qi == 2], [c0, -s0, -c0], s0)
    return sin_v, cos_v


def sindg(x: ArrayLike) -> jax.Array:
    """Sine of ``x`` degrees, mirroring ``scipy.special.sindg``.

    Exact at multiples of 30 up to the rounding of ``sin(30 deg)``; 0 for
    ``|x| > 1e14`` and nan at nan (also 0 at ``+-inf``, like SciPy).  Differentiable.
    """
    (x,) = as_float_arrays(x)
    s, _ = _sin_cos_deg(x)
    s = jnp.where(x < 0.0, -s, s)
    return jnp.where(jnp.abs(x) > _LOSSTH, 0.0, s)


def cosdg(x: ArrayLike) -> jax.Array:
    """Cosine of ``x`` degrees, mirroring ``scipy.special.cosdg`` (0 for ``|x| > 1e14``).
    Differentiable."""
    (x,) = as_float_arrays(x)
    _, c = _sin_cos_deg(x)
    return jnp.where(jnp.abs(x) > _LOSSTH, 0.0, c)


def _tan_deg(x: jax.Array, cot: bool) -> jax.Array:
    """Cephes' ``tancot``: reduce ``|x|`` mod 180 exactly, reflect into ``[0, 90]``.

    ``tan(a)`` is ``tan`` of at most 45 degrees or the reciprocal of ``tan(90 - a)``
    (``90 - a`` is exact for ``a >= 45``), and ``cot`` the other way round, so no
    argument near the pole is ever rounded onto it.
    """
    sign = jnp.where(x < 0.0, -1.0, 1.0)
    a = jnp.fmod(jnp.abs(x), 180.0)
    high = a > 90.0
    a = jnp.where(high, 180.0 - a, a)
    sign = jnp.where(high, -sign, sign)
    upper = a > 45.0
    t = jnp.tan(jnp.where(upper, 90.0 - a, a) * _PI180)
    recip = upper if not cot else ~upper
    t = jnp.where(recip, 1.0 / jnp.where(t == 0.0, 1.0, t), t)
    pole, zero = (90.0, 0.0) if not cot else (0.0, 90.0)
    out = jnp.where(a == pole, jnp.inf, sign * t)
    out = jnp.where(a == 45.0, sign, out)
    out = jnp.where(a == zero, 0.0, out)
    return jnp.where(jnp.abs(x) > _LOSSTH, 0.0, out)


def tandg(x: ArrayLike) -> jax.Array:
    """Tangent of ``x`` degrees, mirroring ``scipy.special.tandg``: exact at
    multiples of 45, ``+inf`` at odd multiples of 90.  Differentiable away from them."""
    (x,) = as_float_arrays(x)
    return _tan_deg(x, cot=False)


def cotdg(x: ArrayLike) -> jax.Array:
    """Cotangent of ``x`` degrees, mirroring ``scipy.special.cotdg``: ``+inf`` at
    multiples of 180.  Differentiable away from them."""
    (x,) = as_float_arrays(x)
    return _tan_deg(x, cot=True)


def radian(d: ArrayLike, m: ArrayLike, s: ArrayLike) -> jax.Array:
    """Degrees, arcminutes and arcseconds to radians, mirroring ``scipy.special.radian``.
    Differentiable in all three."""
    d, m, s = as_float_arrays(d, m, s)
    # The arcseconds 3600 d + 60 m + s, summed so that cancelling parts keep their value
    # (radian(0, 0.99999999999874, -59.99999999999994) kept 7.5e-5 of it through the
    # rounded m / 60 and s / 3600; SciPy's (60 d + m) 60 + s 1.2e-5): 3600 d = 4096 d -
    # 512 d + 16 d and 60 m = 64 m - 4 m are exact (powers of two), and the six terms are
    # summed with their rounding errors carried (Ogita, Rump and Oishi's Sum2: as if in
    # twice the precision).
    terms = (4096.0 * d, -512.0 * d, 16.0 * d, 64.0 * m, -4.0 * m, s)
    total, carried = terms[0], jnp.zeros_like(d)
    for term in terms[1:]:
        total, error = two_sum(total, term)
        carried = carried + error
    inside = jnp.maximum(jnp.maximum(jnp.abs(d), jnp.abs(m)), jnp.abs(s)) < _RADIAN_INSIDE[d.dtype]
    exact = (total + carried) * _PI648000
    # Where 4096 d would overflow (or an argument is not finite): the plain sum.
    return jnp.where(inside, exact, (d + m / 60.0 + s / 3600.0) * _PI180)


def huber(delta: ArrayLike, r: ArrayLike) -> jax.Array:
    """Huber loss, mirroring ``scipy.special.huber``: ``r^2/2`` for ``|r| <= delta``,
    ``delta (|r| - delta/2)`` otherwise, ``inf`` for ``delta < 0``.
    Differentiable in both arguments."""
    delta, r = as_float_arrays(delta, r)
    ar = jnp.abs(r)
    quad = ar <= delta
    out = jnp.where(quad, 0.5 * r * r, delta * (ar - 0.5 * delta))
    return jnp.where(delta < 0.0, jnp.inf, out)


def pseudo_huber(delta: ArrayLike, r: ArrayLike) -> jax.Array:
    """Pseudo-Huber loss ``delta^2 (sqrt(1 + (r/delta)^2) - 1)``, mirroring
    ``scipy.special.pseudo_huber``.

    Formed as ``r^2 / (sqrt(1 + (r/delta)^2) + 1)``-style without the
    cancellation of ``sqrt(1 + v^2) - 1`` for small ``v = r/delta``.
    ``inf`` for ``delta < 0``; 0 for ``delta = 0`` or ``r = 0``; nan for
    ``delta = inf`` and ``r != 0`` (SciPy's ``inf * 0``).  Differentiable.
    """
    delta, r = as_float_arrays(delta, r)
    zero = (delta == 0.0) | (r == 0.0)
    ds = jnp.where(zero, 1.0, delta)
    v = r / ds
    root = jnp.sqrt(1.0 + v * v)
    out = (ds * ds) * (v * v / (root + 1.0))
    out = jnp.where(jnp.isinf(v), jnp.inf, out)
    out = jnp.where(zero, 0.0, out)
    return jnp.where(delta < 0.0, jnp.inf, out)


def _log1p_over(y: jax.Array, lmbda: jax.Array) -> jax.Array:
    """``log1p(lmbda y) / lmbda`` for ``lmbda != 0``.  Where ``|lmbda y|`` is below an ulp of
    1 it is ``y (1 - lmbda y / 2)`` to rounding: the product may leave the normal range
    there (XLA flushes it to 0, and ``log1p(0) / lmbda`` is 0: float32 ``inv_boxcox(0.4,
    1.6e-38)`` was 1 for 1.49)."""
    t = lmbda * y
    small = jnp.abs(t) < eps_of(y)
    return jnp.where(small, y - 0.5 * t * y, jnp.log1p(jnp.where(small, 0.0, t)) / lmbda)


def inv_boxcox(y: ArrayLike, lmbda: ArrayLike) -> jax.Array:
    """Inverse Box-Cox transform ``exp(log1p(lmbda y) / lmbda)`` (``exp(y)`` at
    ``lmbda = 0``), mirroring ``scipy.special.inv_boxcox``.  Differentiable in both."""
    y, lmbda = as_float_arrays(y, lmbda)
    zero = lmbda == 0.0
    return jnp.where(zero, jnp.exp(y), jnp.exp(_log1p_over(y, jnp.where(zero, 1.0, lmbda))))


def inv_boxcox1p(y: ArrayLike, lmbda: ArrayLike) -> jax.Array:
    """Inverse of the Box-Cox transform of ``1 + x``: ``expm1(log1p(lmbda y) / lmbda)``
    (``expm1(y)`` at ``lmbda = 0``, ``y`` where ``|lmbda y| < 1e-154``), mirroring
    ``scipy.special.inv_boxcox1p``.  Differentiable in both."""
    y, lmbda = as_float_arrays(y, lmbda)
    zero = lmbda == 0.0
    out = jnp.where(zero, jnp.expm1(y), jnp.expm1(_log1p_over(y, jnp.where(zero, 1.0, lmbda))))
    # SciPy returns y itself there; it is also the limit to relative 1e-154.
    return jnp.where(~zero & (jnp.abs(lmbda * y) < 1e-154), y, out)


def _declarations() -> tuple[ScipyWrapper, ...]:
    wide = Domain(((-50.0, 50.0),))
    deg = (Domain(((-720.0, 720.0),)), Domain(((1e-6, 1e5),), log=True))
    deg_edges = tuple(EdgeCase((float(a),)) for a in range(-360, 361, 15)) + tuple(
        EdgeCase((a,)) for a in (1e13, 1e15, -1e15, 1e-6, -1e-6)
    )
    return (
        declare(
            "exprel",
            exprel,
            domains=(wide, Domain(((1e-12, 700.0),), log=True)),
            differentiable=(0,),
            edge_cases=(EdgeCase((1e-20,)), EdgeCase((717.5,))),
        ),
        # SciPy forms cos(x) - 1 for |x| > pi/4, which cancels near 2 pi k (k != 0):
        # held to SciPy on |x| < pi, to mpmath near 2 pi k in the tests.
        declare(
            "cosm1",
            cosm1,
            domains=(Domain(((-3.14, 3.14),)), Domain(((1e-12, 1.0),), log=True)),
            differentiable=(0,),
        ),
        declare("exp2", exp2, domains=(Domain(((-1070.0, 1020.0),)),), differentiable=(0,)),
        declare(
            "exp10",
            exp10,
            domains=(Domain(((-320.0, 308.0),)),),
            differentiable=(0,),
            edge_cases=(EdgeCase((2.0,)), EdgeCase((-5.0,)), EdgeCase((308.25,))),
        ),
        declare(
            "cbrt",
            cbrt,
            domains=(Domain(((-1e10, 1e10),)), Domain(((1e-37, 1e37),), log=True)),
            differentiable=(0,),
            edge_cases=(EdgeCase((1e-300,)), EdgeCase((-1e300,))),
        ),
        declare("sindg", sindg, domains=deg, differentiable=(0,), edge_cases=deg_edges),
        declare("cosdg", cosdg, domains=deg, differentiable=(0,), edge_cases=deg_edges),
        # SciPy rounds x * pi/180 (tandg) or 90 - x (cotdg) next to a pole, where
        # tan's condition number ~1/distance magnifies it (1e-8 relative at
        # cotdg(1e-6)); held to SciPy a degree away from the poles (and at them,
        # exactly), to mpmath next to them in the tests.
        declare(
            "tandg",
            tandg,
            domains=(
                Domain(((-89.0, 89.0),)),
                Domain(((91.0, 269.0),)),
                Domain(((-449.0, -271.0),)),
            ),
            differentiable=(0,),
            edge_cases=deg_edges[:-2],
        ),
        declare(
            "cotdg",
            cotdg,
            domains=(Domain(((1.0, 179.0),)), Domain(((-179.0, -1.0),)), Domain(((181.0, 359.0),))),
            differentiable=(0,),
            edge_cases=deg_edges[:-2],
        ),
        declare(
            "radian",
            radian,
            domains=(Domain(((-360.0, 360.0), (-60.0, 60.0), (-60.0, 60.0))),),
            differentiable=(0, 1, 2),
        ),
        declare(
            "huber",
            huber,
            domains=(Domain(((0.0, 5.0), (-10.0, 10.0))),),
            differentiable=(0, 1),
            edge_cases=(EdgeCase((-1.0, 1.0)), EdgeCase((2.0, 2.0))),
        ),
        declare(
            "pseudo_huber",
            pseudo_huber,
            domains=(
                Domain(((0.01, 5.0), (-10.0, 10.0))),
                Domain(((1e-3, 1e3), (1e-10, 1e3)), log=True),
            ),
            differentiable=(0, 1),
            edge_cases=(EdgeCase((-1.0, 1.0)),),
        ),
        declare(
            "inv_boxcox",
            inv_boxcox,
            domains=(Domain(((-0.25, 2.0), (-0.3, 3.0))),),
            differentiable=(0, 1),
            edge_cases=(EdgeCase((-2.0, 1.0)), EdgeCase((1.0, 1e-300))),
        ),
        declare(
            "inv_boxcox1p",
            inv_boxcox1p,
            domains=(Domain(((-0.9, 3.0), (-0.3, 3.0))),),
            differentiable=(0, 1),
            edge_cases=(EdgeCase((1e-200, 1e-200)), EdgeCase((-2.0, 1.0))),
        ),
    )


WRAPPERS: tuple[ScipyWrapper, ...] = _declarations()
