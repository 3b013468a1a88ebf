"""``def_vjp``: reverse-mode differentiation by a forward and a backward rule, as ``custom_vjp``."""

from __future__ import annotations

from typing import Any

from jext._errors import DefinitionError
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import VjpAccumulatingBwdRule, VjpBwdRule, VjpFwdRule

__all__ = ["KINDS"]


def declare(
    d: Declaring,
    fwd: VjpFwdRule,
    bwd: VjpBwdRule | VjpAccumulatingBwdRule,
    *,
    symbolic_zeros: bool = False,
    accumulate: bool = False,
) -> dict[str, Any]:
    if d.rules.transpose is not None:
        raise DefinitionError(
            f"primitive {d.name!r}: def_vjp and def_transpose both say how to "
            "differentiate it in reverse mode; declare one"
        )
    n = d.n
    return {
        "vjp_fwd": d.rule("vjp fwd", fwd, n),
        "vjp_bwd": d.rule("vjp bwd", bwd, 2 if not accumulate else None if n is None else 2 + n),
        "vjp_symbolic_zeros": symbolic_zeros,
        "vjp_accumulate": accumulate,
    }


KINDS = (
    RuleKind(
        name="vjp",
        declaration="def_vjp",
        fields=("vjp_fwd", "vjp_bwd", "vjp_symbolic_zeros", "vjp_accumulate"),
        declare=declare,
        composes="the JVP rule runs fwd and binds jext_vjp_lin, whose transpose is bwd "
        "(primitives/_vjp.py); first in reverse mode",
        checks=("jvp", "higher_order"),
    ),
)
