"""Interleaved timing shared by the throughput benchmarks (a module, not a benchmark)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax


def interleaved(calls: dict[str, Callable[[], None]], reps: int) -> dict[str, list[float]]:
    """Per-repetition seconds of every call, interleaved with a rotating order, so that a
    slow phase of a shared machine falls on every contender alike."""
    names = list(calls)
    out: dict[str, list[float]] = {name: [] for name in names}
    for rep in range(reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            calls[name]()
            out[name].append(time.perf_counter() - start)
    return out


def wait(out: Any) -> None:
    """Block until every array in the pytree ``out`` is computed."""
    for leaf in jax.tree.leaves(out):
        leaf.block_until_ready()
