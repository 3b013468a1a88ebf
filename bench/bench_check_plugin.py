"""How long ``jext check`` takes for a plugin of kernels, per item, cold and warm, against
checking one primitive.

Run: ``python bench/bench_check_plugin.py [--plugin example-native] [--reps 3]``.

Two plugins: one the set-up builds, ``jext-example-native`` (XLA FFI handlers in C++,
Pallas kernels, forward/backward pairs through ``def_vjp``, small examples), and
``bench-flash`` (``bench/_flash_attention.py``, registered in code): flash attention's
forward and backward kernels and the attention differentiated by the pair, at the largest
shape of JAX's Pallas fused-attention tests, ``(2, 384, 2, 128)``.  Each repetition runs
the command ``jext check -q --plugin NAME`` twice in fresh interpreters on a new cache
folder: cold (nothing compiled yet) and warm (the folder the cold run filled, as on an
author's second run); and ``jext check example.softplus`` the same way, the one primitive
each plugin's items are held to.  Then it checks ``--one`` alone, cold, and the same
primitive warm after its own programs were dropped from the cache (a changed primitive
among warm ones).  Medians of the repetitions; goals, per checked item against
``jext check example.softplus``: warm <= 1.25x, cold <= 2.5x; and the changed primitive
within 1.5x of checking it alone.

``--smoke`` (``tests/test_bench.py``): one primitive of each plugin (the attention at a
tiny shape), one repetition; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM_GOAL = 1.25
COLD_GOAL = 2.5
CHANGED_GOAL = 1.5
ONE = "example.softplus"
FLASH = "bench-flash"
BENCH = Path(__file__).resolve().parent
# The `jext` command with bench/_flash_attention.py registered as a plugin first.
FLASH_COMMAND = (
    f"import sys; sys.path.insert(0, {str(BENCH)!r}); import jext, _flash_attention as f; "
    "jext.register_plugin(f, f.NAME); from jext._cli import main; sys.exit(main(sys.argv[1:]))"
)


def run(args: list[str], cache: Path, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds of ``jext check ARGS`` on ``cache``, and how many items it checked (an
    item without examples is listed but not checked: it does not count).  With
    ``--plugin bench-flash`` among ``ARGS``, the flash-attention plugin is registered."""
    command = ["-c", FLASH_COMMAND] if FLASH in args else ["-m", "jext"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *command, "check", "-q", "--json", "--cache-dir", str(cache), *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"jext check {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    return wall, len(report["reports"]) - len(report["unchecked"])


def cold_and_warm(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Seconds per checked item of ``jext check ARGS`` on a new cache folder, then again."""
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "cache"
        cache.mkdir(mode=0o700)
        cold, items = run(args, cache, env)
        warm, _ = run(args, cache, env)
    return cold / items, warm / items, items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plugin", default="example-native")
    parser.add_argument("--one", default="native.softplus", help="the primitive checked alone")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--smoke", action="store_true")
    options = parser.parse_args()
    env = dict(os.environ)
    plugins = {
        options.plugin: [options.one] if options.smoke else ["--plugin", options.plugin],
        FLASH: ["bench_flash.attention", "--plugin", FLASH]
        if options.smoke
        else ["--plugin", FLASH],
    }
    if options.smoke:
        env["BENCH_FLASH_SHAPE"] = "1,64,1,16"
    reps = 1 if options.smoke else options.reps
    one: dict[str, list[float]] = {"cold": [], "warm": []}
    per_item: dict[str, dict[str, list[float]]] = {n: {"cold": [], "warm": []} for n in plugins}
    items = dict.fromkeys(plugins, 0)
    alone, changed = [], []
    for _ in range(reps):
        cold, warm, _ = cold_and_warm([ONE], env)
        one["cold"].append(cold)
        one["warm"].append(warm)
        for name, args in plugins.items():
            cold, warm, items[name] = cold_and_warm(args, env)
            per_item[name]["cold"].append(cold)
            per_item[name]["warm"].append(warm)
        with tempfile.TemporaryDirectory() as folder:
            cache = Path(folder) / "cache"
            cache.mkdir(mode=0o700)
            alone.append(run([options.one], cache, env)[0])
            run(plugins[options.plugin], cache, env)  # everything warm ...
            for entry in cache.iterdir():  # ... but the compiled programs: a changed kernel
                if entry.is_dir():
                    shutil.rmtree(entry)
            changed.append(run([options.one], cache, env)[0])
    median = statistics.median
    print(
        f"medians of {reps}; jext check {ONE}: cold {median(one['cold']):.2f} s, "
        f"warm {median(one['warm']):.2f} s"
    )
    goals = []
    for name, args in plugins.items():
        cold_s, warm_s = median(per_item[name]["cold"]), median(per_item[name]["warm"])
        cold_x, warm_x = cold_s / median(one["cold"]), warm_s / median(one["warm"])
        print(f"jext check {' '.join(args)}: {items[name]} item(s) checked")
        goals += [
            (
                f"{name} cold per item",
                f"{cold_s:.2f} s = {cold_x:.2f}x",
                cold_x <= COLD_GOAL,
                f"<= {COLD_GOAL}x {ONE}",
            ),
            (
                f"{name} warm per item",
                f"{warm_s:.2f} s = {warm_x:.2f}x",
                warm_x <= WARM_GOAL,
                f"<= {WARM_GOAL}x {ONE}",
            ),
        ]
    ratio = median(changed) / median(alone)
    goals.append(
        (
            f"{options.one} changed among warm ones / alone",
            f"{ratio:.2f}x",
            ratio <= CHANGED_GOAL,
            f"<= {CHANGED_GOAL}x",
        )
    )
    for name, shown, met, goal in goals:
        print(f"{name:>45}: {shown:>16}  {'GOAL MET' if met else 'GOAL MISSED'} ({goal})")
    print(f"goals met: {sum(met for _, _, met, _ in goals)}/{len(goals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
