"""``def_batching`` (as ``custom_vmap``), ``def_batching_elementwise`` and
``def_batching_leading_axis``: how the primitive runs under ``vmap``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jext import _jax
from jext.primitives import _ad, _batching
from jext.primitives._closure import Closure, closed_over_error
from jext.primitives._core import Core, parse_form
from jext.primitives._rules import Rule, Rules
from jext.primitives.rules._kind import Declaring, RuleKind
from jext.typing import BatchingRule

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive

__all__ = ["KINDS"]


def declare(d: Declaring, rule: BatchingRule) -> dict[str, Any]:
    return {"batching": d.rule("batching", rule, 2), "batching_kind": "custom"}


def declare_elementwise(d: Declaring) -> dict[str, Any]:
    return {"batching": None, "batching_kind": "elementwise"}


def declare_leading_axis(d: Declaring) -> dict[str, Any]:
    return {"batching": None, "batching_kind": "leading_axis"}


def register(core: Core, freeze: Callable[[], None]) -> None:
    def batch(
        axis_name: Any,
        size: int,
        args: Sequence[Any],
        dims: Sequence[int | None],
        **bind_params: Any,
    ) -> tuple[list[Any], list[int | None]]:
        form = parse_form(bind_params, len(args))
        return _batching.batch(
            core, axis_name, size, args, dims, form, jvp_of_one=_ad.jvp_per_example
        )

    _jax.register_batching(core.jax, batch)


_FIELDS = ("batching", "batching_kind")
_CHECKS = ("batching",)


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    if rules.batching is not None and rules.batching_kind == "custom":
        made.def_batching(_twin_batching(made.name, rules.batching))


def _twin_batching(name: str, rule: Rule) -> Callable[..., Any]:
    def batching(args: Sequence[Any], dims: Sequence[Any], *, closure: Closure) -> Any:
        if any(d is not None for d in dims[0]):
            raise closed_over_error(name, "is batched by this vmap")
        return rule(tuple(args[1:]), tuple(dims[1:]), params=closure.params)

    return batching


KINDS = (
    RuleKind(
        name="batching",
        declaration="def_batching",
        fields=_FIELDS,
        declare=declare,
        composes="JAX's batching rule: the batch levels become a param of the same "
        "primitive, and each rule kind applies to the batch (primitives/_batching.py)",
        checks=_CHECKS,
        register=register,
        twin=twin,
        source=lambda rules: rules.batching_kind,
    ),
    RuleKind(
        name="batching_elementwise",
        declaration="def_batching_elementwise",
        fields=_FIELDS,
        declare=declare_elementwise,
        composes="the batching rule applies the primitive to whole broadcast batches; "
        "an elementwise sharding rule is derived",
        checks=_CHECKS,
    ),
    RuleKind(
        name="batching_leading_axis",
        declaration="def_batching_leading_axis",
        fields=_FIELDS,
        declare=declare_leading_axis,
        composes="the batching rule moves every batch axis to the front",
        checks=_CHECKS,
    ),
)
