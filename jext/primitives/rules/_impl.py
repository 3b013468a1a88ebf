"""``def_impl``: the eager implementation, in place of the lowering compiled once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jext import _jax
from jext.primitives import _lowering
from jext.primitives._closure import Closure
from jext.primitives._core import Core
from jext.primitives._rules import Rules
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import ImplRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(d: Declaring, rule: ImplRule) -> dict[str, Any]:
    return {"impl": d.rule("impl", rule, d.n)}


def register(core: Core, freeze: Callable[[], None]) -> None:
    def impl(*args: Any, **bind_params: Any) -> list[Any]:
        freeze()
        return _lowering.impl(core, args, bind_params)

    _jax.set_impl(core.jax, impl)


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    rule = rules.impl
    if rule is None:
        return

    def impl(hidden: Any, *leaves: Any, closure: Closure) -> Any:
        return rule(*leaves, params=closure.params)

    made.def_impl(impl)


KINDS = (
    RuleKind(
        name="impl",
        declaration="def_impl",
        fields=("impl",),
        declare=declare,
        composes="JAX's eager implementation (without it, the lowering compiled per signature)",
        checks=("jit",),
        register=register,
        twin=twin,
        source=lambda rules: "default" if rules.impl is None else "custom",
    ),
)
