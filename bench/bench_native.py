"""Throughput of jext-example-native's kernels against their own jnp references.

Run from the repository root::

    python bench/run.py native     # or: python bench/bench_native.py [--n LOG2]

For every primitive of jext-example-native whose rule on the default backend is a kernel
(an FFI handler or a compiled Pallas kernel, not the reference and not Pallas's
interpreter), the jitted primitive and its jitted reference each process ``2**22``
float32 values (``--n`` sets the log2; row-wise kernels take rows of 1024), compiled before
timing, interleaved in this one process with a rotating order.  Each line gives the
median time, GB/s of input, and ``reference_time / kernel_time`` (above 1: the kernel is
faster), the median of the per-repetition ratios.

Goal: every kernel >= 1.0x its reference on a GPU (``softplus``'s CUDA handler and
``swish``'s Triton kernel).  On CPU the ratios are reported, not held to a goal: XLA's CPU
code fuses the references and runs them on several threads, the C++ handlers run on one.
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
from _timing import interleaved

REPS = 11
GPU_GOAL = 1.0  # each kernel against its reference, on a GPU


def cases(n: int) -> dict[str, tuple[Any, tuple[np.ndarray, ...]]]:
    """Each primitive of the plugin with its operands of about ``n`` float32 values."""
    from jext_example_native import rms_norm, rms_norm_bwd, rms_norm_fwd, softplus, swish

    rng = np.random.default_rng(0)
    flat = rng.standard_normal(n, dtype=np.float32)
    rows = flat.reshape(-1, 1024)
    w = rng.uniform(0.5, 1.5, 1024).astype(np.float32)
    scale = np.asarray(rms_norm_fwd.reference(jnp.asarray(rows))[1])
    return {
        "softplus": (softplus, (flat,)),
        "swish": (swish, (flat.reshape(-1, 128),)),
        "rms_norm": (rms_norm, (rows, w)),
        "rms_norm_fwd": (rms_norm_fwd, (rows,)),
        "rms_norm_bwd": (rms_norm_bwd, (scale, rows, rows[::-1].copy())),
    }


def kernel_rule(prim: Any, platform: str) -> tuple[str, bool]:
    """The rule ``platform`` lowers ``prim`` with, and whether it is a kernel."""
    rule = str(prim.lowering_platforms().get(platform, "reference"))
    return rule, rule != "reference" and not rule.endswith("_interpret")


def wait(out: Any) -> None:
    for leaf in jax.tree.leaves(out):
        leaf.block_until_ready()


def compiled(fn: Callable[..., Any], args: tuple[jax.Array, ...]) -> Callable[[], None]:
    jitted = jax.jit(fn)
    wait(jitted(*args))
    return lambda: wait(jitted(*args))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=22, help="log2 of the values per call")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (tests/test_bench.py)")
    options = parser.parse_args()
    n = 1 << (10 if options.smoke else options.n)
    backend = jax.default_backend()
    platform = "cuda" if backend == "gpu" else backend
    device = jax.devices()[0]
    log2 = n.bit_length() - 1
    print(f"jax {jax.__version__}, backend {backend} ({device.device_kind}), 2**{log2} values")
    start = time.perf_counter()
    ratios: dict[str, float] = {}
    for name, (prim, operands) in cases(n).items():
        rule, is_kernel = kernel_rule(prim, platform)
        if not is_kernel:
            print(f"{name:>13}: no kernel on {platform} (its rule: {rule}), skipped")
            continue
        args = tuple(jax.device_put(x, device) for x in operands)
        times = interleaved(
            {"kernel": compiled(prim, args), "reference": compiled(prim.reference, args)}, REPS
        )
        ratios[name] = statistics.median(
            r / k for r, k in zip(times["reference"], times["kernel"], strict=True)
        )
        size = sum(x.nbytes for x in operands)
        kernel = statistics.median(times["kernel"])
        reference = statistics.median(times["reference"])
        print(
            f"{name:>13}: {rule} {kernel * 1e3:8.2f} ms ({size / kernel / 1e9:6.2f} GB/s), "
            f"reference {reference * 1e3:8.2f} ms: {ratios[name]:5.2f}x the reference"
        )
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
            f"reference (slowest: {slowest}, {ratios[slowest]:.2f}x; total "
            f"{time.perf_counter() - start:.0f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
