"""Bessel functions of real order: ``jv, jve, yv, yve, j0, j1, y0, y1, jn, yn`` and the
Hankel functions ``hankel1, hankel1e, hankel2, hankel2e`` (complex), for real arguments.

All are built on one kernel, :func:`._bessel_jy.jy`, which returns ``(J_v(x), Y_v(x))``
(method in that module's docstring).  For real ``x`` the scaled ``jve``/``yve`` equal
``jv``/``yv`` (the scale ``exp(-|Im z|)`` is 1) apart from SciPy's edge values; the
Hankel functions are ``J +- iY``, continued to ``x < 0`` from above the cut
(``J_v(-x) = e^{i pi v} J_v(x)``, ``Y_v(-x) = e^{-i pi v} Y_v(x) + 2i cos(pi v) J_v(x)``).

Derivatives in ``x`` (through one ``custom_jvp`` on the pair):
``J_v' = (J_{v-1} - J_{v+1}) / 2`` and the same for ``Y``; orders carry no derivative.
"""

from __future__ import annotations

import importlib
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from jext.scipy import Domain, EdgeCase, ScipyWrapper

from ._bessel01 import j0_pos, j1_pos, y0_pos, y1_pos
from ._bessel_jy import jy, y_integer
from ._common import BelowNormal, cos_pi, entry_point, nondiff, sin_pi, subnormal_parts, tangent
from ._declare import declare

__all__ = [
    "WRAPPERS",
    "hankel1",
    "hankel1e",
    "hankel2",
    "hankel2e",
    "j0",
    "j1",
    "jn",
    "jv",
    "jve",
    "y0",
    "y1",
    "yn",
    "yv",
    "yve",
]

Pair = tuple[jax.Array, jax.Array]


@jax.custom_jvp
def _jy(v: jax.Array, x: jax.Array) -> Pair:
    return jy(v, x)


def _jy_jvp(primals: Pair, tangents: tuple[object, object]) -> tuple[Pair, Pair]:
    v, x = primals
    dv, dx = tangents
    nondiff(dv, "jv/yv", "v")
    # One kernel on the three orders v, v - 1, v + 1 (one copy of it in the program).
    js, ys = _jy(jnp.stack([v, v - 1.0, v + 1.0]), jnp.stack([x, x, x]))
    (j, jm, jp), (y, ym, yp) = js, ys
    t = tangent(dx, x)
    return (j, y), (0.5 * (jm - jp) * t, 0.5 * (ym - yp) * t)


_jy.defjvp(_jy_jvp, symbolic_zeros=True)


def _jv(v: jax.Array, x: jax.Array) -> jax.Array:
    return _jy(v, x)[0]


def _yv(v: jax.Array, x: jax.Array) -> jax.Array:
    return _jy(v, x)[1]


def _jve(v: jax.Array, x: jax.Array) -> jax.Array:
    # SciPy (AMOS) gives nan where jv is infinite at x = 0 (v < 0 non-integer) and at
    # infinite order.
    j = _jv(v, x)
    return jnp.where((jnp.isinf(j) & (x == 0.0)) | jnp.isinf(v), jnp.nan, j)


def _yve(v: jax.Array, x: jax.Array) -> jax.Array:
    # SciPy (AMOS) gives nan at x = 0 and at infinite order.
    y = _yv(v, x)
    return jnp.where((x == 0.0) | jnp.isinf(v), jnp.nan, y)


