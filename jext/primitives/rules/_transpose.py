"""``def_transpose``: the transpose of a primitive linear in some operands."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jext import _jax
from jext._errors import DefinitionError
from jext.primitives import _ad
from jext.primitives._closure import Closure, closed_over_error
from jext.primitives._core import Core, parse_form
from jext.primitives._markers import LinearOperand
from jext.primitives._rules import Rule, Rules
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import TransposeRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(
    d: Declaring, rule: TransposeRule, *, linear_in: Sequence[int] | None = None
) -> dict[str, Any]:
    if d.rules.vjp_fwd is not None:
        raise DefinitionError(
            f"primitive {d.name!r}: def_vjp and def_transpose both say how to "
            "differentiate it in reverse mode; declare one"
        )
    n = d.n
    if linear_in is not None and n is not None and any(not 0 <= i < n for i in linear_in):
        raise DefinitionError(
            f"transpose rule of primitive {d.name!r}: linear_in={tuple(linear_in)} "
            f"names an operand it does not have (it has {n})"
        )
    return {
        "transpose": d.rule("transpose", rule, None if n is None else n + 1),
        "linear_in": None if linear_in is None else tuple(linear_in),
    }


def register(core: Core, freeze: Callable[[], None]) -> None:
    def transpose(cts: Sequence[Any], *args: Any, **bind_params: Any) -> list[Any]:
        return _ad.transpose(core, cts, args, parse_form(bind_params, len(args)))

    _jax.register_transpose(core.jax, transpose)


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    if rules.transpose is not None:
        shifted = None if rules.linear_in is None else [i + 1 for i in rules.linear_in]
        made.def_transpose(_twin_transpose(made.name, rules.transpose), linear_in=shifted)


def _twin_transpose(name: str, rule: Rule) -> Callable[..., Any]:
    def transpose(cts: Any, hidden: Sequence[Any], *leaves: Any, closure: Closure) -> Any:
        if any(isinstance(h, LinearOperand) for h in hidden):
            raise closed_over_error(name, "is being transposed")
        result = rule(cts, *leaves, params=closure.params)
        if not isinstance(result, tuple | list):
            return result  # the twin's own check reports it with the primitive's name
        return (None, *result)

    return transpose


KINDS = (
    RuleKind(
        name="transpose",
        declaration="def_transpose",
        fields=("transpose", "linear_in"),
        declare=declare,
        composes="JAX's transpose rule; without def_jvp, the JVP applies the primitive to the "
        "tangents of its linear operands",
        checks=("transpose", "higher_order"),
        register=register,
        twin=twin,
        source=lambda rules: "none" if rules.transpose is None else "custom",
        derived=frozenset({"none"}),
    ),
)
