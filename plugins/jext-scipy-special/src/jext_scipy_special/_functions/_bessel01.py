"""Bessel functions of order 0 and 1, ``J0, J1, Y0, Y1``, for ``x > 0``: fixed-degree
polynomials, no loops (coefficients: ``_bessel01_coeffs.py``, derived by
``plugins/jext-scipy-special/tools/fit_bessel01.py``; method in its docstring).

* ``x <= SPLIT`` (5): the power series about 0 by Horner in ``t = x^2/4``, with the
  logarithmic terms of ``Y`` added in closed form.  Its cancellation is at most
  ``I_0(5) = 27``, an absolute error of a few ``1e-15``: relative accuracy near the zeros
  of ``J`` and ``Y`` below 5 is that absolute error over the value.
* ``x > SPLIT``: Hankel's form with its smooth, non-oscillating ``P_n(x)`` and
  ``x Q_n(x)`` as polynomials in ``w = (SPLIT/x)^2``.  The phase
  ``chi = x - (2n + 1) pi/4`` is where large arguments lose accuracy, so it is not formed
  by a rounded subtraction: ``x - k pi/4`` for the odd ``k`` nearest ``4x/pi - 1`` is
  reduced with ``pi/4`` split into three words (the first two with short mantissas, so
  that ``k`` times them is exact for ``k < 2**28`` in float64, ``2**11`` in float32), and
  the quadrant ``(k - 1)/2 mod 4`` picks the signs of ``sin``/``cos`` of the reduced
  argument in ``[-pi/4, pi/4]``.  Beyond that range (``x > 2e8``; 3000 in float32)
  XLA's ``sin``/``cos`` of ``x`` itself, whose reduction is exact, are combined.

Every element takes both branches' arithmetic and a ``where``: the cost is fixed and an
element's value does not depend on its batch.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from . import _bessel01_coeffs as cf
from ._common import BelowNormal, is_double, log_from_parts, polyval, reciprocal_of_subnormal

__all__ = ["j0_pos", "j1_pos", "jy01_pos", "y0_pos", "y1_pos"]

Quad = tuple[jax.Array, jax.Array, jax.Array, jax.Array]
_TWO_OVER_PI = 2.0 / math.pi
_LOG2 = math.log(2.0)
# gamma - log 2 (log(x/2) is formed as log(x) - log 2: x/2 underflows for the smallest x)
_LOG_EULER_OVER_2 = 0.57721566490153286060651209 - math.log(2.0)


#: Largest x reduced with the split pi/4 (k below 2**28 and 2**12).
_EXACT_64 = 2.0e8
_EXACT_32 = 3.0e3


def _phase(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(cos chi0, sin chi0)`` with ``chi0 = x - pi/4``, for ``x > 0``."""
    double = is_double(x)
    c1, c2, c3 = cf.PIO4_64 if double else cf.PIO4_32
    exact = x <= (_EXACT_64 if double else _EXACT_32)
    xr = jnp.where(exact, x, 0.0)
    m = jnp.round(xr * (2.0 / math.pi) - 0.5)  # chi0 = r + m pi/2
    k = 2.0 * m + 1.0
    r = ((xr - k * c1) - k * c2) - k * c3
    c, s = jnp.cos(r), jnp.sin(r)
    q = m - 4.0 * jnp.floor(0.25 * m)  # m mod 4
    # cos(r + q pi/2), sin(r + q pi/2)
    cq = jnp.where(q == 0.0, c, jnp.where(q == 1.0, -s, jnp.where(q == 2.0, -c, s)))
    sq = jnp.where(q == 0.0, s, jnp.where(q == 1.0, c, jnp.where(q == 2.0, -s, -c)))
    # Beyond the exact range, XLA's cos and sin of x (reduced exactly) combined:
    # cos chi0 = (cos x + sin x)/sqrt 2, sin chi0 = (sin x - cos x)/sqrt 2.
    zeros = jnp.zeros_like(x)
    cb, sb = lax.cond(
        jnp.any(~exact), lambda: _phase_big(jnp.where(exact, 0.0, x)), lambda: (zeros, zeros)
    )
    return jnp.where(exact, cq, cb), jnp.where(exact, sq, sb)


