"""A dense sweep of every installed SciPy wrapper inside its declared domains: values
against the wrapper's oracle, or derivatives against finite differences of the wrapper.

Run from the repository root::

    python plugins/jext-scipy-special/tools/dense_survey.py [NAME-GLOB ...] [--float32]
        [--points N] [--seed S] [--derivatives]

``jext check`` samples 2000 points uniformly per domain; this draws ``N`` (default
20,000; 2000 for a wrapper with its own, slow, oracle) where uniform sampling rarely
goes: a quarter within 1e-16..1e-1 (relative) of an integer, a quarter log-uniform in
magnitude down to 1e-300, a quarter within 1e-16..1 (relative to the width) of an edge,
the rest uniform.  Values: one line per (wrapper, domain) with the points beyond ten
times the wrapper's ``rtol`` (its ``atol`` as the floor) and the worst of them; the
oracle is called in float64 on the rounded arguments, as ``jext check`` does.  Results
below the normal range on both sides count as equal (XLA's CPU flushes them).
``--derivatives``: each differentiable argument's JVP against fourth-order central
differences of the wrapper itself (step ``1e-5 max(1, |x|)``), 3000 interior points,
flagged beyond 1e-4 relative; the discrete quantiles' jumps show up there by design.
``--digest``: instead of comparing, one SHA-256 line per (wrapper, domain) of the values
(with ``--derivatives``, of the JVPs) at points drawn from a generator seeded by the
wrapper's name, so two versions of the plugin can be compared bit for bit (``diff``).

A flagged point is a lead, not a verdict: at many of them SciPy, not jext, is wrong
(bench/results/scipy-special-sweeps.md); settle each with mpmath.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import hashlib
import warnings
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]

from jext._registry import registry  # noqa: E402  (after x64 is set)
from jext.scipy import Domain, ScipyWrapper  # noqa: E402
from jext.testing._scipy_checks import _sample, oracle_of  # noqa: E402

SLOW_ORACLE_POINTS = 2000
DERIVATIVE_POINTS = 3000


def _column(rng: np.random.Generator, low: float, high: float, n: int, integer: bool) -> np.ndarray:
    lo, hi = max(low, -1e300), min(high, 1e300)
    width = hi - lo if np.isfinite(hi - lo) else 1e300
    k = n // 4
    uniform = lo + width * rng.random(n - 3 * k)
    if lo >= 0.0:
        floor = max(lo, 1e-300)
        magnitude = np.exp(rng.uniform(np.log(floor), np.log(max(hi, floor)), k))
    else:
        top = max(abs(lo), abs(hi), 1e-300)
        magnitude = np.exp(rng.uniform(np.log(1e-300), np.log(top), k)) * rng.choice([-1, 1], k)
    offset = width * 10.0 ** rng.uniform(-16.0, 0.0, k)
    edges = np.where(rng.random(k) < 0.5, lo + offset, hi - offset)
    span = width < 1e6
    whole = np.round(lo + width * rng.random(k)) if span else np.round(rng.uniform(-50, 50, k))
    near = whole + np.maximum(1.0, np.abs(whole)) * 10.0 ** rng.uniform(-16.0, -1.0, k)
    column = np.clip(np.concatenate([uniform, magnitude, edges, near]), lo, hi)
    rng.shuffle(column)
    return np.asarray(np.round(column) if integer else column)


def _stacked(result: Any) -> np.ndarray:
    if isinstance(result, tuple | list):
        return np.stack([np.asarray(r) for r in result])
    return np.asarray(result)


def _columns(rng: np.random.Generator, domain: Domain, n: int, dtype: str) -> list[np.ndarray]:
    return [
        _column(rng, lo, hi, n, i in domain.integers).astype(dtype).astype(np.float64)
        for i, (lo, hi) in enumerate(domain.bounds)
    ]


def survey_values(wrapper: ScipyWrapper, rng: np.random.Generator, n: int, dtype: str) -> None:
    oracle = oracle_of(wrapper)
    rtol, atol = wrapper.tolerances[dtype]
    tiny = float(np.finfo(dtype).tiny)
    points = SLOW_ORACLE_POINTS if wrapper.oracle is not None else n
    for d, domain in enumerate(wrapper.domains):
        cols = _columns(rng, domain, points, dtype)

        def call(*args: Any, kwargs: Any = domain.kwargs) -> Any:
            return wrapper.public(*args, **kwargs)

        got = _stacked(jax.jit(call)(*(c.astype(dtype) for c in cols)))
        got = got.astype(np.complex128 if np.iscomplexobj(got) else np.float64)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = _stacked(oracle(*cols, **domain.kwargs))
            rounded = np.result_type(dtype, np.complex64) if np.iscomplexobj(want) else dtype
            want = want.astype(rounded).astype(want.dtype)
            got, want = np.broadcast_arrays(got, want)
            same = (np.isnan(got) & np.isnan(want)) | (got == want)
            same |= (np.abs(got) < tiny) & (np.abs(want) < tiny)
            err = np.abs(got - want) / np.maximum(np.abs(want), atol / rtol)
            err = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))
        worst_per_point = err.reshape(-1, points).max(axis=0)
        bad = worst_per_point > 10.0 * rtol
        label = f"{wrapper.scope}.{wrapper.name} {dtype} domain {d}"
        if not bad.any():
            print(f"{label}: ok (worst {worst_per_point.max():.2g})", flush=True)
            continue
        i = int(np.argmax(worst_per_point))
        at = [float(c[i]) for c in cols]
        print(
            f"{label}: {int(bad.sum())}/{points} beyond 10 rtol; worst {worst_per_point[i]:.3g} "
            f"at {at}: got {got.reshape(-1, points)[:, i]}, "
            f"oracle {want.reshape(-1, points)[:, i]}",
            flush=True,
        )


def digest_values(wrapper: ScipyWrapper, rng: np.random.Generator, n: int, dtype: str) -> None:
    for d, domain in enumerate(wrapper.domains):
        cols = [c.astype(dtype) for c in _columns(rng, domain, n, dtype)]

        def call(*args: Any, kwargs: Any = domain.kwargs) -> Any:
            return wrapper.public(*args, **kwargs)

        got = _stacked(jax.jit(call)(*cols))
        sha = hashlib.sha256(got.tobytes()).hexdigest()[:32]
        print(f"{wrapper.scope}.{wrapper.name} {dtype} domain {d}: {got.dtype} {sha}", flush=True)


def digest_derivatives(wrapper: ScipyWrapper, rng: np.random.Generator) -> None:
    for d, domain in enumerate(wrapper.domains):
        cols = _derivative_points(rng, domain)

        def value(*args: Any, kwargs: Any = domain.kwargs) -> Any:
            return wrapper.public(*args, **kwargs)

        for i in wrapper.differentiable:
            if i in domain.integers:
                continue
            slope = _stacked(_jvp_program(value, i, len(cols))(*cols)[1])
            sha = hashlib.sha256(slope.tobytes()).hexdigest()[:32]
            print(f"{wrapper.scope}.{wrapper.name} domain {d} d/d(argument {i}): {sha}", flush=True)


def _derivative_points(rng: np.random.Generator, domain: Domain) -> list[np.ndarray]:
    """``jext check``'s sampling, 1% inside the domain clipped to +-1e3."""
    clipped = tuple((max(low, -1e3), min(high, 1e3)) for low, high in domain.bounds)
    return _sample(rng, dataclasses.replace(domain, bounds=clipped), DERIVATIVE_POINTS, shrink=0.01)


