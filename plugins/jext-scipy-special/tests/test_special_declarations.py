"""The plugin declares every wrapper one way: ``_declare.declare`` in the ``WRAPPERS`` of
the module that implements it, joined in ``_functions.DECLARING_MODULES``' order."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import warnings
from pathlib import Path

import jext_scipy_special
import pytest
from jext_scipy_special import _functions
from jext_scipy_special._functions import _declare

from jext.scipy import ScipyWrapper

SOURCE = Path(_functions.__file__).parent


def _modules_with_wrappers() -> set[str]:
    return {
        info.name
        for info in pkgutil.iter_modules([str(SOURCE)])
        if hasattr(importlib.import_module(f"{_functions.__name__}.{info.name}"), "WRAPPERS")
    }


def test_every_module_that_declares_wrappers_is_registered_in_order() -> None:
    listed = [module.__name__.rsplit(".", 1)[1] for module in _functions.DECLARING_MODULES]
    assert len(listed) == len(set(listed))
    assert set(listed) == _modules_with_wrappers()
    joined = [w for module in _functions.DECLARING_MODULES for w in module.WRAPPERS]
    assert list(jext_scipy_special.WRAPPERS) == joined
    names = [w.qualified_name for w in joined]
    assert len(names) == len(set(names))


def test_only_declare_builds_a_wrapper() -> None:
    """No module but ``_declare`` calls ``ScipyWrapper(...)``; every wrapper comes from it."""
    callers = []
    for path in sorted(SOURCE.parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "ScipyWrapper"
            ):
                callers.append(path.name)
    assert callers == ["_declare.py"]
    for wrapper in jext_scipy_special.WRAPPERS:
        assert isinstance(wrapper, ScipyWrapper)
        assert wrapper.mirrors == f"scipy.{wrapper.scope}.{wrapper.name}"


def test_the_checker_of_the_declarations_sees_a_second_way() -> None:
    """The AST scan above finds a direct ``ScipyWrapper(...)`` call."""
    source = "w = ScipyWrapper(scope='special', name='x', mirrors='scipy.special.x')"
    calls = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ScipyWrapper"
    ]
    assert len(calls) == 1


def test_declare_names_the_scipy_function_from_scope_and_name() -> None:
    domain = (_declare.Domain(((0.0, 1.0),)),)
    special = _declare.declare("erf", abs, domains=domain)
    stats = _declare.declare("t.cdf", abs, domains=domain, scope="stats")
    assert (special.qualified_name, special.mirrors) == (
        "jext.scipy.special.erf",
        "scipy.special.erf",
    )
    assert (stats.qualified_name, stats.mirrors) == ("jext.scipy.stats.t.cdf", "scipy.stats.t.cdf")
    assert dict(special.tolerances) == _declare.TOL


def test_a_quiet_oracle_silences_only_the_categories_it_names() -> None:
    # SciPy truncates n = 2.5 to 2 and warns (RuntimeWarning).
    quiet = _declare.quiet_oracle("special.smirnov", RuntimeWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert quiet(2.5, 0.3) == pytest.approx(0.61)
    loud = _declare.quiet_oracle("special.smirnov", DeprecationWarning)
    with warnings.catch_warnings(), pytest.raises(RuntimeWarning, match="truncated"):
        warnings.simplefilter("error")
        loud(2.5, 0.3)
