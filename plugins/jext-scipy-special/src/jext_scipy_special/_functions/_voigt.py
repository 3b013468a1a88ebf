"""``voigt_profile`` and the Faddeeva function ``w(z) = exp(-z^2) erfc(-iz)`` it rests on.

``w`` is needed in the upper half plane only (``z = (x + i gamma) / (sigma sqrt 2)``), by
two methods:

* ``Im z < 6`` and ``|Re z| < 8``: the trapezoidal rule for ``w(z) = (i/pi) int e^(-t^2) /
  (z - t) dt`` on the nodes ``t = nh`` (``h = 1/2``, ``|t| <= 10``), made exact up to the
  aliasing error ``~exp(-pi^2/h^2) = 7e-18`` by the pole's correction ``-2 e^(-z^2) q /
  (1 - q)``, ``q = exp(2 pi i z / h)`` (Chiarella & Reichel 1968; Matta & Reichel 1971).
  Near a node (``Im z`` small) the sum and the correction cancel, so an element whose
  ``Re z`` lies within ``h/4`` of a node uses the half-shifted nodes ``t = (n + 1/2) h``
  instead, whose correction is ``+2 e^(-z^2) q / (1 + q)``.  The real part of the sum,
  ``(h/pi) sum e^(-t^2) y / ((x-t)^2 + y^2)``, has only positive terms; on the real axis
  the correction is exactly ``e^(-x^2)``.
* elsewhere (``|z| >= 6``): Laplace's continued fraction ``w = (i/sqrt pi) / (z - (1/2) /
  (z - 1 / (z - (3/2) / ...)))``, 20 levels, evaluated from the bottom.

``voigt_profile(x, sigma, gamma) = Re w(z) / (sigma sqrt(2 pi))`` with SciPy's Gaussian
(``gamma = 0``) and Lorentzian (``sigma = 0``) limits.  Derivatives in all three arguments
from ``w'(z) = -2 z w(z) + 2i/sqrt(pi)``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import entry_point, is_double, partitioned
from ._declare import declare

__all__ = ["WRAPPERS", "voigt_profile"]

Pair = tuple[jax.Array, jax.Array]

_H = 0.5
_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_CF_LEVELS = 20


def _cmul(a: Pair, b: Pair) -> Pair:
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def _cdiv(a: Pair, b: Pair) -> Pair:
    # Smith's division: no overflow of |b|^2 for large b.
    br, bi = b
    big = jnp.abs(br) >= jnp.abs(bi)
    r = jnp.where(big, bi / br, br / bi)
    d = jnp.where(big, br + bi * r, bi + br * r)
    re = jnp.where(big, a[0] + a[1] * r, a[0] * r + a[1]) / d
    im = jnp.where(big, a[1] - a[0] * r, a[1] * r - a[0]) / d
    return re, im


def _w_trapezoid(x: jax.Array, y: jax.Array) -> Pair:
    frac = x / _H - jnp.round(x / _H)
    shifted = jnp.abs(frac) < 0.25
    offset = jnp.where(shifted, 0.5 * _H, 0.0)
    nmax = 20 if is_double(x) else 10
    y2 = y * y

    # Outer nodes first (smallest weights); the weights e^(-t^2) of both node sets are
    # constants (no exp per element).
    re = jnp.zeros_like(x)
    im = jnp.zeros_like(x)
    for n in range(nmax, -nmax - 2, -1):
        t = n * _H
        wt = jnp.where(shifted, math.exp(-((t + 0.5 * _H) ** 2)), math.exp(-t * t))
        u = x - (t + offset)
        g = wt / (u * u + y2)
        re = re + g * y
        im = im + g * u
    re = re * (_H / math.pi)
    im = im * (_H / math.pi)
    # Correction 2 e^(-z^2) q / (1 -+ q) (sign: - plain nodes, + shifted), q = e^(2 pi i z/h).
    k = 2.0 * math.pi / _H
    mag = jnp.exp(y2 - x * x - k * y)  # |e^(-z^2) q|, at most 1 where this is used
    phase = -2.0 * x * y + k * x
    ez = (mag * jnp.cos(phase), mag * jnp.sin(phase))
    qmag = jnp.exp(-k * y)
    q = (qmag * jnp.cos(k * x), qmag * jnp.sin(k * x))
    sign = jnp.where(shifted, 1.0, -1.0)
    corr = _cdiv(ez, (1.0 + sign * q[0], sign * q[1]))
    return re + 2.0 * sign * corr[0], im + 2.0 * sign * corr[1]


def _w_fraction(x: jax.Array, y: jax.Array) -> Pair:
    def level(i: jax.Array, r: Pair) -> Pair:
        k = (_CF_LEVELS - i).astype(x.dtype)
        return _cdiv((0.5 * k, jnp.zeros_like(x)), (x - r[0], y - r[1]))

    r = lax.fori_loop(0, _CF_LEVELS, level, (jnp.zeros_like(x), jnp.zeros_like(x)), unroll=4)
    re, im = _cdiv((jnp.zeros_like(x), jnp.full_like(x, 1.0 / _SQRT_PI)), (x - r[0], y - r[1]))
    return re, im


def faddeeva(x: jax.Array, y: jax.Array) -> Pair:
    """``(Re w, Im w)`` at ``z = x + iy``, ``y >= 0`` finite."""
    near = (y < 6.0) & (jnp.abs(x) < 8.0)
    xn = jnp.where(near, x, 0.0)
    yn = jnp.where(near, y, 1.0)
    xf = jnp.where(near, 10.0, x)
    yf = jnp.where(near, 10.0, y)
    # Each method only where some element needs it (``voigt_profile`` groups the
    # elements by method, so most chunks need one).
    zeros = (jnp.zeros_like(x), jnp.zeros_like(x))
    a = lax.cond(jnp.any(near), lambda: _w_trapezoid(xn, yn), lambda: zeros)
    b = lax.cond(jnp.any(~near), lambda: _w_fraction(xf, yf), lambda: zeros)
    return jnp.where(near, a[0], b[0]), jnp.where(near, a[1], b[1])


def _w_anywhere(zr: jax.Array, zi: jax.Array) -> Pair:
    """``w`` at any finite ``z``: ``w(-conj z) = conj w(z)`` and, below the real axis,
    ``w(z) = 2 e^(-z^2) - w(-z)`` (as SciPy's, which overflows there as this does)."""
    lower = zi < 0.0
    ar = jnp.abs(zr)
    ai = jnp.abs(zi)
    wr, wi = faddeeva(ar, jnp.minimum(ai, 1e300))
    # w at |zr| + i|zi|; then at -zr + i|zi| by conjugate symmetry, then reflect.
    wi = jnp.where(zr < 0.0, -wi, wi)
    wr = jnp.where(ai == jnp.inf, 0.0, wr)
    mag = jnp.exp(zi * zi - zr * zr)
    phase = jnp.where(zr == 0.0, 0.0, -2.0 * zr * zi)  # 0 also for infinite zi
    er, ei = 2.0 * mag * jnp.cos(phase), 2.0 * mag * jnp.sin(phase)
    # w(-z) for z below: -z = -zr + i|zi|, i.e. the conjugate of w at zr + i|zi|.
    wr_l, wi_l = er - wr, ei - wi
    return jnp.where(lower, wr_l, wr), jnp.where(lower, wi_l, wi)


#: ``|z|^2`` from which :func:`_far_derivatives` takes over: its series' terms shrink by
#: ``(2k + 1) / (2 |z|^2)``, so ten of them reach 1e-19 relative at the switch.
_ASYMPTOTIC_R2 = 400.0
#: ``w(z) = (i / sqrt(pi)) sum_k c_k z^-(2k+1)``, ``c_k = (2k - 1)!! / 2^k`` (DLMF 7.12.1).
_C = tuple(math.prod(range(1, 2 * k, 2)) / 2.0**k for k in range(11))


def _far_derivatives(zr: jax.Array, zi: jax.Array) -> tuple[Pair, Pair]:
    """``(w'(z), w(z) + z w'(z))`` from the asymptotic series of ``w`` (``|z|^2 >=
    _ASYMPTOTIC_R2``, upper half plane): ``w' = -(i / sqrt(pi)) sum_k (2k+1) c_k
    z^-(2k+2)``, ``w + z w' = -(i / sqrt(pi)) sum_{k>=1} 2k c_k z^-(2k+1)``."""
    q = _cdiv((jnp.ones_like(zr), jnp.zeros_like(zr)), (zr, zi))  # 1/z, no overflow
    u = _cmul(q, q)

    def horner(coeffs: list[float]) -> Pair:
        acc = (jnp.full_like(zr, coeffs[-1]), jnp.zeros_like(zr))
        for c in reversed(coeffs[:-1]):
            acc = _cmul(acc, u)
            acc = (acc[0] + c, acc[1])
        return acc

    def times_minus_i(a: Pair) -> Pair:  # -(i / sqrt(pi)) a
        return a[1] / _SQRT_PI, -a[0] / _SQRT_PI

    n = len(_C) - 1
    wp = times_minus_i(_cmul(u, horner([(2 * k + 1) * _C[k] for k in range(n)])))
    g = times_minus_i(_cmul(_cmul(u, q), horner([2 * k * _C[k] for k in range(1, n + 1)])))
    return wp, g


def _voigt_parts(x: jax.Array, sigma: jax.Array, gamma: jax.Array) -> tuple[jax.Array, ...]:
    """``(V, dV/dx, dV/dsigma, dV/dgamma)`` (SciPy's conventions at the edges)."""
    both = (sigma != 0.0) & (gamma != 0.0)
    ss = jnp.where(both, sigma, 1.0)
    # Divisions, not products with reciprocals: XLA rounds the latter differently in
    # arrays of two elements than in longer ones (an element's value would depend on its
    # batch).
    s2 = ss * math.sqrt(2.0)
    scale = 1.0 / s2
    zr = jnp.where(both, x / s2, 0.0)
    zi = jnp.where(both, gamma / s2, 1.0)
    zr = jnp.clip(zr, -1e300, 1e300)  # far out: the fraction's 0 limit (nan stays nan)
    wr, wi = _w_anywhere(zr, zi)
    norm = 1.0 / (ss * _SQRT_2PI)
    v = wr / (ss * _SQRT_2PI)
    # w' = -2 z w + 2i/sqrt(pi); dz/dx = scale, dz/dgamma = i scale, dz/dsigma = -z/sigma,
    # so dV/dsigma = -Re(w + z w') norm / sigma.
    dwr, dwi = _cmul((-2.0 * zr, -2.0 * zi), (wr, wi))
    dwi = dwi + 2.0 / _SQRT_PI
    gr = wr + dwr * zr - dwi * zi
    # Far out those sums cancel, w' by |z|^2 and w + z w' by |z|^4 (dV/dsigma was 13%
    # off at x/sigma = 6300): there both come from w's asymptotic series, term by term.
    far = zr * zr + zi * zi >= _ASYMPTOTIC_R2
    (fwr, fwi), (fgr, _) = _far_derivatives(jnp.where(far, zr, 100.0), jnp.where(far, zi, 0.0))
    dwr, dwi, gr = jnp.where(far, fwr, dwr), jnp.where(far, fwi, dwi), jnp.where(far, fgr, gr)
    dv_dx = dwr * scale * norm
    dv_dg = -dwi * scale * norm
    dv_ds = -gr / ss * norm
    # Limits: Gaussian (gamma = 0) and Lorentzian (sigma = 0), as SciPy writes them.
    gs = jnp.where(sigma != 0.0, sigma, 1.0)
    u = x / gs
    gauss = jnp.exp(-0.5 * u * u) / (gs * _SQRT_2PI)
    gg = jnp.where(gamma != 0.0, gamma, 1.0)
    lor = gg / (math.pi * (x * x + gg * gg))
    v = jnp.where(both, v, jnp.where(sigma != 0.0, gauss, lor))
    at_zero = jnp.where(x == 0.0, jnp.inf, 0.0)
    v = jnp.where((sigma == 0.0) & (gamma == 0.0), at_zero, v)
    v = jnp.where(jnp.isnan(x) | jnp.isnan(sigma) | jnp.isnan(gamma), jnp.nan, v)
    return v, dv_dx, dv_ds, dv_dg


@jax.custom_jvp
def _voigt(x: jax.Array, sigma: jax.Array, gamma: jax.Array) -> jax.Array:
    # Grouped by the Faddeeva method that ``z`` will take (trapezoid near the real axis,
    # continued fraction far out), so that a chunk computes one method, not both.
    s2 = jnp.abs(sigma) * math.sqrt(2.0)
    far = ~((jnp.abs(x) < 8.0 * s2) & (jnp.abs(gamma) < 6.0 * s2))
    return partitioned(
        lambda *args: (_voigt_parts(*args)[0],), far.astype(jnp.int32), 2, x, sigma, gamma
    )[0]


@_voigt.defjvp
def _voigt_jvp(
    primals: tuple[jax.Array, jax.Array, jax.Array], tangents: tuple[jax.Array, ...]
) -> Pair:
    x, sigma, gamma = primals
    dx, ds, dg = tangents
    v, vx, vs, vg = _voigt_parts(x, sigma, gamma)
    return v, vx * dx + vs * ds + vg * dg


_VOIGT = entry_point(_voigt)


def voigt_profile(x: ArrayLike, sigma: ArrayLike, gamma: ArrayLike) -> jax.Array:
    """Voigt profile (a Gaussian of standard deviation ``sigma`` convolved with a Lorentzian
    of half-width ``gamma``), mirroring ``scipy.special.voigt_profile``.

    ``Re w(z) / (sigma sqrt(2 pi))`` with ``z = (x + i gamma) / (sigma sqrt 2)``; the
    Gaussian at ``gamma = 0``, the Lorentzian at ``sigma = 0``.  Differentiable in all three
    arguments (for ``sigma, gamma > 0``), through the Faddeeva function's derivative.
    """
    return _VOIGT(x, sigma, gamma)


WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "voigt_profile",
        voigt_profile,
        domains=(
            Domain(((-10.0, 10.0), (0.1, 5.0), (0.1, 5.0))),
            Domain(((1e-3, 1e3), (1e-3, 10.0), (1e-6, 10.0)), log=True),
        ),
        differentiable=(0, 1, 2),
        edge_cases=tuple(
            EdgeCase(p)
            for p in (
                (0.0, 0.0, 0.0),
                (1.0, 0.0, 0.0),
                (1.0, 0.0, 1.0),
                (1.0, 1.0, 0.0),
                (0.0, 1.0, 0.0),
                (40.0, 1.0, 0.0),
                (1e300, 1.0, 1.0),
                (1.0, 1e-300, 1e-300),
                (8.0 * math.sqrt(2.0), 1.0, 1e-9),
            )
        ),
    ),
)
