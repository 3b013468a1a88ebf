"""The README's code runs: its Python blocks in order, and its set-up commands match CI."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_python_blocks_run_in_order() -> None:
    code = blocks("python")
    assert len(code) >= 3
    namespace: dict[str, object] = {"__name__": "readme"}
    for block in code:
        exec(compile(block, "README.md", "exec"), namespace)


def test_ci_runs_the_readme_test_command() -> None:
    commands = [b.strip() for b in blocks("sh")]
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text()
