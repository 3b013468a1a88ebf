"""``struve`` and ``modstruve`` against SciPy, and against mpmath where SciPy is off.

Values: per wrapper and dtype one jitted call over every sampled point, the automatic edge
grid and the declared edge cases, forward and reversed (bitwise the same both ways), held
to SciPy at the declared tolerance.  Gradients: ``jext check``'s own gradient check.  SciPy
itself is up to 1.6e-11 off (L) where its methods hand over; there mpmath at 40 digits is
the reference, at 5e-14.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.special as sc
from jext_scipy_special._functions import _struve
from test_special_families import assert_values_and_batch_independence, forward_and_reversed

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import _compare

WRAPPERS: tuple[ScipyWrapper, ...] = _struve.WRAPPERS
IDS = [w.name for w in WRAPPERS]

_V, _X = (np.array(c) for c in zip(*_struve.HARD_POINTS, strict=True))


def _mpmath(fn: Callable[[Any, Any], Any]) -> np.ndarray:
    with mpmath.workdps(40):
        return np.array(
            [float(fn(mpmath.mpf(v), mpmath.mpf(x))) for v, x in zip(_V, _X, strict=True)]
        )


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=IDS)
def test_float32_values_edges_and_batch_independence(wrapper: ScipyWrapper) -> None:
    assert_values_and_batch_independence(wrapper, "float32")


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=IDS)
def test_float64_values_and_where_scipy_is_off_mpmath(wrapper: ScipyWrapper) -> None:
    """The float64 call of the values check also holds the declared ``HARD_POINTS`` (SciPy's
    worst points on the domains, H 3e-12 and L 1.6e-11 off, and the method boundaries) to
    mpmath at 5e-14; SciPy itself misses that there."""
    got, backward, scipy_says, args = forward_and_reversed(wrapper, "float64")
    np.testing.assert_array_equal(got.view(np.uint64), backward.view(np.uint64))
    rtol, atol = wrapper.tolerances["float64"]
    with np.errstate(all="ignore"):
        _compare(got, scipy_says, rtol, atol, f"{wrapper.name} float64", args)
    at = [
        int(np.flatnonzero((args[0] == v) & (args[1] == x))[0]) for v, x in zip(_V, _X, strict=True)
    ]
    ref = mpmath.struveh if wrapper.name == "struve" else mpmath.struvel
    want = _mpmath(ref)
    np.testing.assert_allclose(got[at], want, rtol=5e-14)
    if wrapper.name == "modstruve":
        with pytest.raises(AssertionError):
            np.testing.assert_allclose(sc.modstruve(_V, _X), want, rtol=5e-14)


# Gradients against finite differences of SciPy are ``jext check``'s ``gradients`` check,
# which the README's set-up runs on every installed wrapper (CI's main job); this module
# does not repeat it.


def test_a_plain_double_series_fails_the_same_comparison() -> None:
    """H's power series summed in plain float64 loses ~e^x / |H| of its bits by x ~ 30:
    the comparison above catches it (the wrappers sum it in double-word arithmetic)."""
    v, x = _V[5:7], _X[5:7]
    with jax.enable_x64(True):
        h = 0.5 * jnp.asarray(x)
        term, total = jnp.ones_like(h), jnp.ones_like(h)
        for k in range(120):
            term = -term * h * h / ((k + 1.5) * (k + 1.5 + jnp.asarray(v)))
            total = total + term
        prefactor = 2.0 * h ** (v + 1.0) / (np.sqrt(np.pi) * sc.gamma(v + 1.5))
        naive = np.asarray(prefactor * total)
    with mpmath.workdps(40):
        want = [float(mpmath.struveh(a, b)) for a, b in zip(v, x, strict=True)]
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(naive, want, rtol=5e-14)
