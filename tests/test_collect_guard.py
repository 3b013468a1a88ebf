"""A module that collects nothing, or an empty parametrization, fails the run (not a pass)."""

from __future__ import annotations

import pytest

ARGS = (
    "-p",
    "tests.collect_guard",
    "-p",
    "no:xdist",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:jext",
    "-q",
)
PROJECT_INI = "[pytest]\nempty_parameter_set_mark = fail_at_collect\n"


def test_a_module_whose_tests_all_came_up_empty_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    # What a broken native build once did to a module: nothing collected, nothing reported.
    pytester.makepyfile(
        test_gone="KERNELS = []\nfor k in KERNELS:\n    exec(f'def test_{k}(): pass')\n",
        test_kept="def test_kept() -> None:\n    assert True\n",
    )
    result = pytester.runpytest_inprocess(*ARGS)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*test_gone.py collected no tests: a parametrization*"])
    assert "test_kept.py collected no tests" not in result.stdout.str()


def test_an_empty_parametrization_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makeini(PROJECT_INI)
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.parametrize('name', [])\n"
        "def test_each(name: str) -> None:\n    assert name\n"
    )
    result = pytester.runpytest_inprocess(*ARGS)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*Empty parameter set in 'test_each'*"])


def test_the_suite_sets_the_empty_parametrization_to_fail(pytestconfig: pytest.Config) -> None:
    assert pytestconfig.getini("empty_parameter_set_mark") == "fail_at_collect"
    assert pytestconfig.pluginmanager.has_plugin("tests.collect_guard")
