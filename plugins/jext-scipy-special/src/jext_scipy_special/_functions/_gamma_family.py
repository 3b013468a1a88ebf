"""Error- and gamma-family functions: ``erfi``, ``ndtri_exp``, ``rgamma``, ``binom``,
``powm1``, ``gammainccinv``.

Methods:

* ``erfi(x) = 2/sqrt(pi) sum x^(2k+1) / (k! (2k+1))`` for ``|x| <= 6.5`` (all
  terms positive: no cancellation), else the asymptotic series
  ``e^(x^2) / (sqrt(pi) x) sum (2k-1)!! / (2 x^2)^k`` (A&S 7.1.23 with
  ``erfi(x) = -i erf(ix)``); ``x^2`` is carried exactly (``_common.two_prod``) into the
  exponential and ``e^(x^2)`` is split in two halves so that the result
  overflows only where ``erfi`` itself does.
* ``ndtri_exp(y) = ndtri(e^y)`` through Cephes ``ndtri``'s regions without rounding
  ``e^y``: the upper tail of ``-expm1(y)``, the centre in ``expm1(y + log 2) / 2``, the
  lower tail in ``z = sqrt(-2 y)`` and beyond ``z = 64`` an asymptotic series
  (``_erf.ndtri_exp``).
* ``rgamma = 1 / Gamma`` (0 at the poles and at ``+-inf``).
* ``binom(n, k)``: for integer ``0 <= k < 20`` the product
  ``prod_{i<=k} (n - k + i) / i`` (exact for integer results); otherwise
  ``1 / ((n + 1) B(n - k + 1, k + 1))``.
* ``powm1(x, y) = expm1(y log x)`` for ``x > 0``; for ``x < 0`` and integer
  ``y``, ``x^y - 1``.

Derivatives are the closed forms (``erfi' = 2/sqrt(pi) e^(x^2)``,
``ndtri_exp' = Phi(x) / phi(x)``, ``binom`` through digamma differences,
``powm1`` through ``x^y``).
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import entry_point, is_double, polyval, subnormal_log, two_prod
from ._declare import declare
from ._erf import ndtri_exp as ndtri_exp_kernel
from ._gamma import gammainccinv

__all__ = ["WRAPPERS", "binom", "erfi", "ndtri_exp", "powm1", "rgamma"]

_ERFI_SWITCH = 6.5


def _erfi_series(terms: int, scale: int) -> tuple[float, ...]:
    """``2/sqrt(pi) scale^k / (k! (2k+1))``, ``k < terms``: the Maclaurin coefficients of
    ``erfi(x) / x`` in ``x^2 / scale`` (a power of two, so that the argument is exact and
    the coefficients stay normal in float32), highest degree first."""
    return tuple(
        (2.0 / math.sqrt(math.pi)) * float(Fraction(scale**k, math.factorial(k) * (2 * k + 1)))
        for k in reversed(range(terms))
    )


#: Series coefficients for float64 (|x| <= 6.5, x^2 / 64) and float32 (|x| <= 4,
#: x^2 / 16).  Terms: at |x| = 6.5 those from k = 110 on add up to 1.2e-18 of the
#: sum; at |x| = 4 those from k = 48 on, 2.7e-11 (``tools/erfi_series_terms.py``).
_ERFI_SERIES = (_erfi_series(110, 64), _erfi_series(48, 16))
_ERFI_ASYM = 24


# ------------------------------------------------------------------ erfi
def _exp_x2(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``e^(x^2)`` as two equal factors ``h * h`` (``x^2`` carried exactly)."""
    safe = jnp.abs(x) < (1e150 if is_double(x) else 1e18)
    xs = jnp.where(safe, x, 0.0)
    hi, lo = two_prod(xs, xs)
    half = jnp.exp(0.5 * hi) * (1.0 + 0.5 * lo)
    return jnp.where(safe, half, jnp.inf), jnp.where(safe, half, jnp.inf)


