"""The incomplete beta family (``_functions/_beta_family.py``) against SciPy.

Per wrapper one jitted float64 call evaluates every sampled point of every declared
domain, the automatic edge grid (+-0, +-inf, nan, domain bounds) and the declared edge
cases, in forward and in reversed order: values are held to SciPy at the declared
tolerance, and each element must come out with the same bits in both orders.
``betaincc``'s complement is held to the complement column of SciPy's own ``betainc``
tables, and ``betaincc`` and ``bdtr`` at parameters up to 1e7 to stored mpmath values.
Gradients and ``jit``/``vmap`` go through ``jext check`` in the README's main
job, which CI runs beside this suite; for ``betainc`` and ``beta.{cdf,sf,logcdf,logsf}``,
which replace ``jax.scipy``'s own, they are also tested here (against SciPy's density),
with float32, SciPy's edge conventions and mpmath at large parameters.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from _special_cases import x64
from jext_scipy_special._functions import _beta_family
from jext_scipy_special._functions._beta_family import (
    bdtr,
    beta_cdf,
    beta_logcdf,
    beta_logsf,
    beta_sf,
    betainc,
    betaincc,
    betaincinv,
    stdtrit,
)
from jext_scipy_special._functions._common import CHUNK_SIZE
from test_special_families import forward_and_reversed

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import _compare

WRAPPERS: tuple[ScipyWrapper, ...] = _beta_family.WRAPPERS
IDS = [w.name for w in WRAPPERS]


@functools.cache
def _evaluate(name: str, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """One jitted call per wrapper and dtype, shared by the value and batch tests."""
    return forward_and_reversed(_BY_NAME[name], dtype, size=SIZE)


_BY_NAME = {w.name: w for w in WRAPPERS}
# float64 here; float32 on the same domains, edge grid and tolerances is `jext check`'s
# values, edge_cases and jit_vmap (batch independence) checks in the README's set-up,
# which CI runs beside this suite (as test_special_families and test_special_batch do).
CASES = [(w.name, "float64") for w in WRAPPERS]

#: Points of every float64 call of the tests below but the ``jit``/``vmap``/broadcasting
#: and derivative ones, the value tests' forward and reversed points (the most: 1,740)
#: included.  Compiling a kernel is most of this module's time, and the public function
#: compiles once per input shape: padded to one size, each function compiles once for the
#: module, not once per table.  ``CHUNK_SIZE`` (the most a kernel computes in one piece):
#: a larger table is computed in several calls of this size, by the program of the value
#: tests; larger batches (chunked, sorted by cost) giving a small batch's values is
#: ``test_special_batch``'s subject.
SIZE = CHUNK_SIZE


def _call64(fn: Callable[..., Any], *cols: Any) -> np.ndarray:
    """``fn(*cols)`` in float64, as users call it, on ``cols`` broadcast, flattened and
    padded with their last point to a multiple of :data:`SIZE` points, :data:`SIZE` per
    call (the answer in ``cols``' shape; an element's value does not depend on its batch,
    which the tests above check)."""
    arrays = np.broadcast_arrays(*(np.asarray(c, np.float64) for c in cols))
    flat = [np.ravel(a) for a in arrays]
    k = flat[0].size
    assert k > 0
    total = -(-k // SIZE) * SIZE
    padded = [np.concatenate([c, np.full(total - k, c[-1])]) for c in flat]
    # jax.enable_x64, as forward_and_reversed: a compiled program is cached under the
    # setting in force, and a global jax_enable_x64 is another one than this context's.
    with jax.enable_x64(True):
        pieces = [np.asarray(fn(*(c[i : i + SIZE] for c in padded))) for i in range(0, total, SIZE)]
    return np.concatenate(pieces)[:k].reshape(arrays[0].shape)


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_values_and_edges_match_scipy(name: str, dtype: str) -> None:
    forward, _, want, args = _evaluate(name, dtype)
    rtol, atol = _BY_NAME[name].tolerances[dtype]
    with np.errstate(all="ignore"):
        _compare(forward, want, rtol, atol, f"{name} {dtype}", args)


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_values_do_not_depend_on_the_position_in_the_batch(name: str, dtype: str) -> None:
    forward, backward, _, _ = _evaluate(name, dtype)
    bits = np.dtype(f"u{forward.itemsize}")
    np.testing.assert_array_equal(forward.view(bits), backward.view(bits))


#: SciPy's own betainc tables (test_data.py) and their rtol; column 6 is 1 - I_x.  Two
#: are held looser, reported in docs/scipy-special-families.md: up to 9.8e-15 where SciPy
#: asks 6e-15 (small), 3e-14 where it asks 2e-14 (int; results below 1e-26), ~5 ulp
#: of the continued fraction and prefactor against Boost's ~3.
_TABLES = {
    "ibeta_small_data_ipp-ibeta_small_data": 1.2e-14,
    "ibeta_data_ipp-ibeta_data": 5e-13,
    "ibeta_int_data_ipp-ibeta_int_data": 4e-14,
    "ibeta_large_data_ipp-ibeta_large_data": 4e-10,
}


@pytest.mark.parametrize("dataset", list(_TABLES))
def test_betaincc_against_the_complement_column_of_scipys_tables(dataset: str) -> None:
    data_dir = importlib.resources.files("scipy.special.tests.data")
    with np.load(str(data_dir.joinpath("boost.npz"))) as npz:
        data = np.asarray(npz[dataset], np.float64)
    got = _call64(betaincc, data[:, 0], data[:, 1], data[:, 2])
    np.testing.assert_allclose(got, data[:, 6], rtol=_TABLES[dataset], atol=1e-300)


def test_betaincinv_keeps_relative_accuracy_in_both_tails() -> None:
    a = np.array([2.0, 2.0, 300.0, 2.0])
    b = np.array([3.0, 0.7, 40.0, 5.0])
    y = np.array([1e-300, 1e-20, 1e-8, 1.0 - 2.0**-40])
    import scipy.special as sc  # type: ignore[import-untyped]

    got = _call64(betaincinv, a, b, y)
    np.testing.assert_allclose(got, sc.betaincinv(a, b, y), rtol=1e-12)


#: ``(a, b, x, 1 - I_x(a, b))`` at large parameters, in both tails and the centre, from
#: mpmath at 60 digits (``tools/beta_large_reference.py``: the continued fraction, as
#: ``mpmath.betainc`` does not finish there).  With the prefactor's offset from the
#: centre formed in plain float64 instead of double word these are up to 3e-11 relative off.
_LARGE_BETAINCC = (
    (3000.0, 7500.0, 0.4461796249609106, 9.9999999999963439e-251),
    (7500.0, 3000.0, 0.8447169783547145, 1.0000000000001915e-250),
    (20000.0, 20000.0, 0.5887479276843541, 9.9999999999968862e-281),
    (150000.0, 60000.0, 0.736905808950133, 9.999999999989267e-121),
    (600000.0, 900000.0, 0.4121209346915586, 9.9999999999480491e-201),
    (4000000.0, 2500000.0, 0.6185103862934749, 9.9999999999272647e-61),
    (8000000.0, 10000000.0, 0.4475053753603601, 9.9999999999675714e-151),
    (3000000.0, 10000000.0, 0.23185274649559928, 1.0000000000009956e-20),
    (5000000.0, 5000000.0, 0.5000829150028188, 0.29999999999990106),
    (70000.0, 2000000.0, 0.03655716989492952, 1.0000000000008071e-100),
)
#: ``(k, n, p, bdtr(k, n, p))``, likewise.
_LARGE_BDTR = (
    (1000.0, 20000.0, 0.11045661490575427, 9.9999999999981659e-201),
    (40000.0, 100000.0, 0.4332267307983118, 9.9999999999937845e-101),
    (300000.0, 1200000.0, 0.26351686336713415, 9.9999999999650411e-251),
    (2000000.0, 5000000.0, 0.40251348472254667, 9.9999999999616037e-31),
    (6000000.0, 9000000.0, 0.6711571920750914, 1.0000000000160562e-180),
)


@pytest.mark.parametrize(
    ("fn", "table"), [(betaincc, _LARGE_BETAINCC), (bdtr, _LARGE_BDTR)], ids=["betaincc", "bdtr"]
)
def test_large_parameters_match_mpmath(
    fn: Callable[..., Any], table: tuple[tuple[float, ...], ...]
) -> None:
    # The rounding of exp's argument (|log| up to ~650, 1.4e-13 relative) and ~1e-13 of
    # the continued fraction's thousands of steps in the centre bound what is reachable.
    cols = np.asarray(table, np.float64).T
    got = _call64(fn, *cols[:3])
    np.testing.assert_allclose(got, cols[3], rtol=5e-13, atol=0.0)


# ------------------------------------------- betainc and beta.{cdf,sf,logcdf,logsf}
# They replace jax.scipy's own (ScipyWrapper(replaces_jax=...)); the tests above hold them
# to SciPy on their declared domains and edge grids like every wrapper of the family.


def test_the_replacements_are_the_plugins_not_jaxs() -> None:
    import jax.scipy.special as jsp
    import jax.scipy.stats as jst

    import jext.scipy.special
    import jext.scipy.stats

    assert jext.scipy.special.betainc is not jsp.betainc
    assert jext.scipy.special.betainc.jext_wrapper.replaces_jax == _beta_family.REPLACES_JAX
    beta = jext.scipy.stats.beta
    for method in ("cdf", "sf", "logcdf", "logsf"):
        ours = getattr(beta, method)
        assert ours is not getattr(jst.beta, method)
        assert ours.jext_wrapper.replaces_jax == _beta_family.REPLACES_JAX
    assert beta.pdf is jst.beta.pdf  # the methods no plugin declares stay JAX's


#: ``(a, b, x, I_x(a, b))`` near the centre at large parameters, from mpmath at 60 digits
#: (``tools/beta_large_reference.py``, table ``BETAINC``).  Measured there (relative):
#: jext 1.3e-15..4.9e-14; ``jax.scipy.special.betainc`` 3.0e-10, 2.4e-9, 6.0e-10, 2.2e-8,
#: 1.8e-3 (the 9e6/4e6 row), 8.4e-9, 1.2e-8, 2.9e-10; SciPy 1.17 up to 7.6e-13.
_LARGE_BETAINC = (
    (100000.0, 100000.0, 0.5, 0.5),
    (300000.0, 1000000.0, 0.23045818919343333, 0.19999999999999256),
    (2000000.0, 500000.0, 0.800132721989746, 0.70000000000006392),
    (5000000.0, 6000000.0, 0.4543120380860801, 0.060000000000050695),
    (9000000.0, 4000000.0, 0.6923077021696256, 0.50000000000013044),
    (10000000.0, 10000000.0, 0.5001432818197109, 0.89999999999994103),
    (7000000.0, 8000000.0, 0.46659911638826934, 0.30000000000002483),
    (400000.0, 3000000.0, 0.11793459502855412, 0.950000000000004),
)


def test_betainc_at_large_parameters_is_within_1e13_of_mpmath() -> None:
    a, b, x, want = np.asarray(_LARGE_BETAINC, np.float64).T
    got = _call64(betainc, a, b, x)
    cdf = _call64(beta_cdf, x, a, b)
    sf = _call64(beta_sf, x, a, b)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0)
    np.testing.assert_array_equal(cdf, got)  # the stats method is the same kernel
    np.testing.assert_allclose(sf, 1.0 - want, rtol=1e-13, atol=0.0)


def _grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    n = 2000
    a = np.exp(rng.uniform(np.log(0.1), np.log(1e3), n))
    b = np.exp(rng.uniform(np.log(0.1), np.log(1e3), n))
    return a, b, rng.uniform(0.0, 1.0, n)


def test_betainc_float32_matches_scipy() -> None:
    import scipy.special as sc

    a, b, x = (v.astype(np.float32) for v in _grid())
    with x64(False):
        got = betainc(a, b, x)
    assert got.dtype == np.float32
    want = sc.betainc(*(v.astype(np.float64) for v in (a, b, x)))
    rtol, atol = _beta_family.TOL["float32"]
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


def test_derivatives_in_x_are_scipys_density() -> None:
    import scipy.stats as st

    a, b, x = _grid()
    loc, scale = -0.5, 2.0
    xs = loc + scale * x
    ones = np.ones_like(x)

    @jax.jit
    def slopes(a: Any, b: Any, x: Any, xs: Any) -> tuple[Any, ...]:
        # The rules' values, elementwise, by one forward pass over the vector, the four
        # methods in one program (compiled once, without the primal values it does not
        # return): cheaper to compile than vmap(grad), which betainc keeps for the
        # user's path.
        def slope(f: Any, at: Any) -> Any:
            return jax.jvp(f, (at,), (ones,))[1]

        return (
            slope(lambda v: beta_cdf(v, a, b, loc, scale), xs),
            slope(lambda v: beta_sf(v, a, b, loc, scale), xs),
            slope(lambda v: beta_logcdf(v, a, b), x),
            slope(lambda v: beta_logsf(v, a, b), x),
        )

    with x64(True):
        d_inc = np.asarray(jax.vmap(jax.grad(betainc, argnums=2))(a, b, x))
        d_cdf, d_sf, d_lcdf, d_lsf = (np.asarray(d) for d in slopes(a, b, x, xs))
    pdf = st.beta.pdf(x, a, b)
    np.testing.assert_allclose(d_inc, pdf, rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(d_cdf, st.beta.pdf(xs, a, b, loc, scale), rtol=1e-11, atol=1e-300)
    np.testing.assert_allclose(d_sf, -st.beta.pdf(xs, a, b, loc, scale), rtol=1e-11, atol=1e-300)
    # d log F = f / F, with F from SciPy above 1e-250, where SciPy keeps its relative
    # accuracy (see TOL); below, ours is exp(log f - log F), finite where F underflows.
    cdf, sf = st.beta.cdf(x, a, b), st.beta.sf(x, a, b)
    for got, tail, sign in ((d_lcdf, cdf, 1.0), (d_lsf, sf, -1.0)):
        normal = tail > 1e-250
        assert normal.mean() > 0.9 and np.all(np.isfinite(got))
        want = sign * pdf[normal] / tail[normal]
        np.testing.assert_allclose(got[normal], want, rtol=1e-11, atol=1e-300)


def test_shapes_are_not_differentiable() -> None:
    with x64(True), pytest.raises(NotImplementedError, match=r"betainc .*'a'"):
        jax.grad(betainc, argnums=0)(2.0, 3.0, 0.4)
    with x64(True), pytest.raises(NotImplementedError, match=r"beta\.logcdf .*'b'"):
        jax.grad(beta_logcdf, argnums=2)(0.4, 2.0, 3.0)


def test_jit_vmap_and_broadcasting_give_the_direct_bits() -> None:
    # SIZE points (the grid's 2000 and its first 48 again): the direct call's program is
    # the value tests'.
    a, b, x = (np.resize(v, SIZE) for v in _grid())
    with jax.enable_x64(True):
        direct = np.asarray(betainc(a, b, x))
        jitted = np.asarray(jax.jit(betainc)(a, b, x))
        mapped = np.asarray(jax.vmap(betainc)(a, b, x))
        # a (2, 1) column against a (half,) row broadcasts to (2, half), as jax.scipy's
        # does: SIZE elements, computed in one piece as the row's (a larger table is
        # chunked, another program, which may round differently: test_special_batch).
        half = SIZE // 2
        table = np.asarray(betainc(np.stack([a, a])[:, :1], b[None, :half], x[None, :half]))
    bits = np.dtype("u8")
    np.testing.assert_array_equal(jitted.view(bits), direct.view(bits))
    np.testing.assert_array_equal(mapped.view(bits), direct.view(bits))
    assert table.shape == (2, half)
    with jax.enable_x64(True):
        row = np.asarray(betainc(np.full(SIZE, a[0]), b, x))[:half]
    np.testing.assert_array_equal(table[0].view(bits), row.view(bits))


def test_edges_and_support_match_scipy() -> None:
    import itertools

    import scipy.special as sc
    import scipy.stats as st

    inf, nan = np.inf, np.nan
    shapes = (-1.0, 0.0, 1e-20, 0.5, 3.0, 1e8, inf, nan)
    # Not x = 1 - 1e-12: at a = b = 1/2 SciPy is 4e-11 off there.
    xs = (-inf, -0.5, 0.0, 1e-300, 0.3, 0.999, 1.0, 1.5, inf, nan)
    a, b, x = np.array(list(itertools.product(shapes, shapes, xs))).T
    got = _call64(betainc, a, b, x)
    with np.errstate(all="ignore"):
        want = sc.betainc(a, b, x)
    # A tiny a (1e-20: I ~ 1 - 1e-20) is lost in (a + 1) - 1 of the fraction's first term,
    # and a tiny b above the mean (I ~ 1e-19) in 1 - I_y(b, a) (1e-15 absolute): relative.
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True)
    assert np.all((got >= 0.0) | np.isnan(got)) and np.all((got <= 1.0) | np.isnan(got))
    # scipy.stats: loc/scale, the support's ends (a = b = inf included), invalid shapes.
    grid = itertools.product(
        (-inf, -1.0, 0.0, 0.2, 1.0, 3.0, inf, nan),
        (-1.0, 0.0, 0.5, 3.0, inf, nan),
        (-1.0, 0.0, 0.5, 3.0, inf, nan),
        (0.0, -1.0, nan),
        (1.0, 2.0, 0.0, -1.0, inf, nan),
    )
    args = np.array(list(grid)).T
    for method in ("cdf", "sf", "logcdf", "logsf"):
        got = _call64(getattr(_beta_family, f"beta_{method}"), *args)
        with np.errstate(all="ignore"):
            want = getattr(st.beta, method)(*args)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0, equal_nan=True, err_msg=method)


def test_logcdf_and_logsf_keep_relative_accuracy_in_both_tails() -> None:
    import mpmath as mp

    # (x, a, b): cdf near 1 (logcdf -1.8e-198 or ~-1e-10, where log of the rounded cdf is
    # 0 or ~1e-6 off) and below the smallest double (logcdf ~ -917: SciPy's is -inf).
    pts = ((0.9, 2.0, 200.0), (0.3, 50.0, 0.7), (1e-5, 80.0, 2.0), (0.25, 3.0, 100.0))
    x, a, b = np.asarray(pts, np.float64).T
    with mp.workdps(40):  # sf = I_{1-x}(b, a): no cancellation in 1 - cdf
        tails = [
            (
                mp.betainc(ai, bi, 0, xi, regularized=True),
                mp.betainc(bi, ai, 0, 1 - xi, regularized=True),
            )
            for xi, ai, bi in (tuple(map(mp.mpf, p)) for p in pts)
        ]
        # log1p of the other tail where it is the smaller (1 - 1e-198 is 1 at 40 digits).
        want_cdf = np.array([float(mp.log(lo) if lo < hi else mp.log1p(-hi)) for lo, hi in tails])
        want_sf = np.array([float(mp.log(hi) if hi < lo else mp.log1p(-lo)) for lo, hi in tails])
    got_cdf = _call64(beta_logcdf, x, a, b)
    got_sf = _call64(beta_logsf, x, a, b)
    np.testing.assert_allclose(got_cdf, want_cdf, rtol=1e-13)
    np.testing.assert_allclose(got_sf, want_sf, rtol=1e-13)
    with x64(False):  # float32: the prefactor's log, not log of an underflowed cdf
        got32 = np.asarray(beta_logcdf(*(v.astype(np.float32) for v in (x, a, b))))
    np.testing.assert_allclose(got32, want_cdf, rtol=2e-5, atol=1e-38)  # -1.8e-198: -0


def _tiny_shape_grid(tiny: tuple[float, ...]) -> tuple[np.ndarray, ...]:
    """``(a, b, x, I, 1 - I)`` with one of ``a, b`` in ``tiny`` and the other in
    {0.5, 5, 50}, both sides of the mean; mpmath at 50 digits (``1 - I`` as
    ``I_{1-x}(b, a)``, no cancellation).  Values below the smallest normal double are left
    out (XLA's CPU flushes them to 0)."""
    import itertools

    import mpmath as mp

    rows = []
    with mp.workdps(50):
        for t, o, x in itertools.product(tiny, (0.5, 5.0, 50.0), (1e-10, 1e-3, 0.3, 0.9, 0.999)):
            for a, b in ((t, o), (o, t)):
                am, bm, xm = mp.mpf(a), mp.mpf(b), mp.mpf(x)
                p = mp.betainc(am, bm, 0, xm, regularized=True)
                q = mp.betainc(bm, am, 0, 1 - xm, regularized=True)
                if min(p, q) > mp.mpf("2.3e-308"):
                    rows.append((a, b, x, float(p), float(q)))
    return tuple(np.asarray(rows, np.float64).T)


def test_a_tiny_shape_keeps_the_small_side_to_relative_accuracy() -> None:
    # With a tiny shape s, the side ~s (1 - I for a tiny a, I for a tiny b) formed as
    # 1 - (the other side ~1) keeps 1e-15 absolute, 1e-5 relative at s = 1e-10, nothing at
    # s = 1e-20; it is a series in s.  2e-13: the rounding of exp's argument (|log| up to
    # ~690) on the other side, the prefactor's (as in the large-parameter tables).
    a, b, x, p, q = _tiny_shape_grid((1e-300, 1e-100, 1e-20, 1e-10, 1e-8))
    got_p = _call64(betainc, a, b, x)
    got_q = _call64(betaincc, a, b, x)
    log_p = _call64(beta_logcdf, x, a, b)
    log_q = _call64(beta_logsf, x, a, b)
    np.testing.assert_allclose(got_p, p, rtol=2e-13, atol=0.0)
    np.testing.assert_allclose(got_q, q, rtol=2e-13, atol=0.0)
    # log of the side near 1 is ~-s: log1p(-other side), relative as well.
    with np.errstate(divide="ignore"):  # log1p(-1) of the branch np.where discards
        want_lp = np.where(p < q, np.log(p), np.log1p(-q))
        want_lq = np.where(q < p, np.log(q), np.log1p(-p))
    np.testing.assert_allclose(log_p, want_lp, rtol=2e-13)
    np.testing.assert_allclose(log_q, want_lq, rtol=2e-13)


def test_a_small_shape_loses_at_most_eps_over_it() -> None:
    # What holds where the series (s (1 + |log x|) < 1e-5) meets 1 - I rounded (~5 eps / s
    # relative): 1e-12 at s = 1e-7 (the series' s^2), 3e-10 near 1e-5, 5e-13 at 1e-3.
    # SciPy: full accuracy there.  Documented in docs/scipy-special-families.md.
    for s, rtol in ((1e-7, 3e-12), (1e-6, 1e-9), (1e-5, 1e-9), (1e-3, 2e-12)):
        a, b, x, p, q = _tiny_shape_grid((s,))
        got_p = _call64(betainc, a, b, x)
        got_q = _call64(betaincc, a, b, x)
        np.testing.assert_allclose(got_p, p, rtol=rtol, atol=0.0)
        np.testing.assert_allclose(got_q, q, rtol=rtol, atol=0.0)


def _root_within(a: float, b: float, x: float, y: float, upper: bool, rtol: float) -> bool:
    """Whether the root of ``I_x(a, b) = y`` (``upper``: ``1 - I_x(a, b) = y``) lies within
    ``rtol`` of ``x``'s small side (``x`` or ``1 - x``), or 2 doubles of ``x`` (or below the
    smallest normal double, for ``x = 0``): mpmath
    at 80 digits on both sides, each tail as an integral from 0 (``1 - I_x(a, b) =
    I_{1-x}(b, a)``, with ``1 - x`` exact at 80 digits for ``x > 1e-60``): no
    cancellation, which ``mpmath.betainc(a, b, x, 1)`` suffers at a tiny ``a``."""
    import mpmath as mp

    def side(t: float) -> Any:
        if t <= 0.0:
            return mp.mpf(1 if upper else 0)
        if t >= 1.0:
            return mp.mpf(0 if upper else 1)
        tm = mp.mpf(t)
        if upper and t > 1e-60:
            return mp.betainc(b, a, 0, 1 - tm, regularized=True)
        if upper:
            return mp.betainc(a, b, tm, 1, regularized=True)
        return mp.betainc(a, b, 0, tm, regularized=True)

    lo = hi = x
    for _ in range(2):
        lo, hi = np.nextafter(lo, -1.0), np.nextafter(hi, 2.0)
    small = min(x, 1.0 - x)
    lo, hi = min(lo, x - rtol * small), max(hi, x + rtol * small, 2.3e-308)
    with mp.workdps(80):
        below, above = side(max(lo, 0.0)) - y, side(min(hi, 1.0)) - y
    return bool(below * above <= 0)


#: ``(a, b, y)`` where a plain Halley solver goes wrong, none of them a tiny-shape grid
#: point: (0.5, 1e-20, 8.29e-20) gives 5.2e-127 for 0.999 (a guess dividing the rounding
#: of ``log a + log B(a, b)`` by b); (818.3, 10.7, 1.7e-200) stops at 0.398, where the
#: density underflows and I does not (a nan step taken for convergence), for 0.541;
#: (27567, 20.2, 2.3e-260) and (3572, 21.3, 1.6e-237) cycle (Halley on log I far from
#: linear in log x, unless a long step back is cut to half the way) and stop at the cap,
#: at 1 - 1.6e-6 for 0.9755 and at 0.775 for 0.838 (65 of 20,000 random points with a
#: in 1e2..1e7 and p down to 1e-300);
#: (1e-10, 2, 6.6e-29) (upper) is 1 - 1.1e-9.  SciPy is no oracle here: its
#: betainccinv(1e-20, 0.5, 1e-18) is 0.67 (the root is 1.5e-43).  Held to 1e-13 of the
#: root's small side: with a tiny a, x's relative error is the forward's times ``(1 -
#: I) / a`` (30 at (1e-20, 30, 3e-19), whose root is 5e-14 off).
_INVERSE_TRAPS = (
    (0.5, 1e-20, 8.29e-20, False),
    (1.0, 1e-20, 3e-20, False),
    (818.3254768631098, 10.702320422007643, 1.660800044026957e-200, False),
    (983.6672192007528, 43.19381696270187, 1.5064424050122521e-245, False),
    (27567.074457668306, 20.15798554218676, 2.3290211900850493e-260, False),
    (3571.5027204397775, 21.28506662617023, 1.5812621048089297e-237, False),
    (2.024277158996995, 818.3147820810907, 4.4027440541292934e-300, True),
    (1e-10, 2.0, 6.579332246575602e-29, True),
    (1e-20, 0.5, 1e-18, True),
    (1e-20, 30.0, 3e-19, True),
)


def test_inverses_find_the_root_at_tiny_shapes_underflowing_densities_and_halley_cycles() -> None:
    from jext_scipy_special._functions._beta_family import betainccinv

    # The tiny-shape grid (mpmath's x, I and 1 - I) inverted from its small side: x to
    # 7e-13 (its small side, x or 1 - x); 36 of its 137 points were wrong (5e-127 or 1).
    a, b, x, p, q = _tiny_shape_grid((1e-300, 1e-100, 1e-20, 1e-10, 1e-8))
    lower = p < q
    ta, tb, ty, tup = (np.asarray(v) for v in zip(*_INVERSE_TRAPS, strict=True))
    got_p = _call64(betaincinv, np.r_[a, ta], np.r_[b, tb], np.r_[p, ty])
    got_q = _call64(betainccinv, np.r_[a, ta], np.r_[b, tb], np.r_[q, ty])
    n = len(a)
    got = np.where(lower, got_p[:n], got_q[:n])
    small = np.where(x < 0.5, x, 1.0 - x)
    np.testing.assert_allclose(np.where(x < 0.5, got, 1.0 - got), small, rtol=2e-12)
    trap = np.where(tup, got_q[n:], got_p[n:])
    missed = [
        (args, root)
        for args, root in zip(_INVERSE_TRAPS, trap, strict=True)
        if not _root_within(args[0], args[1], float(root), args[2], args[3], rtol=1e-13)
    ]
    assert not missed, missed


def test_stdtrit_far_in_the_tail_of_a_small_df_where_the_beta_root_underflows() -> None:
    # t = sqrt(df (1 - x) / x) for the root x of I_x(df/2, 1/2) = 2p: x leaves the
    # normal range near t = 1e154 while t does not (t from x is -inf there).  The closed forms:
    # Cauchy (df = 1) t = tan(pi (p - 1/2)) = -1/(pi p) to O(p^2); df = 2,
    # t = (2p - 1) / sqrt(2p (1 - p)).  df = 1/2: mpmath's root of its own betainc
    # (SciPy gives -4.7e153 for every such point, its search's bound).  Where t itself
    # passes the largest double it is -inf.
    points = [
        (1.0, 1e-200, -1.0 / (np.pi * 1e-200)),
        (1.0, 1e-300, -1.0 / (np.pi * 1e-300)),
        (2.0, 1e-300, -1.0 / np.sqrt(2e-300)),
        (0.5000020448951766, 2.7221148990855033e-85, -1.3857966346963743e168),
        (0.5, 1e-160, -np.inf),
        (1.0, 0.5, 0.0),
    ]
    df, p, want = (np.array(col) for col in zip(*points, strict=True))
    got = _call64(stdtrit, df, p)
    upper = _call64(stdtrit, df[:3], 1.0 - p[:3])  # 1 - p rounds to 1: +inf
    assert np.array_equal(np.isinf(got), np.isinf(want)) and got[4] == -np.inf
    finite = np.isfinite(want) & (want != 0.0)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-13)
    assert got[5] == 0.0 and list(upper) == [np.inf] * 3
