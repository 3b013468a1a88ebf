"""``def_abstract_eval``: the result types of the primitive, in place of tracing the reference."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jext import _jax
from jext.primitives import _abstract
from jext.primitives._closure import Closure
from jext.primitives._core import Core, parse_form
from jext.primitives._rules import Rules
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import AbstractEvalRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(d: Declaring, rule: AbstractEvalRule) -> dict[str, Any]:
    return {"abstract_eval": d.rule("abstract_eval", rule, d.n)}


def register(core: Core, freeze: Callable[[], None]) -> None:
    def abstract_eval(*avals: Any, **bind_params: Any) -> tuple[list[Any], frozenset[Any]]:
        freeze()
        form = parse_form(bind_params, len(avals))
        return _abstract.abstract_eval_and_effects(core, avals, form)

    _jax.set_effectful_abstract_eval(core.jax, abstract_eval)


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    rule = rules.abstract_eval
    if rule is None:
        return

    def abstract_eval(hidden: Any, *avals: Any, closure: Closure) -> Any:
        return rule(*avals, params=closure.params)

    made.def_abstract_eval(abstract_eval)


KINDS = (
    RuleKind(
        name="abstract_eval",
        declaration="def_abstract_eval",
        fields=("abstract_eval",),
        declare=declare,
        composes="JAX's abstract evaluation of every form (without it, the reference traced)",
        checks=("abstract_eval",),
        register=register,
        twin=twin,
        source=lambda rules: "default" if rules.abstract_eval is None else "custom",
    ),
)
