"""Conformance checks for SciPy wrappers, with SciPy itself as the oracle."""

from __future__ import annotations

import functools
import importlib
import math
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np

from jext.scipy._wrapper import Domain, EdgeCase, ScipyWrapper
from jext.testing._report import (
    CheckFailure,
    CheckResult,
    CheckSkipped,
    PrimitiveReport,
    guarded,
)

__all__ = ["SCIPY_CHECKS", "oracle_of", "run_scipy_check", "scipy_report"]

SCIPY_CHECKS: Final = ("values", "edge_cases", "gradients", "jit_vmap")
"""Every check run on a SciPy wrapper, in the order they run."""

_SAMPLES: Final = 2000
_GRAD_SAMPLES: Final = 16
_SPECIAL_VALUES: Final = (0.0, -0.0, math.inf, -math.inf, math.nan)


def oracle_of(wrapper: ScipyWrapper) -> Callable[..., Any]:
    """The function the wrapper is held to: its own oracle, else the SciPy function it mirrors."""
    if wrapper.oracle is not None:
        return wrapper.oracle
    module_name, _, attr = wrapper.mirrors.rpartition(".")
    fn: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
    return fn


def _rng(wrapper: ScipyWrapper, purpose: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{wrapper.qualified_name}:{purpose}".encode()))


def _sample(rng: np.random.Generator, domain: Domain, n: int, *, shrink: float = 0.0) -> list[Any]:
    args = []
    for low, high in domain.bounds:
        lo, hi = low + shrink * (high - low), high - shrink * (high - low)
        if domain.log and lo > 0:
            args.append(np.exp(rng.uniform(np.log(lo), np.log(hi), n)))
        else:
            args.append(rng.uniform(lo, hi, n))
    return args


def _evaluate(wrapper: ScipyWrapper, args: Sequence[Any], kwargs: Any, dtype: str) -> Any:
    with jax.enable_x64(dtype == "float64"):
        typed = [jnp.asarray(np.asarray(a, dtype)) for a in args]
        out = jax.jit(functools.partial(wrapper.function, **kwargs))(*typed)
        return np.asarray(out)


def _in_dtype(values: Any, dtype: str) -> Any:
    """SciPy's float64 answer as ``dtype`` represents it (beyond its range: inf or 0)."""
    values = np.asarray(values)
    return values if np.iscomplexobj(values) else values.astype(dtype).astype(np.float64)


def _compare(
    got: Any, want: Any, rtol: float, atol: float, what: str, points: Sequence[Any]
) -> float:
    """Largest relative error; CheckFailure naming the worst point if over tolerance."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want)
    if np.iscomplexobj(want):
        raise CheckFailure(
            f"{what}: the oracle returned complex values; give the wrapper an oracle"
        )
    want = want.astype(np.float64)
    got, want = np.broadcast_arrays(got, want)
    same_kind = (np.isnan(got) & np.isnan(want)) | (np.isinf(want) & (got == want))
    finite = np.isfinite(want) & ~same_kind
    err = np.where(same_kind, 0.0, np.abs(got - want))
    err = np.where(np.isnan(err), np.inf, err)
    bad = err > rtol * np.abs(np.where(finite, want, 0.0)) + atol
    # The reported error is relative, over the points above the absolute floor.
    above_floor = finite & (rtol * np.abs(np.where(finite, want, 0.0)) > atol)
    rel = np.where(above_floor, err / np.where(above_floor, np.abs(want), 1.0), 0.0)
    worst = float(rel.max(initial=0.0))
    if bad.any():
        i = int(np.argmax(np.where(bad, err, -1.0)))
        at = ", ".join(f"{np.broadcast_to(p, got.shape).ravel()[i]!r}" for p in points)
        raise CheckFailure(
            f"{what}: at ({at}) got {got.ravel()[i]!r}, SciPy gives {want.ravel()[i]!r} "
            f"(rtol {rtol:g}, atol {atol:g})",
            worst,
        )
    return worst


def check_values(wrapper: ScipyWrapper) -> float | None:
    """Values agree with SciPy on the sampled domains, in every supported dtype."""
    oracle = oracle_of(wrapper)
    worst = 0.0
    for d, domain in enumerate(wrapper.domains):
        args = _sample(_rng(wrapper, f"values{d}"), domain, _SAMPLES)
        for dtype in wrapper.dtypes:
            rounded = [np.asarray(a, dtype).astype(np.float64) for a in args]
            got = _evaluate(wrapper, rounded, domain.kwargs, dtype)
            want = _in_dtype(oracle(*rounded, **domain.kwargs), dtype)
            rtol, atol = wrapper.tolerances[dtype]
            kw = f" with {dict(domain.kwargs)}" if domain.kwargs else ""
            worst = max(worst, _compare(got, want, rtol, atol, f"{dtype} domain {d}{kw}", rounded))
    return worst


def _edge_points(wrapper: ScipyWrapper) -> list[EdgeCase]:
    points = list(wrapper.edge_cases)
    for domain in wrapper.domains:
        mid = [(lo + hi) / 2 for lo, hi in domain.bounds]
        for i, (lo, hi) in enumerate(domain.bounds):
            for value in (*_SPECIAL_VALUES, lo, hi):
                args = list(mid)
                args[i] = value
                points.append(EdgeCase(tuple(args), domain.kwargs))
    return points


def check_edge_cases(wrapper: ScipyWrapper) -> float | None:
    """+-0, +-inf, nan, the domain boundaries and declared edge cases equal SciPy's values."""
    oracle = oracle_of(wrapper)
    groups: dict[tuple[tuple[str, Any], ...], list[tuple[float, ...]]] = {}
    for edge in _edge_points(wrapper):
        groups.setdefault(tuple(sorted(edge.kwargs.items())), []).append(edge.args)
    worst = 0.0
    for kw_items, points in groups.items():
        kwargs = dict(kw_items)
        columns = [np.array(col, np.float64) for col in zip(*points, strict=True)]
        for dtype in wrapper.dtypes:
            # All points of a group in one call: one compilation per group and dtype.
            args = [c.astype(dtype).astype(np.float64) for c in columns]
            got = _evaluate(wrapper, args, kwargs, dtype)
            want = _in_dtype(oracle(*args, **kwargs), dtype)
            rtol, atol = wrapper.tolerances[dtype]
            kw = f" with {kwargs}" if kwargs else ""
            worst = max(worst, _compare(got, want, rtol, atol, f"{dtype} edge case{kw}", args))
    return worst


def check_gradients(wrapper: ScipyWrapper) -> float | None:
    """Gradients in the differentiable arguments agree with finite differences of SciPy."""
    if not wrapper.differentiable:
        raise CheckSkipped("the wrapper declares no differentiable argument")
    if "float64" not in wrapper.dtypes:
        raise CheckSkipped("gradients are checked in float64, which the wrapper does not support")
    oracle = oracle_of(wrapper)
    worst = 0.0
    for d, domain in enumerate(wrapper.domains):
        args = _sample(_rng(wrapper, f"grad{d}"), domain, _GRAD_SAMPLES, shrink=0.02)
        for i in wrapper.differentiable:
            with jax.enable_x64(True):
                f = functools.partial(wrapper.function, **domain.kwargs)
                grad = jax.jit(jax.vmap(jax.grad(f, argnums=i)))
                got = np.asarray(grad(*[jnp.asarray(a) for a in args]))
            h = 1e-6 * np.maximum(1.0, np.abs(args[i]))
            up, down = list(args), list(args)
            up[i], down[i] = args[i] + h, args[i] - h
            fd = (oracle(*up, **domain.kwargs) - oracle(*down, **domain.kwargs)) / (2 * h)
            scale = float(np.max(np.abs(fd[np.isfinite(fd)]), initial=1.0))
            worst = max(
                worst,
                _compare(got, fd, 1e-5, 1e-7 * scale, f"d/d(argument {i}), domain {d}", args),
            )
    return worst


def check_jit_vmap(wrapper: ScipyWrapper) -> float | None:
    """``jit`` on a vector, ``vmap``, and a loop of scalar calls agree."""
    domain = wrapper.domains[0]
    args = _sample(_rng(wrapper, "jit_vmap"), domain, 8, shrink=0.01)
    dtype = wrapper.dtypes[0]
    with jax.enable_x64(dtype == "float64"):
        typed = [jnp.asarray(np.asarray(a, dtype)) for a in args]
        f = functools.partial(wrapper.function, **domain.kwargs)
        vector = np.asarray(jax.jit(f)(*typed))
        mapped = np.asarray(jax.jit(jax.vmap(f))(*typed))
        scalar = jax.jit(f)
        looped = np.stack([np.asarray(scalar(*(t[k] for t in typed))) for k in range(8)])
    rtol = wrapper.tolerances[dtype][0]
    worst = _compare(mapped, vector, rtol, 0.0, "vmap vs jit", args)
    return max(worst, _compare(looped, vector, rtol, 0.0, "a loop of scalar calls vs jit", args))


_RUNNERS: Final[dict[str, Callable[[ScipyWrapper], float | None]]] = {
    "values": check_values,
    "edge_cases": check_edge_cases,
    "gradients": check_gradients,
    "jit_vmap": check_jit_vmap,
}


def run_scipy_check(wrapper: ScipyWrapper, check: str) -> CheckResult:
    def run() -> float | None:
        # inf - inf and 0/0 at edge cases are expected, not warnings worth raising.
        with np.errstate(all="ignore"):
            return _RUNNERS[check](wrapper)

    return guarded(check, run)


def scipy_report(
    wrapper: ScipyWrapper,
    *,
    checks: Sequence[str] = SCIPY_CHECKS,
    plugin: str | None = None,
    kind: str = "scipy",
    progress: Callable[[str, CheckResult], None] | None = None,
) -> PrimitiveReport:
    results = []
    for check in checks:
        result = run_scipy_check(wrapper, check)
        if progress is not None:
            progress(wrapper.qualified_name, result)
        results.append(result)
    details = {"mirrors": wrapper.mirrors, "max_error": "relative error, absolute floor per dtype"}
    return PrimitiveReport(wrapper.qualified_name, kind, tuple(results), plugin, details)
