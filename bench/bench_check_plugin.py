"""How long ``jext check`` takes for a plugin of kernels, per item, cold and warm.

Run: ``python bench/bench_check_plugin.py [--plugin example-native] [--reps 3]``.

The plugin is one the set-up builds: ``jext-example-native`` (XLA FFI handlers in C++,
Pallas kernels, forward/backward pairs through ``def_vjp``).  Each repetition runs the
command ``jext check -q --plugin NAME`` twice in fresh interpreters on a new cache folder:
cold (nothing compiled yet) and warm (the folder the cold run filled, as on an author's
second run).  Then it checks one primitive alone, cold, and the same primitive warm after
its own programs were dropped from the cache (a changed primitive among warm ones).
Medians of the repetitions; goals on 2 cores: warm <= 1.5 s per item, cold <= 3 s per
item, and the changed primitive within 1.5x of checking it alone.

``--smoke`` (``tests/test_bench.py``): one primitive, one repetition; its figures mean
nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM_GOAL_S = 1.5
COLD_GOAL_S = 3.0
CHANGED_GOAL = 1.5


def run(args: list[str], cache: Path) -> tuple[float, int]:
    """Wall seconds of ``jext check ARGS`` on ``cache``, and how many items it checked (an
    item without examples is listed but not checked: it does not count)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "jext", "check", "-q", "--json", "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"jext check {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return wall, len(report["reports"]) - len(report["unchecked"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plugin", default="example-native")
    parser.add_argument("--one", default="native.softplus", help="the primitive checked alone")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    options = parser.parse_args()
    whole = [options.one] if options.smoke else ["--plugin", options.plugin]
    reps = 1 if options.smoke else options.reps
    cold, warm, alone, changed = [], [], [], []
    items = 0
    for _ in range(reps):
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "cache"
            cache.mkdir(mode=0o700)
            wall, items = run(whole, cache)
            cold.append(wall / items)
            wall, _ = run(whole, cache)
            warm.append(wall / items)
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "cache"
            cache.mkdir(mode=0o700)
            alone.append(run([options.one], cache)[0])
            run(whole, cache)  # everything warm ...
            for entry in cache.iterdir():  # ... but the compiled programs: a changed kernel
                if entry.is_dir():
                    shutil.rmtree(entry)
            changed.append(run([options.one], cache)[0])
    cold_s, warm_s = statistics.median(cold), statistics.median(warm)
    ratio = statistics.median(changed) / statistics.median(alone)
    print(f"{' '.join(whole)}: {items} item(s) checked, medians of {reps}")
    goals = [
        ("cold per item", cold_s, f"{cold_s:.2f} s", cold_s <= COLD_GOAL_S, f"<= {COLD_GOAL_S} s"),
        ("warm per item", warm_s, f"{warm_s:.2f} s", warm_s <= WARM_GOAL_S, f"<= {WARM_GOAL_S} s"),
        (
            f"{options.one} changed among warm ones / alone",
            ratio,
            f"{ratio:.2f}x",
            ratio <= CHANGED_GOAL,
            f"<= {CHANGED_GOAL}x",
        ),
    ]
    for name, _, shown, met, goal in goals:
        print(f"{name:>45}: {shown:>8}  {'GOAL MET' if met else 'GOAL MISSED'} ({goal})")
    print(f"goals met: {sum(met for *_, met, _ in goals)}/{len(goals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
