"""jext's pytest plugin (``pytest11`` entry point ``jext``), kept light on purpose.

Installing jext adds this plugin to every pytest session in the environment, so it
imports neither jext nor JAX until a test asks for ``jext_conformance_case`` (by
importing ``jext.testing.test_jext_conformance``); the work lives in
``jext.testing._pytest_plugin``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

__all__ = ["pytest_addoption", "pytest_generate_tests"]

CASE_FIXTURE = "jext_conformance_case"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "jext_check",
        "glob patterns of the registered names test_jext_conformance checks "
        "(default: everything of this project's own plugins)",
        type="args",
        default=[],
    )
    parser.addini(
        "jext_plugins",
        "plugins whose names test_jext_conformance checks (default: this project's own)",
        type="args",
        default=[],
    )
    group = parser.getgroup("jext")
    group.addoption(
        "--jext-check",
        action="append",
        metavar="PATTERN",
        help="check the registered primitives, RNG impls and SciPy wrappers matching PATTERN",
    )
    group.addoption(
        "--jext-plugin",
        action="append",
        metavar="NAME",
        help="check what plugin NAME registered (repeatable; default: this project's own)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if CASE_FIXTURE not in metafunc.fixturenames:
        return
    from jext.testing._pytest_plugin import parametrize  # noqa: PLC0415 - jext loads only in runs that collect conformance cases

    parametrize(metafunc)
