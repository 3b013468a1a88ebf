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


def test_ellipj_float32_dn_where_cn_is_small() -> None:
    # CI's failing point (cn ~ -8e-4, sn ~ 1): dn as cn / cos(phi_1 - phi_0) inherited
    # cn's float32 relative error (0.91441 vs 0.91481).  Plus a float32 sweep over the
    # declared domain, at the wrapper's float32 tolerance, in one compiled program.
    rng = np.random.default_rng(7)
    u = np.concatenate([[-4.9236], rng.uniform(-10.0, 10.0, 4000)]).astype(np.float32)
    m = np.concatenate([[0.16313], rng.uniform(0.0, 1.0, 4000)]).astype(np.float32)
    ours = [np.asarray(v) for v in jax.jit(ef.ellipj)(u, m)]
    for got, want in zip(ours, sc.ellipj(u.astype(np.float64), m.astype(np.float64)), strict=True):
        np.testing.assert_allclose(got, want, rtol=5e-6, atol=5e-6)
