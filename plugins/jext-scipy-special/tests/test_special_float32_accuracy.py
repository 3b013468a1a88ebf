"""float32 accuracy regressions, each against mpmath at points where it once failed."""

from __future__ import annotations

import jax.numpy as jnp
import mpmath  # type: ignore[import-untyped]
import numpy as np
import pytest
from _special_cases import x64
from jext_scipy_special._functions._elementary import inv_boxcox, inv_boxcox1p
from jext_scipy_special._functions._misc_family import zetac

# Each test holds float32 results to mpmath within a few ulp.
pytestmark = pytest.mark.numerics


def test_zetac_float32_reflection_keeps_its_bits() -> None:
    """Below ``x = -10`` the reflection's magnitude reaches 1e38: its logarithms (~190)
    once carried their float32 rounding into the result (2e-5 at -61, 5e-5 near -66), and
    XLA's float32 exp reduces large arguments with a rounded log 2 (2e-6 at 80)."""
    x = np.concatenate(
        [np.linspace(-64.0, -10.0, 55), [-61.0, -63.87, -63.34, -50.02, -45.3, -18.05]]
    ).astype(np.float32)
    with x64(False):
        got = np.asarray(zetac(jnp.asarray(x)), np.float64)
    with mpmath.workdps(30):
        ref = np.array([float(mpmath.zeta(mpmath.mpf(float(v))) - 1) for v in x])
    # zetac has a zero at -18.07 (zeta = 1): absolute there.
    err = np.abs(got - ref) / np.maximum(np.abs(ref), 1.0)
    worst = int(np.argmax(err))
    assert err[worst] <= 1e-6, f"zetac({x[worst]}) = {got[worst]}, mpmath {ref[worst]}"


def test_inv_boxcox_where_lmbda_y_leaves_the_normal_range() -> None:
    """``log1p(lmbda y) / lmbda`` is ``y`` to rounding where ``lmbda y`` is below an ulp;
    the product itself may be subnormal there, which XLA flushes to 0: float32
    ``inv_boxcox(0.4, 1.6e-38)`` through that product is ``exp(0) = 1`` for ``exp(0.4)``,
    and ``inv_boxcox1p(4.4e-25, 5.6e-18)`` 0 for 4.4e-25.  The limits are exact: mpmath's."""
    y = np.array([0.39661678671836853, -3.5, 4.448212602104071e-25, 20.0], np.float32)
    lmbda = np.array([1.5543932642790784e-38, 2e-38, 5.6497639385163055e-18, -1e-30], np.float32)
    with x64(False):
        got = np.asarray(inv_boxcox(jnp.asarray(y), jnp.asarray(lmbda)), np.float64)
        got1p = np.asarray(inv_boxcox1p(jnp.asarray(y), jnp.asarray(lmbda)), np.float64)
    with mpmath.workdps(60):
        powers = [
            mpmath.exp(mpmath.log1p(mpmath.mpf(float(lm)) * float(v)) / mpmath.mpf(float(lm)))
            for v, lm in zip(y, lmbda, strict=True)
        ]
    np.testing.assert_allclose(got, [float(w) for w in powers], rtol=2e-7)
    np.testing.assert_allclose(got1p, [float(w - 1) for w in powers], rtol=2e-7)
