"""Modified Bessel functions of the second kind of order 0 and 1, ``K0, K1`` and their
scaled forms ``e^x K0, e^x K1``, for ``0 < x < inf``: fixed-degree polynomials, no loops
(coefficients: ``_bessel_k01_coeffs.py``, derived by
``plugins/jext-scipy-special/tools/fit_bessel_k01.py``; method in its docstring).

* ``x <= SPLIT`` (2): the power series about 0 by Horner in ``t = x^2/4``, with the
  logarithmic terms added in closed form (``log(x/2)`` formed as ``log x - log 2``: ``x/2``
  underflows for the smallest ``x``).  The cancellation between the two parts is at most
  ``I_0(2) / K_0(2) = 20``: a relative error of a few ``1e-15``.
* ``x > SPLIT``: ``sqrt(x) e^x K_n(x)`` as a polynomial in ``w = SPLIT/x``; the scaled
  functions need no ``exp``, the unscaled ones multiply by ``exp(-x)``.

Every element takes both branches' arithmetic and a ``where``: the cost is fixed and an
element's value does not depend on its batch.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from . import _bessel_k01_coeffs as cf
from ._common import polyval

__all__ = ["k0_from_log_half", "k01_pos"]

Quad = tuple[jax.Array, jax.Array, jax.Array, jax.Array]
_LOG2 = math.log(2.0)
_EULER = 0.57721566490153286060651209


def k01_pos(x: jax.Array) -> Quad:
    """``(K0, K1, e^x K0, e^x K1)`` at ``0 < x < inf``.  Unused outputs cost nothing
    under ``jit`` (XLA drops them)."""
    near = x <= cf.SPLIT
    xn = jnp.minimum(x, cf.SPLIT)
    t = 0.25 * xn * xn
    lg = jnp.log(xn) - _LOG2
    i0 = polyval(t, cf.I0_SERIES)
    i1 = 0.5 * xn * polyval(t, cf.I1_SERIES)
    k0n = polyval(t, cf.K0_SERIES) - (lg + _EULER) * i0
    k1n = 1.0 / xn + lg * i1 - (0.25 * xn) * polyval(t, cf.K1_SERIES)
    xf = jnp.maximum(x, cf.SPLIT)
    w = cf.SPLIT / xf
    r = 1.0 / jnp.sqrt(xf)
    k0e_far = polyval(w, cf.K0_SCALED) * r
    k1e_far = polyval(w, cf.K1_SCALED) * r
    decay = jnp.exp(-xf)
    grow = jnp.exp(xn)
    return (
        jnp.where(near, k0n, k0e_far * decay),
        jnp.where(near, k1n, k1e_far * decay),
        jnp.where(near, k0n * grow, k0e_far),
        jnp.where(near, k1n * grow, k1e_far),
    )


def k0_from_log_half(log_half: jax.Array) -> jax.Array:
    """``K0`` (and ``e^x K0``) at ``x`` below the normal range from ``log(x/2)``: the
    series' constant terms (``t = x^2/4`` is 0 there, and ``e^x`` is 1)."""
    return cf.K0_SERIES[-1] - (log_half + _EULER) * cf.I0_SERIES[-1]
