"""Derivatives of the family wrappers through ``jext check``'s own gradient check.

The check compares ``jax.grad`` (under ``vmap``) with central differences of the wrapper at
sampled points of each domain, for every declared differentiable argument; a wrong rule
fails it (``tests/test_scipy_checks.py`` shows that with a deliberately wrong derivative).
"""

from __future__ import annotations

import pytest
from jext_scipy_special._functions import _bessel_family, _elliptic_family, _gamma_family

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import run_scipy_check

FAMILY = [
    w
    for w in (*_bessel_family.WRAPPERS, *_elliptic_family.WRAPPERS, *_gamma_family.WRAPPERS)
    if w.differentiable
]


@pytest.mark.parametrize("wrapper", FAMILY, ids=[w.name for w in FAMILY])
def test_gradients_match_finite_differences(wrapper: ScipyWrapper) -> None:
    result = run_scipy_check(wrapper, "gradients")
    assert result.status == "pass", result.message
