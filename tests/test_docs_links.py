"""Every relative link in the README, the guides and the bench pages points at a file that
exists and, with a ``#fragment``, at a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        ROOT / "CONTRIBUTING.md",
        *ROOT.glob("docs/*.md"),
        *ROOT.glob("bench/**/*.md"),
    ]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {anchor(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            broken.append(f"{target}: no heading #{fragment}")
    return broken


@pytest.mark.parametrize(
    "page", [p for p in PAGES if p.exists()], ids=lambda p: str(p.relative_to(ROOT))
)
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# The `other` page: notes\n")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[ok](#title) [ok](other.md#the-other-page-notes) [web](https://x.y/z)\n"
        "[gone](missing.md) [bad](#nowhere) [bad](other.md#other)\n"
    )
    assert broken_links(page) == [
        "missing.md: no such file",
        "#nowhere: no heading #nowhere",
        "other.md#other: no heading #other",
    ]


def test_every_guide_is_in_the_index() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    guides = {p.name for p in ROOT.glob("docs/*.md")} - {"index.md"}
    assert sorted(g for g in guides if f"]({g}" not in index) == []
