"""Distribution functions built on the incomplete gamma function (SciPy's ``cdflib`` names).

``gdtr(a, b, x) = P(b, a x)`` (gamma with rate ``a``, shape ``b``),
``chdtr(v, x) = P(v/2, x/2)`` (chi-square), ``pdtr(k, m) = Q(floor(k)+1, m)``
(Poisson), their complements, and the quantiles ``chdtri`` and ``pdtri``
from the inverse of ``Q``; see ``_incgamma``.

Derivatives (``jax.custom_jvp``): in the continuous variable and the rate,
the gamma density; in a quantile's probability, one over the density at the
quantile.  Shape parameters, degrees of freedom and counts are not
differentiated (``NotImplementedError``).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._common import as_float_arrays, entry_point, nondiff, tangent
from ._declare import declare, quiet_oracle
from ._incgamma import gamma_pdf_ratio, gamma_pq, gammaincc_inv

_Jvp = tuple[jax.Array, jax.Array]

__all__ = [
    "WRAPPERS",
    "chdtr",
    "chdtrc",
    "chdtri",
    "gdtr",
    "gdtrc",
    "pdtr",
    "pdtrc",
    "pdtri",
]


def _density(a: jax.Array, x: jax.Array) -> jax.Array:
    """Gamma density ``x^(a-1) e^-x / Gamma(a)``; 0 where ``x`` is 0 or inf with ``a > 1``."""
    ok = (a > 0.0) & (x > 0.0) & (x < jnp.inf) & (a < jnp.inf)
    d = gamma_pdf_ratio(jnp.where(ok, a, 1.0), jnp.where(ok, x, 1.0))
    return jnp.where(ok, d, 0.0)


# ------------------------------------------------------------------ gamma
def _make_gdtr(upper: bool) -> jax.custom_jvp[jax.Array]:
    @jax.custom_jvp
    def f(a: jax.Array, b: jax.Array, x: jax.Array) -> jax.Array:
        ax = a * x
        # Chunked: each chunk's series or continued fraction stops at its own slowest
        # element, not the whole array's.
        p, q = gamma_pq(b, ax)
        out = q if upper else p
        return jnp.where((a < 0.0) | (x < 0.0), jnp.nan, out)

    def jvp(
        primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
    ) -> tuple[jax.Array, jax.Array]:
        a, b, x = primals
        da, db, dx = tangents
        nondiff(db, "gdtrc" if upper else "gdtr", "b")
        dens = _density(b, a * x)
        d = a * dens * tangent(dx, x) + x * dens * tangent(da, a)
        return f(a, b, x), -d if upper else d

    f.defjvp(jvp, symbolic_zeros=True)
    return f


_GDTR: Callable[..., jax.Array] = entry_point(_make_gdtr(False))
_GDTRC: Callable[..., jax.Array] = entry_point(_make_gdtr(True))


def gdtr(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> jax.Array:
    """Gamma distribution CDF ``P(b, a x)`` (rate ``a``, shape ``b``), mirroring
    ``scipy.special.gdtr``.  Domain ``a >= 0, b >= 0, x >= 0`` (else nan).
    Differentiable in ``a`` and ``x``."""
    return _GDTR(*as_float_arrays(a, b, x))


def gdtrc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> jax.Array:
    """Gamma distribution survival function ``Q(b, a x)``, mirroring
    ``scipy.special.gdtrc``.  Differentiable in ``a`` and ``x``."""
    return _GDTRC(*as_float_arrays(a, b, x))


# ------------------------------------------------------------- chi-square
def _make_chdtr(upper: bool) -> jax.custom_jvp[jax.Array]:
    @jax.custom_jvp
    def f(v: jax.Array, x: jax.Array) -> jax.Array:
        p, q = gamma_pq(0.5 * v, 0.5 * x)
        return q if upper else p

    def jvp(
        primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
    ) -> tuple[jax.Array, jax.Array]:
        v, x = primals
        dv, dx = tangents
        nondiff(dv, "chdtrc" if upper else "chdtr", "v")
        d = 0.5 * _density(0.5 * v, 0.5 * x) * tangent(dx, x)
        return f(v, x), -d if upper else d

    f.defjvp(jvp, symbolic_zeros=True)
    return f


_CHDTR: Callable[..., jax.Array] = entry_point(_make_chdtr(False))
_CHDTRC: Callable[..., jax.Array] = entry_point(_make_chdtr(True))


def chdtr(v: ArrayLike, x: ArrayLike) -> jax.Array:
    """Chi-square CDF ``P(v/2, x/2)``, mirroring ``scipy.special.chdtr``.
    Domain ``v >= 0, x >= 0`` (else nan).  Differentiable in ``x``."""
    return _CHDTR(*as_float_arrays(v, x))


def chdtrc(v: ArrayLike, x: ArrayLike) -> jax.Array:
    """Chi-square survival function ``Q(v/2, x/2)``, mirroring ``scipy.special.chdtrc``.
    Differentiable in ``x``."""
    return _CHDTRC(*as_float_arrays(v, x))


@jax.custom_jvp
def _chdtri(v: jax.Array, y: jax.Array) -> jax.Array:
    x = 2.0 * gammaincc_inv(0.5 * v, y)
    return jnp.where((v <= 0.0) | (v == jnp.inf), jnp.nan, x)


def _chdtri_jvp(
    primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
) -> tuple[jax.Array, jax.Array]:
    v, y = primals
    dv, dy = tangents
    nondiff(dv, "chdtri", "v")
    x = _chdtri(v, y)
    dens = 0.5 * _density(0.5 * v, 0.5 * x)
    return x, -tangent(dy, y) / dens


_chdtri.defjvp(_chdtri_jvp, symbolic_zeros=True)
_CHDTRI: Callable[..., jax.Array] = entry_point(_chdtri)


def chdtri(v: ArrayLike, p: ArrayLike) -> jax.Array:
    """Inverse of ``chdtrc`` in ``x``: ``chdtrc(v, chdtri(v, p)) = p``, mirroring
    ``scipy.special.chdtri``.  Domain ``v > 0`` finite, ``0 <= p <= 1``
    (``chdtri(v, 0) = inf``, ``chdtri(v, 1) = 0``).  Differentiable in ``p``."""
    return _CHDTRI(*as_float_arrays(v, p))


# ---------------------------------------------------------------- Poisson
def _make_pdtr(upper: bool) -> jax.custom_jvp[jax.Array]:
    @jax.custom_jvp
    def f(k: jax.Array, m: jax.Array) -> jax.Array:
        kk = jnp.floor(k) + 1.0
        p, q = gamma_pq(kk, m)
        out = p if upper else q
        out = jnp.where(k == jnp.inf, 0.0 if upper else 1.0, out)
        return jnp.where((k < 0.0) | (m < 0.0), jnp.nan, out)

    def jvp(
        primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
    ) -> tuple[jax.Array, jax.Array]:
        k, m = primals
        dk, dm = tangents
        nondiff(dk, "pdtrc" if upper else "pdtr", "k")
        d = _density(jnp.floor(k) + 1.0, m) * tangent(dm, m)
        return f(k, m), d if upper else -d

    f.defjvp(jvp, symbolic_zeros=True)
    return f


_PDTR: Callable[..., jax.Array] = entry_point(_make_pdtr(False))
_PDTRC: Callable[..., jax.Array] = entry_point(_make_pdtr(True))


def pdtr(k: ArrayLike, m: ArrayLike) -> jax.Array:
    """Poisson CDF ``sum_{j <= k} e^-m m^j / j! = Q(floor(k) + 1, m)``, mirroring
    ``scipy.special.pdtr`` (``k`` is floored).  Domain ``k >= 0, m >= 0``.
    Differentiable in ``m``."""
    return _PDTR(*as_float_arrays(k, m))


def pdtrc(k: ArrayLike, m: ArrayLike) -> jax.Array:
    """Poisson survival function ``P(floor(k) + 1, m)``, mirroring ``scipy.special.pdtrc``.
    Differentiable in ``m``."""
    return _PDTRC(*as_float_arrays(k, m))


@jax.custom_jvp
def _pdtri(k: jax.Array, y: jax.Array) -> jax.Array:
    m = gammaincc_inv(jnp.floor(k) + 1.0, y)
    # SciPy (Cephes) accepts 0 <= y < 1 only.
    return jnp.where((k < 0.0) | (k == jnp.inf) | (y >= 1.0), jnp.nan, m)


def _pdtri_jvp(
    primals: tuple[jax.Array, ...], tangents: tuple[object, ...]
) -> tuple[jax.Array, jax.Array]:
    k, y = primals
    dk, dy = tangents
    nondiff(dk, "pdtri", "k")
    m = _pdtri(k, y)
    return m, -tangent(dy, y) / _density(jnp.floor(k) + 1.0, m)


_pdtri.defjvp(_pdtri_jvp, symbolic_zeros=True)
_PDTRI: Callable[..., jax.Array] = entry_point(_pdtri)


def pdtri(k: ArrayLike, y: ArrayLike) -> jax.Array:
    """The Poisson mean ``m`` with ``pdtr(k, m) = y``, mirroring ``scipy.special.pdtri``.
    Domain ``k >= 0`` (floored), ``0 <= y < 1``.  Differentiable in ``y``."""
    return _PDTRI(*as_float_arrays(k, y))


#: float32 exception: a tail value ``exp(-E) * ...`` inherits ``E`` float32
#: roundings of its exponent (``E`` up to ~80 at the float32 floor), ~1e-7 each;
#: measured up to 2.1e-5 relative below 1e-6.  float64 meets 1e-12 (the same
#: effect is ~1e-14 there).
F32_TAIL = {"float64": (1e-12, 1e-300), "float32": (3e-5, 1e-30)}


def _declarations() -> tuple[ScipyWrapper, ...]:
    rate_shape_x = (
        Domain(((0.1, 10.0), (0.1, 300.0), (0.01, 30.0)), log=True),
        Domain(((0.5, 2.0), (20.0, 300.0), (5.0, 300.0))),
    )
    chi = (Domain(((0.1, 500.0), (0.01, 1000.0)), log=True), Domain(((1.0, 100.0), (0.0, 200.0))))
    poisson = (Domain(((0.0, 200.0), (0.01, 300.0))), Domain(((0.0, 5.0), (1e-3, 10.0)), log=True))
    quantile = (Domain(((0.1, 500.0), (0.001, 0.999))),)
    # Deep tails as edge cases: the gradient check's finite differences need
    # probabilities well above its step (1e-6).
    tails = tuple(
        EdgeCase((v, p)) for v in (0.3, 3.0, 40.0, 400.0) for p in (1e-300, 1e-100, 1e-20, 1e-8)
    )
    return (
        declare(
            "gdtr",
            gdtr,
            tolerances=F32_TAIL,
            domains=rate_shape_x,
            differentiable=(0, 2),
            edge_cases=(EdgeCase((1.0, 0.0, 1.0)),),
        ),
        declare("gdtrc", gdtrc, tolerances=F32_TAIL, domains=rate_shape_x, differentiable=(0, 2)),
        declare("chdtr", chdtr, tolerances=F32_TAIL, domains=chi, differentiable=(1,)),
        declare("chdtrc", chdtrc, tolerances=F32_TAIL, domains=chi, differentiable=(1,)),
        declare(
            "pdtr",
            pdtr,
            oracle=quiet_oracle("special.pdtr", RuntimeWarning),
            tolerances=F32_TAIL,
            domains=poisson,
            differentiable=(1,),
        ),
        declare(
            "pdtrc",
            pdtrc,
            oracle=quiet_oracle("special.pdtrc", RuntimeWarning),
            tolerances=F32_TAIL,
            domains=poisson,
            differentiable=(1,),
        ),
        declare(
            "chdtri",
            chdtri,
            domains=quantile,
            differentiable=(1,),
            edge_cases=tails,
            tolerances=F32_TAIL,
        ),
        declare(
            "pdtri",
            pdtri,
            oracle=quiet_oracle("special.pdtri", RuntimeWarning),
            domains=quantile,
            differentiable=(1,),
            edge_cases=tails,
            tolerances=F32_TAIL,
        ),
    )


WRAPPERS: tuple[ScipyWrapper, ...] = _declarations()