def _erfi_impl(x: jax.Array) -> jax.Array:
    ax = jnp.abs(x)
    # float32: the series carries the rounding of x^2 into ~x^2 terms, so it
    # hands over to the asymptotic series (good to e^(-x^2)) earlier.
    switch = _ERFI_SWITCH if is_double(x) else 4.0
    small = ax <= switch
    xs = jnp.where(small, x, 1.0)
    # Horner in x^2 on constant coefficients (all positive: no cancellation); one fused
    # multiply-add per term instead of a loop with two divisions per term.
    series, scale = (_ERFI_SERIES[0], 64.0) if is_double(x) else (_ERFI_SERIES[1], 16.0)
    near = xs * polyval(xs * xs / scale, series)
    xb = jnp.where(small, switch + 1.0, ax)
    inv = 1.0 / (2.0 * xb * xb)
    coeffs = []
    c = 1.0
    for k in range(_ERFI_ASYM):
        coeffs.append(c)
        c *= 2 * k + 1
    tail = polyval(inv, coeffs[::-1])
    h1, h2 = _exp_x2(xb)
    far = h1 * (h2 / (math.sqrt(math.pi) * xb) * tail)
    far = jnp.where(ax == jnp.inf, jnp.inf, far)
    far = jnp.where(x < 0.0, -far, far)
    return jnp.where(small, near, far)


@jax.custom_jvp
def _erfi(x: jax.Array) -> jax.Array:
    return _erfi_impl(x)


@_erfi.defjvp
def _erfi_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, jax.Array]:
    (x,), (dx,) = primals, tangents
    h1, h2 = _exp_x2(x)
    return _erfi(x), (2.0 / math.sqrt(math.pi)) * h1 * h2 * dx


_ERFI = entry_point(_erfi)


def erfi(x: ArrayLike) -> jax.Array:
    """Imaginary error function ``-i erf(i x)``, mirroring ``scipy.special.erfi`` (real ``x``).

    Domain: every real ``x``; overflows to ``+-inf`` beyond ``|x| ~ 26.6`` like SciPy.
    Differentiable: ``erfi'(x) = 2/sqrt(pi) e^(x^2)``.
    """
    return _ERFI(x)


# ------------------------------------------------------------- ndtri_exp
_LOG_2PI = math.log(2.0 * math.pi)


@jax.custom_jvp
def _ndtri_exp(y: jax.Array) -> jax.Array:
    # A subnormal y reads as 0 to XLA on CPU (inf), while ndtri(e^y) = -ndtri(-y) there
    # (1 - e^y = -y to the last bit) is finite, ~38: from log(-y), read from the bits.
    sub, log_abs = subnormal_log(y)
    x = ndtri_exp_kernel(jnp.where(sub, log_abs, y))
    return jnp.where(sub, jnp.where(jnp.signbit(y), -x, jnp.nan), x)


@_ndtri_exp.defjvp
def _ndtri_exp_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (y,), (dy,) = primals, tangents
    x = _ndtri_exp(y)
    # dx/dy = Phi(x) / phi(x) = exp(y - log phi(x))
    return x, jnp.exp(y + 0.5 * x * x + 0.5 * _LOG_2PI) * dy


_NDTRI_EXP = entry_point(_ndtri_exp)


def ndtri_exp(y: ArrayLike) -> jax.Array:
    """Inverse of ``log_ndtr``, mirroring ``scipy.special.ndtri_exp``: ``ndtri(exp(y))``.

    Domain: ``y <= 0`` (``y > 0`` or nan gives nan, ``0 -> inf``, ``-inf -> -inf``).
    Differentiable: ``dx/dy = Phi(x) / phi(x)``.
    """
    return _NDTRI_EXP(y)


# ---------------------------------------------------------------- rgamma
def _rgamma_impl(x: jax.Array) -> jax.Array:
    g = jsp.gamma(x)
    pole = (x <= 0.0) & (x == jnp.floor(x))
    r = 1.0 / g
    r = jnp.where(pole | jnp.isinf(x), 0.0, r)
    r = jnp.where(x == 0.0, x, r)  # signed zero like SciPy
    return jnp.where(jnp.isnan(x), jnp.nan, r)


@jax.custom_jvp
def _rgamma(x: jax.Array) -> jax.Array:
    return _rgamma_impl(x)


@_rgamma.defjvp
def _rgamma_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (x,), (dx,) = primals, tangents
    r = _rgamma(x)
    # (1/Gamma)' = -digamma / Gamma; at the poles the limit is (-1)^(n+1) n!.
    pole = (x <= 0.0) & (x == jnp.floor(x))
    n = jnp.where(pole, -x, 0.0)
    at_pole = jnp.where(jnp.mod(n, 2.0) == 0.0, 1.0, -1.0) * jnp.exp(jsp.gammaln(n + 1.0))
    d = jnp.where(pole, at_pole, -jsp.digamma(jnp.where(pole, 1.0, x)) * r)
    return r, d * dx


