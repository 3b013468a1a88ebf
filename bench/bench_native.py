"""Throughput, per-call overhead and compile time of jext-example-native's kernels.

Run from the repository root::

    python bench/run.py native     # or: python bench/bench_native.py [--n LOG2 ...]

For every primitive of jext-example-native whose rule on the default backend is a kernel
(an FFI handler or a compiled Pallas kernel, not the reference and not Pallas's
interpreter), three contenders process the same float32 values (row-wise kernels take
rows of 1024), each compiled first (the seconds that took are printed):

- ``kernel``: the jitted jext primitive;
- ``plain``: the same kernel without jext, where there is one: the same FFI handler
  through ``jax.ffi.ffi_call`` (the call jext's rule makes), or the same Pallas function
  called directly;
- ``reference``: the jitted jnp reference (what XLA makes of it).

Per size (``--n``, log2 of the values; default 2**26 on a GPU, where it is
bandwidth-bound, 2**22 on CPU): the median time of one call measured *pipelined*
(``--calls`` calls dispatched back to back, one wait at the end), GB/s of input and
output and that as a share of the memory bandwidth measured here (``x ^ 1``), and
``reference_time / kernel_time`` (above 1: the kernel is faster).  Then the per-call
overhead: one call of 16 values, waited for, per contender; ``kernel`` against ``plain``
is what jext adds to a call.

Goal: every kernel >= 1.0x its reference on a GPU, at the first size (``softplus``'s CUDA
handler and ``swish``'s Triton kernel), and no overhead of jext's own.  On CPU the ratios
are reported, not held to a goal: XLA's CPU code fuses the references and runs them on
several threads, the C++ handlers run on one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _timing import interleaved, wait

REPS = 11
GPU_GOAL = 1.0  # each kernel against its reference, on a GPU
OVERHEAD_VALUES = 16
ROW = 1024


def cases(n: int) -> dict[str, tuple[Any, tuple[np.ndarray, ...]]]:
    """Each primitive of the plugin with its operands of about ``n`` float32 values."""
    from jext_example_native import rms_norm, rms_norm_bwd, rms_norm_fwd, softplus, swish

    rng = np.random.default_rng(0)
    flat = rng.standard_normal(max(n, ROW), dtype=np.float32)[:n]
    rows = np.resize(flat, (max(1, n // ROW), ROW))
    w = rng.uniform(0.5, 1.5, ROW).astype(np.float32)
    scale = np.asarray(rms_norm_fwd.reference(jnp.asarray(rows))[1])
    return {
        "softplus": (softplus, (flat,)),
        "swish": (swish, (np.resize(flat, (max(1, n // 128), 128)),)),
        "rms_norm": (rms_norm, (rows, w)),
        "rms_norm_fwd": (rms_norm_fwd, (rows,)),
        "rms_norm_bwd": (rms_norm_bwd, (scale, rows, rows[::-1].copy())),
    }


def plain(name: str, platform: str) -> Callable[..., Any] | None:
    """The same kernel without jext: its FFI handler through jax.ffi.ffi_call, or its
    Pallas function called directly; None where there is none to compare."""
    if name == "softplus" and platform in ("cpu", "cuda"):

        def softplus_ffi(x: jax.Array) -> jax.Array:
            out = jax.ShapeDtypeStruct(x.shape, x.dtype)  # type: ignore[no-untyped-call]
            call = jax.ffi.ffi_call("native_softplus", out, vmap_method="broadcast_all")
            result: jax.Array = call(x, beta=np.float32(1.0))
            return result

        return softplus_ffi
    if name == "swish" and platform == "cuda":
        from jext_example_native import _pallas

        return _pallas.swish_triton
    return None


def kernel_rule(prim: Any, platform: str) -> tuple[str, bool]:
    """The rule ``platform`` lowers ``prim`` with, and whether it is a kernel."""
    rule = str(prim.lowering_platforms().get(platform, "reference"))
    return rule, rule != "reference" and not rule.endswith("_interpret")


class Compiled:
    """``fn`` jitted and compiled for ``args``, run once (``seconds`` it all took)."""

    def __init__(self, fn: Callable[..., Any], args: tuple[jax.Array, ...]) -> None:
        start = time.perf_counter()
        self.fn = jax.jit(fn).lower(*args).compile()
        self.args = args
        wait(self.fn(*args))
        self.seconds = time.perf_counter() - start

    def pipelined(self, calls: int) -> Callable[[], None]:
        return lambda: wait([self.fn(*self.args) for _ in range(calls)])

    def once(self) -> None:
        wait(self.fn(*self.args))


def copy_bandwidth(n: int, calls: int) -> float:
    """GB/s of ``x ^ 1`` over ``n`` uint32 values (4 bytes read and 4 written each)."""
    run = Compiled(lambda v: v ^ jnp.uint32(1), (jnp.zeros((n,), jnp.uint32),))
    times = interleaved({"copy": run.pipelined(calls)}, REPS)["copy"]
    return 8 * n / (statistics.median(times) / calls) / 1e9


def contenders(
    name: str, prim: Any, platform: str, args: tuple[jax.Array, ...]
) -> dict[str, Compiled]:
    out = {"kernel": Compiled(prim, args)}
    other = plain(name, platform)
    if other is not None:
        out["plain"] = Compiled(other, args)
    out["reference"] = Compiled(prim.reference, args)
    return out


def throughput(
    name: str, prim: Any, platform: str, n: int, calls: int, bandwidth: float
) -> float | None:
    """Print the kernel's pipelined figures at ``n`` values; its ratio to the reference."""
    rule, is_kernel = kernel_rule(prim, platform)
    if not is_kernel:
        print(f"{name:>13}: no kernel on {platform} (its rule: {rule}), skipped")
        return None
    device = jax.devices()[0]
    operands = cases(n)[name][1]
    args = tuple(jax.device_put(x, device) for x in operands)
    built = contenders(name, prim, platform, args)
    times = interleaved({k: c.pipelined(calls) for k, c in built.items()}, REPS)
    outs = jax.tree.leaves(jax.eval_shape(prim, *args))
    out_bytes = sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in outs)
    moved = sum(x.nbytes for x in operands) + out_bytes
    ratio = statistics.median(
        r / k for r, k in zip(times["reference"], times["kernel"], strict=True)
    )
    print(f"{name:>13}: {rule}; {ratio:5.2f}x the reference")
    for label, t in times.items():
        med = statistics.median(t) / calls
        print(
            f"{'':>13}  {label:>9}: {med * 1e3:9.3f} ms {moved / med / 1e9:8.1f} GB/s "
            f"({moved / med / 1e9 / bandwidth:4.0%} of bandwidth), compiled and run in "
            f"{built[label].seconds:5.2f} s"
        )
    return ratio


