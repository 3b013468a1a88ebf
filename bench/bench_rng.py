"""Throughput of the jext.rng_impls generators against JAX's built-ins and numpy's Philox.

Run from the repository root::

    python bench/run.py rng        # or: python bench/bench_rng.py [--n LOG2]

Every JAX contender draws ``2**24`` values (``--n`` sets the log2) with ``jax.random.bits``
(uint32) under ``jax.jit``, compiled before timing; ``numpy.random.Philox`` fills the same
number of bytes with ``random_raw`` (C, one thread: the reference a Random123 or cuRAND
author would quote for Philox on a CPU).  Distributions (``uniform``, ``normal``,
``bernoulli``, float32) are timed the same way.  The contenders are timed side by side in
this one process, interleaved, their order rotating from repetition to repetition so that
machine noise hits them alike.  Each line gives the median time, GB/s of output, and the
ratios ``other_time / impl_time`` (above 1 means faster), each ratio the median of the
per-repetition ratios (the timings of a repetition are taken close together, which cancels
drifts in machine load better than a ratio of medians).  ``--smoke`` (what
``tests/test_bench.py`` runs): 2**10 values, 2 repetitions, ``uniform`` only, so that the
script runs end to end in seconds; its figures mean nothing.

Goals, on the backend printed first:

- bits: every jext generator >= 1.5x threefry2x32 (CPU; >= 1.0x on GPU), and the fastest
  >= 3x numpy's Philox (CPU);
- distributions: each jext generator's ratio to threefry2x32 within 20% of its bits ratio.

On CPU the jext generators run jext-rng-native's multi-threaded C++ kernels where that
plugin is installed (the line after the backend says so, with the thread count); the
``<name> xla`` lines are the same generators on their XLA path (``JEXT_RNG_NATIVE=0`` while
compiling), for comparison.  ``JEXT_RNG_THREADS`` caps the kernels' threads.

The machine may be shared and noisy: read the ratios, not the absolute times.  Why the
distribution goal is out of reach with a native kernel (XLA runs the float math as a
separate pass over memory after the custom call): docs/rng.md, "Limits".
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from _timing import interleaved

from jext.random import get_impl
from jext.rng_impls import CHACHA20, PHILOX4X64, THREEFRY4X64

REPS = 11


def _has_impl(name: str) -> bool:
    """Whether this JAX has the PRNG implementation ``name`` (philox4x32 is newer than 0.8)."""
    try:
        jax.random.key(0, impl=name)
    except ValueError:
        return False
    return True


BUILTINS: dict[str, Hashable] = {
    name: name for name in ("threefry2x32", "philox4x32") if _has_impl(name)
}
JEXT = {impl.name.removeprefix("jext."): impl.name for impl in (PHILOX4X64, CHACHA20, THREEFRY4X64)}
DISTRIBUTIONS: dict[str, Callable[[jax.Array, tuple[int, ...]], jax.Array]] = {
    "uniform": lambda k, s: jax.random.uniform(k, s, jnp.float32),
    "normal": lambda k, s: jax.random.normal(k, s, jnp.float32),
    "bernoulli": lambda k, s: jax.random.bernoulli(k, 0.3, s),
}
if "--smoke" in sys.argv[1:]:
    REPS, DISTRIBUTIONS = 2, {"uniform": DISTRIBUTIONS["uniform"]}
VS_THREEFRY_GOAL = {"cpu": 1.5, "gpu": 1.0}  # each jext generator
VS_NUMPY_GOAL = 3.0  # the fastest jext generator, CPU
DIST_TOLERANCE = 0.2  # distribution ratios within 20% of the bits ratio


def jax_impl(name: str) -> Hashable:
    return BUILTINS.get(name) or get_impl(JEXT[name]).jax_impl


def contender(
    impl: Hashable, draw: Callable[[jax.Array], jax.Array], label: str = ""
) -> Callable[[], None]:
    """A call of ``draw`` on a key of ``impl``, compiled and run once already (the seconds
    that took are printed after ``label``, where one is given)."""
    key = jax.random.key(0, impl=impl)

    # A new function each time: jax.jit caches by function, and the XLA-path contenders
    # must be compiled afresh (with JEXT_RNG_NATIVE=0), not found in that cache.
    def fresh(k: jax.Array) -> jax.Array:
        return draw(k)

    jitted = jax.jit(fresh)
    start = time.perf_counter()
    jitted(key).block_until_ready()
    if label:
        print(f"{label:>16}: compiled and first run in {time.perf_counter() - start:.1f} s")
    return lambda: jitted(key).block_until_ready()


@contextlib.contextmanager
def xla_path() -> Iterator[None]:
    """Lower the jext generators' cpu rule on its XLA path (not the native kernel)."""
    before = os.environ.get("JEXT_RNG_NATIVE")
    os.environ["JEXT_RNG_NATIVE"] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["JEXT_RNG_NATIVE"]
        else:
            os.environ["JEXT_RNG_NATIVE"] = before


def native_note() -> str | None:
    """How the jext generators run on CPU: jext-rng-native's kernels, or None (XLA)."""
    if importlib.util.find_spec("jext_rng_native") is None:
        return None
    import jext_rng_native

    from jext._registry import rng_native_wanted

    if not rng_native_wanted():
        return None
    return f"jext-rng-native C++ kernels, {jext_rng_native.max_threads()} thread(s)"


