"""Check outcomes and reports: how a check passes, fails or skips, readable and as JSON."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "CheckFailure",
    "CheckNotApplicable",
    "CheckResult",
    "CheckSkipped",
    "CheckStatus",
    "PrimitiveReport",
    "ReportStatus",
    "describe_error",
    "first_line",
    "format_table",
    "guarded",
    "json_number",
    "summary_line",
]

CheckStatus = Literal["pass", "fail", "skip", "n/a", "unchecked"]
"""``pass`` and ``fail``; ``skip``: the check applies but did not run here (a dtype the
primitive does not support, a platform without a device); ``n/a``: the check does not
apply to the primitive (no operands to transform, declared not differentiable);
``unchecked``: nothing ran (the primitive declares no examples)."""

ReportStatus = Literal["pass", "fail", "unchecked"]


class CheckFailure(Exception):
    """Raised by a check that found a fault; the message says what."""

    def __init__(self, message: str, max_error: float | None = None) -> None:
        super().__init__(message)
        self.max_error = max_error


class CheckSkipped(Exception):
    """Raised by a check that applies but cannot run here (no rule to check, a dtype)."""


class CheckNotApplicable(Exception):
    """Raised by a check that does not apply to the primitive (no operands to transform,
    declared not differentiable); the message says why."""


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def describe_error(err: BaseException) -> str:
    """``Type: message`` with the whole message, for a failure report.

    A rule's fault often shows only past the first line (an MLIR verifier error says what
    mismatched on its second), so nothing is cut; the location lines MLIR adds for each
    operation and its advice to dump the module are dropped, as they point into jext and
    JAX rather than at the rule.  A chained cause is kept when it adds a reason.
    """
    lines = [
        line.strip()
        for line in str(err).strip().splitlines()
        if line.strip()
        and not line.lstrip().startswith("at loc(")
        and not line.startswith("Define JAX_DUMP_IR_TO")
    ]
    text = "\n    ".join(lines)
    cause = err.__cause__
    # A cause that only restates the error (JAX's traceback filter, MLIR's "Verification
    # failed:") is left out.
    reason = first_line(cause) if cause is not None else ""
    restated = reason.split(": ", 1)[-1] in text
    if cause is not None and reason and not restated and not reason.endswith(":"):
        text += f" (caused by {type(cause).__name__}: {first_line(cause)})"
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def json_number(value: float | None) -> float | None:
    """``value`` if JSON can hold it; ``None`` for inf and nan (strict JSON has neither)."""
    return value if value is None or math.isfinite(value) else None


def _nonfinite(value: float | None) -> str | None:
    if value is None or json_number(value) is not None:
        return None
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one named check: its :data:`CheckStatus`, why, and the largest error
    seen."""

    check: str
    status: CheckStatus
    message: str = ""
    max_error: float | None = None

    def to_json(self) -> dict[str, Any]:
        """Strict JSON: an infinite or nan ``max_error`` is ``null`` with ``max_error_nonfinite``
        saying which (``"inf"``, ``"-inf"`` or ``"nan"``)."""
        out: dict[str, Any] = {
            "status": self.status,
            "message": self.message,
            "max_error": json_number(self.max_error),
        }
        nonfinite = _nonfinite(self.max_error)
        if nonfinite is not None:
            out["max_error_nonfinite"] = nonfinite
        return out


def guarded(check: str, run: Callable[[], float | None], *, where: str = "") -> CheckResult:
    """Run one check: its failure, skip or any error it raises becomes the result.

    ``where`` (e.g. which example) is added to a failure's message.
    """
    try:
        worst = run()
    except CheckSkipped as why:
        return CheckResult(check, "skip", str(why))
    except CheckNotApplicable as why:
        return CheckResult(check, "n/a", str(why))
    except CheckFailure as failure:
        return CheckResult(check, "fail", f"{failure}{where}", failure.max_error)
    except Exception as err:  # a crashing rule is a failed check, not a crashed checker
        return CheckResult(check, "fail", f"raised {describe_error(err)}{where}")
    return CheckResult(check, "pass", "", worst)


@dataclass(frozen=True, slots=True)
class PrimitiveReport:
    """Every check run on one primitive (or RNG implementation, or SciPy wrapper)."""

    name: str
    kind: str  # "primitive", "rng", "scipy"
    results: tuple[CheckResult, ...]
    plugin: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def ok(self) -> bool:
        """Nothing failed (an item not checked is not a failure)."""
        return not self.failed

    @property
    def status(self) -> ReportStatus:
        """``fail`` if a check failed, ``unchecked`` if no check ran (no examples), else
        ``pass``."""
        if self.failed:
            return "fail"
        if self.results and all(r.status == "unchecked" for r in self.results):
            return "unchecked"
        return "pass"

    def format(self) -> str:
        """A readable multi-line report, as an AssertionError shows it."""
        lines = [f"{self.kind} {self.name}" + (f" (plugin {self.plugin})" if self.plugin else "")]
        for r in self.results:
            err = f" [max error {r.max_error:.3g}]" if r.max_error is not None else ""
            message = r.message.replace("\n", "\n        ")
            lines.append(f"  {r.status.upper():4s}  {r.check}{err}: {message}".rstrip(": "))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "plugin": self.plugin,
            "ok": self.ok,
            "status": self.status,
            "checks": {r.check: r.to_json() for r in self.results},
            **({"details": _strict(dict(self.details))} if self.details else {}),
        }


def _strict(value: Any) -> Any:
    """``value`` with every non-finite float made ``None``, so that it is strict JSON."""
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, Mapping):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def format_table(reports: Sequence[PrimitiveReport], checks: Mapping[str, Sequence[str]]) -> str:
    """A table per kind (one row per report, one column per check), then the failures."""
    marks = {"pass": "ok", "fail": "FAIL", "skip": "-", "n/a": "n/a", "unchecked": "unchecked"}
    out: list[str] = []
    for kind in dict.fromkeys(r.kind for r in reports):
        of_kind = [r for r in reports if r.kind == kind]
        order = checks.get(kind, ())
        present = {x.check for r in of_kind for x in r.results}
        columns = [c for c in order if c in present] + sorted(present - set(order))
        header = [kind, *columns]
        rows = []
        for rep in of_kind:
            by_check = {r.check: r.status for r in rep.results}
            rows.append([rep.name, *(marks[by_check[c]] if c in by_check else "" for c in columns)])
        widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
        out += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
            for row in [header, ["-" * w for w in widths], *rows]
        ]
        out.append("")
    failures = [
        f"{rep.name} {r.check}: {r.message}".replace("\n", "\n    ")
        for rep in reports
        for r in rep.results
        if r.status == "fail"
    ]
    if failures:
        out += ["Failures:", *(f"  {f}" for f in failures)]
    unchecked = [
        f"{rep.name}: {rep.results[0].message}" for rep in reports if rep.status == "unchecked"
    ]
    if unchecked:
        out += ["Not checked:", *(f"  {u}" for u in unchecked)]
    return "\n".join(out).rstrip()


def summary_line(reports: Sequence[PrimitiveReport]) -> str:
    """``"3 passed, 1 failed"``, with ``", 2 not checked"`` when items had nothing to run."""
    counts = {"pass": 0, "fail": 0, "unchecked": 0}
    for rep in reports:
        counts[rep.status] += 1
    line = f"{counts['pass']} passed, {counts['fail']} failed"
    return line + (f", {counts['unchecked']} not checked" if counts["unchecked"] else "")
