"""``def_lowering``: how a platform computes the primitive."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jext.primitives import _lowering
from jext.primitives._rules import LoweringEntry, check_platform
from jext.primitives.rules._kind import Declaring, RuleKind

__all__ = ["KINDS", "entry"]


def entry(
    d: Declaring, rule: Callable[..., Any], *, platform: str | None, raw: bool
) -> LoweringEntry:
    """The lowering record of ``rule`` on ``platform``; DefinitionError where it cannot be."""
    check_platform(d.name, platform)
    return LoweringEntry(d.rule("lowering", rule, None if raw else d.n), raw=raw)


def declare(
    d: Declaring, rule: Callable[..., Any], *, platform: str | None = None, raw: bool = False
) -> dict[str, Any]:
    made = entry(d, rule, platform=platform, raw=raw)
    return {"lowerings": d.rules.with_lowering(platform, made).lowerings}


KINDS = (
    RuleKind(
        name="lowering",
        declaration="def_lowering",
        fields=("lowerings",),
        declare=declare,
        composes="JAX's lowering per platform, registered when the rules freeze "
        "(primitives/_lowering.py)",
        checks=("lowering",),
        at_freeze=_lowering.register_lowerings,
    ),
)
