"""``zetac``, ``shichi``, ``wrightomega``, and the registration of ``ellipj``.

Methods:

* ``zetac(x) = zeta(x) - 1`` by Euler-Maclaurin summation for ``x >= -1``:
  ``sum_{k=2}^{N-1} k^-x + N^(1-x)/(x-1) + N^-x/2 + sum_j B_2j/(2j)! (x)_(2j-1)
  N^(1-x-2j)`` with ``N = 10`` and 12 Bernoulli terms (DLMF 25.2.9; every term is
  small against the result, so the ``- 1`` costs nothing); below ``-1`` the reflection
  ``zeta(x) = 2 (2 pi)^(x-1) sin(pi x/2) Gamma(1-x) zeta(1-x)`` (DLMF 25.4.1) in
  logarithms, with ``sin(pi x / 2)`` reduced exactly.  Differentiated by JAX through
  these formulas.
* ``shichi``: the power series ``Shi = sum x^(2k+1)/((2k+1)(2k+1)!)``,
  ``Chi = gamma + log|x| + sum x^(2k)/(2k (2k)!)`` (A&S 5.2.18/19, all terms positive)
  for ``|x| <= 40``; above, ``(Ei(x) +- E1(x))/2`` from their asymptotic series (41
  and 4 terms: good to ``e^-40`` there), in halves ``e^(x/2) (e^(x/2) ...)`` so that it
  overflows only where the function does.  Derivatives ``sinh(x)/x``, ``cosh(x)/x``.
* ``wrightomega``: the root of ``w + log w = x`` by Fritsch's iteration (as SciPy, after
  Lawrence, Corless & Jeffrey 2012) from a piecewise first guess, a fixed number of
  steps; ``e^x - e^(2x)`` below ``x = -40``, ``x`` above ``1e20``.  Derivative
  ``w / (1 + w)``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import (
    chunked,
    entry_point,
    is_double,
    polyval,
    sin_pi,
    stirling_corr,
    two_prod,
    two_sum,
)
from ._declare import declare
from ._elliptic_family import ellipj
from ._t import _LN2_HI, _LN2_LO, _log1p_dw

__all__ = ["WRAPPERS", "shichi", "wrightomega", "zetac"]


# ------------------------------------------------------------------ zetac
_EM_N = 10
#: B_2j / (2j)! for j = 1..12 (the Euler-Maclaurin correction terms).
_EM_B = (
    1.0 / 12.0,
    -1.0 / 720.0,
    1.0 / 30240.0,
    -1.0 / 1209600.0,
    1.0 / 47900160.0,
    -691.0 / 1307674368000.0,
    1.0 / 74724249600.0,
    -3617.0 / 10670622842880000.0,
    43867.0 / 5109094217170944000.0,
    -174611.0 / 802857662698291200000.0,
    77683.0 / 14101100039391805440000.0,
    -236364091.0 / 1693824136731743669452800000.0,
)
_LOG_2PI = math.log(2.0 * math.pi)
#: ``1 / (2 pi e)`` as a float32 pair (hi + lo), for the float32 reflection.
_C_2PIE_HI = float(np.float32(1.0 / (2.0 * math.pi * math.e)))
_C_2PIE_LO = 1.0 / (2.0 * math.pi * math.e) - _C_2PIE_HI
#: Below this ``1 - x`` float32 takes the reflection's logarithms as they are (their
#: magnitude, < 12, keeps its rounding below 1e-6 relative).
_F32_STIRLING_FROM = 10.0


def _zetac_em(s: jax.Array) -> jax.Array:
    """``zeta(s) - 1`` for ``s >= -1``, ``s != 1`` (Euler-Maclaurin, N = 10; float32
    N = 5: for ``s < 1`` the partial sum and the tail cancel, by ~N^(1-s)/(1-s))."""
    big_n = _EM_N if is_double(s) else 5
    # k^-s: one exponential per prime, products for the rest (a few ulp each, on terms
    # that the cancellation above amplifies by at most ~N^2).
    power: dict[int, jax.Array] = {}
    for k in range(2, big_n + 1):
        f = next(d for d in range(2, k + 1) if k % d == 0)
        power[k] = jnp.exp(-s * math.log(k)) if f == k else power[f] * power[k // f]
    total = jnp.zeros_like(s)
    for k in range(big_n - 1, 1, -1):  # smallest terms first
        total = total + power[k]
    n_s = power[big_n]
    total = total + big_n * n_s / (s - 1.0) + 0.5 * n_s
    # sum_j B_2j/(2j)! s (s+1) ... (s+2j-2) N^(-s-2j+1), one running factor (the
    # Pochhammer symbol alone overflows float32 for large s).
    factor = s * n_s / big_n
    corr = jnp.zeros_like(s)
    for j, b in enumerate(_EM_B, start=1):
        corr = corr + b * factor
        factor = factor * ((s + 2 * j - 1) * (s + 2 * j) / (big_n * big_n))
    return total + corr


def _reflection_f32(x: jax.Array, log_sine: jax.Array) -> jax.Array:
    """``Gamma(z) (2 pi)^-z 2 |sin(pi x / 2)|``, ``z = 1 - x >= 10``, in float32.

    The logarithms in ``_zetac_impl`` reach ~90 and ~190, and their float32 rounding
    (an ulp of 190 is 1.5e-5) is the result's relative error.  By Stirling,
    ``Gamma(z) (2 pi)^-z = (z / (2 pi e))^(z - 1/2) e^(S(z) - 1/2)``: the big exponent
    ``(z - 1/2) log(z / (2 pi e))`` is carried as a double word (an exact product of a
    split constant, a double-word ``log1p``, a double-word product), the rest is small.
    ``z = 1 - x`` itself is a double word: its rounding (half an ulp of 64 is 4e-6)
    moves the result by ``psi(z) - log(2 pi)`` (~2.3) times as much, relatively.

    The products are :func:`._common.two_prod`'s sums of exact partial products (a
    Dekker product's error term is counted twice here: XLA contracts its ``p`` with the
    following ``p - 1``).
    """
    # The barrier (with x: one of a constant alone is dropped) keeps XLA's simplifier
    # from reassociating (1 - x) - 1 into -x.
    _, one = lax.optimization_barrier((x, jnp.ones_like(x)))  # type: ignore[no-untyped-call]
    z, z_lo = two_sum(one, -x)
    ok = z >= _F32_STIRLING_FROM
    zs = jnp.where(ok, z, _F32_STIRLING_FROM)
    z_lo = jnp.where(ok, z_lo, 0.0)
    w_hi, w_lo = two_prod(zs, jnp.full_like(zs, _C_2PIE_HI))
    w_lo = w_lo + zs * _C_2PIE_LO
    r_hi, r_lo = two_sum(w_hi, -one)
    l_hi, l_lo = _log1p_dw(r_hi, r_lo + w_lo)
    h = zs - 0.5  # exact
    e_hi, e_lo = two_prod(h, l_hi)
    # z_lo times the exponent's derivative log(z / (2 pi)) - 1 / (2 z) (S' is ~1e-4).
    dz = z_lo * ((l_hi + 1.0) - 0.5 / zs)
    rest = ((e_lo + h * l_lo) + dz) + (stirling_corr(zs) - 0.5) + log_sine
    # exp(e_hi + rest) reduced here by k log 2 with a split constant: XLA's float32 exp
    # reduces with one rounded log 2, a relative error of ~3e-8 |x| (2e-6 at x = 80).
    # Past 170 (k < 2^8 keeps k * _LN2_HI exact) the result is inf anyway.
    e_hi = jnp.minimum(e_hi, 170.0)
    k = jnp.round(e_hi * (1.0 / math.log(2.0)))
    r = ((e_hi - k * _LN2_HI) - k * _LN2_LO) + rest
    ki = k.astype(jnp.int32)
    # 2^k in two halves (2^k alone may overflow where the product does not).
    return jnp.ldexp(jnp.ldexp(jnp.exp(r), ki // 2), ki - ki // 2)


def _zetac_impl(x: jax.Array) -> jax.Array:
    em = x >= -1.0
    pole = x == 1.0
    # Reflection for x < -1: 1 - x > 2, where zeta(1 - x) = 1 + zetac(1 - x).
    xr = jnp.where(em | ~jnp.isfinite(x), -2.5, x)
    one_minus = 1.0 - xr
    # One summation serves both: at x itself, or at 1 - x for the reflection.
    s = jnp.where(em, jnp.where(pole | ~jnp.isfinite(x), 2.0, x), jnp.minimum(one_minus, 60.0))
    direct = _zetac_em(s)
    zeta_r = jnp.where(one_minus > 60.0, 1.0, 1.0 + direct)
    sine = sin_pi(0.5 * xr)
    # One exponential of the whole magnitude: its factors overflow on their own.
    log_sine = jnp.log(2.0 * jnp.abs(sine))
    log_mag = jsp.gammaln(one_minus) + (xr - 1.0) * _LOG_2PI + log_sine
    mag = jnp.exp(log_mag)
    if not is_double(x):
        mag = jnp.where(one_minus >= _F32_STIRLING_FROM, _reflection_f32(xr, log_sine), mag)
    mag = mag * zeta_r
    # The trivial zeros (even negative x) exactly.
    reflected = jnp.where(sine == 0.0, -1.0, jnp.where(sine < 0.0, -mag, mag) - 1.0)
    out = jnp.where(em, direct, reflected)
    out = jnp.where(pole, jnp.inf, out)
    out = jnp.where(x == jnp.inf, 0.0, out)
    return jnp.where(jnp.isnan(x) | (x == -jnp.inf), jnp.nan, out)


def _zetac(x: jax.Array) -> jax.Array:
    # In cache-sized chunks, as shichi: the summation's intermediates stay in cache.
    return chunked(lambda v: (_zetac_impl(v),), x)[0]


_ZETAC = entry_point(_zetac)


def zetac(x: ArrayLike) -> jax.Array:
    """Riemann zeta minus one, ``zeta(x) - 1``, mirroring ``scipy.special.zetac``.

    Domain: every real ``x`` (``inf`` at 1, ``0`` at ``+inf``, nan at ``-inf``); checked
    on ``[-170, 60]``.  Differentiable (JAX differentiates the summation formula).
    """
    return _ZETAC(x)


# ----------------------------------------------------------------- shichi
_SHICHI_SERIES = 40.0
_SHICHI_TERMS = 68
_EULER = 0.57721566490153286061


def _shichi_impl(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    ax = jnp.abs(x)
    small = ax <= _SHICHI_SERIES
    xs = jnp.where(small, ax, 1.0)
    nterms = _SHICHI_TERMS if is_double(x) else 56
    # term = x^k / k!, added as x^k / (k k!) to Shi (odd k) or Chi (even k).
    term = xs
    shi = xs
    chi = jnp.zeros_like(xs)
    for k in range(2, 2 * nterms + 2, 2):
        # Products with the reciprocals (divisions cost several times more to XLA).
        even = term * xs * (1.0 / k)
        chi = chi + even * (1.0 / k)
        term = even * xs * (1.0 / (k + 1.0))
        shi = shi + term * (1.0 / (k + 1.0))
    chi_small = _EULER + jnp.log(xs) + chi
    # Large |x|: Ei(x) e^-x = (1/x) sum k!/x^k (asymptotic; at |x| > 40 the terms up to
    # k = 40 leave ~e^-40), E1(x) ~ e^-x/x (1 - 1/x + 2/x^2 - 6/x^3) (its weight: e^-80).
    xb = jnp.where(small, 2.0 * _SHICHI_SERIES, ax)
    w = 1.0 / xb
    kmax = 40 if is_double(x) else 20
    ei_scaled = w * polyval(w, [float(math.factorial(k)) for k in range(kmax, -1, -1)])
    e1 = jnp.exp(-xb) * w * (1.0 - w * (1.0 - w * (2.0 - 6.0 * w)))
    half = jnp.exp(0.5 * xb)
    big = half * (half * (0.5 * ei_scaled))  # Ei(x) / 2, overflowing only where it does
    shi_big = big + 0.5 * e1
    chi_big = big - 0.5 * e1
    shi_out = jnp.where(small, shi, shi_big)
    chi_out = jnp.where(small, chi_small, chi_big)
    shi_out = jnp.where(x < 0.0, -shi_out, shi_out)
    shi_out = jnp.where(x == 0.0, 0.0, shi_out)
    chi_out = jnp.where(x == 0.0, -jnp.inf, chi_out)
    shi_out = jnp.where(jnp.isinf(x), x, shi_out)
    chi_out = jnp.where(jnp.isinf(x), jnp.inf, chi_out)
    return shi_out, chi_out


@jax.custom_jvp
def _shichi(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    # In cache-sized chunks: XLA does not fuse the whole series, and its intermediates
    # would otherwise go through memory at full size.
    shi, chi = chunked(_shichi_impl, x)
    return shi, chi


@_shichi.defjvp
def _shichi_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[tuple[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]:
    (x,), (dx,) = primals, tangents
    out = _shichi(x)
    return out, (jnp.sinh(x) / x * dx, jnp.cosh(x) / x * dx)


_SHICHI = entry_point(_shichi)


def shichi(x: ArrayLike) -> tuple[jax.Array, jax.Array]:
    """Hyperbolic sine and cosine integrals ``(Shi(x), Chi(x))``, mirroring
    ``scipy.special.shichi`` for real ``x`` (``Chi(-x) = Chi(x)``, the real part, as SciPy).

    Differentiable: ``Shi' = sinh(x)/x``, ``Chi' = cosh(x)/x``.
    """
    shi, chi = _SHICHI(x)
    return shi, chi


# ------------------------------------------------------------ wrightomega
_OMEGA_STEPS = 4


def _wrightomega_impl(x: jax.Array) -> jax.Array:
    tiny = x < -40.0
    huge = x > 1e20
    xs = jnp.where(tiny | huge | ~jnp.isfinite(x), 0.0, x)
    lx = jnp.log(jnp.maximum(xs, 1.0))
    guess_mid = 0.5671432904097838 * jnp.exp(0.64 * xs)
    y = jnp.exp(jnp.minimum(xs, -2.0))
    guess_low = y * (1.0 - y * (1.0 - 1.5 * y))
    guess_high = xs - lx + lx / jnp.maximum(xs, 1.0)
    w = jnp.where(xs <= -2.0, guess_low, jnp.where(xs < 1.0, guess_mid, guess_high))
    for _ in range(_OMEGA_STEPS):
        # Fritsch: cubic convergence on w + log w = x.
        # w *= 1 + r/(1+w) (q - r)/(q - 2r), q = 2 (1+w)(1+w+2r/3), with q divided
        # through by 1+w (q overflows float32 for large x).
        r = xs - w - jnp.log(w)
        wp1 = 1.0 + w
        u = r / wp1
        w = w * (1.0 + u * (1.0 + u / (2.0 * (wp1 + 2.0 * r / 3.0) - 2.0 * u)))
    e = jnp.exp(jnp.where(tiny, x, 0.0))
    w = jnp.where(tiny, e - e * e, w)
    w = jnp.where(huge, x, w)
    w = jnp.where(x == -jnp.inf, 0.0, w)
    return jnp.where(jnp.isnan(x), jnp.nan, w)


@jax.custom_jvp
def _wrightomega(x: jax.Array) -> jax.Array:
    return _wrightomega_impl(x)


@_wrightomega.defjvp
def _wrightomega_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (x,), (dx,) = primals, tangents
    w = _wrightomega(x)
    return w, w / (1.0 + w) * dx


_WRIGHTOMEGA = entry_point(_wrightomega)


def wrightomega(x: ArrayLike) -> jax.Array:
    """Wright omega function, the root ``w`` of ``w + log w = x``, mirroring
    ``scipy.special.wrightomega`` for real ``x``.  Differentiable: ``w / (1 + w)``."""
    return _WRIGHTOMEGA(x)


WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "zetac",
        zetac,
        domains=(
            Domain(((-1.0, 60.0),)),
            Domain(((1.0 + 1e-8, 1.5),), log=True),
            Domain(((-170.0, -1.0),)),
        ),
        differentiable=(0,),
        # Below x = -1 zetac has zeros (zeta(x) = 1 between the trivial zeros): the error
        # is absolute there, ~1e-15 (SciPy's own is 1.5e-12 relative at x = -18.07).
        # float32: the reflection's big exponent is a double word (_reflection_f32), ~3e-7
        # (the floor: absolute near the zero at -18.07).
        tolerances={"float64": (1e-12, 1e-14), "float32": (5e-6, 1e-6)},
        edge_cases=(EdgeCase((1.0,)), EdgeCase((-2.0,)), EdgeCase((0.5,)), EdgeCase((2000.0,))),
    ),
    declare(
        "shichi",
        shichi,
        domains=(Domain(((-700.0, 700.0),)), Domain(((1e-8, 30.0),), log=True)),
        differentiable=(0,),
        # Chi has a zero at 0.5238: float32 keeps ~1 ulp of Euler's constant there.
        tolerances={"float64": (1e-12, 1e-300), "float32": (5e-6, 1e-7)},
        edge_cases=(EdgeCase((40.0,)), EdgeCase((-40.5,)), EdgeCase((0.5238225713898644,))),
    ),
    declare(
        "wrightomega",
        wrightomega,
        domains=(
            Domain(((-50.0, 50.0),)),
            Domain(((-1e3, 1e6),)),
            Domain(((1.0, 1e25),), log=True),
        ),
        differentiable=(0,),
        edge_cases=(EdgeCase((-40.0,)), EdgeCase((-2.0,)), EdgeCase((1.0,))),
    ),
    declare(
        "ellipj",
        ellipj,
        domains=(Domain(((-10.0, 10.0), (0.0, 1.0))),),
        differentiable=(0,),
        # float32: the amplitude carries ~|u| ulp absolute (2^k a_k u is formed for each
        # element's own Landen level k, then halved back), so sn and cn near their zeros
        # are good to ~1e-6 absolute; dn is taken from sn there (test_special_elliptic).
        tolerances={"float64": (1e-12, 1e-300), "float32": (5e-6, 5e-6)},
        edge_cases=(EdgeCase((0.5, 1.0)), EdgeCase((0.5, 0.0)), EdgeCase((0.5, 1.5))),
    ),
)
