"""Sharding rules: an einsum-like Shardy rule per primitive, made concrete for each equation.

A rule names one *factor* per dimension of each flat operand and result
(``"... i, i -> ... i"``).  A factor the partitioner may shard is split the same way in
every operand and result it appears in, and each shard runs the primitive on its part;
a factor in ``need_replication`` is never split.  ``...`` stands for the leading
dimensions a value has beyond its named ones, aligned from the right as in NumPy
broadcasting (a dimension of size 1 there is a broadcast, never split).

For an equation the rule becomes a :class:`Concrete` one: ellipses expanded, each batch
level of ``vmap`` a leading factor of its own (``vmap``'s contract makes examples
independent, so a batch axis is always splittable), and every factor that is missing
from the operands or from the results marked for replication (a shard could not compute
its part of such a factor alone).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from jext import _jax
from jext._errors import DefinitionError, RuleError

Level = tuple[int, tuple[bool, ...], Any, Any]  # as in _core (which imports this module's users)

__all__ = [
    "Concrete",
    "ShardingRule",
    "batch_rule",
    "concrete_rule",
    "describe_factor",
    "elementwise_rule",
    "equation_rule",
    "explicit_result_axes",
    "parse_rule",
    "present_operands",
]

ELLIPSIS: Final = "..."
_FACTOR: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True)
class ShardingRule:
    """A declared rule: factor names per dimension of each flat operand and result."""

    text: str
    operands: tuple[tuple[str, ...], ...]
    results: tuple[tuple[str, ...], ...]
    need_replication: frozenset[str] = frozenset()

    def __str__(self) -> str:
        kept = f" (replicated: {', '.join(sorted(self.need_replication))})"
        return self.text + (kept if self.need_replication else "")


def parse_rule(name: str, text: object, need_replication: Sequence[str]) -> ShardingRule:
    """``text`` (``"i j, j -> i j"``) as a rule, or DefinitionError saying what is wrong."""

    def refuse(why: str) -> DefinitionError:
        return DefinitionError(
            f"sharding rule {text!r} of primitive {name!r}: {why}. A rule reads like an "
            'einsum over the flat operands and results, e.g. "... i, i -> ... i"'
        )

    if not isinstance(text, str):
        raise refuse(f"expected a str, got {type(text).__name__}")
    if text.count("->") != 1:
        raise refuse("it needs exactly one '->'")
    lhs, rhs = text.split("->")

    def values(side: str) -> tuple[tuple[str, ...], ...]:
        out = []
        for value in side.split(","):
            dims = tuple(value.split())
            for i, factor in enumerate(dims):
                if factor == ELLIPSIS:
                    if i != 0:
                        raise refuse("'...' may only come first in a value")
                elif not _FACTOR.match(factor):
                    raise refuse(
                        f"{factor!r} is not a factor name (a letter, then letters, digits or '_')"
                    )
                elif dims.count(factor) > 1:
                    raise refuse(f"factor {factor!r} names two dimensions of one value")
            out.append(dims)
        return tuple(out)

    operands, results = values(lhs), values(rhs)
    named = {f for v in (*operands, *results) for f in v if f != ELLIPSIS}
    if isinstance(need_replication, str):
        need_replication = (need_replication,)
    unknown = sorted(set(need_replication) - named)
    if unknown:
        raise refuse(f"need_replication names {unknown}, which the rule does not use")
    return ShardingRule(text, operands, results, frozenset(need_replication))


@dataclass(frozen=True, slots=True)
class Concrete:
    """A rule for one equation: one factor per dimension, and the factors kept whole."""

    operands: tuple[tuple[str, ...], ...]
    results: tuple[tuple[str, ...], ...]
    need_replication: frozenset[str]

    @property
    def splittable(self) -> bool:
        """Whether any factor may be split (otherwise the rule changes nothing)."""
        every = {f for v in (*self.operands, *self.results) for f in v}
        return bool(every - self.need_replication)

    def shardy(self) -> tuple[str, tuple[str, ...]]:
        """The rule in the notation of JAX's ``str_to_sdy_sharding_rule``, factors renamed."""
        names: dict[str, str] = {}
        for value in (*self.operands, *self.results):
            for f in value:
                names.setdefault(f, f"f{len(names)}")

        def side(vals: tuple[tuple[str, ...], ...]) -> str:
            return ", ".join(" ".join(names[f] for f in v) for v in vals)

        # Shardy wants the special factors in the order the factors first appear.
        kept = tuple(n for f, n in names.items() if f in self.need_replication)
        return f"{side(self.operands)} -> {side(self.results)}", kept

    def choose(
        self, specs: Sequence[tuple[Any, ...]]
    ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """Operand and result specs (mesh axes per dimension) that agree with the rule,
        from the operands' ``specs``: each factor split as the first operand splitting it
        does, unless it is kept whole or its mesh axes already split another factor."""
        axes_of: dict[str, Any] = {}
        used: set[str] = set()
        for factors, spec in zip(self.operands, specs, strict=True):
            for factor, entry in zip(factors, spec, strict=False):
                names = (entry,) if isinstance(entry, str) else tuple(entry or ())
                if not names or factor in self.need_replication or factor in axes_of:
                    continue
                if used.isdisjoint(names):
                    axes_of[factor] = entry
                    used.update(names)

        def specs_of(values: tuple[tuple[str, ...], ...]) -> list[tuple[Any, ...]]:
            return [tuple(axes_of.get(f) for f in v) for v in values]

        return specs_of(self.operands), specs_of(self.results)

    def allowed_dims(self, operand: int) -> list[int]:
        """The dimensions of flat operand ``operand`` the rule lets the partitioner split."""
        return [d for d, f in enumerate(self.operands[operand]) if f not in self.need_replication]


def present_operands(
    rule: ShardingRule, n_flat: int, in_tree: Any = None
) -> tuple[tuple[str, ...], ...]:
    """The rule's operand entries for an equation of ``n_flat`` flat operands.

    A rule names each flat operand; a primitive with an optional operand (``s=None``) may
    instead name each declared operand: where ``in_tree`` (the operands' tree) has one
    child per entry of the rule, each an array or None, the entries of the None operands
    are dropped with their factors.  Otherwise the entries as declared (a count that
    does not match is the caller's error to report).
    """
    children = () if in_tree is None else in_tree.children()
    if len(children) != len(rule.operands):
        return rule.operands
    leaves = [child.num_leaves for child in children]
    if sum(leaves) != n_flat or any(n > 1 for n in leaves):
        return rule.operands
    return tuple(v for v, n in zip(rule.operands, leaves, strict=True) if n == 1)


def concrete_rule(
    name: str,
    rule: ShardingRule,
    avals_in: Sequence[Any],
    avals_out: Sequence[Any] | None,
    levels: Sequence[Level] = (),
    *,
    in_tree: Any = None,
) -> Concrete:
    """``rule`` for operands and results of these (per-example) avals, under ``levels``.

    With ``avals_out=None``, for the operands only (results empty, and only the declared
    factors kept whole).  ``in_tree`` (the operands' tree) lets a rule count the operands
    as the primitive declares them: see :func:`present_operands`.  Raises RuleError when
    the rule does not fit the avals (count, rank or a factor whose sizes disagree).
    """
    where = f"sharding rule {rule.text!r} of primitive {name!r}"
    rule_operands = present_operands(rule, len(avals_in), in_tree)
    for kind, vals, avals in (
        ("operand", rule_operands, avals_in),
        ("result", rule.results, avals_out or ()),
    ):
        if avals_out is None and kind == "result":
            continue
        if len(vals) != len(avals):
            hint = (
                ". A rule names each flat operand, or each declared operand where one may "
                "be None (its factors are then dropped)"
                if kind == "operand"
                else ""
            )
            raise RuleError(
                f"{where} has {len(vals)} {kind}(s), but the primitive has {len(avals)} flat "
                f"{kind}(s) here ({', '.join(_jax.aval_str(a) for a in avals)}){hint}"
            )
    sizes: dict[str, int] = {}
    fresh = iter(range(1 << 30))

    def expand(kind: str, i: int, dims: tuple[str, ...], aval: Any) -> tuple[str, ...]:
        shape = tuple(aval.shape)
        named = dims[1:] if dims[:1] == (ELLIPSIS,) else dims
        extra = len(shape) - len(named)
        if extra < 0 or (extra and dims[:1] != (ELLIPSIS,)):
            raise RuleError(
                f"{where}: {kind} {i} has shape {list(shape)}, but the rule gives it "
                f"{len(named)} dimension(s){' and more' if dims[:1] == (ELLIPSIS,) else ''}"
            )
        # Ellipsis dims count from the right: "..." of (3, 1, 5) and of (5,) line up.
        out = [f"...{extra - d}" if shape[d] != 1 else f"...1:{next(fresh)}" for d in range(extra)]
        out += named
        for f, size in zip(out, shape, strict=True):
            known = sizes.setdefault(f, size)
            if known != size:
                raise RuleError(
                    f"{where}: factor {f!r} has size {known} and {size} ({kind} {i} has shape "
                    f"{list(shape)}); one factor must have one size"
                )
        return tuple(out)

    operands = [
        expand("operand", i, v, a)
        for i, (v, a) in enumerate(zip(rule_operands, avals_in, strict=True))
    ]
    if avals_out is None:
        ops = _with_levels(operands, [], set(), levels).operands
        return Concrete(ops, (), rule.need_replication)
    results = [
        expand("result", i, v, a)
        for i, (v, a) in enumerate(zip(rule.results, avals_out, strict=True))
    ]
    return _with_levels(operands, results, set(rule.need_replication), levels)


def elementwise_rule(
    avals_in: Sequence[Any], avals_out: Sequence[Any], levels: Sequence[Level] = ()
) -> Concrete | None:
    """The rule of an elementwise primitive (operands broadcast NumPy-style to the results).

    None when the results do not all have the broadcast shape (then no rule is derived).
    """
    shapes = [tuple(a.shape) for a in avals_in]
    try:
        full = _broadcast(shapes)
    except ValueError:
        return None
    if any(tuple(a.shape) != full for a in avals_out):
        return None
    rank = len(full)
    fresh = iter(range(1 << 30))
    operands = [
        tuple(
            f"#d{rank - len(s) + d}" if n == full[rank - len(s) + d] else f"#one{next(fresh)}"
            for d, n in enumerate(s)
        )
        for s in shapes
    ]
    results = [tuple(f"#d{d}" for d in range(rank)) for _ in avals_out]
    return _with_levels(operands, results, set(), levels)


def batch_rule(
    avals_in: Sequence[Any], avals_out: Sequence[Any], levels: Sequence[Level]
) -> Concrete:
    """Only the batch levels of ``vmap`` may be split; every other dimension is kept whole."""
    fresh = iter(range(1 << 30))
    operands = [tuple(f"#x{next(fresh)}" for _ in a.shape) for a in avals_in]
    results = [tuple(f"#x{next(fresh)}" for _ in a.shape) for a in avals_out]
    kept = {f for v in (*operands, *results) for f in v}
    return _with_levels(operands, results, kept, levels)


def _with_levels(
    operands: Sequence[tuple[str, ...]],
    results: Sequence[tuple[str, ...]],
    kept: set[str],
    levels: Sequence[Level],
) -> Concrete:
    # Each level puts its axis in front of the operands it batches and of every result,
    # innermost level first, so the outermost ends up leading.
    ops, res = list(operands), list(results)
    for k in reversed(range(len(levels))):
        _, batched, _, _ = levels[k]
        ops = [(f"vmap#{k}", *v) if b else v for v, b in zip(ops, batched, strict=True)]
        res = [(f"vmap#{k}", *v) for v in res]
    seen_in = {f for v in ops for f in v}
    seen_out = {f for v in res for f in v}
    # Only in the operands (reduced) or only in the results (made up): a shard cannot
    # compute its part alone, so such a factor must stay whole.
    kept |= seen_in ^ seen_out
    kept |= {f for f in seen_in | seen_out if f.startswith("...1:")}
    return Concrete(tuple(ops), tuple(res), frozenset(kept))


def _broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for d, n in enumerate(s):
            j = rank - len(s) + d
            if n != 1:
                if out[j] not in (1, n):
                    raise ValueError("shapes do not broadcast")
                out[j] = n
    return tuple(out)


def equation_rule(
    name: str,
    declared: ShardingRule | None,
    *,
    elementwise: bool,
    avals_in: Sequence[Any],
    avals_out: Sequence[Any],
    levels: Sequence[Level],
    in_tree: Any = None,
) -> Concrete | None:
    """The rule of one equation: declared, derived for an elementwise primitive, or only
    ``vmap``'s batch axes (None: nothing may be split).  Avals are per example;
    ``in_tree`` is the operands' tree (see :func:`present_operands`)."""
    if declared is not None:
        return concrete_rule(name, declared, avals_in, avals_out, levels, in_tree=in_tree)
    derived = elementwise_rule(avals_in, avals_out, levels) if elementwise else None
    if derived is None and levels:
        derived = batch_rule(avals_in, avals_out, levels)
    return derived


def explicit_result_axes(
    name: str, text: str, rule: Concrete, operand_axes: Sequence[tuple[Any, ...] | None]
) -> list[tuple[Any, ...]]:
    """Under explicit sharding: the mesh axes of each result's dimensions the rule gives
    for operands sharded along ``operand_axes`` (per operand and dimension; None: not
    explicitly sharded).  Raises RuleError where the operands contradict the rule."""
    where = f"primitive {name!r}: its sharding rule {text!r}"
    chosen: dict[str, tuple[Any, int, int]] = {}
    owner: dict[Any, str] = {}
    for i, (factors, axes) in enumerate(zip(rule.operands, operand_axes, strict=True)):
        for d, (factor, axis) in enumerate(zip(factors, axes or (), strict=False)):
            if axis is None:
                continue
            shown = describe_factor(factor)
            if factor in rule.need_replication:
                raise RuleError(
                    f"{where} keeps {shown} whole, but operand {i} is sharded along mesh "
                    f"axis {axis!r} in dimension {d}. Reshard the operand "
                    "(jax.sharding.reshard) or, if the kernel can split it, drop it from "
                    "need_replication"
                )
            known = chosen.setdefault(factor, (axis, i, d))
            if known[0] != axis:
                raise RuleError(
                    f"{where} maps operand {known[1]} dimension {known[2]} and operand {i} "
                    f"dimension {d} to the same {shown}, but they are sharded along "
                    f"different mesh axes ({known[0]!r} and {axis!r}). Reshard one of them, "
                    "or fix the rule if the dimensions are unrelated"
                )
            other = owner.setdefault(axis, factor)
            if other != factor:
                both = f"{describe_factor(other)} and {shown}"
                raise RuleError(
                    f"{where}: mesh axis {axis!r} shards both {both}, "
                    "which the rule keeps apart; the result cannot be sharded along one "
                    "mesh axis twice. Reshard one of the operands"
                )
    return [tuple(chosen.get(f, (None,))[0] for f in factors) for factors in rule.results]


def describe_factor(factor: str) -> str:
    """A factor as an error message names it."""
    # Factors jext makes up contain "#" or "...", which a declared factor cannot.
    if factor.startswith("vmap#"):
        return "a vmap batch axis"
    if factor.startswith(("...1:", "#one")):
        return "an axis of size 1"
    if factor.startswith("#x"):
        return "an axis of the primitive (only vmap's batch axes may be split)"
    if factor.startswith("#d"):
        return f"axis {factor[2:]} of the broadcast shape"
    return "a '...' dimension" if factor.startswith("...") else f"factor {factor!r}"
