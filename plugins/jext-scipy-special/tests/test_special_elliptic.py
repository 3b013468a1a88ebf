"""Accuracy of the elliptic kernels where their fast paths change method: ``ellipj`` for
``m`` within ``1e-7 / cosh(u)^2`` of 1 and ``elliprc`` in closed form near ``x = y`` and
at extreme ratios (held to SciPy, which is accurate at these points)."""

from __future__ import annotations

import jax
import numpy as np
import scipy.special as sc  # type: ignore[import-untyped]
from jext_scipy_special._functions import _elliptic_family as ef


def test_ellipj_near_m_one_keeps_cn_and_dn_relative_accuracy() -> None:
    # cn, dn ~ sech(u) ~ 1e-3 here: sqrt(1 - m sn^2) or the Landen amplitude would keep
    # only ~1e-10 of them (the kernel before this test did).
    u = np.array([-8.0, -3.0, 0.5, 5.0, 8.0, 8.0, 2.0])
    m = 1.0 - np.array([2.0**-50, 1e-12, 1e-9, 1e-13, 2.0**-52, 0.0, 3e-9])
    with jax.enable_x64(True):
        ours = [np.asarray(v) for v in ef.ellipj(u, m)]
    for got, want in zip(ours, sc.ellipj(u, m), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0)


def test_elliprc_closed_form_near_equal_and_extreme_arguments() -> None:
    x = np.array([1.0, 1.0, 1.0, 3.0, 0.0, 1e300, 1e-300, 2.0, 2.0])
    y = np.array([1.0 + 1e-9, 1.0 - 1e-9, 1.0, 3.0 * (1 + 2e-16), 2.0, 1e-300, 1e300, -1e-9, -5.0])
    with jax.enable_x64(True):
        got = np.asarray(ef.elliprc(x, y))
    np.testing.assert_allclose(got, sc.elliprc(x, y), rtol=2e-15, atol=0.0)
