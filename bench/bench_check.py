"""How long ``jext check`` takes for one primitive with every check (goal: at most 3 s on 2 cores).

Run: ``python bench/bench_check.py``.  Prints, side by side in one process run:

1. the in-process time of every check on a freshly defined primitive (fresh, so that no
   JAX cache from an earlier repetition helps), median of 5;
2. the wall time of the command ``jext check example.softplus`` in a subprocess (Python
   start-up, ``import jax`` and plugin loading included), median of 5: cold (``--no-cache``,
   everything compiled) and warm (its cache folder filled by an earlier run, as on a
   developer's second run; see ``jext check --cache-dir``).

Each is printed with its ratio to the 3 s goal.  The sources of jext and of the bundled
plugins are compiled to bytecode first, as ``pip install`` does for a regular install:
where ``PYTHONDONTWRITEBYTECODE=1`` is set, an editable install would otherwise compile
them afresh in every command (about 0.3 s CPU).

``--smoke`` (what ``tests/test_bench.py`` runs): the `jit` check only, one repetition, so that the
script runs end to end in seconds; its figures mean nothing.
"""

from __future__ import annotations

import compileall
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import count
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

import jext
from jext.testing._checks import PRIMITIVE_CHECKS, check_report

GOAL_S = 3.0
REPS = 5
CHECKS: tuple[str, ...] = PRIMITIVE_CHECKS

SMOKE = "--smoke" in sys.argv[1:]
if SMOKE:
    REPS, CHECKS = 1, ("jit",)
_fresh = count()


def fresh_primitive() -> jext.Primitive[Any, Any]:
    @jext.primitive(f"bench.softplus{next(_fresh)}")
    def softplus(x: Any, /, *, beta: float = 1.0) -> Any:
        return jnp.logaddexp(beta * x, 0.0) / beta

    softplus.def_examples(lambda: [jext.Example(np.linspace(-3, 3, 7, dtype=np.float32), beta=2.0)])
    return softplus


def time_in_process() -> float:
    prim = fresh_primitive()
    start = time.perf_counter()
    report = check_report(prim, checks=CHECKS)
    elapsed = time.perf_counter() - start
    assert report.ok, report.format()
    return elapsed


def time_command(*cache: str) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of the command in a subprocess."""
    checks = ("--checks", ",".join(CHECKS))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "jext", "check", "example.softplus", "-q", *cache, *checks],
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def write_bytecode() -> None:
    root = Path(__file__).resolve().parent.parent
    for folder in ("jext", "plugins"):
        compileall.compile_dir(root / folder, quiet=1)


def main() -> None:
    write_bytecode()
    time_in_process()  # warm JAX's own start-up (backend, first compilations)
    with tempfile.TemporaryDirectory(prefix="jext-bench-cache-") as folder:
        warm_cache = ("--cache-dir", folder)
        time_command(*warm_cache)  # fills the cache folder
        rows: dict[str, list[float]] = {}
        for _ in range(REPS):  # interleaved, so machine load hits all alike
            rows.setdefault("every check, in process", []).append(time_in_process())
            for label, cache in [("cold", ("--no-cache",)), ("warm", warm_cache)]:
                wall, cpu = time_command(*cache)
                rows.setdefault(f"command, {label}", []).append(wall)
                rows.setdefault(f"command, {label}, CPU", []).append(cpu)
    # CPU seconds are what the command costs whatever else runs on a shared machine.
    for label, times in rows.items():
        med = statistics.median(times)
        verdict = "GOAL MET" if med <= GOAL_S else "GOAL MISSED"
        print(
            f"{label:24s} median {med:5.2f} s (min {min(times):.2f}, max {max(times):.2f}); "
            f"{med / GOAL_S:.2f}x the {GOAL_S:.0f} s goal: {verdict}"
        )


if __name__ == "__main__":
    main()
