"""bench/gpu.sh, the GPU session's one command: its syntax, its steps, and its CPU half run here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHON": sys.executable, "JEXT_GPU_LOGS": str(tmp_path), **env}
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_the_gpu_half_builds_tests_checks_and_benchmarks_within_ten_minutes(
    tmp_path: Path,
) -> None:
    done = run(tmp_path, "--dry-run", "--gpu")
    assert done.returncode == 0, done.stderr
    steps = re.findall(r"^(\S+)\s+\(up to\s+(\d+)s\) (.*)$", done.stdout, re.M)
    assert [name for name, _, _ in steps] == [
        "build",
        "pytest",
        "check",
        "exports",
        "bench-rng",
        "bench-kernels",
    ]
    commands = {name: command for name, _, command in steps}
    assert "-m pytest -m gpu" in commands["pytest"]
    # pytest-benchmark (on the GPU machines) warns under xdist, an error with -W error.
    assert "-p no:benchmark" in commands["pytest"]
    marked = {
        str(path.relative_to(ROOT))
        for path in [*ROOT.glob("tests/test_*.py"), *ROOT.glob("plugins/*/tests/test_*.py")]
        # the marker in code: before any quote or comment on its line
        if re.search(r"^[^\"'#\n]*\bpytest\.mark\.gpu\b", path.read_text(), re.M)
    }
    assert marked and marked <= set(commands["pytest"].split())
    assert "-m jext check" in commands["check"] and "threefry4x64" not in commands["check"]
    assert commands["bench-rng"].endswith("bench/bench_rng.py")
    assert commands["bench-kernels"].endswith("bench/bench_native.py")
    # pytest, check and exports run side by side: the longest of them counts.
    limits = {name: int(limit) for name, limit, _ in steps}
    side_by_side = max(limits["pytest"], limits["check"], limits["exports"])
    total = limits["build"] + side_by_side + limits["bench-rng"] + limits["bench-kernels"]
    assert total <= 570  # the default budget, 30 s under ten minutes


def test_the_cpu_half_exports_for_the_accelerators_and_says_it_ran_no_gpu(
    tmp_path: Path,
) -> None:
    done = run(tmp_path, "--smoke")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.split("summary (")[-1]
    assert re.search(r"^  exports\s+ok\s+\d+s  exports: \d+ ok, 0 failed$", summary, re.M)
    assert "(CPU half: nothing ran on a GPU; asked for with --smoke)" in summary
    log = (tmp_path / "exports.log").read_text()
    assert "native.softplus cuda: ok (ffi:native_softplus)" in log
    assert "native.swish cuda: ok (swish_triton)" in log


def test_a_step_without_time_left_is_skipped_and_fails_the_run(tmp_path: Path) -> None:
    done = run(tmp_path, "--smoke", JEXT_GPU_BUDGET="5")
    assert done.returncode == 1
    assert re.search(r"^  exports\s+skipped\s+0s  out of time$", done.stdout, re.M)


def test_the_gpu_half_writes_its_record_and_prints_it(tmp_path: Path) -> None:
    results = tmp_path / "gpu.md"
    dry = run(tmp_path, "--dry-run", "--gpu")
    assert "results: would write " in dry.stdout and str(results) not in dry.stdout
    # Forced onto the GPU half with no time for any step: each is skipped, and the record
    # (the summary, then every step's section) is still written, printed and named.
    done = run(tmp_path, "--gpu", JEXT_GPU_BUDGET="5", JEXT_GPU_RESULTS=str(results))
    assert done.returncode == 1
    text = results.read_text()
    assert text.startswith("# A GPU session: `bench/gpu.sh`")
    assert re.search(r"^  bench-rng\s+skipped\s+0s  out of time$", text, re.M)
    for section in ("bench-rng", "bench-kernels", "build", "pytest", "check", "exports"):
        assert f"\n## {section}" in text
    assert text in done.stdout and f"results: written to {results}" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("  bench-kernels")
