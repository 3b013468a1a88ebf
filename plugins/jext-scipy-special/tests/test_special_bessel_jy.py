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
import scipy.special as sc  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions import _bessel_jy_family as jy_family

from jext.testing._scipy_checks import run_scipy_check

WRAPPERS = jy_family.WRAPPERS


def test_a_wrong_complex_result_or_derivative_fails_the_checks() -> None:
    """The complex comparison catches a conjugated value, and forward-mode gradients of a
    complex result catch a wrong derivative (``hankel1``'s value with ``hankel2``'s tangent)."""
    full = next(w for w in WRAPPERS if w.name == "hankel1")
    # One domain, float64 only: the point is the verdict, not the coverage.
    h1 = dataclasses.replace(full, domains=full.domains[:1], dtypes=("float64",))
    conj = dataclasses.replace(h1, function=lambda v, z: jnp.conj(jy_family.hankel1(v, z)))
    assert run_scipy_check(conj, "values").status == "fail"

    @jax.custom_jvp
    def wrong(v: jax.Array, z: jax.Array) -> jax.Array:
        return jy_family.hankel1(v, z)

    @wrong.defjvp
    def _wrong_jvp(primals: Any, tangents: Any) -> Any:
        v, z = primals
        derivative = jax.jvp(lambda t: jy_family.hankel2(v, t), (z,), (tangents[1],))[1]
        return wrong(v, z), derivative

    assert run_scipy_check(dataclasses.replace(h1, function=wrong), "gradients").status == "fail"


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
