"""The elementary and gamma-distribution families against SciPy (and mpmath where SciPy is off).

Per wrapper one jitted float64 call evaluates every sampled point of every declared
domain, the automatic edge grid (+-0, +-inf, nan, domain bounds) and the declared edge
cases, in forward and in reversed order: values are held to SciPy at the declared
tolerance, and each element must come out with the same bits in both orders (no
element's value may depend on the rest of its batch).  Float32, on the same domains,
edges and tolerances, with batch independence compared bit for bit, is ``jext check``'s
``values``, ``edge_cases`` and ``jit_vmap`` checks, run on every wrapper in CI's main job.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from jext_scipy_special._functions import _elementary, _gammadist, _stats
from jext_scipy_special._functions._elementary import cosm1, cotdg, tandg

import jext.scipy
from jext._errors import DefinitionError
from jext.scipy import Domain, ScipyWrapper
from jext.scipy._scopes import in_jax
from jext.testing._scipy_checks import (
    _compare,
    _edge_points,
    _in_dtype,
    _sample,
    oracle_of,
)

WRAPPERS: tuple[ScipyWrapper, ...] = _elementary.WRAPPERS + _gammadist.WRAPPERS + _stats.WRAPPERS
IDS = [w.name for w in WRAPPERS]
N = 400  # per domain


def _points(wrapper: ScipyWrapper) -> list[np.ndarray]:
    rng = np.random.default_rng(sum(map(ord, wrapper.name)))
    cols: list[list[np.ndarray]] = [[] for _ in wrapper.domains[0].bounds]
    for domain in wrapper.domains:
        for i, col in enumerate(_sample(rng, domain, N)):
            cols[i].append(np.asarray(col, np.float64))
    for edge in _edge_points(wrapper):
        for i, value in enumerate(edge.args):
            cols[i].append(np.array([value], np.float64))
    return [np.concatenate(c) for c in cols]


def forward_and_reversed(
    wrapper: ScipyWrapper, dtype: str, size: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """One jitted call over every point of ``wrapper``'s domains and edges, forward then
    reversed: the forward values, the reversed call's values in forward order, SciPy's
    answer in ``dtype`` and the points.  With ``size``, the call is the public function's
    own, on the points padded with their last one to ``size`` (so that a module calling
    the function at that size elsewhere compiles it once)."""
    with np.errstate(all="ignore"):
        args = [a.astype(dtype).astype(np.float64) for a in _points(wrapper)]
    n = len(args[0])
    with jax.enable_x64(dtype == "float64"), np.errstate(all="ignore"):
        typed = jnp.stack([jnp.asarray(a, dtype) for a in args])
        both = jnp.concatenate([typed, typed[:, ::-1]], axis=1)
        if size is None:
            out = np.asarray(jax.jit(lambda b: wrapper.function(*b))(both))
        else:
            assert 2 * n <= size, (wrapper.name, 2 * n, size)
            padded = jnp.concatenate([both, jnp.repeat(both[:, -1:], size - 2 * n, axis=1)], 1)
            out = np.asarray(wrapper.function(*padded))[: 2 * n]
        want = _in_dtype(oracle_of(wrapper)(*args), dtype)
    return out[:n], np.ascontiguousarray(out[n:][::-1]), want, args


@pytest.mark.parametrize("wrapper", WRAPPERS, ids=IDS)
def test_values_edges_and_batch_independence(wrapper: ScipyWrapper) -> None:
    assert_values_and_batch_independence(wrapper, "float64")


def assert_values_and_batch_independence(wrapper: ScipyWrapper, dtype: str) -> None:
    """:func:`forward_and_reversed`'s two orders bitwise equal, and held to SciPy."""
    forward, backward, want, args = forward_and_reversed(wrapper, dtype)
    bits = np.dtype(f"u{forward.itemsize}")
    np.testing.assert_array_equal(forward.view(bits), backward.view(bits))
    rtol, atol = wrapper.tolerances[dtype]
    with np.errstate(all="ignore"):
        _compare(forward, want, rtol, atol, f"{wrapper.name} {dtype}", args)


