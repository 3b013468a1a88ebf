"""float32 accuracy regressions, each against mpmath at points where it once failed."""

from __future__ import annotations

import jax.numpy as jnp
import mpmath  # type: ignore[import-untyped]
import numpy as np
from _special_cases import x64
from jext_scipy_special._functions._misc_family import zetac


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
