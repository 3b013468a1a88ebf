"""The README's code runs: its Python blocks in order, and its set-up commands match CI."""

from __future__ import annotations

import re
import subprocess
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


def test_ci_runs_the_readme_set_up_and_test_commands() -> None:
    """.ci/run reads both commands from the README's Set-up section, verbatim."""
    setup = README.split("## Set-up\n", 1)[1].split("\n## ", 1)[0]
    blocks = [b.strip() for b in re.findall(r"```sh\n(.*?)```", setup, flags=re.S)]
    (main,) = [b for b in blocks if b.endswith("&& jext check")]
    (tests,) = [b for b in blocks if b.endswith("&& python -m pytest")]
    printed = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run"), "--print-commands"],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    assert printed.stdout.splitlines() == [main, tests]
