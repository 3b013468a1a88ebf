"""``struve`` and ``modstruve`` against SciPy, and against mpmath where SciPy is off.

Values: per wrapper and dtype one jitted call over every sampled point, the automatic edge
grid and the declared edge cases, forward and reversed (bitwise the same both ways), held
to SciPy at the declared tolerance.  Gradients: ``jext check``'s own gradient check.  SciPy
itself is up to 1.6e-11 off (L) where its methods hand over; there mpmath at 40 digits is
the reference, at 5e-14.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.special as sc
from jext_scipy_special._functions import _struve
from test_special_families import assert_values_and_batch_independence

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import run_scipy_check

WRAPPERS: tuple[ScipyWrapper, ...] = _struve.WRAPPERS
IDS = [w.name for w in WRAPPERS]

# Where SciPy's own answer is 1e-12 .. 2e-11 off (found against mpmath), the method
# boundaries (x = 37 between the series and the asymptotic expansion, x = 1.5 v), a
# half-integer order and the cancelling region of H's series (x ~ 30, small v).
_V = np.array(
    [0.5273736445498471, -6.481293883123273, -5.044088598585911, -3.867438756075334,
     -0.5217, 0.0, 0.0, 30.0, 30.0, -2.5, -1.935, 18.64]
)  # fmt: skip
_X = np.array(
    [12.780228019833261, 14.591461668803735, 26.633917052186074, 14.371605595817703,
     13.94, 36.99, 37.01, 44.99, 45.01, 7.3, 35.01, 42.23]
)  # fmt: skip


def _mpmath(fn: object) -> np.ndarray:
    with mpmath.workdps(40):
        return np.array([float(fn(mpmath.mpf(v), mpmath.mpf(x))) for v, x in zip(_V, _X)])  # type: ignore[operator]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("wrapper", WRAPPERS, ids=IDS)
def test_values_edges_and_batch_independence(wrapper: ScipyWrapper, dtype: str) -> None:
    assert_values_and_batch_independence(wrapper, dtype)


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=IDS)
def test_gradients_through_jext_check(wrapper: ScipyWrapper) -> None:
    result = run_scipy_check(wrapper, "gradients")
    assert result.status == "pass", result.message


def test_where_scipy_is_off_mpmath_holds_the_line() -> None:
    """At SciPy's worst points on the declared domains (H 3e-12, L 1.6e-11 off) and at the
    method boundaries the wrappers are within 5e-14 of mpmath; SciPy is not."""
    with jax.enable_x64(True):
        got_h = np.asarray(_struve.struve(_V, _X))
        got_l = np.asarray(_struve.modstruve(_V, _X))
    want_h, want_l = _mpmath(mpmath.struveh), _mpmath(mpmath.struvel)
    np.testing.assert_allclose(got_h, want_h, rtol=5e-14)
    np.testing.assert_allclose(got_l, want_l, rtol=5e-14)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(sc.modstruve(_V, _X), want_l, rtol=5e-14)


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
        want = [float(mpmath.struveh(a, b)) for a, b in zip(v, x)]
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(naive, want, rtol=5e-14)


def test_derivative_is_the_order_recurrence() -> None:
    """``d/dx H_v = H_(v-1) - (v/x) H_v`` (and for ``L``), against mpmath's derivative of
    the function itself, so that a wrong recurrence (e.g. ``+ (v/x)``) is caught."""
    v, x = np.array([0.3, -2.2, 7.5]), np.array([3.0, 41.0, 12.0])
    with jax.enable_x64(True):
        for fn, ref in ((_struve.struve, mpmath.struveh), (_struve.modstruve, mpmath.struvel)):
            got = np.asarray(jax.vmap(jax.grad(fn, argnums=1))(jnp.asarray(v), jnp.asarray(x)))
            with mpmath.workdps(40):
                want = [float(mpmath.diff(lambda t: ref(a, t), b)) for a, b in zip(v, x)]
            np.testing.assert_allclose(got, want, rtol=1e-12)
