"""Throughput, per-call overhead and compile time of the jext.rng_impls generators, every form.

Run from the repository root::

    python bench/run.py rng        # or: python bench/bench_rng.py [--n LOG2 ...] [--forms ...]

Contenders: JAX's ``threefry2x32`` and ``philox4x32``, and each jext generator in each of
its forms for the backend (docs/rng.md, "Forms"; forced with ``JEXT_RNG_FORM`` while
compiling): on GPU ``rolled`` and ``pallas`` (``unrolled`` on request: it compiles for
minutes at these sizes), on CPU ``native`` (jext-rng-native's kernel, where installed),
``chunked`` and ``rolled``, plus ``numpy.random.Philox`` filling the same bytes (C, one
thread).  The line after the backend gives the device's memory bandwidth as measured here
(``x ^ 1`` over a uint32 array of the same size: read and write) and its published figure
where the device is known.  For each size (``--n``, log2 of the values per call; default
2**26 and 2**28 on a GPU, where it is bandwidth-bound, and 2**24 on CPU):

- **compile**: seconds to compile and run once, per contender (the first size only);
- **bits** (uint32) and, at the first size, the distributions ``uniform``, ``normal``
  (float32) and ``bernoulli`` (bool): the median time of one call measured *pipelined* (``--calls``
  calls dispatched back to back, one wait at the end, divided by their number: the
  device's time, not Python's dispatch), GB/s of output and that as a share of the
  measured bandwidth, and ``threefry2x32_time / time`` (above 1: faster);
- **overhead**: the median time of one call of 16 values, waited for (dispatch, launch
  and synchronisation: what a tiny request costs).

The contenders are timed side by side in this one process, interleaved, their order
rotating from repetition to repetition, and each ratio is the median of per-repetition
ratios.  ``--smoke`` (what ``tests/test_bench.py`` runs): 2**10 values, 2 repetitions,
``uniform`` only; its figures mean nothing.

Goals, on the backend printed first:

- GPU, at the first size: every jext generator in its default form at >= 1.0x
  threefry2x32 for bits and every distribution; compile and first run <= 1 s each;
- CPU: bits of every jext generator (default form) >= 1.5x threefry2x32, the fastest
  >= 3x numpy's Philox; distribution ratios within 20% of the bits ratio (out of reach
  with a native kernel: docs/rng.md, "Limits").

The machine may be shared and noisy: read the ratios, not the absolute times.
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
from _timing import interleaved, wait

from jext.random import get_impl
from jext.rng_impls import CHACHA20, PHILOX4X64, THREEFRY4X64, _common

REPS = 11
OVERHEAD_VALUES = 16


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
DRAWS: dict[str, Callable[[jax.Array, tuple[int, ...]], jax.Array]] = {
    "bits": lambda k, s: jax.random.bits(k, s, jnp.uint32),
    "uniform": lambda k, s: jax.random.uniform(k, s, jnp.float32),
    "normal": lambda k, s: jax.random.normal(k, s, jnp.float32),
    "bernoulli": lambda k, s: jax.random.bernoulli(k, 0.3, s),
}
BYTES_PER_VALUE = {"bits": 4, "uniform": 4, "normal": 4, "bernoulli": 1}
DTYPE_NAMES = {"bits": "uint32", "uniform": "float32", "normal": "float32", "bernoulli": "bool"}
SMOKE = "--smoke" in sys.argv[1:]
if SMOKE:
    REPS, DRAWS = 2, {"bits": DRAWS["bits"], "uniform": DRAWS["uniform"]}
FORMS = {"cpu": ("native", "chunked", "rolled"), "gpu": ("rolled", "pallas")}
VS_THREEFRY_GOAL = {"cpu": 1.5, "gpu": 1.0}  # each jext generator, default form
COMPILE_GOAL_S = 1.0  # GPU: compile and first run, each generator (default form)
VS_NUMPY_GOAL = 3.0  # the fastest jext generator, CPU
DIST_TOLERANCE = 0.2  # CPU: distribution ratios within 20% of the bits ratio
# Published memory bandwidth (GB/s) by device kind substring.
PUBLISHED_GBS = {"H200": 4800.0, "H100": 3350.0, "A100": 2039.0, "L4": 300.0}


@contextlib.contextmanager
def forced(form: str | None) -> Iterator[None]:
    """Lower the jext generators in ``form`` (``JEXT_RNG_FORM``) while compiling."""
    before = os.environ.get(_common.ENV_RNG_FORM)
    if form is not None:
        os.environ[_common.ENV_RNG_FORM] = form
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_common.ENV_RNG_FORM, None)
        else:
            os.environ[_common.ENV_RNG_FORM] = before


def native_note() -> str | None:
    """jext-rng-native's kernels and their threads, or None where they are not used."""
    if importlib.util.find_spec("jext_rng_native") is None:
        return None
    import jext_rng_native

    from jext._registry import rng_native_wanted

    if not rng_native_wanted():
        return None
    return f"jext-rng-native C++ kernels, {jext_rng_native.max_threads()} thread(s)"


