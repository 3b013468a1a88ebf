"""Modified Bessel functions built on ``kv``/``kve``: ``iv``, ``ive``, ``k0``, ``k0e``,
``k1``, ``k1e``, ``kn``.

Method for ``I_v(x)``, ``v >= 0``, ``x > 0`` (Temme 1975; Numerical Recipes'
``bessik``): the ratio ``f = I_{v+1}/I_v`` from the continued fraction
``1/(2(v+1)/x + 1/(2(v+2)/x + ...))`` (modified Lentz, each element stopping
on its own; about ``x`` terms), then the Wronskian
``I_v K_{v+1} + I_{v+1} K_v = 1/x`` with the exponentially scaled pair
``(e^x K_v, e^x K_{v+1})`` of :mod:`._bessel`, which gives ``e^-x I_v``
directly: ``ive = 1 / (x (kve_{v+1} + f kve_v))``.  Negative orders:
``I_{-v} = I_v + (2/pi) sin(pi v) K_v``; negative ``x``: ``(-1)^v I_v(|x|)``
for integer ``v`` (nan otherwise), like SciPy.

Derivatives in ``x``: ``I_v' = (I_{v-1} + I_{v+1}) / 2``; ``K_0' = -K_1``,
``K_1' = -K_0 - K_1/x`` through ``kv``'s rule.  Orders carry no derivative.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._bessel import _kve_pair, kv, kve
from ._bessel_jy import sin_pi as _sin_pi
from ._common import entry_point, eps_of, iterate, nondiff, tangent, tiny_of
from ._declare import special_wrapper

__all__ = ["WRAPPERS", "iv", "ive", "k0", "k0e", "k1", "k1e", "kn"]

_CF1_CAP = 20000  # Lentz steps; about x are needed


def _cf1(v: jax.Array, x: jax.Array) -> jax.Array:
    """``I_{v+1}(x) / I_v(x)`` for ``v >= 0``, ``x > 0`` (modified Lentz)."""
    eps = eps_of(x)
    tiny = tiny_of(x) * 1e10
    rx = 1.0 / x

    def clamp(t: jax.Array) -> jax.Array:
        return jnp.where(jnp.abs(t) < tiny, tiny, t)

    def step(i: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
        c, d, f, _ = st
        b = 2.0 * (v + i + 1.0) * rx  # the i-th step adds b_{i+1}
        d = 1.0 / clamp(b + d)
        c = clamp(b + 1.0 / c)
        delta = c * d
        return c, d, f * delta, delta

    def converged(st: tuple[jax.Array, ...]) -> jax.Array:
        return jnp.abs(st[3] - 1.0) <= 2.0 * eps

    # I_{v+1}/I_v = 1/F with F = b_1 + 1/(b_2 + 1/(b_3 + ...)), b_k = 2 (v + k) / x.
    b1 = 2.0 * (v + 1.0) * rx
    init: tuple[jax.Array, ...] = (b1, jnp.zeros_like(x), b1, jnp.zeros_like(x))
    big_f = iterate(step, init, converged, _CF1_CAP, x.dtype)[2]
    return 1.0 / big_f


def _ive_impl(v: jax.Array, x: jax.Array) -> jax.Array:
    nu = jnp.abs(v)
    ax = jnp.abs(x)
    ok = (ax > 0.0) & (ax < jnp.inf) & jnp.isfinite(v)
    nus = jnp.where(ok, nu, 0.0)
    xs = jnp.where(ok, ax, 1.0)
    f = _cf1(nus, xs)
    k0, k1 = _kve_pair(nus, xs)
    ive = 1.0 / (xs * (k1 + f * k0))
    # I_{-v} = I_v + (2/pi) sin(pi v) K_v, scaled: K_v e^-x = kve e^-2x.
    refl = (2.0 / math.pi) * _sin_pi(nus) * k0 * jnp.exp(-2.0 * xs)
    ive = jnp.where(v < 0.0, ive + refl, ive)
    vint = v == jnp.round(v)
    odd = jnp.abs(jnp.mod(v, 2.0)) == 1.0
    ive = jnp.where(x < 0.0, jnp.where(vint, jnp.where(odd, -ive, ive), jnp.nan), ive)
    # ive(v, 0) for negative non-integer v is nan in SciPy (iv gives inf).
    at0 = jnp.where(v == 0.0, 1.0, jnp.where((v > 0.0) | vint, 0.0, jnp.nan))
    ive = jnp.where(x == 0.0, at0, ive)
    return jnp.where(jnp.isnan(v) | jnp.isnan(x) | jnp.isinf(x) | jnp.isinf(v), jnp.nan, ive)


def _iv_edges(v: jax.Array, x: jax.Array, val: jax.Array) -> jax.Array:
    """SciPy's ``iv`` at infinite order (0 for finite ``x``) and at ``x = 0`` for
    negative non-integer order (inf)."""
    pole = (x == 0.0) & (v < 0.0) & (v != jnp.round(v))
    return jnp.where(jnp.isinf(v) & jnp.isfinite(x), 0.0, jnp.where(pole, jnp.inf, val))


@jax.custom_jvp
def _ive(v: jax.Array, x: jax.Array) -> jax.Array:
    return _ive_impl(v, x)


def _ive_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[object, object]
) -> tuple[jax.Array, jax.Array]:
    v, x = primals
    dv, dx = tangents
    nondiff(dv, "ive", "v")
    out = _ive(v, x)
    d = 0.5 * (_ive(v - 1.0, x) + _ive(v + 1.0, x)) - jnp.sign(x) * out
    return out, d * tangent(dx, x)


_ive.defjvp(_ive_jvp, symbolic_zeros=True)


def _iv_of(v: jax.Array, x: jax.Array) -> jax.Array:
    half = jnp.exp(0.5 * jnp.abs(x))
    return _iv_edges(v, x, _ive(v, x) * half * half)


@jax.custom_jvp
def _iv(v: jax.Array, x: jax.Array) -> jax.Array:
    return _iv_of(v, x)


def _iv_jvp(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[object, object]
) -> tuple[jax.Array, jax.Array]:
    v, x = primals
    dv, dx = tangents
    nondiff(dv, "iv", "v")
    d = 0.5 * (_iv(v - 1.0, x) + _iv(v + 1.0, x))
    return _iv(v, x), d * tangent(dx, x)


_iv.defjvp(_iv_jvp, symbolic_zeros=True)

_IV = entry_point(_iv)
_IVE = entry_point(_ive)


def iv(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Modified Bessel function of the first kind ``I_v(z)`` of real order, mirroring
    ``scipy.special.iv`` for real ``z``.

    Domain (checked): ``|v| <= 20``, ``|z| <= 500``; the cost grows with ``|z|``
    (continued fraction of ~``|z|`` terms) and with ``|v|`` (``kv``'s
    recurrence).  ``z < 0`` with non-integer ``v`` and ``z = +-inf`` give nan
    like SciPy.  Differentiable in ``z``: ``(I_{v-1} + I_{v+1}) / 2``.
    """
    return _IV(v, z)


