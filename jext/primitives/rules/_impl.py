"""``def_impl``: the eager implementation, in place of the lowering compiled once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jext import _jax
from jext.primitives import _lowering
from jext.primitives._core import Core
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import ImplRule

__all__ = ["KINDS"]


def declare(d: Declaring, rule: ImplRule) -> dict[str, Any]:
    return {"impl": d.rule("impl", rule, d.n)}


def register(core: Core, freeze: Callable[[], None]) -> None:
    def impl(*args: Any, **bind_params: Any) -> list[Any]:
        freeze()
        return _lowering.impl(core, args, bind_params)

    _jax.set_impl(core.jax, impl)


KINDS = (
    RuleKind(
        name="impl",
        declaration="def_impl",
        fields=("impl",),
        declare=declare,
        composes="JAX's eager implementation (without it, the lowering compiled per signature)",
        checks=("jit",),
        register=register,
    ),
)
