"""Derivatives (float64): custom_jvp rules vs central differences and vs the
closed forms evaluated with SciPy; NaN-free on the sampled domains; the
arguments without derivatives raise.

The Bessel, elliptic and error/gamma family wrappers' gradients against central
differences of SciPy at sampled points of every domain are ``jext check``'s ``gradients``
check, which the README's set-up runs on every installed wrapper (CI's main job), so
this suite does not repeat it per wrapper.  ``tests/test_scipy_checks.py`` shows the check
failing on a deliberately wrong derivative.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _special_cases import CASE_IDS, CASES, Case, reference, sample, x64
from jext_scipy_special import _functions as jf

N = 3000

#: Per case one compiled program: ``jit(vmap(value_and_grad))`` in the differentiated
#: argument, the values (at ``x +- h``) for the central differences and the derivatives
#: (at ``x``) alike.
VALUE_AND_GRAD: dict[str, Any] = {
    c.name: jax.jit(jax.vmap(jax.value_and_grad(c.fn, argnums=c.diff_arg))) for c in CASES
}


def _points(case: Case) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng([7, CASE_IDS.index(case.name)])
    return tuple(np.asarray(a, np.float64) for a in case.grad_points(rng, N))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_grad_vs_central_difference_and_closed_form(case: Case) -> None:
    args = _points(case)
    i = case.diff_arg
    x = args[i]
    h = 1e-6 * np.where(x != 0, np.abs(x), 1e-3)
    plus = list(args)
    minus = list(args)
    plus[i], minus[i] = x + h, x - h
    with x64(True):
        g = np.asarray(VALUE_AND_GRAD[case.name](*args)[1])
        up = np.asarray(VALUE_AND_GRAD[case.name](*plus)[0])
        down = np.asarray(VALUE_AND_GRAD[case.name](*minus)[0])
    fd = (up - down) / ((x + h) - (x - h))
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, fd, rtol=2e-6, atol=1e-10)
    with np.errstate(all="ignore"):
        exact = np.asarray(case.deriv(*args), np.float64)
    np.testing.assert_allclose(g, exact, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_grad_nan_free_on_value_domain(case: Case) -> None:
    args = sample(case, np.float64, N)
    ref = reference(case, args)
    with x64(True):
        g = np.asarray(VALUE_AND_GRAD[case.name](*args)[1])
    inside = np.isfinite(ref)
    assert not np.isnan(g[inside]).any(), args[case.diff_arg][inside & np.isnan(g)][:5]


@pytest.mark.parametrize(
    ("fn", "argnum", "args"),
    [
        (jf.stdtr, 0, (3.0, 0.5)),
        (jf.gammaincinv, 0, (2.0, 0.5)),
        (jf.kv, 0, (1.5, 2.0)),
        (jf.kve, 0, (1.5, 2.0)),
    ],
    ids=["stdtr-df", "gammaincinv-a", "kv-v", "kve-v"],
)
def test_nondifferentiable_arguments_raise(
    fn: object, argnum: int, args: tuple[float, ...]
) -> None:
    assert callable(fn)
    with x64(True), pytest.raises(NotImplementedError, match="not differentiable"):
        jax.grad(fn, argnums=argnum)(*args)


def test_second_derivatives() -> None:
    """Higher order works: the jvp rules are written in terms of the functions."""
    z = np.array([0.3, 1.7, 4.0, 25.0])
    v = np.array([0.0, 0.4, 2.5, 7.0])
    with x64(True):
        d2 = np.asarray(jax.vmap(jax.grad(jax.grad(jf.kv, 1), 1))(v, z))
        w = np.asarray(jf.lambertw(z))
        d2w = np.asarray(jax.vmap(jax.grad(jax.grad(jf.lambertw)))(z))
    # K_v'' = K_v (1 + v^2/z^2) - K_v' / z  (Bessel's equation)
    import scipy.special as sc  # type: ignore[import-untyped]

    kv, dkv = sc.kv(v, z), sc.kvp(v, z)
    np.testing.assert_allclose(d2, kv * (1 + v**2 / z**2) - dkv / z, rtol=1e-10)
    # W'' = -W^2 (W + 2) / (z^2 (1 + W)^3)
    np.testing.assert_allclose(d2w, -(w**2) * (w + 2) / (z**2 * (1 + w) ** 3), rtol=1e-10)


def test_grad_float32_runs() -> None:
    g = jax.jit(jax.grad(lambda t: jnp.sum(jf.stdtr(jnp.float32(4.0), t))))(
        jnp.array([0.5], jnp.float32)
    )
    assert g.dtype == jnp.float32
    assert abs(float(g[0]) - 0.32226187) < 1e-6  # scipy.stats.t.pdf(0.5, 4)