def ive(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Exponentially scaled ``I_v(z) exp(-|z|)``, mirroring ``scipy.special.ive`` (real ``z``).

    Same domain and method as :func:`iv`.  Differentiable in ``z``.
    """
    return _IVE(v, z)


def _fixed_order(fn: Callable[..., jax.Array], order: float) -> Callable[[ArrayLike], jax.Array]:
    def run(x: ArrayLike) -> jax.Array:
        xa = jnp.asarray(x)
        out: jax.Array = fn(jnp.zeros_like(xa, dtype=jnp.result_type(xa, float)) + order, xa)
        return out

    return run


def k0(x: ArrayLike) -> jax.Array:
    """``K_0(x)``, mirroring ``scipy.special.k0`` (``kv(0, x)``).  Differentiable."""
    return _fixed_order(kv, 0.0)(x)


def _zero_at_inf(fn: Callable[[ArrayLike], jax.Array]) -> Callable[[ArrayLike], jax.Array]:
    # The scaled functions decay like x**-1/2: 0 at +inf (the kernel's inf * 0 gives nan).
    def run(x: ArrayLike) -> jax.Array:
        xa = jnp.asarray(x)
        out = fn(xa)
        return jnp.where(xa == jnp.inf, jnp.zeros_like(out), out)

    return run


def k0e(x: ArrayLike) -> jax.Array:
    """``K_0(x) e^x``, mirroring ``scipy.special.k0e``.  Differentiable."""
    return _zero_at_inf(_fixed_order(kve, 0.0))(x)


def k1(x: ArrayLike) -> jax.Array:
    """``K_1(x)``, mirroring ``scipy.special.k1``.  Differentiable."""
    return _fixed_order(kv, 1.0)(x)


def k1e(x: ArrayLike) -> jax.Array:
    """``K_1(x) e^x``, mirroring ``scipy.special.k1e``.  Differentiable."""
    return _zero_at_inf(_fixed_order(kve, 1.0))(x)


def kn(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """``K_n(x)`` for integer order, mirroring ``scipy.special.kn``: a real ``n`` is
    truncated towards 0 (SciPy truncates with a warning).  Differentiable in ``x``."""
    return kv(jnp.trunc(jnp.asarray(n, dtype=jnp.result_type(n, float))), x)


def _kn_oracle(n: Any, x: Any) -> Any:
    # kn(n, x) = kv(n, x) for integer n; SciPy's kn warns on non-integer n.
    return importlib.import_module("scipy.special").kv(jnp.trunc(jnp.asarray(n)), x)


_ORDERS_X = Domain(((-20.0, 20.0), (1e-3, 500.0)))
_SMALL_X = Domain(((-5.0, 20.0), (1e-2, 10.0)))

WRAPPERS: tuple[ScipyWrapper, ...] = (
    special_wrapper(
        "iv",
        iv,
        (_ORDERS_X, _SMALL_X, Domain(((-5.0, 5.0), (-20.0, -1e-3)))),
        differentiable=(1,),
        edge_cases=(EdgeCase((2.0, -1.5)), EdgeCase((-2.5, 0.0)), EdgeCase((3.0, -2.0))),
    ),
    special_wrapper(
        "ive",
        ive,
        (_ORDERS_X, _SMALL_X),
        # float32 loses up to 1.5e-5 for negative non-integer orders near |z| = 1 (the
        # reflection term cancels); float64 meets 1e-12.
        tolerances={"float64": (1e-12, 1e-300), "float32": (3e-5, 1e-30)},
        differentiable=(1,),
        edge_cases=(EdgeCase((2.0, -1.5)), EdgeCase((-2.5, 0.0))),
    ),
    special_wrapper("k0", k0, (Domain(((1e-6, 700.0),), log=True),), differentiable=(0,)),
    special_wrapper("k0e", k0e, (Domain(((1e-6, 1e4),), log=True),), differentiable=(0,)),
    special_wrapper("k1", k1, (Domain(((1e-6, 700.0),), log=True),), differentiable=(0,)),
    special_wrapper("k1e", k1e, (Domain(((1e-6, 1e4),), log=True),), differentiable=(0,)),
    special_wrapper(
        "kn",
        kn,
        (Domain(((-20.0, 20.0), (1e-3, 100.0))),),
        differentiable=(1,),
        oracle=_kn_oracle,
    ),
)
