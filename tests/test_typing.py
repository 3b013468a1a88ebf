"""The typing suite: mypy --strict over tests/typing, with and without the generated stubs.

``tests/typing/pass_*.py`` must type-check clean (``assert_type`` pins each type);
``fail_*.py`` marks each line that must fail with ``# type: ignore[<code>]``, and
``--strict`` reports an ignore that is unused or of another code, so one clean run
proves every expected error.  Both are checked against the stubs in ``stubs/``
installed into a throwaway environment; ``nostubs_*.py`` without them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jext._stubgen import generate
from tests.plugin_packages import pip_install, venv_over_running

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
STUBS = ROOT / "stubs"


def mypy(
    prefixes: tuple[str, ...], where: Path, cache: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """mypy --strict on copies of the cases named ``prefix*``, in ``where``, outside the
    repository, in one run (one analysis of jax and numpy for all of them); ``cache`` is
    mypy's incremental cache, shared by the module's runs (a module whose file differs
    between the runs, jext's stubs or sources, is analysed afresh).

    Inside it, mypy would take tests/ for a package and find jext/ at the repository root
    before the installed stubs.
    """
    files = []
    for prefix in prefixes:
        for case in sorted(TYPING.glob(f"{prefix}*.py")):
            shutil.copy(case, where / case.name)
            files.append(case.name)
    command = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary"]
    return subprocess.run(
        [*command, "--cache-dir", str(cache), *args, *files],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy_cache")


@pytest.fixture(scope="module")
def python_with_stubs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment that sees this one's packages plus the stubs from stubs/."""
    env = tmp_path_factory.mktemp("stubenv") / "venv"
    python = venv_over_running(env)
    # Built from a copy: a build writes build/ and *.egg-info next to its sources.
    source = shutil.copytree(STUBS, env.parent / "stubs")
    installed = pip_install(python, str(source))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return python


def test_stubs_are_up_to_date() -> None:
    on_disk = {str(p.relative_to(STUBS)): p.read_text() for p in STUBS.rglob("*") if p.is_file()}
    assert on_disk == generate(), "stubs/ is out of date: run `jext stubgen --out stubs`"


def test_typing_cases_with_stubs(python_with_stubs: Path, tmp_path: Path, mypy_cache: Path) -> None:
    # pass_ and fail_ cases in one mypy run: each file is checked on its own terms.
    result = mypy(
        ("pass_", "fail_"), tmp_path, mypy_cache, "--python-executable", str(python_with_stubs)
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_typing_cases_without_stubs(tmp_path: Path, mypy_cache: Path) -> None:
    result = mypy(("nostubs_",), tmp_path, mypy_cache)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_suite_has_at_least_40_cases() -> None:
    cases = 0
    for path in TYPING.rglob("*.py"):
        text = path.read_text()
        cases += len(re.findall(r"assert_type\(", text))
        cases += len(re.findall(r"# type: ignore\[[a-z-]+\]", text))
    assert cases >= 40, cases
