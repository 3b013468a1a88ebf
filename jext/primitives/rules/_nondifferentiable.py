"""``def_nondifferentiable``: where the primitive has no derivative."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jext._errors import RuleNotImplementedError
from jext.primitives._rules import NONDIFFERENTIABLE_ATTR, Rules
from jext.primitives.rules._kind import Declaring, RuleKind

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(d: Declaring, *operands: int | str) -> dict[str, Any]:
    if operands:
        return {"nondifferentiable_in": d.operand_indices(operands, "def_nondifferentiable")}
    name = d.name

    def not_differentiable(primals: Any, tangents: Any) -> Any:
        raise RuleNotImplementedError(
            f"primitive {name!r} is declared not differentiable (def_nondifferentiable); "
            "stop the gradient before it (jax.lax.stop_gradient) or define a JVP rule"
        )

    not_differentiable.__dict__[NONDIFFERENTIABLE_ATTR] = True  # read by the rules record
    return {"jvp": d.rule("jvp", not_differentiable, 2)}


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    if rules.nondifferentiable_in:
        made.def_nondifferentiable(*(i + 1 for i in rules.nondifferentiable_in))


KINDS = (
    RuleKind(
        name="nondifferentiable",
        declaration="def_nondifferentiable",
        fields=("jvp", "nondifferentiable_in"),
        declare=declare,
        composes="the JVP rule raises for a tangent of a named operand, or everywhere",
        checks=("jvp", "transpose", "higher_order"),
        twin=twin,
    ),
)
