"""The discrete ``scipy.stats`` methods (``_functions/_discrete.py``) against SciPy.

Per wrapper one jitted float64 call evaluates every sampled point of every declared
domain, the automatic edge grid and the declared edge cases (deep tails, ``q`` exactly at
a ``cdf`` value), forward and reversed: values are held to ``scipy.stats`` and each
element must come out with the same bits in both orders.  float32, gradients (the closed
forms against finite differences of SciPy) and ``jit``/``vmap`` go through ``jext check``
in the README's main job, which CI runs beside this suite.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
import scipy.stats as st  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions import _discrete
from test_special_families import forward_and_reversed

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import _compare

WRAPPERS: tuple[ScipyWrapper, ...] = _discrete.WRAPPERS
_BY_NAME = {w.name: w for w in WRAPPERS}


@functools.cache
def _evaluate(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    return forward_and_reversed(_BY_NAME[name], "float64")


@pytest.mark.parametrize("name", list(_BY_NAME))
def test_values_edges_and_batch_independence(name: str) -> None:
    forward, backward, want, args = _evaluate(name)
    np.testing.assert_array_equal(forward.view(np.uint64), backward.view(np.uint64))
    rtol, atol = _BY_NAME[name].tolerances["float64"]
    with np.errstate(all="ignore"):
        _compare(forward, want, rtol, atol, f"{name} float64", args)


def test_binomial_quantiles_at_scipys_own_cdf_values() -> None:
    """``q`` set to SciPy's ``cdf(k)`` (``sf(k)``) at every integer of six supports (one
    program each): ``ppf`` equals SciPy's there, where rounding decides, and ``isf`` is
    ``k`` (SciPy's ``isf`` returns ``n`` once ``q`` is below ~1e-17)."""
    n = np.repeat([1.0, 7.0, 30.0, 30.0, 120.0, 120.0], 121)
    p = np.repeat([0.5, 0.13, 0.5, 0.91, 0.5, 0.03], 121)
    k = np.tile(np.arange(121.0), 6)
    inside = k < n
    n, p, k = n[inside], p[inside], k[inside]
    q, s = st.binom.cdf(k, n, p), st.binom.sf(k, n, p)
    with x64(True):
        got_ppf = np.asarray(jax.jit(_discrete.binom_ppf)(q, n, p))
        got_isf = np.asarray(jax.jit(_discrete.binom_isf)(s, n, p))
    np.testing.assert_array_equal(got_ppf, st.binom.ppf(q, n, p))
    # Where sf(k) rounds to 1 (the first k of p = 0.91), isf(1) = -1 by convention and
    # the integers below the first sf < 1 share one answer: SciPy's there.
    want = np.where(s >= 1.0 - 2e-16, st.binom.isf(s, n, p), k)
    np.testing.assert_array_equal(got_isf, want)


def test_poisson_isf_keeps_tiny_upper_tails() -> None:
    """SciPy's ``poisson.isf`` returns nan below 1.1e-16 (it inverts ``1 - q``); the
    wrapper returns the smallest ``k`` with ``pdtrc(k, mu) <= q``."""
    import scipy.special as sc  # type: ignore[import-untyped]

    q = np.array([1e-20, 1e-100, 1e-300])
    with x64(True):
        k = np.asarray(_discrete.poisson_isf(q, 5.0))
    assert np.isnan(st.poisson.isf(q, 5.0)).all()
    assert (sc.pdtrc(k, 5.0) <= q).all()
    assert (sc.pdtrc(k - 1.0, 5.0) > q).all()


def test_cdf_gradient_is_the_closed_form_and_quantiles_move_with_loc_only() -> None:
    """``d/dp binom.cdf = -(n-k) C(n,k) p^k (1-p)^(n-k-1)``; quantiles: 0 in ``q``, 1 in
    ``loc``; counts are not differentiated."""
    import scipy.special as sc

    k, n, p = 3.0, 10.0, 0.3
    with x64(True):
        d = float(jax.grad(_discrete.binom_cdf, argnums=2)(k, n, p))
        dq, dloc = jax.grad(_discrete.binom_ppf, argnums=(0, 3))(0.4, n, p, 2.0)
        with pytest.raises(NotImplementedError, match=r"binom\.cdf.*'n'"):
            jax.grad(_discrete.binom_cdf, argnums=1)(k, n, p)
    want = -(n - k) * sc.binom(n, k) * p**k * (1 - p) ** (n - k - 1)
    np.testing.assert_allclose(d, want, rtol=1e-13)
    assert (float(dq), float(dloc)) == (0.0, 1.0)
