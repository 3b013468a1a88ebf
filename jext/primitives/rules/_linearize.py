"""``def_linearize``: a linearization in two rules, as hijax's ``lin``/``linearized``."""

from __future__ import annotations

from typing import Any

from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import LinearizedRule, LinFwdRule

__all__ = ["KINDS"]


def declare(d: Declaring, lin: LinFwdRule, linearized: LinearizedRule) -> dict[str, Any]:
    n = d.n
    return {
        "lin": d.rule("linearize (lin)", lin, n),
        "linearized": d.rule("linearize (linearized)", linearized, None if n is None else 1 + n),
    }


KINDS = (
    RuleKind(
        name="linearize",
        declaration="def_linearize",
        fields=("lin", "linearized"),
        declare=declare,
        composes="the JVP rule runs lin, then linearized on its residuals; first for jax.linearize",
        checks=("jvp", "higher_order"),
    ),
)