def _hankel(v: jax.Array, x: jax.Array, kind: int, scaled: bool) -> jax.Array:
    j, y = _jy(v, jnp.abs(x))
    # Above the cut for x < 0: H1 = (-cJ + sY) + i(sJ + cY), H2 = (3cJ - sY) + i(sJ - cY),
    # with c, s = cos, sin(pi v) and J, Y at |x|.
    c, s = cos_pi(v), sin_pi(v)
    neg = x < 0.0
    sj, sy, cj, cy = s * j, s * y, c * j, c * y
    if kind == 1:
        re = jnp.where(neg, sy - cj, j)
        im = jnp.where(neg, sj + cy, y)
    else:
        re = jnp.where(neg, 3.0 * cj - sy, j)
        im = jnp.where(neg, sj - cy, -y)
    if scaled:
        # hankel1e = hankel1 e^{-ix}, hankel2e = hankel2 e^{ix}
        cx, sx = jnp.cos(x), jnp.sin(x) * (1.0 if kind == 2 else -1.0)
        re, im = re * cx - im * sx, re * sx + im * cx
    bad = (x == 0.0) | jnp.isinf(v) | jnp.isnan(re) | jnp.isnan(im)
    re = jnp.where(bad, jnp.nan, re)
    im = jnp.where(bad, jnp.nan, im)
    return lax.complex(re, im)


_JV = entry_point(_jv)
_JVE = entry_point(_jve)
_YV = entry_point(_yv)
_YVE = entry_point(_yve)
_H1 = entry_point(lambda v, x: _hankel(v, x, 1, False))
_H1E = entry_point(lambda v, x: _hankel(v, x, 1, True))
_H2 = entry_point(lambda v, x: _hankel(v, x, 2, False))
_H2E = entry_point(lambda v, x: _hankel(v, x, 2, True))


