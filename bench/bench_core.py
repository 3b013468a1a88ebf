"""Core overhead of a jext primitive against the same primitive written by hand.

Run from the repository root::

    python bench/bench_core.py

Both contenders use one reference, softplus ``jnp.logaddexp(beta * x, 0.0) / beta``
with a static param ``beta``:

- **jext**: ``@jext.primitive("bench.softplus")`` on the reference;
- **raw**: a hand-written ``jax.extend.core.Primitive`` (single result) with
  ``jax.interpreters.xla.apply_primitive`` as its impl, a hand-written abstract eval
  and ``mlir.lower_fun`` of the reference as its lowering, called through a thin
  wrapper ``raw_softplus(x, *, beta)`` that binds it.

Three measurements, each side by side in this one process, the contenders
interleaved (their order alternating from repetition to repetition) so that machine
noise hits both alike, and summarised by medians:

1. eager per-call time on a float32[8] array (goal: jext/raw at most 1.05x);
2. trace + lower + compile time of a jitted function chaining 500 calls; every
   repetition builds a fresh Python function and clears JAX's caches first, so it
   really re-traces, re-lowers and re-compiles (goal: at most 1.10x);
3. the jitted StableHLO (``Lowered.as_text()``) and the compiled HLO
   (``Compiled.as_text()``) of a small chain, which must be identical once the module
   name and the location / debug metadata are normalised away (goal: identical);
4. ``vmap``: trace + lower + compile of ``jit(vmap(chain))`` with the jext primitive
   (which stays one batched equation per call) against ``jit(vmap(chain))`` of the
   plain reference (goal: at most 1.05x), and their HLO (goal: identical);
5. (information) the first call of a primitive in a fresh process, which loads the
   installed plugins' lowering rules before the primitive's rules freeze, against the
   same with ``JEXT_DISABLE_PLUGIN_AUTOLOAD=1``.

Each prints ``GOAL MET`` or ``GOAL MISSED`` with its numbers.  A timing verdict uses
the median of the per-repetition ratios jext/raw (each pair measured back to back),
which cancels drifts in machine load better than the ratio of the two medians (also
printed).  The machine may be shared and noisy: read the ratios, not the absolute
times.  The whole run takes one to two minutes, nearly all of it XLA compiling the
500-call chains.

``--smoke`` (what ``tests/test_bench.py`` runs): 2 calls per batch, 3-call chains, one
repetition, so that the
script runs end to end in seconds; its figures mean nothing.
"""

from __future__ import annotations

import difflib
import functools
import gc
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import mlir, xla

import jext

BETA = 2.0
SHAPE = (8,)

EAGER_GOAL = 1.05
EAGER_REPS = 75  # timed batches per contender
EAGER_CALLS = 200  # calls per batch

COMPILE_GOAL = 1.10
COMPILE_CHAIN = 500  # primitive calls in the jitted function
COMPILE_REPS = 5  # timed trace+lower+compile runs per contender

HLO_CHAIN = 2  # primitive calls in the function whose HLO is compared
FIRST_CALL_REPS = 3

SMOKE = "--smoke" in sys.argv[1:]
if SMOKE:
    EAGER_REPS, EAGER_CALLS, COMPILE_CHAIN, COMPILE_REPS, FIRST_CALL_REPS = 2, 2, 3, 1, 1


class Softplus(Protocol):
    def __call__(self, x: jax.Array, /, *, beta: float = ...) -> jax.Array: ...