_RGAMMA = entry_point(_rgamma)


def rgamma(x: ArrayLike) -> jax.Array:
    """Reciprocal gamma function ``1/Gamma(x)``, mirroring ``scipy.special.rgamma``.

    Domain: every real ``x`` (0 at the poles ``0, -1, -2, ...`` and at ``+-inf``);
    accurate to ~4e-13 relative on ``[-170, 170]`` (the accuracy of ``jax.scipy``'s
    ``gamma``).  Differentiable: ``-digamma(x) / Gamma(x)``.
    """
    return _RGAMMA(x)


# ----------------------------------------------------------------- binom
_BINOM_PRODUCT = 20


def _gamma_sign(z: jax.Array) -> jax.Array:
    """The sign of ``Gamma(z)`` without evaluating it: 1 for ``z >= 0`` and ``+inf``,
    ``(-1)^ceil(-z)`` between the negative poles, nan at them, at ``-inf`` and nan (as
    ``sign(gamma(z))``, which costs an ``lgamma``; unlike it, also beyond ``z = -184``
    where ``Gamma`` itself underflows to zero)."""
    fl = jnp.floor(z)
    odd = fl - 2.0 * jnp.floor(0.5 * fl) == 1.0
    neg = jnp.where(z == fl, jnp.nan, jnp.where(odd, -1.0, 1.0))
    return jnp.where(z >= 0.0, 1.0, jnp.where(jnp.isnan(z), jnp.nan, neg))


def _binom_impl(n: jax.Array, k: jax.Array) -> jax.Array:
    kint = k == jnp.floor(k)
    nint = n == jnp.floor(n)
    # Symmetry for integer n: the shorter product.
    kk = jnp.where(nint & kint & (k > 0.5 * n) & (n > 0.0), n - k, k)
    use_prod = kint & (kk >= 0.0) & (kk < _BINOM_PRODUCT)
    num = jnp.ones_like(n)
    den = jnp.ones_like(n)
    for i in range(1, _BINOM_PRODUCT):
        take = kk >= i
        num = jnp.where(take, num * (n - kk + i), num)
        den = jnp.where(take, den * i, den)
    prod = num / den
    # General case: 1 / ((n + 1) B(n - k + 1, k + 1)).
    b1 = n - k + 1.0
    b2 = k + 1.0
    lb = jsp.gammaln(b1) + jsp.gammaln(b2) - jsp.gammaln(b1 + b2)
    sign = _gamma_sign(b1) * _gamma_sign(b2) * _gamma_sign(b1 + b2)
    general = sign * jnp.exp(-lb) / (n + 1.0)
    out = jnp.where(use_prod, prod, general)
    out = jnp.where(kint & (k < 0.0), 0.0, out)
    bad = jnp.isnan(n) | jnp.isnan(k) | (nint & (n < 0.0))
    return jnp.where(bad, jnp.nan, out)


@jax.custom_jvp
def _binom(n: jax.Array, k: jax.Array) -> jax.Array:
    return _binom_impl(n, k)


@_binom.defjvp
def _binom_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    n, k = primals
    dn, dk = tangents
    b = _binom(n, k)
    psi_nk = jsp.digamma(n - k + 1.0)
    dbn = b * (jsp.digamma(n + 1.0) - psi_nk)
    dbk = b * (psi_nk - jsp.digamma(k + 1.0))
    return b, dbn * dn + dbk * dk


_BINOM = entry_point(_binom)


def binom(n: ArrayLike, k: ArrayLike) -> jax.Array:
    """Binomial coefficient ``Gamma(n+1) / (Gamma(k+1) Gamma(n-k+1))``, mirroring
    ``scipy.special.binom``.

    Domain (checked): ``0 <= n <= 60``, ``0 <= k <= n``; integer ``k < 20``
    is exact for integer results, other points carry ``jax.scipy``'s
    ``gammaln`` error (~1e-13 relative there).  A negative integer ``n`` gives
    nan like SciPy.  Differentiable in both: ``d/dn = binom (psi(n+1) -
    psi(n-k+1))``, ``d/dk = binom (psi(n-k+1) - psi(k+1))``.
    """
    return _BINOM(n, k)