def _jvp_program(fn: Callable[..., Any], i: int, nargs: int) -> Callable[..., tuple[Any, Any]]:
    def along(*args: Any) -> tuple[Any, Any]:
        def moved(xi: Any) -> Any:
            full = list(args)
            full[i] = xi
            return fn(*full)

        return jax.jvp(moved, (args[i],), (jnp.ones_like(args[i]),))

    return jax.jit(along)


def survey_derivatives(wrapper: ScipyWrapper, rng: np.random.Generator) -> None:
    n = DERIVATIVE_POINTS
    for d, domain in enumerate(wrapper.domains):
        cols = _derivative_points(rng, domain)

        def value(*args: Any, kwargs: Any = domain.kwargs) -> Any:
            out = wrapper.public(*args, **kwargs)
            parts = out if isinstance(out, tuple | list) else (out,)
            return jnp.stack([jnp.real(p) for p in parts])

        plain = jax.jit(value)
        for i in wrapper.differentiable:
            if i in domain.integers:
                continue
            _, slope = _jvp_program(value, i, len(cols))(*cols)
            slope = np.asarray(slope)
            h = 1e-5 * np.maximum(1.0, np.abs(cols[i]))

            shifted = []
            for k in (1.0, -1.0, 2.0, -2.0):
                moved = list(cols)
                moved[i] = cols[i] + k * h
                shifted.append(np.asarray(plain(*moved)))
            with np.errstate(all="ignore"):
                up, down, up2, down2 = shifted
                fd = (8.0 * (up - down) - (up2 - down2)) / (12.0 * h)
                finite = np.isfinite(fd) & np.isfinite(up) & np.isfinite(down)
                scale = np.max(np.where(finite, np.abs(fd), 0.0), axis=-1, keepdims=True)
                err = np.abs(slope - fd) / np.maximum(np.abs(fd), 1e-6 * np.maximum(scale, 1e-300))
                err = np.where(finite, np.where(np.isnan(slope), np.inf, err), 0.0)
            worst = err.reshape(-1, n).max(axis=0)
            label = f"{wrapper.scope}.{wrapper.name} domain {d} d/d(argument {i})"
            j = int(np.argmax(worst))
            if worst[j] <= 1e-4:
                print(f"{label}: ok (worst {worst[j]:.2g})", flush=True)
                continue
            print(
                f"{label}: {int((worst > 1e-4).sum())}/{n} beyond 1e-4; worst {worst[j]:.3g} at "
                f"{[float(c[j]) for c in cols]}: JVP {slope.reshape(-1, n)[:, j]}, "
                f"differences {fd.reshape(-1, n)[:, j]}",
                flush=True,
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=["*"], help="globs of scope.name")
    parser.add_argument("--float32", action="store_true")
    parser.add_argument("--derivatives", action="store_true")
    parser.add_argument("--points", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--digest", action="store_true", help="hashes of the values, bit for bit")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    dtype = "float32" if args.float32 else "float64"
    for (scope, name), owned in sorted(registry().scipy_wrappers().items()):
        wrapper = owned[0].item
        if not any(fnmatch.fnmatch(f"{scope}.{name}", p) for p in args.names):
            continue
        if args.digest:
            own = np.random.default_rng([args.seed, zlib.crc32(f"{scope}.{name}".encode())])
            if args.derivatives and wrapper.differentiable and "float64" in wrapper.dtypes:
                digest_derivatives(wrapper, own)
            elif not args.derivatives and dtype in wrapper.dtypes:
                digest_values(wrapper, own, args.points, dtype)
        elif args.derivatives:
            if wrapper.differentiable and "float64" in wrapper.dtypes:
                survey_derivatives(wrapper, rng)
        elif dtype in wrapper.dtypes:
            survey_values(wrapper, rng, args.points, dtype)


if __name__ == "__main__":
    main()
