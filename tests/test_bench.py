"""Every script in bench/ still runs end to end (``--smoke``: tiny sizes, one repetition).

Benchmarks are run by hand, rarely: a change to jext that breaks one (a renamed function,
a registry rule its dummy plugins break) would otherwise go unseen until someone wants its
figures.  Nothing is timed here; the scripts run in subprocesses, two at a time, and each
test waits for its own.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
# Each script and a line its smoke run must print: proof it got to its last measurement.
SCRIPTS = {
    "bench_check.py": "command, warm, CPU",
    "bench_check_all.py": "warm cpu  per item",
    "bench_check_plugin.py": "changed among warm ones / alone",
    "bench_core.py": "goals met: ",
    "bench_hijax.py": "jext / hijax: ",
    "bench_native.py": "CPU: ratios reported, no goal",
    "gpu_exports.py": "exports: ",
    "bench_plugins.py": "goals met: ",
    "bench_rng.py": "goals met: ",
    "bench_scipy.py": "goal(s) missed; load average at end",
    "count_lines.py": "jext, without them",
    "profile_check.py": "1 wrappers, CPU s per wrapper",
}

Runs = dict[str, Future[subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="module")
def runs() -> Iterator[Runs]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}

    def run(name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(BENCH / name), "--smoke"],
            cwd=BENCH.parent,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )

    # Two at a time: most of a smoke run is starting Python and JAX, which overlaps well;
    # more would only compete for the cores.
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {name: pool.submit(run, name) for name in sorted(SCRIPTS)}


def test_every_bench_script_has_a_smoke_test() -> None:
    scripts = {p.name for p in BENCH.glob("*.py") if p.name != "run.py" and p.name[0] != "_"}
    assert scripts == set(SCRIPTS)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_bench_script_runs_in_smoke_mode(runs: Runs, name: str) -> None:
    result = runs[name].result()
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert SCRIPTS[name] in output, output
    assert "Traceback" not in output, output


def test_run_py_passes_smoke_on(tmp_path: Path) -> None:
    # run.py with a stand-in bench folder: it must hand --smoke to every script it runs.
    (tmp_path / "run.py").write_text((BENCH / "run.py").read_text())
    (tmp_path / "bench_echo.py").write_text("import sys\nprint('argv', sys.argv[1:])\n")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), "--smoke", "echo"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "argv ['--smoke']" in result.stdout


def test_the_porting_guide_quotes_count_lines(runs: Runs) -> None:
    # docs/native.md's line counts are the ones bench/count_lines.py gives today.
    output = runs["count_lines.py"].result().stdout
    figures = dict(re.findall(r"^  (.+?)\s{2,}(\d+)\s", output, flags=re.M))
    guide = (BENCH.parent / "docs" / "native.md").read_text()
    jax_lines = int(figures["JAX rms_norm.py, custom_vjp + ffi_call"])
    ours = int(figures["jext, without them"])
    shipped = int(figures["jext rms_norm_fwd/bwd + rms_normalize"])
    assert f"| {jax_lines} | 1.00x |" in guide
    assert f"| {ours} | {ours / jax_lines:.2f}x |" in guide
    assert f"| {shipped} | {shipped / jax_lines:.2f}x |" in guide
    wiring = int(figures["jext layer_norm wiring (__init__.py)"])
    kernels = int(figures["jext layer_norm Pallas kernels + rules"])
    assert f"is {wiring} lines" in guide and f"are {kernels} lines" in guide
