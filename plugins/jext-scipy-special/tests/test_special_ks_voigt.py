"""``kolmogorov, kolmogi, smirnov, smirnovi`` and ``voigt_profile`` against SciPy, and their
kernels against mpmath where SciPy is not the better reference.

Values: per wrapper and dtype one jitted call over every sampled point, the automatic edge
grid and the declared edge cases, forward and reversed (bitwise the same both ways), held
to SciPy at the declared tolerance.  Gradients: ``jext check``'s own gradient check (JAX's
derivative against central differences of the wrapper, per differentiable argument).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from jext_scipy_special._functions import _ks_family, _voigt
from test_special_families import assert_values_and_batch_independence

from jext.scipy import ScipyWrapper

WRAPPERS: tuple[ScipyWrapper, ...] = _ks_family.WRAPPERS + _voigt.WRAPPERS
IDS = [w.name for w in WRAPPERS]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("wrapper", WRAPPERS, ids=IDS)
def test_values_edges_and_batch_independence(wrapper: ScipyWrapper, dtype: str) -> None:
    assert_values_and_batch_independence(wrapper, dtype)


# Gradients against finite differences of SciPy are ``jext check``'s ``gradients`` check,
# which the README's set-up runs on every installed wrapper (CI's main job); this module
# does not repeat it.


def test_faddeeva_function_matches_mpmath_where_the_methods_meet() -> None:
    """Near the real axis (where the correction term carries ``e^(-x^2)``), next to the
    trapezoidal nodes (where the shifted nodes take over) and on both sides of the
    boundaries to the continued fraction: 1e-13 relative in each part (SciPy's ``wofz``
    itself is 1e-13 off at ``6.0017 + 0.1129i``)."""
    z = np.array(
        [
            0.5 + 1e-12j,  # on a node, next to the axis
            0.75 + 1e-9j,  # on a shifted node
            2.0 + 0.0j,  # on the axis: Re w = e^(-4) exactly
            6.001749574921628 + 0.1128988365698316j,
            7.999 + 1e-6j,
            8.001 + 1e-6j,
            3.0 + 5.999j,
            3.0 + 6.001j,
            -4.133398821869495 + 4.4e-12j,
            0.3 + 0.2j,
        ]
    )
    with jax.enable_x64(True):
        re, im = jax.jit(_voigt.faddeeva)(jnp.asarray(z.real), jnp.asarray(z.imag))
    got = np.asarray(re) + 1j * np.asarray(im)
    with mpmath.workdps(40):
        want = np.array(
            [
                complex(mpmath.exp(-(mpmath.mpc(v) ** 2)) * mpmath.erfc(-1j * mpmath.mpc(v)))
                for v in z
            ]
        )
    np.testing.assert_allclose(got.real, want.real, rtol=1e-13)
    np.testing.assert_allclose(got.imag, want.imag, rtol=1e-13)


def _exact_smirnov(n: int, e: float) -> float:
    with mpmath.workdps(50):
        d = mpmath.mpf(e)
        total = mpmath.mpf(0)
        for j in range(int(mpmath.floor(n * (1 - d))) + 1):
            total += (
                mpmath.binomial(n, j)
                * (1 - d - mpmath.mpf(j) / n) ** (n - j)
                * (d + mpmath.mpf(j) / n) ** (j - 1)
            )
        return float(d * total)


def test_smirnov_matches_the_exact_sum() -> None:
    """Birnbaum & Tingey's sum in 50 digits.  At ``(47, 0.41...)`` XLA's own ``log1p``
    (2.7e-14 off near -0.41, raised to the 47th power) would miss by 5e-13."""
    n = np.array([47.0, 44.0, 3.0, 700.0, 20.0])
    e = np.array([0.4108685462457642, 0.00142065, 0.5, 0.05, 0.95])
    with jax.enable_x64(True):
        got = np.asarray(_ks_family.smirnov(n, e))
    want = [_exact_smirnov(int(k), float(d)) for k, d in zip(n, e, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_voigt_derivatives_far_out_against_mpmath() -> None:
    # w' = -2 z w + 2i/sqrt(pi) cancels by |z|^2 far from the origin, and dV/dsigma's
    # w + z w' by |z|^4: d/dsigma at x/sigma = 6300 from them is 13% off (4.85e-12 for
    # 5.56e-12).  Far out both come from w's asymptotic series; mpmath differentiates the profile
    # Re w(z) / (sigma sqrt(2 pi)) itself.
    points = [
        (673.1563170951003, 0.10716199028307888, 5.578172283616252),
        (70.0, 1.0, 0.5),
        (28.3, 1.0, 0.3),
        (-1e5, 0.01, 1.0),
        (3.0, 0.2, 40.0),
    ]
    x, s, g = (np.array(c) for c in zip(*points, strict=True))
    with jax.enable_x64(True):
        grads = jax.vmap(jax.grad(_voigt.voigt_profile, argnums=(0, 1, 2)))(x, s, g)
        got = np.stack([np.asarray(d) for d in grads], axis=1)

    def profile(a: object, b: object, c: object) -> object:
        z = (a + 1j * c) / (b * mpmath.sqrt(2))
        w = mpmath.exp(-(z**2)) * mpmath.erfc(-1j * z)
        return mpmath.re(w) / (b * mpmath.sqrt(2 * mpmath.pi))

    def slope(point: tuple[float, ...], j: int) -> float:
        order = tuple(int(k == j) for k in range(3))
        return float(mpmath.diff(profile, tuple(map(mpmath.mpf, point)), order))

    with mpmath.workdps(40):
        want = np.array([[slope(p, j) for j in range(3)] for p in points])
    np.testing.assert_allclose(got, want, rtol=1e-10)