def jv(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Bessel function of the first kind ``J_v(z)`` of real order, mirroring
    ``scipy.special.jv`` for real ``z``.

    ``z < 0`` gives ``(-1)^v J_v(|z|)`` for integer ``v`` and nan otherwise; ``z = +-inf``
    gives nan and ``J_v(0)`` is SciPy's (1, 0 or +-inf), like SciPy.  ``|v| > 1e5`` gives
    nan (the recurrences take ``round(|v|)`` steps).  Differentiable in ``z``:
    ``(J_{v-1} - J_{v+1}) / 2``.
    """
    return _JV(v, z)


def jve(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """``J_v(z) exp(-|Im z|)``, mirroring ``scipy.special.jve``: for real ``z`` this is
    :func:`jv`, with SciPy's nan where ``jv`` is infinite.  Differentiable in ``z``."""
    return _JVE(v, z)


def yv(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Bessel function of the second kind ``Y_v(z)`` of real order, mirroring
    ``scipy.special.yv`` for real ``z`` (nan for ``z < 0``, ``Y_v(0) = +-inf``).
    Differentiable in ``z``: ``(Y_{v-1} - Y_{v+1}) / 2``."""
    return _YV(v, z)


def yve(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """``Y_v(z) exp(-|Im z|)``, mirroring ``scipy.special.yve``: for real ``z`` this is
    :func:`yv`, with SciPy's nan at ``z = 0``.  Differentiable in ``z``."""
    return _YVE(v, z)


def _finite_abs(x: jax.Array) -> jax.Array:
    return jnp.where(jnp.isfinite(x), jnp.abs(x), 1.0)


def _y_arg(x: jax.Array) -> tuple[jax.Array, BelowNormal]:
    """``x`` where ``Y`` is finite (1 elsewhere), and where it is a positive subnormal
    (read as 0 by XLA on CPU) its bits: ``Y0(1e-310) = -454.5``, not ``-inf``."""
    sub, m, log_scale = subnormal_parts(x)
    sub = sub & ~jnp.signbit(x)
    inside = ((x > 0.0) & (x < jnp.inf)) | sub
    return jnp.where(inside, x, 1.0), (sub, m, log_scale)


def _y_edges(x: jax.Array, y: jax.Array, small: BelowNormal) -> jax.Array:
    # -inf at 0, nan below 0, at inf and at nan, as SciPy.
    inside = ((x > 0.0) & (x < jnp.inf)) | small[0]
    return jnp.where(inside, y, jnp.where(x == 0.0, -jnp.inf, jnp.nan))


# Orders 0 and 1 have their own loop-free kernels (``_bessel01``), with the derivatives
# J0' = -J1, J1' = J0 - J1/x (1/2 at 0), Y0' = -Y1, Y1' = Y0 - Y1/x.
@jax.custom_jvp
def _j0(x: jax.Array) -> jax.Array:
    return jnp.where(jnp.isfinite(x), j0_pos(_finite_abs(x)), jnp.nan)


@jax.custom_jvp
def _j1(x: jax.Array) -> jax.Array:
    v = j1_pos(_finite_abs(x))
    # J1 is odd: by the sign bit, not x < 0, so that j1(-0.0) = -0.0 as in SciPy.
    return jnp.where(jnp.isfinite(x), jnp.where(jnp.signbit(x), -v, v), jnp.nan)


@jax.custom_jvp
def _y0(x: jax.Array) -> jax.Array:
    arg, small = _y_arg(x)
    return _y_edges(x, y0_pos(arg, small), small)


@jax.custom_jvp
def _y1(x: jax.Array) -> jax.Array:
    arg, small = _y_arg(x)
    return _y_edges(x, y1_pos(arg, small), small)


@_j0.defjvp
def _j0_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    return _j0(x), -_j1(x) * dx


@_j1.defjvp
def _j1_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    j1 = _j1(x)
    return j1, jnp.where(x == 0.0, 0.5, _j0(x) - j1 / jnp.where(x == 0.0, 1.0, x)) * dx


@_y0.defjvp
def _y0_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    return _y0(x), -_y1(x) * dx


@_y1.defjvp
def _y1_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> Pair:
    (x,), (dx,) = primals, tangents
    y1 = _y1(x)
    return y1, (_y0(x) - y1 / x) * dx


@jax.custom_jvp
def _yn_int(n: jax.Array, x: jax.Array) -> jax.Array:
    return y_integer(n, x)


@_yn_int.defjvp
def _yn_int_jvp(primals: Pair, tangents: tuple[jax.Array, jax.Array]) -> Pair:
    n, x = primals
    _, dx = tangents
    # One kernel on the orders n - 1 and n + 1 (one copy of it in the program).
    ym, yp = _yn_int(jnp.stack([n - 1.0, n + 1.0]), jnp.stack([x, x]))
    return _yn_int(n, x), 0.5 * (ym - yp) * dx


def _yn(n: jax.Array, x: jax.Array) -> jax.Array:
    return _yn_int(lax.stop_gradient(jnp.trunc(n)), x)


_YN = entry_point(_yn)
_J0 = entry_point(_j0)
_J1 = entry_point(_j1)
_Y0 = entry_point(_y0)
_Y1 = entry_point(_y1)


def j0(x: ArrayLike) -> jax.Array:
    """``J_0(x)``, mirroring ``scipy.special.j0``.  Differentiable: ``-J_1``."""
    return _J0(x)


def j1(x: ArrayLike) -> jax.Array:
    """``J_1(x)``, mirroring ``scipy.special.j1``.  Differentiable: ``J_0 - J_1/x``."""
    return _J1(x)


def y0(x: ArrayLike) -> jax.Array:
    """``Y_0(x)``, mirroring ``scipy.special.y0`` (``-inf`` at 0, nan below).
    Differentiable: ``-Y_1``."""
    return _Y0(x)


def y1(x: ArrayLike) -> jax.Array:
    """``Y_1(x)``, mirroring ``scipy.special.y1`` (``-inf`` at 0, nan below).
    Differentiable: ``Y_0 - Y_1/x``."""
    return _Y1(x)


def jn(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """``J_n(x)``, mirroring ``scipy.special.jn`` (which is ``jv``: a real ``n`` is used
    as it is).  Differentiable in ``x``."""
    return jv(n, x)


def yn(n: ArrayLike, x: ArrayLike) -> jax.Array:
    """``Y_n(x)`` for integer order, mirroring ``scipy.special.yn``: a real ``n`` is
    truncated towards 0 (SciPy truncates with a warning).  Differentiable in ``x``."""
    return _YN(n, x)


def hankel1(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Hankel function ``H^(1)_v(z) = J_v(z) + i Y_v(z)`` (complex), mirroring
    ``scipy.special.hankel1`` for real ``z`` (``z < 0``: the value above the cut; ``z = 0``
    and infinite arguments: nan).  Differentiable in ``z``."""
    return _H1(v, z)


def hankel1e(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """``H^(1)_v(z) exp(-iz)``, mirroring ``scipy.special.hankel1e`` for real ``z``."""
    return _H1E(v, z)


def hankel2(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """Hankel function ``H^(2)_v(z) = J_v(z) - i Y_v(z)`` (complex), mirroring
    ``scipy.special.hankel2`` for real ``z``.  Differentiable in ``z``."""
    return _H2(v, z)


def hankel2e(v: ArrayLike, z: ArrayLike) -> jax.Array:
    """``H^(2)_v(z) exp(iz)``, mirroring ``scipy.special.hankel2e`` for real ``z``."""
    return _H2E(v, z)


def _yn_oracle(n: Any, x: Any) -> Any:
    # yn(n, x) = yv(trunc(n), x); SciPy's yn warns on non-integer n.
    return importlib.import_module("scipy.special").yv(jnp.trunc(jnp.asarray(n)), x)


#: Float64 tolerance: relative, with an absolute floor near the zeros of J and Y (both
#: SciPy's and these values carry absolute errors of a few ulp of the amplitude there).
_TOL_JY = {"float64": (1e-12, 1e-14), "float32": (5e-6, 1e-6)}
_ORDERS = Domain(((-30.0, 30.0), (1e-3, 60.0)))
_SMALL_X = Domain(((-10.0, 10.0), (1e-4, 5.0)))
_NEG_X = Domain(((-5.0, 5.0), (-30.0, -1e-3)))
# The Hankel functions' domains stay below float32 overflow (|Y| < 1e30), where the
# parts of a complex value that overflows are not compared meaningfully.
_H_ORDERS = Domain(((-20.0, 20.0), (0.5, 60.0)))
_H_SMALL_X = Domain(((-5.0, 5.0), (1e-3, 2.0)))
_X = Domain(((1e-6, 1e3),), log=True)
_X_SIGNED = Domain(((-200.0, 200.0),))


_EDGES = tuple(EdgeCase(p) for p in ((-1.5, 0.0), (-0.5, 0.0), (-2.0, 0.0), (3.0, -2.0)))

_ORDER_X = (_ORDERS, _SMALL_X)
_HANKEL = (_H_ORDERS, _H_SMALL_X, _NEG_X)

WRAPPERS: tuple[ScipyWrapper, ...] = tuple(
    declare(
        fn.__name__,
        fn,
        domains=domains,
        differentiable=differentiable,
        tolerances=_TOL_JY,
        edge_cases=edges,
        oracle=_yn_oracle if fn is yn else None,
    )
    # (function, domains, the argument x's index, edge cases)
    for fn, domains, differentiable, edges in (
        (jv, _ORDER_X, (1,), _EDGES),
        (jve, _ORDER_X, (1,), _EDGES),
        (yv, _ORDER_X, (1,), _EDGES),
        (yve, _ORDER_X, (1,), _EDGES),
        (j0, (_X, _X_SIGNED), (0,), ()),
        (j1, (_X, _X_SIGNED), (0,), ()),
        (y0, (_X,), (0,), ()),
        (y1, (_X,), (0,), ()),
        (jn, (_ORDERS,), (1,), _EDGES),
        (yn, (_ORDERS,), (1,), _EDGES),
        (hankel1, _HANKEL, (1,), _EDGES),
        (hankel1e, _HANKEL, (1,), _EDGES),
        (hankel2, _HANKEL, (1,), _EDGES),
        (hankel2e, _HANKEL, (1,), _EDGES),
    )
)
