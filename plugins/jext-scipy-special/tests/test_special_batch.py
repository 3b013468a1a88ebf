"""Every registered wrapper: an element's value does not depend on the batch it is computed
in, and the sampled domains match SciPy at the declared tolerance.

Each wrapper is evaluated (float64) at shape ``(1,)`` per point and at shape ``(N,)`` in two
different batches (other values of the domain, domain bounds, +-0, +-inf and nan around
it); the three results must be bitwise equal.  The same ``(N,)`` programs are held to SciPy
(or the wrapper's oracle) at the wrapper's tolerance, in float64 and float32.
"""

from __future__ import annotations

import functools
import zlib
from typing import Any

import numpy as np
import pytest
from _special_cases import x64
from jext_scipy_special import _CORE, WRAPPERS
from jext_scipy_special._functions import _bessel_family, _elliptic_family, _gamma_family

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import oracle_of

N = 256  # batch shape shared by the value check and the batch-independence check
K = 6  # points also computed alone
_SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan)


def _rng(wrapper: ScipyWrapper, purpose: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{wrapper.name}:{purpose}".encode()))


def _domain_points(wrapper: ScipyWrapper, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """``n`` points of the first domain (log-uniform where declared)."""
    dom = wrapper.domains[0]
    cols = []
    for i, (low, high) in enumerate(dom.bounds):
        if dom.log and low > 0:
            col = np.exp(rng.uniform(np.log(low), np.log(high), n))
        else:
            col = rng.uniform(low, high, n)
        cols.append(np.round(col) if i in dom.integers else col)
    return cols


def _companions(wrapper: ScipyWrapper, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Batch mates: domain points, bounds of every domain and special values."""
    cols = _domain_points(wrapper, rng, n)
    extra = [v for d in wrapper.domains for b in d.bounds for v in b] + list(_SPECIALS)
    for col in cols:
        pick = rng.random(n) < 0.3
        col[pick] = rng.choice(np.asarray(extra, np.float64), int(pick.sum()))
    return cols


def _fn(wrapper: ScipyWrapper) -> Any:
    return functools.partial(wrapper.function, **wrapper.domains[0].kwargs)


def _bits(values: Any) -> np.ndarray:
    out = np.asarray(values)
    out = np.stack(out) if isinstance(values, tuple) else out
    if np.iscomplexobj(out):  # the Hankel functions: both parts
        out = np.stack([out.real, out.imag])
    return np.asarray(out, np.float64).view(np.int64)


def _batch_params() -> list[Any]:
    return [pytest.param(w, id=w.name) for w in WRAPPERS]


@pytest.mark.parametrize("wrapper", _batch_params())
def test_values_do_not_depend_on_the_batch(wrapper: ScipyWrapper) -> None:
    rng = _rng(wrapper, "batch")
    points = _domain_points(wrapper, rng, K)
    fn = _fn(wrapper)
    batches, where = [], []
    for _ in range(2):
        cols = _companions(wrapper, rng, N)
        pos = rng.choice(N, K, replace=False)
        for col, pts in zip(cols, points, strict=True):
            col[pos] = pts
        batches.append(cols)
        where.append(pos)
    with x64(True):
        # [..., i]: a function with several results (ellipj, shichi) gives their stack.
        in_batch = [
            np.asarray(fn(*cols))[..., pos] for cols, pos in zip(batches, where, strict=True)
        ]
        alone = np.stack(
            [np.asarray(fn(*(p[i : i + 1] for p in points)))[..., 0] for i in range(K)], axis=-1
        )
    np.testing.assert_array_equal(_bits(in_batch[0]), _bits(alone), err_msg="batch 1 vs alone")
    np.testing.assert_array_equal(_bits(in_batch[1]), _bits(alone), err_msg="batch 2 vs alone")


#: The original nine and the Bessel, elliptic and error/gamma families (the other
#: families carry their own value tests).
VALUED = [*_CORE, *_bessel_family.WRAPPERS, *_elliptic_family.WRAPPERS, *_gamma_family.WRAPPERS]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("wrapper", VALUED, ids=[w.name for w in VALUED])
def test_domains_match_scipy(wrapper: ScipyWrapper, dtype: str) -> None:
    """Every declared domain, N points each, at the wrapper's declared tolerance."""
    if dtype not in wrapper.dtypes:
        pytest.skip(f"{wrapper.name} declares no {dtype} support")
    rtol, atol = wrapper.tolerances[dtype]
    rng = _rng(wrapper, f"values:{dtype}")
    oracle = oracle_of(wrapper)
    for dom in wrapper.domains:
        cols = []
        for low, high in dom.bounds:
            if dom.log and low > 0:
                cols.append(np.exp(rng.uniform(np.log(low), np.log(high), N)))
            else:
                cols.append(rng.uniform(low, high, N))
        args = [c.astype(dtype) for c in cols]
        with x64(dtype == "float64"):
            got = np.asarray(functools.partial(wrapper.function, **dom.kwargs)(*args), np.float64)
        with np.errstate(all="ignore"):
            want = np.asarray(oracle(*(a.astype(np.float64) for a in args), **dom.kwargs))
            # SciPy's float64 answer as the dtype represents it (beyond its range: inf or 0).
            want = want.astype(dtype).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)
