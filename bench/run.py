"""Run every benchmark in bench/ (each ``bench_*.py``, in its own process) and print its ratios.

Run: ``python bench/run.py`` (or ``python bench/run.py core rng`` for some of them);
``--smoke`` runs each with tiny sizes and one repetition, to see that they still run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    smoke = ["--smoke"] if "--smoke" in argv else []
    argv = [a for a in argv if a != "--smoke"]
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in argv]
    failed = []
    for script in scripts:
        print(f"=== {script.name}", flush=True)
        start = time.perf_counter()
        code = subprocess.run([sys.executable, str(script), *smoke], check=False).returncode
        print(f"=== {script.name}: exit {code}, {time.perf_counter() - start:.0f} s\n", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
