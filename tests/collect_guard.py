"""A test module that collects no test is a collection error (a pytest plugin of this suite).

A parametrization over what the environment provides (registered plugins, built kernels)
can come up empty, and a module can define its tests under a condition: pytest would then
report nothing for the module, and a broken environment would look like a passing run.
The root ``conftest.py`` loads this plugin for the whole suite; ``pyproject.toml`` also sets
``empty_parameter_set_mark = "fail_at_collect"`` for a single empty parametrization.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

__all__ = ["pytest_make_collect_report"]


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    if isinstance(collector, pytest.Module) and report.passed and not report.result:
        report.outcome = "failed"
        report.longrepr = (
            f"{collector.nodeid} collected no tests: a parametrization came up empty or its "
            "tests are defined under a condition; make the module fail or skip saying why"
        )
    return report