def numpy_philox(n: int) -> Callable[[], None]:
    """numpy's Philox4x64 BitGenerator writing ``4 n`` bytes (n/2 uint64 words)."""
    gen = np.random.Philox(0)

    def call() -> None:
        gen.random_raw(n // 2)

    return call


def ratio(times: dict[str, list[float]], other: str, name: str) -> float:
    return statistics.median(o / t for o, t in zip(times[other], times[name], strict=True))


def bits_contenders(
    names: list[str], kind: str, bits: Callable[[jax.Array], jax.Array], n: int
) -> dict[str, Callable[[], None]]:
    """Every generator's ``bits``; on CPU also numpy's Philox and the jext XLA paths."""
    calls = {name: contender(jax_impl(name), bits, name) for name in names}
    native = native_note() if kind == "cpu" else None
    if kind == "cpu":
        print(f"jext generators on CPU: {native or 'XLA path'}")
        calls["numpy Philox"] = numpy_philox(n)
    if native is not None:
        with xla_path():
            for name in JEXT:
                calls[f"{name} xla"] = contender(jax_impl(name), bits, f"{name} xla")
    return calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=24, help="log2 of the values per call")
    parser.add_argument(
        "--smoke", action="store_true", help="2**10 values, 2 repetitions, uniform only (a test)"
    )
    args = parser.parse_args()
    n = 1 << (10 if args.smoke else args.n)
    backend = jax.default_backend()
    kind = "cpu" if backend == "cpu" else "gpu"
    device = jax.devices()[0].device_kind
    print(f"jax {jax.__version__}, backend {backend} ({device}), 2**{n.bit_length() - 1} values")
    start = time.perf_counter()
    names = [*BUILTINS, *JEXT]

    def bits(k: jax.Array) -> jax.Array:
        return jax.random.bits(k, (n,), jnp.uint32)

    times = interleaved(bits_contenders(names, kind, bits, n), REPS)
    gbs = {name: 4 * n / statistics.median(t) / 1e9 for name, t in times.items()}
    print("\nbits (uint32)")
    for name in times:
        line = f"{name:>16}: {statistics.median(times[name]) * 1e3:8.2f} ms {gbs[name]:7.2f} GB/s"
        if name.removesuffix(" xla") in JEXT:
            line += f"  {ratio(times, 'threefry2x32', name):5.2f}x threefry2x32"
            if "philox4x32" in times:
                line += f"  {ratio(times, 'philox4x32', name):5.2f}x philox4x32"
            if "numpy Philox" in times:
                line += f"  {ratio(times, 'numpy Philox', name):5.2f}x numpy Philox"
        print(line)
    bits_ratio = {name: ratio(times, "threefry2x32", name) for name in JEXT}

    dist_ratio: dict[tuple[str, str], float] = {}
    for dist, fn in DISTRIBUTIONS.items():

        def draw(k: jax.Array, fn: Callable[..., jax.Array] = fn) -> jax.Array:
            return fn(k, (n,))

        dtimes = interleaved({name: contender(jax_impl(name), draw) for name in names}, REPS)
        print(f"\n{dist} (float32)" if dist != "bernoulli" else f"\n{dist} (bool)")
        for name in names:
            med = statistics.median(dtimes[name])
            line = f"{name:>16}: {med * 1e3:8.2f} ms {4 * n / med / 1e9:7.2f} GB/s"
            if name in JEXT:
                dist_ratio[dist, name] = ratio(dtimes, "threefry2x32", name)
                line += f"  {dist_ratio[dist, name]:5.2f}x threefry2x32"
                line += f"  (bits: {bits_ratio[name]:.2f}x)"
            print(line)

    print()
    goal = VS_THREEFRY_GOAL[kind]
    slowest = min(bits_ratio, key=bits_ratio.__getitem__)
    results = [bits_ratio[slowest] >= goal]
    print(
        f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: every generator >= {goal}x "
        f"threefry2x32 (slowest: {slowest}, {bits_ratio[slowest]:.2f}x)"
    )
    if kind == "cpu":
        vs_numpy = {name: ratio(times, "numpy Philox", name) for name in JEXT}
        fastest = max(vs_numpy, key=vs_numpy.__getitem__)
        results.append(vs_numpy[fastest] >= VS_NUMPY_GOAL)
        print(
            f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: fastest generator >= "
            f"{VS_NUMPY_GOAL}x numpy Philox (fastest: {fastest}, {vs_numpy[fastest]:.2f}x)"
        )
    worst = max(dist_ratio, key=lambda k: abs(dist_ratio[k] / bits_ratio[k[1]] - 1))
    drift = dist_ratio[worst] / bits_ratio[worst[1]] - 1
    results.append(abs(drift) <= DIST_TOLERANCE)
    print(
        f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: distribution ratios within "
        f"{DIST_TOLERANCE:.0%} of the bits ratio (worst: {worst[0]} with {worst[1]}, "
        f"{drift:+.0%})"
    )
    print(f"goals met: {sum(results)}/{len(results)} (total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