# ----------------------------------------------------------------- powm1
def _powm1_impl(x: jax.Array, y: jax.Array) -> jax.Array:
    pos = x > 0.0
    xs = jnp.where(pos, x, 1.0)
    main = jnp.expm1(y * jnp.log(xs))
    yint = y == jnp.floor(y)
    neg = jnp.power(jnp.where(pos, -1.0, x), y) - 1.0
    out = jnp.where(pos, main, jnp.where(yint, neg, jnp.nan))
    out = jnp.where(x == 0.0, jnp.where(y < 0.0, jnp.inf, jnp.where(y > 0.0, -1.0, 0.0)), out)
    out = jnp.where(y == 0.0, 0.0, out)
    out = jnp.where(x == 1.0, 0.0, out)
    out = jnp.where(jnp.isnan(x) & (y != 0.0), jnp.nan, out)
    return jnp.where(jnp.isnan(y) & (x != 1.0), jnp.nan, out)


@jax.custom_jvp
def _powm1(x: jax.Array, y: jax.Array) -> jax.Array:
    return _powm1_impl(x, y)


@_powm1.defjvp
def _powm1_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    x, y = primals
    dx, dy = tangents
    out = _powm1(x, y)
    p = out + 1.0
    xs = jnp.where(x > 0.0, x, 1.0)
    return out, y * (p / x) * dx + p * jnp.log(xs) * dy


_POWM1 = entry_point(_powm1)


def powm1(x: ArrayLike, y: ArrayLike) -> jax.Array:
    """``x**y - 1`` without cancellation near ``y log x = 0``, mirroring ``scipy.special.powm1``.

    Domain: ``x > 0`` (and ``x < 0`` with integer ``y``; other negative ``x`` give nan).
    Differentiable in both: ``d/dx = y x^(y-1)``, ``d/dy = x^y log x`` (``x > 0``).
    """
    return _POWM1(x, y)


WRAPPERS: tuple[ScipyWrapper, ...] = (
    declare(
        "erfi",
        erfi,
        domains=(Domain(((-26.0, 26.0),)), Domain(((1e-10, 26.0),), log=True)),
        differentiable=(0,),
        edge_cases=(EdgeCase((6.5,)), EdgeCase((-6.5,)), EdgeCase((27.0,))),
    ),
    declare(
        "ndtri_exp",
        ndtri_exp,
        domains=(Domain(((-2.0, -1e-12),)), Domain(((-800.0, -2.0),)), Domain(((-1e5, -800.0),))),
        differentiable=(0,),
        edge_cases=(EdgeCase((-1e5,)), EdgeCase((-700.0,)), EdgeCase((-1e-300,))),
    ),
    declare(
        "rgamma",
        rgamma,
        domains=(Domain(((-30.0, 170.0),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((-3.0,)), EdgeCase((200.0,))),
        dtypes=("float64",),
    ),
    declare(
        "binom",
        binom,
        domains=(Domain(((0.0, 60.0), (0.0, 20.0))),),
        differentiable=(0, 1),
        # binom(0.5, 200): Gamma(n - k + 1) underflows to -0, its sign must not.
        edge_cases=(
            EdgeCase((10.0, 3.0)),
            EdgeCase((-2.0, 1.0)),
            EdgeCase((5.0, -1.0)),
            EdgeCase((0.5, 200.0)),
        ),
        dtypes=("float64",),
    ),
    declare(
        "powm1",
        powm1,
        domains=(Domain(((0.01, 100.0), (-50.0, 50.0))), Domain(((0.5, 2.0), (-1e-3, 1e-3)))),
        differentiable=(0, 1),
        edge_cases=(EdgeCase((-2.0, 3.0)), EdgeCase((-2.0, 0.5)), EdgeCase((0.0, -1.0))),
        dtypes=("float64",),
    ),
    declare(
        "gammainccinv",
        gammainccinv,
        domains=(
            Domain(((0.1, 100.0), (1e-37, 0.999999)), log=True),
            Domain(((0.5, 50.0), (0.0, 1.0))),
        ),
        differentiable=(1,),
    ),
)