# Gradients (every differentiable wrapper here, against finite differences of SciPy) and
# jit/vmap/scalar-call agreement are ``jext check``'s ``gradients`` and ``jit_vmap`` checks,
# which the README's set-up runs on every installed wrapper (CI's main job): the tests
# that ran those same two checks again here were removed to keep the suite fast.


def _mp(fn: object, x: float) -> float:
    with mpmath.workdps(40):
        return float(fn(mpmath.mpf(x)))  # type: ignore[operator]


def test_where_scipy_cancels_mpmath_holds_the_line() -> None:
    """Near 2 pi k (cosm1) and next to the poles (tandg, cotdg) SciPy loses digits;
    the wrappers do not."""
    x = np.array([6.2812989347205, 2 * np.pi + 1e-6, -4 * np.pi + 3e-7])
    d = np.array([90.00309925130144, 89.9999, 270.0001, -90.00001])
    c = np.array([1.1335271892421719e-06, 1e-9, 179.99999, -1e-6])
    with jax.enable_x64(True):
        got = [np.asarray(cosm1(x)), np.asarray(tandg(d)), np.asarray(cotdg(c))]

    def rad(t: object) -> object:
        return t * mpmath.pi / 180  # type: ignore[operator]

    want = [
        [_mp(lambda t: mpmath.cos(t) - 1, v) for v in x],
        [_mp(lambda t: mpmath.tan(rad(t)), v) for v in d],
        [_mp(lambda t: mpmath.cot(rad(t)), v) for v in c],
    ]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def test_a_naive_formula_fails_the_same_comparison() -> None:
    """The comparison used above catches the naive cotangent next to its pole."""
    c = np.array([1e-6, 1.1335271892421719e-06])
    naive = np.tan((90.0 - c) * np.pi / 180.0)  # Cephes: tan(90 - x degrees)
    want = [_mp(lambda t: mpmath.cot(t * mpmath.pi / 180), v) for v in c]
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(naive, want, rtol=1e-13)


def test_stats_distribution_methods_read_like_scipy_stats() -> None:
    from jext.scipy import stats

    chi2 = stats.chi2
    assert chi2.ppf.jext_wrapper.name == "chi2.ppf"  # the plugin's wrapper ...
    assert chi2.pdf is jax.scipy.stats.chi2.pdf  # ... next to jax.scipy's own methods
    assert stats.gamma.isf.jext_wrapper.mirrors == "scipy.stats.gamma.isf"
    assert stats.norm is jax.scipy.stats.norm  # untouched distributions stay jax's modules
    assert "chi2" in dir(stats) and "chi2.ppf" not in dir(stats)
    entry = next(e for e in jext.scipy.entries("stats") if e.name == "chi2.ppf")
    assert (entry.status, entry.providers) == ("plugin", ("scipy-special",))
    with jax.enable_x64(True):
        got = float(stats.chi2.isf(1e-300, 3.0))
    import scipy.stats as st  # type: ignore[import-untyped]

    assert got == pytest.approx(st.chi2.isf(1e-300, 3.0), rel=1e-12)


def test_dotted_names_are_one_distribution_method() -> None:
    def make(name: str) -> ScipyWrapper:
        return ScipyWrapper(
            scope="stats",
            name=name,
            mirrors="scipy.stats.chi2.ppf",
            function=abs,
            domains=(Domain(((0.0, 1.0),)),),
        )

    assert make("chi2.ppf").qualified_name == "jext.scipy.stats.chi2.ppf"
    for bad in ("chi2.ppf.x", "chi2.", "2chi.ppf"):
        with pytest.raises(DefinitionError, match="distribution's method"):
            make(bad)
    # A method jax.scipy already has counts as a jax name (replacing it needs a reason).
    assert in_jax("stats", "chi2.cdf") and not in_jax("stats", "chi2.ppf")
    assert in_jax("special", "gammaln") and not in_jax("special", "chdtri")
