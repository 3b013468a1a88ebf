"""``def_lowering``: how a platform computes the primitive."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import jax
from jax import tree_util

from jext import _jax
from jext._errors import RuleError
from jext.primitives import _lowering
from jext.primitives._closure import Closure
from jext.primitives._rules import LoweringEntry, Rules, check_platform
from jext.primitives.rules._kind import Declaring, RuleKind

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive
    from jext.typing import Platform

__all__ = ["KINDS", "entry"]


def entry(
    d: Declaring, rule: Callable[..., Any], *, platform: str | None, raw: bool
) -> LoweringEntry:
    """The lowering record of ``rule`` on ``platform``; DefinitionError where it cannot be."""
    check_platform(d.name, platform)
    return LoweringEntry(d.rule("lowering", rule, None if raw else d.n), raw=raw)


def declare(
    d: Declaring, rule: Callable[..., Any], *, platform: str | None = None, raw: bool = False
) -> dict[str, Any]:
    made = entry(d, rule, platform=platform, raw=raw)
    return {"lowerings": d.rules.with_lowering(platform, made).lowerings}


def twin(made: Primitive[..., Any], rules: Rules) -> None:
    for platform, lowering in rules.lowerings.items():
        if lowering.rule is not None:
            fn, raw = _twin_lowering(made.name, lowering)
            made.def_lowering(fn, platform=cast("Platform | None", platform), raw=raw)


def _twin_lowering(name: str, entry: LoweringEntry) -> tuple[Callable[..., Any], bool]:
    rule = entry.rule
    assert rule is not None
    if entry.raw:

        def raw(ctx: Any, *values: Any, closure: Closure) -> Any:
            return rule(ctx, *values[closure.n_hidden :], params=closure.params)

        return _labelled(raw, rule.fn), True

    def traceable(hidden: Sequence[Any], *leaves: Any, closure: Closure) -> Any:
        # The rule may close over the traced values the reference closes over (defined in
        # the same traced function); while lowering, those are the hidden operands.
        store: list[Any] = []

        def flat(*xs: Any) -> list[Any]:
            out, tree = tree_util.tree_flatten(rule(*xs, params=closure.params))
            store[:] = [tree]
            return out

        try:
            closed = _jax.trace_avals(flat, [_jax.typeof(x) for x in leaves])
        except jax.errors.UnexpectedTracerError as err:  # a finished vmap's value
            raise RuleError(
                f"lowering rule {entry.label!r} of primitive {name!r} closes over a value "
                "batched by an enclosing vmap, which a lowering rule cannot see (it lowers "
                "one example); pass that value as an operand"
            ) from err
        hoisted = _jax.hoist_traced_consts(closed)
        if hoisted is None:
            outs = _jax.eval_jaxpr(closed, *leaves)
        else:
            jaxpr, values = hoisted
            where = {h: i for i, h in enumerate(closure.hidden_ids)}
            if any(id(v) not in where for v in values):
                raise RuleError(
                    f"lowering rule {entry.label!r} of primitive {name!r} closes over a "
                    "traced value its reference does not use: a lowering rule can use only "
                    "the traced values the reference closes over (they become hidden "
                    "operands); use that value in the reference too, or pass it as an operand"
                )
            outs = _jax.eval_jaxpr(jaxpr, *(hidden[where[id(v)]] for v in values), *leaves)
        return tree_util.tree_unflatten(store[0], outs)

    return _labelled(traceable, rule.fn), False


def _labelled(fn: Callable[..., Any], like: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` named and marked as ``like`` (reports and FFI detection read both), with its
    own signature (``functools.wraps`` would make ``inspect`` read ``like``'s)."""
    marks = getattr(like, "__dict__", {})
    fn.__dict__.update({k: v for k, v in marks.items() if k != "__wrapped__"})
    fn.__name__ = getattr(like, "__name__", fn.__name__)
    fn.__qualname__ = getattr(like, "__qualname__", fn.__qualname__)
    return fn


def source(rules: Rules) -> str:
    custom = sorted("all" if p is None else p for p in rules.lowerings)
    return ("custom:" + ",".join(custom)) if custom else "default"


KINDS = (
    RuleKind(
        name="lowering",
        declaration="def_lowering",
        fields=("lowerings",),
        declare=declare,
        composes="JAX's lowering per platform, registered when the rules freeze "
        "(primitives/_lowering.py)",
        checks=("lowering",),
        at_freeze=_lowering.register_lowerings,
        twin=twin,
        source=source,
    ),
)
