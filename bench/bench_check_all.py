"""How long ``jext check`` takes per installed item (goal: at most 1.5 s each on average).

Run: ``python bench/bench_check_all.py [REPS]``.  Each repetition runs every check on
everything installed (``jext.testing.run_checks()``) in a fresh interpreter, so no JAX
cache of an earlier repetition helps, and prints per kind of item the wall time and the
CPU time (all threads, including XLA's compilation threads) per item; the median over
repetitions is compared with the goal.  CPU time is the figure to quote on a shared machine:
wall time there depends on what else runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

GOAL_S = 1.5

_CHILD = """
import json, resource, time, warnings
warnings.simplefilter("ignore")
from jext.testing import run_checks
start = time.perf_counter()
cpu0 = time.process_time()
reports = run_checks()
wall = time.perf_counter() - start
cpu = time.process_time() - cpu0
kinds = {}
for r in reports:
    kinds[r.kind] = kinds.get(r.kind, 0) + 1
bad = [r.name for r in reports if not r.ok]
print(json.dumps({"wall": wall, "cpu": cpu, "items": len(reports), "kinds": kinds, "bad": bad}))
"""


def one_run() -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    runs = [one_run() for _ in range(reps)]
    items = runs[0]["items"]
    assert isinstance(items, int)
    print(f"items: {items} {runs[0]['kinds']}; failing: {runs[0]['bad']}")
    for label in ("wall", "cpu"):
        per_item = [float(r[label]) / items for r in runs]  # type: ignore[arg-type]
        med = statistics.median(per_item)
        verdict = "GOAL MET" if med <= GOAL_S else "GOAL MISSED"
        print(
            f"{label:4s} per item: median {med:5.2f} s (min {min(per_item):.2f}, max "
            f"{max(per_item):.2f}; total {med * items:.0f} s); {med / GOAL_S:.2f}x the "
            f"{GOAL_S} s goal: {verdict}"
        )


if __name__ == "__main__":
    main()
