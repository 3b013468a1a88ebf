"""The numerically sensitive tests carry the ``numerics`` marker, which ``.ci/run`` runs once
more per instruction-set setting (CONTRIBUTING.md, "Markers")."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# This file's own samples use the words it looks for.
TEST_FILES = sorted(
    p
    for p in [*ROOT.glob("tests/**/test_*.py"), *ROOT.glob("plugins/*/tests/test_*.py")]
    if p != Path(__file__).resolve()
)
#: What makes a test numerically sensitive, read from its source (docstring and comments
#: included): a distance in ulps, or rounding decided exactly (rational arithmetic, the
#: probe's nearest-root check).
SENSITIVE = re.compile(
    r"(?<![a-z])ulps?(?![a-z])|\bFraction\(|nearest_(?:root|cbrt)"
    r"|correctly[ _]rounded|rounds?[ _]correctly",
    re.I,
)


def _marks_numerics(decorators: list[ast.expr]) -> bool:
    return any(re.search(r"\bmark\.numerics\b", ast.unparse(d)) for d in decorators)


def unmarked_sensitive_tests(source: str) -> list[str]:
    """The test functions of ``source`` that :data:`SENSITIVE` finds and that carry no
    ``numerics`` marker (on the function, its class, or the module's ``pytestmark``)."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            value = ast.unparse(node.value) if node.value is not None else ""
            if "pytestmark" in names and re.search(r"\bmark\.numerics\b", value):
                return []
    found = []

    def visit(body: list[ast.stmt], marked: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, marked or _marks_numerics(node.decorator_list))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                text = ast.get_source_segment(source, node) or ""
                if (
                    node.name.startswith("test")
                    and SENSITIVE.search(text)
                    and not (marked or _marks_numerics(node.decorator_list))
                ):
                    found.append(node.name)

    visit(tree.body, False)
    return found


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_numerically_sensitive_tests_are_marked(path: Path) -> None:
    assert unmarked_sensitive_tests(path.read_text(encoding="utf-8")) == [], (
        "mark these @pytest.mark.numerics (CONTRIBUTING.md, 'Markers')"
    )


def test_an_unmarked_ulp_test_is_found() -> None:
    source = '''
import pytest

def test_plain() -> None:
    assert 1 + 1 == 2

def test_within_one_ulp() -> None:
    pass

@pytest.mark.numerics
def test_marked_ulp() -> None:
    pass

def test_rounding() -> None:
    """Two ULPs at most."""

def test_exact() -> None:
    assert Fraction(1, 3) * 3 == 1

class TestGroup:
    def test_rounds_correctly(self) -> None:
        pass

@pytest.mark.numerics
class TestMarked:
    def test_ulps(self) -> None:
        pass
'''
    assert unmarked_sensitive_tests(source) == [
        "test_within_one_ulp",
        "test_rounding",
        "test_exact",
        "test_rounds_correctly",
    ]
    assert (
        unmarked_sensitive_tests("import pytest\npytestmark = pytest.mark.numerics\n" + source)
        == []
    )


def test_the_marker_is_declared_and_ci_runs_it_per_instruction_set() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("numerics:") for m in markers)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "-m numerics" in ci
    for setting in (
        "XLA_FLAGS=--xla_cpu_max_isa=AVX2",
        "XLA_FLAGS=--xla_cpu_max_isa=SSE4_2",
        "NPY_DISABLE_CPU_FEATURES=",
    ):
        assert setting in ci
