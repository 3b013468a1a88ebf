"""Accuracy of the elliptic kernels where their fast paths change method: ``ellipj`` for
``m`` within ``1e-7 / cosh(u)^2`` of 1 and ``elliprc`` in closed form near ``x = y`` and
at extreme ratios (held to SciPy, which is accurate at these points)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.special as sc  # type: ignore[import-untyped]
from jext_scipy_special._functions import _elliptic_family as ef


def test_ellipj_near_m_one_keeps_cn_and_dn_relative_accuracy() -> None:
    # cn, dn ~ sech(u) ~ 1e-3 here: sqrt(1 - m sn^2) or the Landen amplitude would keep
    # only ~1e-10 of them.
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


@pytest.mark.numerics
def test_ellipj_dn_where_sn_rounds_to_one() -> None:
    # m an ulp or a few below 1, |u| too large for the expansion about m = 1: sn rounds
    # to +-1 an ulp short there, and dn^2 = (1 - m) + m (1 - sn)(1 + sn) lost the rest
    # (float32 dn(10 | 1 - 1.2e-7) came out 3.45e-4 for 4.19e-4; float64 dn near
    # m = 1 - 1e-11 carried 5e-13 absolute).  SciPy is accurate at these points.
    u = np.array([-10.0, 10.0, 5.0, -8.9, 9.7, 3.65])
    m32 = 1.0 - np.array([2.0**-23, 2.0**-24, 2.0**-23, 2.0**-24, 3 * 2.0**-24, 2.0**-22])
    m64 = 1.0 - np.array([1e-11, 2.0**-50, 1e-12, 9e-12, 2.4e-15, 3e-11])
    with jax.enable_x64(True):
        dn64 = np.asarray(jax.jit(ef.ellipj)(u, m64)[2])
    dn32 = np.asarray(jax.jit(ef.ellipj)(u.astype(np.float32), m32.astype(np.float32))[2])
    np.testing.assert_allclose(dn64, sc.ellipj(u, m64)[2], rtol=0.0, atol=1e-13)
    np.testing.assert_allclose(dn32, sc.ellipj(u, m32)[2], rtol=0.0, atol=5e-6)