def overhead(name: str, prim: Any, platform: str) -> None:
    """Print one waited-for call of a tiny operand per contender."""
    if not kernel_rule(prim, platform)[1]:
        return
    device = jax.devices()[0]
    args = tuple(jax.device_put(x, device) for x in cases(OVERHEAD_VALUES)[name][1])
    built = contenders(name, prim, platform, args)
    times = interleaved({k: c.once for k, c in built.items()}, 5 * REPS)
    cells = ", ".join(f"{k} {statistics.median(t) * 1e6:7.1f} us" for k, t in times.items())
    print(f"{name:>13}: {cells}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", help="log2 of the values per call")
    parser.add_argument("--calls", type=int, default=8, help="calls per pipelined timing")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (tests/test_bench.py)")
    options = parser.parse_args()
    backend = jax.default_backend()
    platform = "cuda" if backend == "gpu" else backend
    sizes = [10] if options.smoke else (options.n or ([26] if backend == "gpu" else [22]))
    calls = 2 if options.smoke else options.calls
    device = jax.devices()[0]
    print(f"jax {jax.__version__}, backend {backend} ({device.device_kind})")
    start = time.perf_counter()
    ratios: dict[str, float] = {}
    prims = {name: prim for name, (prim, _) in cases(ROW).items()}
    for log2 in sizes:
        bandwidth = copy_bandwidth(1 << log2, calls)
        print(f"\n2**{log2} values: memory bandwidth measured {bandwidth:.0f} GB/s (x ^ 1)")
        for name, prim in prims.items():
            got = throughput(name, prim, platform, 1 << log2, calls, bandwidth)
            if got is not None and log2 == sizes[0]:
                ratios[name] = got
    print(f"\nper-call overhead ({OVERHEAD_VALUES} values, one call waited for)")
    for name, prim in prims.items():
        overhead(name, prim, platform)
    print()
    if not ratios:
        print(f"no kernel of jext-example-native runs on {platform}")
    elif platform == "cpu":
        print(f"CPU: ratios reported, no goal (total {time.perf_counter() - start:.0f} s)")
    else:
        slowest = min(ratios, key=ratios.__getitem__)
        met = ratios[slowest] >= GPU_GOAL
        print(
            f"{'GOAL MET' if met else 'GOAL MISSED'}: every kernel >= {GPU_GOAL}x its "
            f"reference at 2**{sizes[0]} (slowest: {slowest}, {ratios[slowest]:.2f}x; total "
            f"{time.perf_counter() - start:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