def _phase_big(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    c, s = jnp.cos(x), jnp.sin(x)
    return (c + s) * math.sqrt(0.5), (s - c) * math.sqrt(0.5)


def _far(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(sqrt(2/(pi x)), w, 1/x)`` of the Hankel form, at ``x > SPLIT`` (else at SPLIT)."""
    xf = jnp.maximum(x, cf.SPLIT)
    inv = 1.0 / xf
    w = (cf.SPLIT * inv) ** 2
    amp = jnp.sqrt(_TWO_OVER_PI * inv)
    return amp, w, inv


def _near(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(x, t = x^2/4)`` for the series, clamped to ``x <= SPLIT``."""
    xn = jnp.minimum(x, cf.SPLIT)
    return xn, 0.25 * xn * xn


def _log_near(xn: jax.Array, small: BelowNormal | None) -> jax.Array:
    """``log x``; where ``small`` says ``x = m 2^-k`` is subnormal (read as 0, so ``t`` is 0
    and ``J0 = 1`` there: only the logarithm and ``1/x`` terms of ``Y`` are left) from ``m``,
    by the same one ``log``."""
    return jnp.log(xn) if small is None else log_from_parts(xn, small)


def _y0_near(
    xn: jax.Array, t: jax.Array, j0n: jax.Array, small: BelowNormal | None = None
) -> jax.Array:
    return _TWO_OVER_PI * (_log_near(xn, small) + _LOG_EULER_OVER_2) * j0n + t * polyval(
        t, cf.Y0_SERIES[:-1]
    )


def _y1_near(
    xn: jax.Array,
    t: jax.Array,
    j1n: jax.Array,
    small: BelowNormal | None = None,
    x: jax.Array | None = None,
) -> jax.Array:
    pole = _TWO_OVER_PI / xn
    if small is not None and x is not None:
        # 1/x from the bits of x, not of xn (XLA's minimum flushes a subnormal operand),
        # times 2/pi.  Cephes forms 1/x first, so SciPy's Y1 is -inf where that
        # overflows: below x = (2^50 + 1) 2^-1074 = 5.6e-309, whatever 2/pi would make of
        # it; tested on the bits (XLA may fold 2/pi into reciprocal_of_subnormal's power
        # of two).  Float32 is computed in float64 by SciPy: 1/x never overflows there.
        recip = reciprocal_of_subnormal(x) * _TWO_OVER_PI
        if is_double(x):
            recip = jnp.where(small[1] <= 2.0**50, jnp.inf, recip)
        pole = jnp.where(small[0], recip, pole)
    return (
        _TWO_OVER_PI * (_log_near(xn, small) - _LOG2) * j1n
        - pole
        + (0.5 * xn) * polyval(t, cf.Y1_SERIES)
    )


def j0_pos(x: jax.Array) -> jax.Array:
    """``J0(x)`` for ``x >= 0``."""
    _, t = _near(x)
    near = polyval(t, cf.J0_SERIES)
    amp, w, inv = _far(x)
    c, s = _phase(x)
    far = amp * (polyval(w, cf.P0) * c - polyval(w, cf.Q0) * inv * s)
    return jnp.where(x <= cf.SPLIT, near, far)


def j1_pos(x: jax.Array) -> jax.Array:
    """``J1(x)`` for ``x >= 0``."""
    xn, t = _near(x)
    near = 0.5 * xn * polyval(t, cf.J1_SERIES)
    amp, w, inv = _far(x)
    c, s = _phase(x)  # chi1 = chi0 - pi/2: cos chi1 = sin chi0, sin chi1 = -cos chi0
    far = amp * (polyval(w, cf.P1) * s + polyval(w, cf.Q1) * inv * c)
    return jnp.where(x <= cf.SPLIT, near, far)


def y0_pos(x: jax.Array, small: BelowNormal | None = None) -> jax.Array:
    """``Y0(x)`` for ``x > 0``; ``small``: where ``x`` is subnormal, its bits (see
    :func:`._common.subnormal_parts`), which XLA on CPU would read as 0."""
    xn, t = _near(x)
    near = _y0_near(xn, t, polyval(t, cf.J0_SERIES), small)
    amp, w, inv = _far(x)
    c, s = _phase(x)
    far = amp * (polyval(w, cf.P0) * s + polyval(w, cf.Q0) * inv * c)
    return jnp.where(x <= cf.SPLIT, near, far)


def y1_pos(x: jax.Array, small: BelowNormal | None = None) -> jax.Array:
    """``Y1(x)`` for ``x > 0``; ``small`` as for :func:`y0_pos`."""
    xn, t = _near(x)
    near = _y1_near(xn, t, 0.5 * xn * polyval(t, cf.J1_SERIES), small, x)
    amp, w, inv = _far(x)
    c, s = _phase(x)
    far = amp * (-polyval(w, cf.P1) * c + polyval(w, cf.Q1) * inv * s)
    return jnp.where(x <= cf.SPLIT, near, far)


def jy01_pos(x: jax.Array) -> Quad:
    """``(J0, J1, Y0, Y1)`` at ``x > 0``, sharing the phase and the series."""
    xn, t = _near(x)
    j0n = polyval(t, cf.J0_SERIES)
    j1n = 0.5 * xn * polyval(t, cf.J1_SERIES)
    amp, w, inv = _far(x)
    c, s = _phase(x)
    p0, q0 = polyval(w, cf.P0), polyval(w, cf.Q0) * inv
    p1, q1 = polyval(w, cf.P1), polyval(w, cf.Q1) * inv
    near = x <= cf.SPLIT
    return (
        jnp.where(near, j0n, amp * (p0 * c - q0 * s)),
        jnp.where(near, j1n, amp * (p1 * s + q1 * c)),
        jnp.where(near, _y0_near(xn, t, j0n), amp * (p0 * s + q0 * c)),
        jnp.where(near, _y1_near(xn, t, j1n), amp * (q1 * s - p1 * c)),
    )
