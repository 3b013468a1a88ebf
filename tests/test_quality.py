"""Static checks as tests: ``mypy --strict`` and ``ruff check`` are clean on the project."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Every package in plugins/ too (tests/typing has its own test, test_typing.py).
TYPED = [
    "jext",
    "examples",
    "bench",
    *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("plugins/*/src")),
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_mypy_strict_is_clean() -> None:
    result = run("mypy", "--strict", *TYPED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_type_ignores_live_in_the_jax_layer() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "jext").rglob("*.py")
        if path.name != "_jax.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "type: ignore" in line
    ]
    assert offenders == []
    for line in (ROOT / "jext" / "_jax.py").read_text().splitlines():
        if "type: ignore" in line:
            assert "type: ignore[" in line, line
