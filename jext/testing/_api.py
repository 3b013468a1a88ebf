"""Running checks: one primitive as an assertion, or everything registered as reports."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jext._errors import UnknownNameError
from jext._registry import Registry, close_matches, registry
from jext.lowering import ALL_PLATFORMS
from jext.primitives import Primitive
from jext.testing._checks import PRIMITIVE_CHECKS, check_report
from jext.testing._report import CheckResult, PrimitiveReport

__all__ = ["check_primitive", "run_checks", "validate_names"]


def validate_names(given: Sequence[str] | None, known: Sequence[str], what: str) -> list[str]:
    """``given`` (default: all of ``known``), or UnknownNameError naming the first unknown."""
    if given is None:
        return list(known)
    for name in given:
        if name not in known:
            hint = close_matches(name, known)
            raise UnknownNameError(f"unknown {what} {name!r}; expected one of {list(known)}.{hint}")
    return list(given)


def check_primitive(
    prim: Primitive[Any, Any] | str,
    *,
    checks: Sequence[str] | None = None,
    platforms: Sequence[str] | None = None,
) -> PrimitiveReport:
    """Run the conformance checks on ``prim`` (an object or a registered name).

    Raises ``AssertionError`` with a readable report if any check fails; returns the
    report otherwise (skipped checks say why).

    Example::

        jext.testing.check_primitive(softplus, checks=["jvp", "batching"])
    """
    if isinstance(prim, str):
        prim = registry().get_primitive(prim)
    report = check_report(
        prim,
        checks=validate_names(checks, PRIMITIVE_CHECKS, "check"),
        platforms=validate_names(platforms, ALL_PLATFORMS, "platform"),
    )
    if not report.ok:
        raise AssertionError("jext conformance check failed:\n" + report.format())
    return report


def run_checks(
    names: Sequence[str] | None = None,
    *,
    checks: Sequence[str] | None = None,
    platforms: Sequence[str] | None = None,
    progress: Callable[[str, CheckResult], None] | None = None,
    reg: Registry | None = None,
) -> list[PrimitiveReport]:
    """Check the registered primitives (all, or ``names``); a broken plugin is a failed report."""
    reg = reg or registry()
    checks = validate_names(checks, PRIMITIVE_CHECKS, "check")
    platforms = validate_names(platforms, ALL_PLATFORMS, "platform")
    owners = reg.primitive_owners()
    selected = list(owners) if not names else [reg.get_primitive(n).name for n in names]
    reports: list[PrimitiveReport] = []
    if not names:
        reports += [
            PrimitiveReport(
                p.name,
                "plugin",
                (CheckResult("load", "fail", p.error or "failed"),),
                p.name,
            )
            for p in reg.plugins()
            if p.status == "error"
        ]
    for name in selected:
        reports.append(
            check_report(
                reg.get_primitive(name),
                checks=checks,
                platforms=platforms,
                plugin=owners[name],
                progress=progress,
            )
        )
    return reports
