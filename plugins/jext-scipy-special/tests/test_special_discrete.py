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
from collections.abc import Callable
from fractions import Fraction
from math import comb
from typing import Any

import jax
import numpy as np
import pytest
import scipy.stats as st  # type: ignore[import-untyped]
from _special_cases import x64
from jext_scipy_special._functions import _discrete
from jext_scipy_special._functions._common import CHUNK_SIZE
from test_special_families import forward_and_reversed

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import _compare

WRAPPERS: tuple[ScipyWrapper, ...] = _discrete.WRAPPERS
_BY_NAME = {w.name: w for w in WRAPPERS}

#: Points of every float64 call of the public functions below (the most: 1,744, the value
#: tests' forward and reversed points): compiling a kernel is most of this module's time,
#: and a function compiles once per input shape, so each compiles once for the module.
SIZE = CHUNK_SIZE


def _call64(fn: Callable[..., Any], *cols: Any) -> np.ndarray:
    """``fn(*cols)`` in float64, as users call it, on ``cols`` broadcast, flattened and
    padded with their last point to :data:`SIZE` points (the answer in ``cols``' shape;
    an element's value does not depend on its batch, which the value tests check)."""
    arrays = np.broadcast_arrays(*(np.asarray(c, np.float64) for c in cols))
    flat = [np.ravel(a) for a in arrays]
    k = flat[0].size
    assert 0 < k <= SIZE, (k, SIZE)
    padded = [np.concatenate([c, np.full(SIZE - k, c[-1])]) for c in flat]
    # jax.enable_x64, as forward_and_reversed: a compiled program is cached under the
    # setting in force, and a global jax_enable_x64 is another one than this context's.
    with jax.enable_x64(True):
        return np.asarray(fn(*padded))[:k].reshape(arrays[0].shape)


@functools.cache
def _evaluate(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    return forward_and_reversed(_BY_NAME[name], "float64", size=SIZE)


@pytest.mark.parametrize("name", list(_BY_NAME))
def test_values_edges_and_batch_independence(name: str) -> None:
    forward, backward, want, args = _evaluate(name)
    np.testing.assert_array_equal(forward.view(np.uint64), backward.view(np.uint64))
    rtol, atol = _BY_NAME[name].tolerances["float64"]
    with np.errstate(all="ignore"):
        _compare(forward, want, rtol, atol, f"{name} float64", args)


def _exact_binomial_cdf(n: int, p: float) -> list[Fraction]:
    """``P(X <= k)`` for ``k = 0..n`` in exact rational arithmetic (``p`` is a binary
    fraction, so every term is exact)."""
    q, acc, out = Fraction(p), Fraction(0), []
    for k in range(n + 1):
        acc += comb(n, k) * q**k * (1 - q) ** (n - k)
        out.append(acc)
    return out


@pytest.mark.numerics
def test_binomial_quantiles_at_the_rounded_cdf_values() -> None:
    """``q`` set to ``cdf(k)`` (``sf(k)``) rounded to the nearest float64 (exact rational
    arithmetic) at every integer of six supports: ``ppf`` is ``k``
    there, where rounding decides, and ``isf`` is ``k``.  Where ``cdf(k)`` rounds to 1,
    ``ppf(1)`` is ``n``; where ``sf(k)`` rounds to 1 (the first ``k`` of p = 0.91),
    ``isf(1)`` is -1, SciPy's convention.  No library's rounding is the reference: SciPy's
    own ``ppf`` misses ``k`` at 32 of these points."""
    supports = [(1, 0.5), (7, 0.13), (30, 0.5), (30, 0.91), (120, 0.5), (120, 0.03)]
    cdf = [(n, p, k, c) for n, p in supports for k, c in enumerate(_exact_binomial_cdf(n, p))]
    cdf = [row for row in cdf if row[2] < row[0]]
    n, p, k = (np.array([row[i] for row in cdf], np.float64) for i in range(3))
    q = np.array([float(row[3]) for row in cdf])  # float(Fraction) rounds to nearest
    s = np.array([float(1 - row[3]) for row in cdf])
    # loc = 0 given, as the value tests give it: one program serves both.
    got_ppf = _call64(_discrete.binom_ppf, q, n, p, 0.0)
    got_isf = _call64(_discrete.binom_isf, s, n, p, 0.0)
    np.testing.assert_array_equal(got_ppf, np.where(q < 1.0, k, n))
    np.testing.assert_array_equal(got_isf, np.where(s < 1.0, k, -1.0))


def test_poisson_isf_keeps_tiny_upper_tails() -> None:
    """SciPy's ``poisson.isf`` returns nan below 1.1e-16 (it inverts ``1 - q``); the
    wrapper returns the smallest ``k`` with ``pdtrc(k, mu) <= q``."""
    import scipy.special as sc  # type: ignore[import-untyped]

    q = np.array([1e-20, 1e-100, 1e-300])
    k = _call64(_discrete.poisson_isf, q, 5.0, 0.0)  # loc = 0 given, as the value tests give it
    assert np.isnan(st.poisson.isf(q, 5.0)).all()
    assert (sc.pdtrc(k, 5.0) <= q).all()
    assert (sc.pdtrc(k - 1.0, 5.0) > q).all()


def test_cdf_gradient_is_the_closed_form_and_quantiles_move_with_loc_only() -> None:
    """``d/dp binom.cdf = -(n-k) C(n,k) p^k (1-p)^(n-k-1)``; quantiles: 0 in ``q``, 1 in
    ``loc``; counts are not differentiated."""
    import scipy.special as sc

    k, n, p = 3.0, 10.0, 0.3
    with x64(True):  # each compiled whole, not op by op
        d = float(jax.jit(jax.grad(_discrete.binom_cdf, argnums=2))(k, n, p))
        dq, dloc = jax.jit(jax.grad(_discrete.binom_ppf, argnums=(0, 3)))(0.4, n, p, 2.0)
        with pytest.raises(NotImplementedError, match=r"binom\.cdf.*'n'"):
            jax.grad(_discrete.binom_cdf, argnums=1)(k, n, p)
    want = -(n - k) * sc.binom(n, k) * p**k * (1 - p) ** (n - k - 1)
    np.testing.assert_allclose(d, want, rtol=1e-13)
    assert (float(dq), float(dloc)) == (0.0, 1.0)
