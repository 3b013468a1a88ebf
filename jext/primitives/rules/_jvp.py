"""``def_jvp``: forward-mode differentiation, as ``custom_jvp``; and the JAX JVP rule that
every derivative rule kind composes into (each kind's ``Derivative``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
from jax import tree_util

from jext import _jax
from jext.primitives import _ad
from jext.primitives._closure import Closure
from jext.primitives._core import Core, parse_form
from jext.primitives._markers import is_zero_tangent
from jext.primitives._rules import NONDIFFERENTIABLE_ATTR, Derivative, Rule, Rules
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import JvpRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(d: Declaring, rule: JvpRule, *, symbolic_zeros: bool = False) -> dict[str, Any]:
    return {"jvp": d.rule("jvp", rule, 2), "jvp_symbolic_zeros": symbolic_zeros}


def register(core: Core, freeze: Callable[[], None]) -> None:
    def jvp(
        primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
    ) -> tuple[list[Any], list[Any]]:
        return _ad.jvp(core, primals, tangents, parse_form(bind_params, len(primals)))

    def linearize_jvp(
        primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
    ) -> tuple[list[Any], list[Any]]:
        form = parse_form(bind_params, len(primals))
        return _ad.jvp(core, primals, tangents, form, mode="linearize")

    def reverse_jvp(
        primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
    ) -> tuple[list[Any], list[Any]]:
        form = parse_form(bind_params, len(primals))
        return _ad.jvp(core, primals, tangents, form, mode="vjp")

    _jax.register_jvp(core.jax, jvp)
    _jax.register_linearizations(core.jax, linearize_jvp, reverse_jvp)


def source(rules: Rules) -> str:
    if rules.jvp is not None and getattr(rules.jvp.fn, NONDIFFERENTIABLE_ATTR, False):
        return "nondifferentiable"
    if rules.jvp is None and rules.lin is not None:
        return "linearize"
    if rules.jvp is None and rules.vjp_fwd is not None:
        return "reverse only"
    if rules.jvp is None and rules.transpose is not None:
        return "linear"
    return "default" if rules.jvp is None else "custom"


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    if rules.jvp is not None:
        made.def_jvp(_twin_jvp(rules.jvp, rules.jvp_symbolic_zeros), symbolic_zeros=True)


def _twin_jvp(rule: Rule, symbolic_zeros: bool) -> Callable[..., Any]:
    """The author's JVP rule on the twin's operands (differentiating the hidden values is
    refused before it runs: see ``_ad.jvp_per_example``)."""

    def jvp(primals: Sequence[Any], tangents: Sequence[Any], *, closure: Closure) -> Any:
        tans = tangents[1:]
        if not symbolic_zeros:
            tans = tree_util.tree_map(
                lambda t: jnp.zeros(t.shape, t.dtype) if is_zero_tangent(t) else t,
                tans,
                is_leaf=is_zero_tangent,
            )
        return rule(tuple(primals[1:]), tuple(tans), params=closure.params)

    return jvp


KINDS = (
    RuleKind(
        name="jvp",
        declaration="def_jvp",
        fields=("jvp", "jvp_symbolic_zeros"),
        declare=declare,
        composes="JAX's JVP rule, and its linearizations for jax.linearize and reverse mode, "
        "each mode preferring its own rule kind (Derivative.rank)",
        checks=("jvp", "higher_order"),
        register=register,
        twin=twin,
        source=source,
        derived=frozenset({"default", "linear", "reverse only", "linearize"}),
        derivative=Derivative(
            rank={"jvp": 0, "linearize": 1, "vjp": 2},
            declared=lambda rules: rules.jvp is not None,
            jvp=_ad.custom_jvp,
        ),
    ),
)
