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
from jext.testing._rng_checks import RNG_CHECKS, rng_report
from jext.testing._scipy_checks import SCIPY_CHECKS, scipy_report

#: The checks of each kind of registered item, in the order they run.
KIND_CHECKS: dict[str, tuple[str, ...]] = {
    "primitive": PRIMITIVE_CHECKS,
    "rng": RNG_CHECKS,
    "scipy": SCIPY_CHECKS,
    "scipy-audit": SCIPY_CHECKS,
}

__all__ = ["KIND_CHECKS", "check_primitive", "run_checks", "validate_names"]


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
    prim: Primitive[..., Any] | str,
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
    scipy_audit: bool = False,
    reg: Registry | None = None,
) -> list[PrimitiveReport]:
    """Check what is registered (all, or ``names``): primitives, RNG impls, SciPy wrappers.

    A broken plugin is a failed report of kind ``plugin``.  ``checks`` may mix the
    checks of every kind; each item runs the ones that apply to it.  With
    ``scipy_audit=True``, ``jax.scipy``'s own functions are held to SciPy instead.
    """
    reg = reg or registry()
    everything = list(dict.fromkeys(c for cs in KIND_CHECKS.values() for c in cs))
    chosen = validate_names(checks, everything, "check")
    platforms = validate_names(platforms, ALL_PLATFORMS, "platform")
    if scipy_audit:
        from jext.scipy._audit import audited

        scipy_checks = [c for c in chosen if c in SCIPY_CHECKS]
        return [
            scipy_report(w, checks=scipy_checks, kind="scipy-audit", progress=progress)
            for w in audited()
            if not names or w.qualified_name in names or w.name in names
        ]
    owners = reg.primitive_owners()
    rngs = reg.rng_impls()
    wrappers = {
        f"jext.scipy.{scope}.{name}": owned
        for (scope, name), owners_ in reg.scipy_wrappers().items()
        for owned in owners_
    }
    if names:
        known = [*owners, *rngs, *wrappers]
        for name in names:
            if name not in known:
                raise UnknownNameError(
                    f"nothing registered is named {name!r}.{close_matches(name, known)} "
                    "See `jext list`."
                )
    wanted = set(names or [*owners, *rngs, *wrappers])
    reports: list[PrimitiveReport] = []
    if not names:
        reports += [
            PrimitiveReport(
                p.name, "plugin", (CheckResult("load", "fail", p.error or "failed"),), p.name
            )
            for p in reg.plugins()
            if p.status == "error"
        ]
    prim_checks = [c for c in chosen if c in PRIMITIVE_CHECKS]
    for name, plugin in owners.items():
        if name in wanted and prim_checks:
            reports.append(
                check_report(
                    reg.get_primitive(name),
                    checks=prim_checks,
                    platforms=platforms,
                    plugin=plugin,
                    progress=progress,
                )
            )
    rng_checks = [c for c in chosen if c in RNG_CHECKS]
    for name, owned in rngs.items():
        if name in wanted and rng_checks:
            reports.append(
                rng_report(owned.item, checks=rng_checks, plugin=owned.plugin, progress=progress)
            )
    scipy_checks = [c for c in chosen if c in SCIPY_CHECKS]
    for name, owned in wrappers.items():
        if name in wanted and scipy_checks:
            reports.append(
                scipy_report(
                    owned.item, checks=scipy_checks, plugin=owned.plugin, progress=progress
                )
            )
    return reports
