"""The pytest plugin (``pytest11`` entry point ``jext``): a test per registered primitive and check.

In a plugin's repository, importing the test function into a test module is all it takes::

    from jext.testing import test_jext_conformance  # noqa: F401

Which primitives: ``--jext-check PATTERN`` (repeatable) or the ini option
``jext_check_primitives`` (glob patterns, default ``*``: every registered primitive).
"""

from __future__ import annotations

from fnmatch import fnmatch
from typing import TYPE_CHECKING

from jext._registry import registry
from jext.testing._checks import PRIMITIVE_CHECKS, run_check

if TYPE_CHECKING:
    import pytest

__all__ = ["pytest_addoption", "pytest_generate_tests", "test_jext_conformance"]

CASE_FIXTURE = "jext_conformance_case"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "jext_check_primitives",
        "glob patterns of the registered primitives test_jext_conformance checks",
        type="args",
        default=["*"],
    )
    parser.getgroup("jext").addoption(
        "--jext-check",
        action="append",
        metavar="PATTERN",
        help="check the registered primitives matching PATTERN (repeatable)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if CASE_FIXTURE not in metafunc.fixturenames:
        return
    patterns = metafunc.config.getoption("jext_check") or metafunc.config.getini(
        "jext_check_primitives"
    )
    names = [n for n in registry().primitives() if any(fnmatch(n, p) for p in patterns)]
    cases = [(n, c) for n in names for c in PRIMITIVE_CHECKS]
    metafunc.parametrize(CASE_FIXTURE, cases, ids=[f"{n}-{c}" for n, c in cases])


def test_jext_conformance(jext_conformance_case: tuple[str, str]) -> None:
    """One conformance check of one registered primitive (parametrized by the plugin)."""
    import pytest

    name, check = jext_conformance_case
    prim = registry().get_primitive(name)
    result = run_check(prim, check, prim.examples())
    if result.status == "skip":
        pytest.skip(f"{name} {check}: {result.message}")
    assert result.status == "pass", f"{name} {check}: {result.message}"
