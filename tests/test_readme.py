"""The README's and the guides' code runs, and the README's set-up commands match CI."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# Pages whose Python blocks are whole programs, run in order in a namespace of their own
# (the other guides' blocks are excerpts of files shown in full elsewhere).
RUNNABLE = [
    "README.md",
    "docs/defining-primitives.md",
    "docs/rng.md",
    "docs/scipy.md",
]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("page", RUNNABLE)
def test_python_blocks_run_in_order(page: str) -> None:
    code = python_blocks((ROOT / page).read_text())
    assert code, f"{page} has no python block"
    namespace: dict[str, object] = {"__name__": page.replace("/", ".")}
    for block in code:
        exec(compile(block, page, "exec"), namespace)


def test_the_primitive_guide_keeps_its_examples() -> None:
    """The examples moved out of the README: rules, exporting, checking, typed hooks."""
    text = "".join(python_blocks((ROOT / "docs" / "defining-primitives.md").read_text()))
    for used in (
        "def_jvp",
        "def_transpose",
        "def_lowering",
        "jext.lowering.export",
        "def_examples",
        "check_primitive",
        "jext.hooks.register_primitives",
    ):
        assert used in text, used


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


def test_the_readme_stays_short() -> None:
    assert len(README.splitlines()) < 150