def default_form(kind: str) -> str:
    if kind == "cpu":
        return "native" if native_note() is not None else "chunked"
    return _common.DEFAULT_FORMS["cuda"]


class Contender:
    """One generator (and form) drawing with one function at one size, compiled."""

    def __init__(self, impl: Hashable, form: str | None, draw: Callable[..., jax.Array], n: int):
        self.key = jax.random.key(0, impl=impl)

        # A new function each time: jax.jit caches by function, and each form must be
        # lowered afresh (JEXT_RNG_FORM is read at lowering), not found in that cache.
        def fresh(k: jax.Array) -> jax.Array:
            return draw(k, (n,))

        with forced(form):
            start = time.perf_counter()
            self.fn = jax.jit(fresh).lower(self.key).compile()
            wait(self.fn(self.key))
            self.compile_s = time.perf_counter() - start

    def pipelined(self, calls: int) -> Callable[[], None]:
        def run() -> None:
            wait([self.fn(self.key) for _ in range(calls)])

        return run

    def once(self) -> None:
        wait(self.fn(self.key))


def numpy_philox(n: int, calls: int) -> Callable[[], None]:
    """numpy's Philox4x64 BitGenerator writing ``4 n`` bytes (n/2 uint64 words), ``calls`` times."""
    gen = np.random.Philox(0)

    def call() -> None:
        for _ in range(calls):
            gen.random_raw(n // 2)

    return call


def copy_bandwidth(n: int, calls: int) -> float:
    """GB/s of ``x ^ 1`` over ``n`` uint32 values (4 bytes read and 4 written each)."""
    x = jnp.zeros((n,), jnp.uint32)
    flip = jax.jit(lambda v: v ^ jnp.uint32(1))
    wait(flip(x))
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        wait([flip(x) for _ in range(calls)])
        times.append((time.perf_counter() - start) / calls)
    return 8 * n / statistics.median(times) / 1e9


def ratio(times: dict[str, list[float]], other: str, name: str) -> float:
    return statistics.median(o / t for o, t in zip(times[other], times[name], strict=True))


def contenders(kind: str, forms: tuple[str, ...]) -> dict[str, tuple[Hashable, str | None]]:
    """Label -> (impl, form): JAX's built-ins, then every jext generator in every form."""
    out: dict[str, tuple[Hashable, str | None]] = {b: (b, None) for b in BUILTINS}
    for name, full in JEXT.items():
        for form in forms:
            out[f"{name}/{form}"] = (get_impl(full).jax_impl, form)
    return out


def judge(
    kind: str,
    default: str,
    labels: dict[str, tuple[Hashable, str | None]],
    ratios: dict[tuple[str, str], float],
    bits_times: dict[str, list[float]],
) -> list[bool]:
    """The goals at the first size, on each generator's default form: met or not, printed."""
    results: list[bool] = []
    # Goals, at the first size, on each generator's default form.
    goal = VS_THREEFRY_GOAL[kind]
    judged = {name: f"{name}/{default}" for name in JEXT if f"{name}/{default}" in labels}
    for what in DRAWS if kind == "gpu" else ("bits",):
        slowest = min(judged, key=lambda name: ratios[what, judged[name]])
        worst = ratios[what, judged[slowest]]
        results.append(worst >= goal)
        print(
            f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: {what} of every generator "
            f"({default}) >= {goal}x threefry2x32 (slowest: {slowest}, {worst:.2f}x)"
        )
    if kind == "cpu":
        vs_numpy = {name: ratio(bits_times, "numpy Philox", judged[name]) for name in judged}
        fastest = max(vs_numpy, key=vs_numpy.__getitem__)
        results.append(vs_numpy[fastest] >= VS_NUMPY_GOAL)
        print(
            f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: fastest generator "
            f"({default}) >= {VS_NUMPY_GOAL}x numpy Philox (fastest: {fastest}, "
            f"{vs_numpy[fastest]:.2f}x)"
        )
    if kind == "cpu" and not SMOKE:
        drift = {
            (what, name): ratios[what, judged[name]] / ratios["bits", judged[name]] - 1
            for what in DRAWS
            if what != "bits"
            for name in judged
        }
        worst_key = max(drift, key=lambda k: abs(drift[k]))
        results.append(abs(drift[worst_key]) <= DIST_TOLERANCE)
        print(
            f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: distribution ratios within "
            f"{DIST_TOLERANCE:.0%} of the bits ratio (worst: {worst_key[0]} with "
            f"{worst_key[1]}, {drift[worst_key]:+.0%})"
        )
    return results


def report_compile(kind: str, default: str, compile_s: dict[str, float], log2: int) -> list[bool]:
    """Compile-and-first-run seconds per contender; on GPU the goal, met or not."""
    results: list[bool] = []
    print(f"\ncompile and first run (bits, 2**{log2} values)")
    for label, seconds in compile_s.items():
        print(f"{label:>22}: {seconds:6.2f} s")
    if kind == "gpu":
        judged_compile = {
            name: compile_s[f"{name}/{default}"]
            for name in JEXT
            if f"{name}/{default}" in compile_s
        }
        slowest = max(judged_compile, key=judged_compile.__getitem__)
        results.append(judged_compile[slowest] <= COMPILE_GOAL_S)
        print(
            f"{'GOAL MET' if results[-1] else 'GOAL MISSED'}: compile and first run of every "
            f"generator ({default}) <= {COMPILE_GOAL_S} s (slowest: {slowest}, "
            f"{judged_compile[slowest]:.2f} s)"
        )
    return results


def report_overhead(labels: dict[str, tuple[Hashable, str | None]]) -> None:
    """Per-call time of a tiny request, waited for, per contender."""
    print(f"\nper-call overhead ({OVERHEAD_VALUES} values, one call waited for)")
    tiny = {
        label: Contender(impl, form, DRAWS["bits"], OVERHEAD_VALUES).once
        for label, (impl, form) in labels.items()
    }
    for label, t in interleaved(tiny, 3 * REPS).items():
        print(f"{label:>22}: {statistics.median(t) * 1e6:8.1f} us")


def report_times(
    what: str, times: dict[str, list[float]], n: int, calls: int, gbs_copy: float
) -> dict[tuple[str, str], float]:
    """Print one draw's times; return each jext contender's ratio to threefry2x32."""
    ratios: dict[tuple[str, str], float] = {}
    print(f"{what} ({DTYPE_NAMES[what]})")
    for label, t in times.items():
        med = statistics.median(t) / calls
        out_gbs = BYTES_PER_VALUE[what] * n / med / 1e9
        line = (
            f"{label:>22}: {med * 1e3:9.3f} ms {out_gbs:8.1f} GB/s "
            f"({out_gbs / gbs_copy:4.0%} of bandwidth)"
        )
        if label not in BUILTINS and label != "numpy Philox":
            ratios[what, label] = ratio(times, "threefry2x32", label)
            line += f"  {ratios[what, label]:5.2f}x threefry2x32"
            if "numpy Philox" in times:
                line += f"  {ratio(times, 'numpy Philox', label):5.2f}x numpy Philox"
        print(line)
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", help="log2 of the values per call")
    parser.add_argument("--forms", help="comma-separated jext forms (default: per backend)")
    parser.add_argument("--calls", type=int, default=8, help="calls per pipelined timing")
    parser.add_argument(
        "--smoke", action="store_true", help="2**10 values, 2 repetitions, uniform only (a test)"
    )
    args = parser.parse_args()
    backend = jax.default_backend()
    kind = "cpu" if backend == "cpu" else "gpu"
    device = jax.devices()[0].device_kind
    sizes = [10] if args.smoke else (args.n or ([26, 28] if kind == "gpu" else [24]))
    forms = tuple(args.forms.split(",")) if args.forms else FORMS[kind]
    if kind == "cpu" and native_note() is None:
        forms = tuple(f for f in forms if f != "native")
    calls = 2 if args.smoke else args.calls
    print(f"jax {jax.__version__}, backend {backend} ({device}), forms {', '.join(forms)}")
    if kind == "cpu":
        print(f"jext generators on CPU by default: {native_note() or 'XLA path (chunked)'}")
    default = default_form(kind)
    start = time.perf_counter()
    labels = contenders(kind, forms)
    results: list[bool] = []
    compile_s: dict[str, float] = {}

    for log2 in sizes:
        n = 1 << log2
        gbs_copy = copy_bandwidth(n, calls)
        published = next((v for k, v in PUBLISHED_GBS.items() if k in device), None)
        note = f", published {published:.0f} GB/s" if published else ""
        print(f"\n2**{log2} values: memory bandwidth measured {gbs_copy:.0f} GB/s (x ^ 1){note}")
        ratios: dict[tuple[str, str], float] = {}
        # Distributions at the first size; the larger sizes time the bits alone.
        draws = DRAWS if log2 == sizes[0] else {"bits": DRAWS["bits"]}
        for what, draw in draws.items():
            built = {label: Contender(impl, f, draw, n) for label, (impl, f) in labels.items()}
            if log2 == sizes[0] and what == "bits":
                compile_s = {label: c.compile_s for label, c in built.items()}
            calls_by_label = {label: c.pipelined(calls) for label, c in built.items()}
            if kind == "cpu" and what == "bits":
                calls_by_label["numpy Philox"] = numpy_philox(n, calls)
            times = interleaved(calls_by_label, REPS)
            if what == "bits":
                bits_times = times
            ratios.update(report_times(what, times, n, calls, gbs_copy))
        if log2 == sizes[0]:
            results += judge(kind, default, labels, ratios, bits_times)

    results += report_compile(kind, default, compile_s, sizes[0])

    report_overhead(labels)
    print(f"goals met: {sum(results)}/{len(results)} (total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
