"""The Bessel functions of real order and the Hankel functions: what ``jext check`` does
not cover.

Every check of ``jext check`` (values on the declared domains and edge grid in float64 and
float32, ``jit``/``vmap``/scalar calls, gradients against finite differences of SciPy) runs
on each wrapper in the README's main job, which CI runs beside this suite; here: the
checker's complex comparison catching wrong rules, and points where SciPy itself is off.
SciPy's own tables for ``jv, jn, yv, yn`` are checked in ``test_special_scipy_data.py``,
batch independence in ``test_special_batch.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions import _bessel_jy_family as jy_family

from jext.scipy import Domain
from jext.testing._scipy_checks import run_scipy_check

WRAPPERS = jy_family.WRAPPERS


def _h1_half(v: jax.Array, z: jax.Array) -> jax.Array:
    """``H^(1)_(1/2)(z) = sqrt(2 / (pi z)) (sin z - i cos z)`` for ``z > 0`` (order 1/2 only)."""
    r = jnp.sqrt(2.0 / (jnp.pi * z)) + 0.0 * v
    return jax.lax.complex(r * jnp.sin(z), -r * jnp.cos(z))


def test_a_wrong_complex_result_or_derivative_fails_the_checks() -> None:
    """The complex comparison catches a conjugated value, and forward-mode gradients of a
    complex result catch a wrong derivative (``hankel1``'s value with ``hankel2``'s tangent).

    The checker's verdicts are the point, so ``hankel1``'s wrapper (SciPy's ``hankel1`` the
    oracle, its tolerances and differentiable argument) runs on the closed form of order
    1/2 instead of the kernel, whose two compilations took most of a minute; the kernel
    itself passes every check in ``jext check`` (README, Set-up; CI's main job).
    """
    full = next(w for w in WRAPPERS if w.name == "hankel1")
    h1 = dataclasses.replace(
        full, function=_h1_half, domains=(Domain(((0.5, 0.5), (0.1, 30.0))),), dtypes=("float64",)
    )
    # The closed form passes both checks: the failures below are the wrong rules' alone.
    assert run_scipy_check(h1, "values").status == "pass"
    assert run_scipy_check(h1, "gradients").status == "pass"
    conj = dataclasses.replace(h1, function=lambda v, z: jnp.conj(_h1_half(v, z)))
    assert run_scipy_check(conj, "values").status == "fail"

    @jax.custom_jvp
    def wrong(v: jax.Array, z: jax.Array) -> jax.Array:
        return _h1_half(v, z)

    @wrong.defjvp
    def _wrong_jvp(primals: Any, tangents: Any) -> Any:
        v, z = primals
        h2 = jax.jvp(lambda t: jnp.conj(_h1_half(v, t)), (z,), (tangents[1],))[1]
        return wrong(v, z), h2

    assert run_scipy_check(dataclasses.replace(h1, function=wrong), "gradients").status == "fail"


@pytest.mark.numerics
def test_where_scipy_is_off_these_values_hold_to_mpmath() -> None:
    """Large orders and arguments: SciPy (Cephes / AMOS) loses up to 1e-8 relative near the
    zeros there; these values agree with mpmath to a few ulp of the amplitude."""
    v = np.array([427.75068638893555, 72.35856049273352, -73.46401438066582, 386.059973338999])
    x = np.array([15311.254005817422, 497.15604379109334, 300.4781679397571, 35888.378846227])
    with x64(True):
        got_j = np.asarray(jy_family.jv(v[:2], x[:2]))
        got_y = np.asarray(jy_family.yv(v[2:], x[2:]))
    with mpmath.workdps(40):
        want_j = [float(mpmath.besselj(a, b)) for a, b in zip(v[:2], x[:2], strict=True)]
        want_y = [float(mpmath.bessely(a, b)) for a, b in zip(v[2:], x[2:], strict=True)]
    floor = 1e-14 * np.sqrt(2.0 / (np.pi * x))  # 1e-14 of the amplitude
    np.testing.assert_array_less(np.abs(got_j - want_j), floor[:2])
    np.testing.assert_array_less(np.abs(got_y - want_y), floor[2:])
    scipy_err = np.abs(np.concatenate([sc.jv(v[:2], x[:2]) - want_j, sc.yv(v[2:], x[2:]) - want_y]))
    assert (scipy_err > floor).all()  # the reason these points are not held to SciPy


def test_order_0_and_1_kernels_hold_to_mpmath_and_scipy() -> None:
    """``j0, j1, y0, y1`` (loop-free kernels: series to 5, fitted Hankel form beyond)
    against mpmath and SciPy: the middle range and both sides of the split at 5, near
    zeros (the absolute floor), and large arguments on both sides of the end of the
    split-pi/4 phase reduction (2e8)."""
    x = np.array([
        0.3, 0.8936, 2.1971, 2.4048, 3.8317, 4.999999, 5.0, 5.000001, 5.5201, 7.0, 8.6537,
        11.79, 14.5, 19.6159, 24.9, 33.3, 123.456, 1e4, 1.9e8, 2.1e8, 1e15,
    ])  # fmt: skip
    with x64(True):
        fns = (jy_family.j0, jy_family.j1, jy_family.y0, jy_family.y1)
        got = np.asarray(jax.jit(lambda t: jnp.stack([f(t) for f in fns]))(x))
    with mpmath.workdps(40):
        want = np.array([[float(f(n, t)) for t in x] for f, n in
                         ((mpmath.besselj, 0), (mpmath.besselj, 1),
                          (mpmath.bessely, 0), (mpmath.bessely, 1))])  # fmt: skip
    np.testing.assert_array_less(np.abs(got - want), 1e-13 * np.abs(want) + 1e-15)
    scipy = np.array([f(x) for f in (sc.j0, sc.j1, sc.y0, sc.y1)])
    near = x <= 1e3  # beyond, SciPy's own phase (x - pi/4, rounded) is off
    np.testing.assert_array_less(
        np.abs(got - scipy)[:, near], 1e-12 * np.abs(scipy[:, near]) + 1e-14
    )


def test_yn_overflow_keeps_the_sign_of_the_order() -> None:
    """``yn`` by forward recurrence: infinite where ``Y_n`` overflows (``-inf``, ``+inf``
    for odd negative ``n``), finite just below, like SciPy."""
    n = np.array([1.0, 2.0, -1.0, -3.0, 170.0, -171.0, 30.0])
    x = np.array([1e-300, 1e-300, 1e-300, 1e-100, 1.0, 1.0, 1e-3])
    with x64(True):
        got = np.asarray(jy_family.yn(n, x))
    want = sc.yn(n.astype(int), x)
    assert (np.isinf(got) == np.isinf(want)).all() and (np.sign(got) == np.sign(want)).all()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-13)
