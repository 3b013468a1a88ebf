"""``def_jvp``: forward-mode differentiation, as ``custom_jvp``; and the JAX JVP rule that
every derivative rule kind composes into (``_ad.PREFERENCE``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jext import _jax
from jext.primitives import _ad
from jext.primitives._core import Core, parse_form
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import JvpRule

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


KINDS = (
    RuleKind(
        name="jvp",
        declaration="def_jvp",
        fields=("jvp", "jvp_symbolic_zeros"),
        declare=declare,
        composes="JAX's JVP rule, and its linearizations for jax.linearize and reverse mode, "
        "each mode preferring its own rule kind (_ad.PREFERENCE)",
        checks=("jvp", "higher_order"),
        register=register,
    ),
)
