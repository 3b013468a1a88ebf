"""How long ``jext check`` takes per installed item (goal: at most 1.5 s each on average).

Run: ``python bench/bench_check_all.py [REPS] [NAME-OR-GLOB ...]``.  Each repetition runs
every check on everything installed (or on the names given: ``jext.testing.run_checks``)
in a fresh interpreter, so no in-memory JAX cache of an earlier repetition helps, and
prints the wall time and the CPU time (all threads, including XLA's compilation threads)
per item, cold and warm:

- cold: nothing compiled before (``jext check --no-cache``);
- warm: the programs read back from the cache folder that a first run filled, as
  ``jext check`` does by default on a second run (``--cache-dir``).

The median over repetitions is compared with the goal.  CPU time is the figure to quote
on a shared machine: wall time there depends on what else runs.

``--smoke`` (what ``tests/test_bench.py`` runs): one repetition of the `jit` check of
`example.softplus` (unless names are given), so that the
script runs end to end in seconds; its figures mean nothing.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile

GOAL_S = 1.5
SMOKE = "--smoke" in sys.argv[1:]
CHECKS = ["jit"] if SMOKE else []  # [] is every check

_CHILD = """
import json, sys, time, warnings
from pathlib import Path
warnings.simplefilter("ignore")
from jext.testing import run_checks
from jext.testing._cache import check_cache_in
names, cache, checks = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
with check_cache_in(Path(cache) if cache else None):
    start = time.perf_counter()
    cpu0 = time.process_time()
    reports = run_checks(names or None, checks=checks or None)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
kinds = {}
for r in reports:
    kinds[r.kind] = kinds.get(r.kind, 0) + 1
bad = [r.name for r in reports if not r.ok]
print(json.dumps({"wall": wall, "cpu": cpu, "items": len(reports), "kinds": kinds, "bad": bad}))
"""


def one_run(names: list[str], cache: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(names), cache, json.dumps(CHECKS)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    argv = [a for a in sys.argv[1:] if a != "--smoke"]
    reps = int(argv[0]) if argv else 1 if SMOKE else 3
    names = argv[1:] or (["example.softplus"] if SMOKE else [])
    with tempfile.TemporaryDirectory(prefix="jext-bench-cache-") as folder:
        one_run(names, folder)  # fills the cache folder
        runs: dict[str, list[dict[str, object]]] = {"cold": [], "warm": []}
        for _ in range(reps):  # interleaved, so machine load hits both alike
            runs["cold"].append(one_run(names, ""))
            runs["warm"].append(one_run(names, folder))
    first = runs["cold"][0]
    items = first["items"]
    assert isinstance(items, int)
    print(f"items: {items} {first['kinds']}; failing: {first['bad']}")
    for state, done in runs.items():
        for label in ("wall", "cpu"):
            per_item = [float(r[label]) / items for r in done]  # type: ignore[arg-type]
            med = statistics.median(per_item)
            verdict = "GOAL MET" if med <= GOAL_S else "GOAL MISSED"
            print(
                f"{state} {label:4s} per item: median {med:5.2f} s (min {min(per_item):.2f}, "
                f"max {max(per_item):.2f}; total {med * items:.0f} s); {med / GOAL_S:.2f}x "
                f"the {GOAL_S} s goal: {verdict}"
            )


if __name__ == "__main__":
    main()
