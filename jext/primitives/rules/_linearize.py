"""``def_linearize``: a linearization in two rules, as hijax's ``lin``/``linearized``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jext.primitives import _ad
from jext.primitives._closure import Closure
from jext.primitives._rules import Derivative, Rule, Rules
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import LinearizedRule, LinFwdRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(d: Declaring, lin: LinFwdRule, linearized: LinearizedRule) -> dict[str, Any]:
    n = d.n
    return {
        "lin": d.rule("linearize (lin)", lin, n),
        "linearized": d.rule("linearize (linearized)", linearized, None if n is None else 1 + n),
    }


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    if rules.lin is not None and rules.linearized is not None:
        made.def_linearize(*_twin_linearize(rules.lin, rules.linearized))


def _twin_linearize(lin: Rule, linearized: Rule) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The author's linearization rules on the twin's operands (differentiating the hidden
    values is refused before ``lin`` runs: see ``_ad.jvp_per_example``)."""

    def twin_lin(hidden: Any, *operands: Any, closure: Closure) -> Any:
        return lin(*operands, params=closure.params)

    def twin_linearized(residuals: Any, hidden: Any, *tangents: Any, closure: Closure) -> Any:
        return linearized(residuals, *tangents, params=closure.params)

    return twin_lin, twin_linearized


KINDS = (
    RuleKind(
        name="linearize",
        declaration="def_linearize",
        fields=("lin", "linearized"),
        declare=declare,
        composes="the JVP rule runs lin, then linearized on its residuals; first for jax.linearize",
        checks=("jvp", "higher_order"),
        twin=twin,
        source=lambda rules: "none" if rules.lin is None else "custom",
        derived=frozenset({"none"}),
        derivative=Derivative(
            rank={"jvp": 1, "linearize": 0, "vjp": 1},
            declared=lambda rules: rules.lin is not None,
            jvp=_ad.linearize_jvp,
        ),
    ),
)