def softplus_reference(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """The one reference both contenders implement."""
    return jnp.logaddexp(beta * x, 0.0) / beta


# --- the contenders --------------------------------------------------------------------

jext_softplus = jext.primitive("bench.softplus")(softplus_reference)

# JAX's Primitive methods are untyped: hold it as Any so that mypy --strict accepts the calls.
raw_prim: Any = Primitive("bench.softplus_raw")
raw_prim.def_impl(functools.partial(xla.apply_primitive, raw_prim))


def _raw_abstract_eval(x: jax.core.ShapedArray, *, beta: float) -> jax.core.ShapedArray:
    del beta
    return jax.core.ShapedArray(x.shape, x.dtype, weak_type=x.weak_type)


raw_prim.def_abstract_eval(_raw_abstract_eval)


def _raw_lowering_fun(x: jax.Array, *, beta: float) -> jax.Array:
    return softplus_reference(x, beta=beta)


mlir.register_lowering(raw_prim, mlir.lower_fun(_raw_lowering_fun, multiple_results=False))


def raw_softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """The hand-written primitive as a user calls it."""
    out: jax.Array = raw_prim.bind(x, beta=beta)
    return out


def jext_bind_only(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """jext's JAX primitive bound directly, skipping ``jext.Primitive.__call__`` (info only)."""
    prim: Any = jext_softplus.jax_primitive
    outs: list[jax.Array] = prim.bind(x, beta=beta)
    return outs[0]


jitted_reference: Softplus = jax.jit(softplus_reference, static_argnames="beta")


# --- helpers -------------------------------------------------------------------------


@contextmanager
def _no_gc() -> Iterator[None]:
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _rotations(n: int, rep: int) -> list[int]:
    """The contender order for repetition ``rep``: rotated and, every other time, reversed."""
    order = [(i + rep) % n for i in range(n)]
    return order[::-1] if rep % 2 else order


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _paired_ratio(a: list[float], b: list[float]) -> float:
    """Median of per-repetition ratios a/b (each pair measured back to back)."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _goal(met: bool) -> str:
    return "GOAL MET" if met else "GOAL MISSED"


# --- 1. eager per-call time ------------------------------------------------------------


def bench_eager() -> bool:
    x = jnp.arange(SHAPE[0], dtype=jnp.float32)
    contenders: list[tuple[str, Softplus]] = [
        ("jext", jext_softplus),
        ("raw", raw_softplus),
        ("jext bind only (info)", jext_bind_only),
        ("jax.jit(reference) (info)", jitted_reference),
    ]
    expected = softplus_reference(x, beta=BETA)
    for name, fn in contenders:
        for _ in range(50):  # compile the per-primitive executable, warm caches
            out = fn(x, beta=BETA)
        if not bool(jnp.allclose(out, expected)):
            raise AssertionError(f"{name} computes a different softplus")

    samples: dict[str, list[float]] = {name: [] for name, _ in contenders}
    calls = range(EAGER_CALLS)
    with _no_gc():
        for rep in range(EAGER_REPS):
            for i in _rotations(len(contenders), rep):
                name, fn = contenders[i]
                t0 = time.perf_counter()
                for _ in calls:
                    out = fn(x, beta=BETA)
                out.block_until_ready()
                samples[name].append((time.perf_counter() - t0) / EAGER_CALLS)

    print(
        f"1. eager per-call time, float32{list(SHAPE)}, medians of {EAGER_REPS} "
        f"interleaved batches of {EAGER_CALLS} calls"
    )
    for name, _ in contenders:
        print(f"   {name:<27} {_median_us(samples[name]):8.2f} us/call")
    jext_us, raw_us = _median_us(samples["jext"]), _median_us(samples["raw"])
    of_medians = jext_us / raw_us
    ratio = _paired_ratio(samples["jext"], samples["raw"])
    overhead = jext_us - _median_us(samples["jext bind only (info)"])
    print(
        f"   jext/raw = {ratio:.3f}x (median of paired ratios; ratio of medians {of_medians:.3f}x)"
    )
    print(
        f"   info: jext.Primitive.__call__ adds {overhead:.2f} us/call to binding its JAX primitive"
    )
    met = ratio <= EAGER_GOAL
    print(
        f"   {_goal(met)}: eager jext/raw {ratio:.3f}x "
        f"({jext_us:.2f} vs {raw_us:.2f} us/call; goal <= {EAGER_GOAL:.2f}x)"
    )
    return met


# --- 2. trace + lower + compile ------------------------------------------------------


def _chain(fn: Softplus, n: int) -> Callable[[jax.Array], jax.Array]:
    """A new Python function (so a jit cache miss) applying ``fn`` ``n`` times."""

    def f(x: jax.Array) -> jax.Array:
        for _ in range(n):
            x = fn(x, beta=BETA)
        return x

    return f


_clear_caches: Callable[[], None] = jax.clear_caches  # untyped in JAX


def _time_compile(fn: Softplus, x: jax.Array, n: int) -> tuple[float, float, float]:
    """Seconds to trace, lower and compile a fresh jitted ``n``-call chain of ``fn``."""
    _clear_caches()
    f = _chain(fn, n)
    with _no_gc():
        t0 = time.perf_counter()
        traced = jax.jit(f).trace(x)
        t1 = time.perf_counter()
        lowered = traced.lower()
        t2 = time.perf_counter()
        lowered.compile()
        t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def bench_compile() -> bool:
    x = jnp.arange(SHAPE[0], dtype=jnp.float32)
    contenders: list[tuple[str, Softplus]] = [("jext", jext_softplus), ("raw", raw_softplus)]
    for _, fn in contenders:  # warm-up: first-use costs that are no one's overhead
        _time_compile(fn, x, 5)

    phases: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in contenders}
    for rep in range(COMPILE_REPS):
        for i in _rotations(len(contenders), rep):
            name, fn = contenders[i]
            phases[name].append(_time_compile(fn, x, COMPILE_CHAIN))

    def med(name: str, pick: Callable[[tuple[float, float, float]], float]) -> float:
        return statistics.median(pick(p) for p in phases[name])

    def phase(k: int) -> Callable[[tuple[float, float, float]], float]:
        return lambda p: p[k]

    print(
        f"2. trace+lower+compile of jit(f), f = {COMPILE_CHAIN} chained calls, medians "
        f"of {COMPILE_REPS} interleaved fresh runs"
    )
    print(f"   {'':<6} {'trace':>9} {'lower':>9} {'compile':>9} {'total':>9}")
    for name, _ in contenders:
        cells = [med(name, phase(k)) for k in range(3)] + [med(name, sum)]
        print(f"   {name:<6} " + " ".join(f"{c * 1e3:7.1f}ms" for c in cells))
    jext_total, raw_total = med("jext", sum), med("raw", sum)
    of_medians = jext_total / raw_total
    ratio = _paired_ratio([sum(p) for p in phases["jext"]], [sum(p) for p in phases["raw"]])
    front = _paired_ratio(
        [p[0] + p[1] for p in phases["jext"]], [p[0] + p[1] for p in phases["raw"]]
    )
    print(
        f"   jext/raw = {ratio:.3f}x (median of paired ratios; ratio of medians {of_medians:.3f}x)"
    )
    print(f"   info: trace+lower alone jext/raw = {front:.3f}x (XLA's compile dominates the total)")
    met = ratio <= COMPILE_GOAL
    print(
        f"   {_goal(met)}: trace+lower+compile jext/raw {ratio:.3f}x "
        f"({jext_total * 1e3:.1f} vs {raw_total * 1e3:.1f} ms; goal <= {COMPILE_GOAL:.2f}x)"
    )
    return met


# --- 3. HLO equality -------------------------------------------------------------------

_MODULE_NAME = re.compile(r"^(module @|HloModule )[\w.$-]+", re.MULTILINE)
_LOCATION = re.compile(r" loc\((?:[^()\"]|\"[^\"]*\"|\([^()]*\))*\)")
_LOC_ALIAS = re.compile(r"^#loc\d* = .*\n", re.MULTILINE)
_METADATA = re.compile(r", metadata=\{(?:[^{}\"]|\"[^\"]*\")*\}")
# Compiled HLO's debug tables (FileNames, FunctionNames, FileLocations, StackFrames).
_DEBUG_TABLE = re.compile(
    r"^(?:FileNames|FunctionNames|FileLocations|StackFrames)\n(?:.+\n)*\n*", re.MULTILINE
)


def normalize(text: str) -> str:
    """``text`` without its module name and location / debug metadata."""
    for pattern, repl in (
        (_MODULE_NAME, r"\1M"),
        (_LOCATION, ""),
        (_LOC_ALIAS, ""),
        (_METADATA, ""),
        (_DEBUG_TABLE, ""),
    ):
        text = pattern.sub(repl, text)
    return text


def _compare(kind: str, a: str, b: str) -> bool:
    if a == b:
        print(f"   {kind}: IDENTICAL ({len(a.splitlines())} lines)")
        return True
    diff = difflib.unified_diff(
        b.splitlines(), a.splitlines(), fromfile=f"raw {kind}", tofile=f"jext {kind}", lineterm=""
    )
    print(f"   {kind}: DIFFERENT")
    for line in diff:
        print(f"     {line}")
    return False


def bench_hlo() -> bool:
    x = jnp.arange(SHAPE[0], dtype=jnp.float32)
    texts: dict[str, tuple[str, str]] = {}
    for name, fn in (("jext", jext_softplus), ("raw", raw_softplus)):
        lowered = jax.jit(_chain(fn, HLO_CHAIN)).lower(x)
        compiled = lowered.compile().as_text() or "<no compiled text>"
        texts[name] = (normalize(lowered.as_text()), normalize(compiled))
    print(f"3. HLO of jit(f), f = {HLO_CHAIN} chained calls (module name and location / debug")
    print("   metadata normalised away)")
    same_stablehlo = _compare("StableHLO (lowered)", texts["jext"][0], texts["raw"][0])
    same_compiled = _compare("HLO (compiled)", texts["jext"][1], texts["raw"][1])
    met = same_stablehlo and same_compiled
    verdict = ", ".join(
        f"{kind} {'identical' if same else 'different'}"
        for kind, same in (("StableHLO", same_stablehlo), ("compiled HLO", same_compiled))
    )
    print(f"   {_goal(met)}: {verdict} (goal: both identical)")
    return met


# --- 4. vmap ---------------------------------------------------------------------------

VMAP_GOAL = 1.05
VMAP_BATCH = 16


def _vmapped(fn: Softplus) -> Softplus:
    def batched(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
        out: jax.Array = jax.vmap(functools.partial(fn, beta=beta))(x)
        return out

    return batched


def bench_vmap() -> bool:
    x = jnp.ones((VMAP_BATCH, *SHAPE), dtype=jnp.float32)
    contenders: list[tuple[str, Softplus]] = [
        ("jext", _vmapped(jext_softplus)),
        ("ref", _vmapped(softplus_reference)),
    ]
    for _, fn in contenders:
        _time_compile(fn, x, 5)
    totals: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for rep in range(COMPILE_REPS):
        for i in _rotations(len(contenders), rep):
            name, fn = contenders[i]
            totals[name].append(sum(_time_compile(fn, x, COMPILE_CHAIN)))
    ratio = _paired_ratio(totals["jext"], totals["ref"])
    jext_ms, ref_ms = (statistics.median(totals[n]) * 1e3 for n in ("jext", "ref"))
    print(
        f"4. vmap: trace+lower+compile of jit(vmap(f)), f = {COMPILE_CHAIN} chained calls, "
        f"batch {VMAP_BATCH}, medians of {COMPILE_REPS} interleaved fresh runs"
    )
    print(f"   jext {jext_ms:.1f} ms, reference {ref_ms:.1f} ms: jext/reference = {ratio:.3f}x")
    texts = {}
    for name, fn in contenders:
        lowered = jax.jit(_chain(fn, HLO_CHAIN)).lower(x)
        compiled = lowered.compile().as_text() or "<no compiled text>"
        texts[name] = (normalize(lowered.as_text()), normalize(compiled))
    same = _compare("StableHLO (lowered)", texts["jext"][0], texts["ref"][0])
    same_compiled = _compare("HLO (compiled)", texts["jext"][1], texts["ref"][1])
    met = ratio <= VMAP_GOAL and same and same_compiled
    print(
        f"   {_goal(met)}: vmap compile jext/reference {ratio:.3f}x (goal <= {VMAP_GOAL:.2f}x), "
        f"HLO {'identical' if same and same_compiled else 'different'} (goal: identical)"
    )
    return met


# --- 5. the first call ---------------------------------------------------------------

_FIRST_CALL = """
import time, jax.numpy as jnp, jext
p = jext.primitive("bench.first")(lambda x, /: x + 1)
x = jnp.ones(3)
t = time.perf_counter(); p(x).block_until_ready(); print(time.perf_counter() - t)
"""


def bench_first_call() -> None:
    import os
    import subprocess

    def run(**env: str) -> float:
        full = {**os.environ, **env}
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_CALL],
            env=full,
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.strip().splitlines()[-1])

    with_plugins, without = [], []
    for _ in range(FIRST_CALL_REPS):
        with_plugins.append(run())
        without.append(run(JEXT_DISABLE_PLUGIN_AUTOLOAD="1"))
    a, b = statistics.median(with_plugins), statistics.median(without)
    print("5. first call of a primitive in a fresh process (plugins' rules load before freezing)")
    print(
        f"   info: {a * 1e3:.0f} ms with the installed plugins, {b * 1e3:.0f} ms without "
        f"(+{(a - b) * 1e3:.0f} ms, once per process)"
    )


def main() -> int:
    print(
        f"jax {jax.__version__} on {jax.default_backend()}, jext {jext.__version__}, "
        f"python {sys.version.split()[0]}"
    )
    start = time.perf_counter()
    results = [bench_eager(), bench_compile(), bench_hlo(), bench_vmap()]
    bench_first_call()
    print(f"goals met: {sum(results)}/{len(results)} (total {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
