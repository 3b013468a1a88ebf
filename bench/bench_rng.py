"""Throughput of the jext.rng_impls generators against JAX's built-in threefry2x32 and philox4x32.

Run from the repository root::

    python bench/bench_rng.py

Every contender draws ``2**24`` uint32 values with ``jax.random.bits`` under ``jax.jit``
(compiled before timing).  The contenders are timed side by side in this one process,
interleaved, their order rotating from repetition to repetition so that machine noise hits
them alike.  For each jext generator it prints the median time and the ratios
``builtin_time / impl_time`` against both built-ins (above 1 means faster), each ratio the
median of the per-repetition ratios (the two timings of a repetition are taken close
together, which cancels drifts in machine load better than a ratio of medians).

Goals: every jext generator at least 1.5x threefry2x32, and the fastest at least 1.0x
philox4x32.  The machine may be shared and noisy: read the ratios, not the absolute times.
The whole run takes under a minute or two, mostly compiling.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Hashable

import jax
import jax.numpy as jnp

from jext.rng_impls import CHACHA20, PHILOX4X64, THREEFRY4X64

N = 1 << 24
REPS = 15
VS_THREEFRY_GOAL = 1.5  # each jext generator
VS_PHILOX_GOAL = 1.0  # the fastest jext generator

BUILTINS: dict[str, Hashable] = {"threefry2x32": "threefry2x32", "philox4x32": "philox4x32"}
JEXT: dict[str, Hashable] = {
    "philox4x64": PHILOX4X64.jax_impl,
    "chacha20": CHACHA20.jax_impl,
    "threefry4x64": THREEFRY4X64.jax_impl,
}


def contender(impl: Hashable) -> Callable[[], jax.Array]:
    """A call drawing N uint32 values with ``impl``, compiled and run once already."""
    key = jax.random.key(0, impl=impl)
    draw = jax.jit(lambda k: jax.random.bits(k, (N,), jnp.uint32))
    draw(key).block_until_ready()
    return lambda: draw(key)


def timings(calls: dict[str, Callable[[], jax.Array]]) -> dict[str, list[float]]:
    """Per-repetition seconds of every call, interleaved with a rotating order."""
    names = list(calls)
    out: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(REPS):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            calls[name]().block_until_ready()
            out[name].append(time.perf_counter() - start)
    return out


def main() -> int:
    print(f"jax {jax.__version__} on {jax.default_backend()}, {N} uint32 values, {REPS} reps")
    start = time.perf_counter()
    calls = {name: contender(impl) for name, impl in {**BUILTINS, **JEXT}.items()}
    times = timings(calls)

    def ratio(builtin: str, name: str) -> float:
        return statistics.median(b / t for b, t in zip(times[builtin], times[name], strict=True))

    for name in BUILTINS:
        print(f"{name:>13}: {statistics.median(times[name]) * 1e3:8.1f} ms  (built-in)")
    vs_threefry = {name: ratio("threefry2x32", name) for name in JEXT}
    vs_philox = {name: ratio("philox4x32", name) for name in JEXT}
    for name in JEXT:
        print(
            f"{name:>13}: {statistics.median(times[name]) * 1e3:8.1f} ms  "
            f"{vs_threefry[name]:5.2f}x threefry2x32  {vs_philox[name]:5.2f}x philox4x32"
        )

    slowest = min(vs_threefry, key=vs_threefry.__getitem__)
    met = vs_threefry[slowest] >= VS_THREEFRY_GOAL
    print(
        f"{'GOAL MET' if met else 'GOAL MISSED'}: every generator >= {VS_THREEFRY_GOAL}x "
        f"threefry2x32 (slowest: {slowest}, {vs_threefry[slowest]:.2f}x)"
    )
    fastest = max(vs_philox, key=vs_philox.__getitem__)
    met_fast = vs_philox[fastest] >= VS_PHILOX_GOAL
    print(
        f"{'GOAL MET' if met_fast else 'GOAL MISSED'}: fastest generator >= {VS_PHILOX_GOAL}x "
        f"philox4x32 (fastest: {fastest}, {vs_philox[fastest]:.2f}x)"
    )
    print(f"goals met: {met + met_fast}/2 (total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
