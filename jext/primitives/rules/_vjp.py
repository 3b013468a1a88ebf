"""``def_vjp``: reverse-mode differentiation by a forward and a backward rule, as ``custom_vjp``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jext._errors import DefinitionError
from jext.primitives._closure import Closure
from jext.primitives._core import Core, Form
from jext.primitives._rules import Derivative, Rule, Rules
from jext.primitives._vjp import vjp_jvp
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import VjpAccumulatingBwdRule, VjpBwdRule, VjpFwdRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

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


def jvp(
    core: Core, primals: Sequence[Any], tangents: Sequence[Any], form: Form
) -> tuple[list[Any], list[Any]]:
    """The JVP from ``fwd``, its tangents from ``bwd`` transposed (``_vjp.vjp_jvp``)."""
    assert core.rules.vjp_fwd is not None
    return vjp_jvp(core, primals, tangents, form, core.rules.vjp_fwd)


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    if rules.vjp_fwd is not None and rules.vjp_bwd is not None:
        made.def_vjp(
            *_twin_vjp(rules.vjp_fwd, rules.vjp_bwd),
            symbolic_zeros=rules.vjp_symbolic_zeros,
            accumulate=rules.vjp_accumulate,
        )


def _twin_vjp(fwd: Rule, bwd: Rule) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The author's VJP rules on the twin's operands; no cotangent for the hidden values
    (differentiating them is refused before ``fwd`` runs: see ``_ad.jvp_per_example``)."""

    def twin_fwd(hidden: Any, *operands: Any, closure: Closure) -> Any:
        return fwd(*operands, params=closure.params)

    def twin_bwd(residuals: Any, cts: Any, *accums: Any, closure: Closure) -> Any:
        # An accumulating bwd gets no accumulator for the hidden values, and returns None.
        result = bwd(residuals, cts, *accums[1:], params=closure.params)
        if not isinstance(result, tuple | list):
            return result  # the twin's own check reports it with the primitive's name
        return (None, *result)

    return twin_fwd, twin_bwd


KINDS = (
    RuleKind(
        name="vjp",
        declaration="def_vjp",
        fields=("vjp_fwd", "vjp_bwd", "vjp_symbolic_zeros", "vjp_accumulate"),
        declare=declare,
        composes="the JVP rule runs fwd and binds jext_vjp_lin, whose transpose is bwd "
        "(primitives/_vjp.py); first in reverse mode",
        checks=("jvp", "higher_order"),
        twin=twin,
        source=lambda rules: "none" if rules.vjp_fwd is None else "custom",
        derived=frozenset({"none"}),
        derivative=Derivative(
            rank={"jvp": 2, "linearize": 2, "vjp": 0},
            declared=lambda rules: rules.vjp_fwd is not None,
            jvp=jvp,
        ),
    ),
)
