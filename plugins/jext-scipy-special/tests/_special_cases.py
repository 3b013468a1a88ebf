"""Shared test cases: sampled domains, SciPy references and tolerances.

Each case samples its documented domain for one dtype; the reference is SciPy
evaluated in float64 on exactly the same (dtype-rounded) inputs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
import scipy.special as sc  # type: ignore[import-untyped]
import scipy.stats as st  # type: ignore[import-untyped]
from jext_scipy_special import _functions as jf

Arrays = tuple[np.ndarray, ...]
E1 = float(np.exp(-1.0))

#: Relative-error targets and absolute floors (values of magnitude below the
#: floor, i.e. underflowing or flushed subnormal results, are compared
#: absolutely: |got - ref| <= rtol |ref| + floor).
RTOL: dict[type, float] = {np.float64: 1e-12, np.float32: 5e-6}
FLOOR: dict[type, float] = {np.float64: 1e-300, np.float32: 1e-30}


@contextmanager
def x64(enabled: bool) -> Iterator[None]:
    """Temporarily set ``jax_enable_x64`` (restored afterwards)."""
    prev = bool(jax.config.read("jax_enable_x64"))  # type: ignore[no-untyped-call]
    jax.config.update("jax_enable_x64", enabled)  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", prev)  # type: ignore[no-untyped-call]


def _logu(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n))


def _tiny(dt: type) -> float:
    return 1e-300 if dt is np.float64 else 1e-37


def _lambertw_ref(k: int) -> Callable[..., np.ndarray]:
    def ref(z: np.ndarray) -> np.ndarray:
        w = sc.lambertw(z, k)
        return np.asarray(np.where(w.imag == 0, w.real, np.nan))

    return ref


# ---------------------------------------------------------------- samplers
def _s_ellipk(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    eps = float(np.finfo(dt).eps)
    m = np.concatenate([rng.uniform(-10.0, 1.0, n - n // 4), 1.0 - _logu(rng, eps, 1.0, n // 4)])
    return (m,)


def _s_ellipkm1(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    return (
        np.concatenate([_logu(rng, _tiny(dt), 1.0, n // 2), rng.uniform(0.0, 11.0, n - n // 2)]),
    )


def _s_erfcinv(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    eps = float(np.finfo(dt).eps)
    y = np.concatenate(
        [
            rng.uniform(0.0, 2.0, n // 2),
            _logu(rng, 4 * _tiny(dt), 1.0, n // 4),
            2.0 - _logu(rng, eps, 1.0, n - n // 2 - n // 4),
        ]
    )
    return (y,)


def _s_stdtr(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    df = _logu(rng, 0.5, 1e3, n)
    t = rng.uniform(-50.0, 50.0, n)
    k = n // 4
    t[:k] = rng.choice([-1.0, 1.0], k) * _logu(rng, 1e-8, 50.0, k)
    return df, t


def _s_lambertw0(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    big = 1e300 if dt is np.float64 else 1e38
    q = n // 5
    z = np.concatenate(
        [
            rng.uniform(-E1 + 1e-4, 10.0, n - 4 * q),
            _logu(rng, 10.0, big, q),
            -E1 + _logu(rng, 1e-4, 0.3, q),
            _logu(rng, _tiny(dt), 1e-2, q),
            -_logu(rng, _tiny(dt), 0.3, q),
        ]
    )
    return (z,)


def _s_lambertwm1(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    q = n // 4
    z = np.concatenate(
        [
            rng.uniform(-E1 + 1e-4, 0.0, n - 2 * q),
            -E1 + _logu(rng, 1e-4, 0.3, q),
            -_logu(rng, _tiny(dt), 0.3, q),
        ]
    )
    return (z,)


def _s_gammaincinv(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    a = _logu(rng, 0.1, 100.0, n)
    y = rng.uniform(0.0, 1.0, n)
    q = n // 4
    ymin, qmin = (1e-300, 1e-16) if dt is np.float64 else (1e-30, 1e-7)
    y[:q] = _logu(rng, ymin, 0.5, q)
    y[q : 2 * q] = 1.0 - _logu(rng, qmin, 0.5, q)
    return a, y


def _s_kv(rng: np.random.Generator, n: int, dt: type) -> Arrays:
    v = rng.uniform(-20.0, 20.0, n)
    v[: n // 10] = np.round(v[: n // 10])
    v[n // 10 : n // 5] = np.round(v[n // 10 : n // 5]) + 0.5
    z = rng.uniform(0.0, 100.0, n)
    z[: n // 4] = _logu(rng, 1e-6, 100.0, n // 4)
    z[z == 0.0] = 1.0
    return v, z


# ---------------------------------------------------------- derivatives
def _d_ellipk(m: np.ndarray) -> np.ndarray:
    return np.asarray((sc.ellipe(m) - (1 - m) * sc.ellipk(m)) / (2 * m * (1 - m)))


def _d_ellipkm1(p: np.ndarray) -> np.ndarray:
    return -_d_ellipk(1 - p)


def _d_ellipe(m: np.ndarray) -> np.ndarray:
    return np.asarray((sc.ellipe(m) - sc.ellipk(m)) / (2 * m))


def _d_erfcinv(y: np.ndarray) -> np.ndarray:
    return np.asarray(-np.sqrt(np.pi) / 2 * np.exp(sc.erfcinv(y) ** 2))


def _d_stdtr(df: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.asarray(st.t.pdf(t, df))


def _d_lambertw(k: int) -> Callable[..., np.ndarray]:
    def d(z: np.ndarray) -> np.ndarray:
        w = sc.lambertw(z, k).real
        return np.asarray(w / (z * (1 + w)))

    return d


def _d_gammaincinv(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    return 1.0 / np.asarray(st.gamma.pdf(sc.gammaincinv(a, y), a))


def _d_kv(v: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.asarray(sc.kvp(v, z))


def _d_kve(v: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.asarray((sc.kvp(v, z) + sc.kv(v, z)) * np.exp(z))


# ------------------------------------------------------- gradient points
def _g_ellip(rng: np.random.Generator, n: int) -> Arrays:
    return (np.concatenate([rng.uniform(-10.0, 0.95, n - 4), [-1e-3, 1e-3, 0.015, 0.5]]),)


def _g_ellipkm1(rng: np.random.Generator, n: int) -> Arrays:
    return (_logu(rng, 1e-3, 10.0, n),)


@dataclass(frozen=True)
class Case:
    """One function under test."""

    name: str
    fn: Callable[..., Any]
    ref: Callable[..., np.ndarray]
    sample: Callable[[np.random.Generator, int, type], Arrays]
    deriv: Callable[..., np.ndarray]
    grad_points: Callable[[np.random.Generator, int], Arrays]
    diff_arg: int = 0
    rtol: dict[type, float] = field(default_factory=lambda: dict(RTOL))


CASES: list[Case] = [
    Case("ellipk", jf.ellipk, sc.ellipk, _s_ellipk, _d_ellipk, _g_ellip),
    Case("ellipkm1", jf.ellipkm1, sc.ellipkm1, _s_ellipkm1, _d_ellipkm1, _g_ellipkm1),
    Case("ellipe", jf.ellipe, sc.ellipe, _s_ellipk, _d_ellipe, _g_ellip),
    Case(
        "erfcinv",
        jf.erfcinv,
        sc.erfcinv,
        _s_erfcinv,
        _d_erfcinv,
        lambda rng, n: (np.concatenate([rng.uniform(0.001, 1.999, n - 2), [1e-10, 1.0]]),),
    ),
    Case(
        "stdtr",
        jf.stdtr,
        sc.stdtr,
        _s_stdtr,
        _d_stdtr,
        lambda rng, n: (_logu(rng, 0.5, 1e3, n), rng.uniform(-20.0, 20.0, n)),
        diff_arg=1,
    ),
    Case(
        "lambertw0",
        jf.lambertw,
        _lambertw_ref(0),
        _s_lambertw0,
        _d_lambertw(0),
        lambda rng, n: (rng.uniform(-E1 + 1e-3, 50.0, n),),
    ),
    Case(
        "lambertw-1",
        functools.partial(jf.lambertw, k=-1),
        _lambertw_ref(-1),
        _s_lambertwm1,
        _d_lambertw(-1),
        lambda rng, n: (rng.uniform(-E1 + 1e-3, -1e-3, n),),
    ),
    Case(
        "gammaincinv",
        jf.gammaincinv,
        sc.gammaincinv,
        _s_gammaincinv,
        _d_gammaincinv,
        lambda rng, n: (_logu(rng, 0.1, 100.0, n), rng.uniform(0.01, 0.99, n)),
        diff_arg=1,
    ),
    Case(
        "kv",
        jf.kv,
        sc.kv,
        _s_kv,
        _d_kv,
        lambda rng, n: (rng.uniform(-20.0, 20.0, n), rng.uniform(0.05, 50.0, n)),
        diff_arg=1,
    ),
    Case(
        "kve",
        jf.kve,
        sc.kve,
        _s_kv,
        _d_kve,
        lambda rng, n: (rng.uniform(-20.0, 20.0, n), rng.uniform(0.05, 50.0, n)),
        diff_arg=1,
    ),
]

CASE_IDS = [c.name for c in CASES]
CASE_BY_NAME = {c.name: c for c in CASES}

# The public functions are jit-compiled entry points themselves (one cached
# executable per input signature), so calling them is the "jit" path.
JITTED: dict[str, Any] = {c.name: c.fn for c in CASES}


def sample(case: Case, dt: type, n: int, seed: int = 0) -> Arrays:
    """Inputs rounded to ``dt`` (the reference sees the same values)."""
    rng = np.random.default_rng([seed, CASE_IDS.index(case.name)])
    return tuple(np.asarray(a, dtype=dt) for a in case.sample(rng, n, dt))


def reference(case: Case, args: Arrays) -> np.ndarray:
    """SciPy in float64 on the same inputs, rounded to the inputs' dtype
    (so float32 overflow/underflow of the true value is expected)."""
    with np.errstate(all="ignore"):
        ref = np.asarray(case.ref(*(a.astype(np.float64) for a in args)), dtype=np.float64)
        return ref.astype(args[0].dtype).astype(np.float64)


def rel_errors(got: np.ndarray, ref: np.ndarray, floor: float) -> np.ndarray:
    """Relative error where both are finite and ``|ref| >= floor`` (else 0)."""
    got = got.astype(np.float64)
    with np.errstate(all="ignore"):
        big = np.isfinite(ref) & (np.abs(ref) >= floor)
        err = np.where(big, np.abs(got - ref) / np.where(big, np.abs(ref), 1.0), 0.0)
    return np.asarray(err)


def check_close(got: np.ndarray, ref: np.ndarray, rtol: float, floor: float) -> None:
    """nan/inf pattern identical; finite values within ``rtol |ref| + floor``."""
    got = got.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref), err_msg="nan pattern")
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref), err_msg="+inf pattern")
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref), err_msg="-inf pattern")
    fin = np.isfinite(ref)
    with np.errstate(all="ignore"):
        bad = np.abs(got[fin] - ref[fin]) > rtol * np.abs(ref[fin]) + floor
    if bad.any():
        i = np.flatnonzero(bad)[0]
        err = rel_errors(got, ref, floor).max()
        raise AssertionError(
            f"{bad.sum()} values off (max rel err {err:.3g} > {rtol:.1g}); "
            f"first: got {got[fin][i]!r}, ref {ref[fin][i]!r}"
        )
