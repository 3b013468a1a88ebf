"""The rules record of a primitive: what its author declared, frozen at the first bind."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, cast

from jext import _jax
from jext._errors import DefinitionError
from jext.primitives._sharding import ShardingRule
from jext.primitives._signature import RuleArity

__all__ = [
    "FFI_SIDE_EFFECT_ATTR",
    "FFI_TARGET_ATTR",
    "GPU_PLATFORMS",
    "NONDIFFERENTIABLE_ATTR",
    "BatchingKind",
    "Derivative",
    "Kind",
    "LoweringEntry",
    "LoweringInfo",
    "Rule",
    "Rules",
    "check_platform",
    "reference_platforms",
]

GPU_PLATFORMS: Final = ("cuda", "rocm")
_VALID_PLATFORMS: Final = frozenset({"cpu", "cuda", "rocm", "gpu", "tpu"})
_EVERY_PLATFORM: Final[frozenset[str | None]] = frozenset((*_jax.PLATFORMS, None))

FFI_TARGET_ATTR: Final = "jext_ffi_target"
"""The attribute naming the FFI target of a rule made by ``jext.lowering.ffi_rule``."""

NONDIFFERENTIABLE_ATTR: Final = "jext_nondifferentiable"
"""The attribute marking the JVP rule ``Primitive.def_nondifferentiable`` declares."""
FFI_SIDE_EFFECT_ATTR: Final = "jext_ffi_side_effect"
"""The attribute, True or False, saying whether a rule made by ``jext.lowering.ffi_rule``
calls its handler with ``has_side_effect=True``."""

BatchingKind = Literal["default", "custom", "elementwise", "leading_axis"]


@dataclass(frozen=True, slots=True)
class Rule:
    """An author's rule and the static params it accepts."""

    fn: Callable[..., Any]
    arity: RuleArity

    def __call__(self, *args: Any, params: Mapping[str, Any]) -> Any:
        return self.fn(*args, **self.arity.select(params))

    @property
    def label(self) -> str:
        return str(getattr(self.fn, "__qualname__", repr(self.fn)))


@dataclass(frozen=True, slots=True)
class LoweringEntry:
    """A lowering rule as declared; ``rule`` is None for the reference implementation."""

    rule: Rule | None
    raw: bool = False

    @property
    def kind(self) -> Literal["reference", "traceable", "raw"]:
        if self.rule is None:
            return "reference"
        return "raw" if self.raw else "traceable"

    @property
    def ffi_target(self) -> str | None:
        """The XLA FFI target the rule calls (a rule made by ``jext.lowering.ffi_rule``)."""
        target = None if self.rule is None else getattr(self.rule.fn, FFI_TARGET_ATTR, None)
        return target if isinstance(target, str) else None

    @property
    def ffi_side_effect(self) -> bool:
        """Whether the rule's FFI call has side effects (``ffi_rule(has_side_effect=True)``)."""
        return self.rule is not None and getattr(self.rule.fn, FFI_SIDE_EFFECT_ATTR, False) is True

    @property
    def opaque(self) -> bool:
        """Whether the partitioner cannot see into the rule (a custom call)."""
        return self.raw or self.ffi_target is not None

    @property
    def label(self) -> str:
        if self.rule is None:
            return "reference"
        return f"{self.rule.label} (raw)" if self.raw else self.rule.label


_REFERENCE: Final = LoweringEntry(None)


@dataclass(frozen=True, slots=True)
class LoweringInfo:
    """Which rule a platform lowers a primitive with (see ``Primitive.lowering_rule``)."""

    platform: str
    label: str
    """``"reference"`` or the rule's qualified name (``"... (raw)"`` for MLIR rules)."""
    kind: Literal["reference", "traceable", "raw"]
    fn: Callable[..., Any]
    """For ``"reference"`` and ``"traceable"``: called like the primitive (operands, then
    static params as keywords), JAX-traceable, so it runs on any backend."""
    batching: str
    """How ``vmap`` runs this rule: ``"vmap"`` (the rule vectorized), ``"loop"`` (one call
    per example: raw MLIR rules), or the primitive's own batching (``"custom"``,
    ``"elementwise"``, ``"leading_axis"``)."""


class Kind(Protocol):
    """What the rules record reads of a row of the rule-kind table
    (``jext.primitives.rules.RuleKind``): the record carries the table it was made with."""

    @property
    def name(self) -> str: ...

    @property
    def fields(self) -> tuple[str, ...]: ...

    @property
    def source(self) -> Callable[[Rules], str] | None: ...

    @property
    def derived(self) -> frozenset[str]: ...

    @property
    def derivative(self) -> Derivative | None: ...


@dataclass(frozen=True, slots=True)
class Derivative:
    """A derivative rule kind as the primitive's JVP rule uses it (``_ad.jvp``).

    - ``rank``: its place in each mode's preference (``_ad.Mode``: ``"jvp"``,
      ``"linearize"``, ``"vjp"``), lowest first; a mode runs the declared kind ranked first;
    - ``declared(rules)``: whether the author declared it;
    - ``jvp(core, primals, tangents, form) -> (outs, tangents)``: the JVP of one example
      from the author's rule.
    """

    rank: Mapping[str, int]
    declared: Callable[[Rules], bool]
    jvp: Callable[..., tuple[list[Any], list[Any]]]


_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Rules:
    """Every rule of one primitive.  Replaced whole by each ``def_*`` until the first bind.

    ``values`` holds each rule kind's fields (``RuleKind.fields``) as its declaration set
    them, by field name; the properties below type those the core reads, with their
    defaults.  ``kinds`` is the rule-kind table, read by :meth:`sources` and the JVP rule.
    """

    reference_platforms: frozenset[str | None] = _EVERY_PLATFORM
    kinds: Mapping[str, Kind] = field(default_factory=lambda: _EMPTY)
    values: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def replace(self, **changes: Any) -> Rules:
        """The record with the fields in ``changes`` set: fields of the table's kinds."""
        unknown = changes.keys() - {f for kind in self.kinds.values() for f in kind.fields}
        if unknown:
            raise TypeError(f"no rule kind has the fields {sorted(unknown)}")
        return dataclasses.replace(self, values=MappingProxyType({**self.values, **changes}))

    def get(self, field: str, default: Any = None) -> Any:
        """The value of a kind's field, ``default`` where it was not declared."""
        return self.values.get(field, default)

    # --- typed fields of the rule kinds the core reads ----------------------------------

    @property
    def abstract_eval(self) -> Rule | None:
        return cast("Rule | None", self.get("abstract_eval"))

    @property
    def impl(self) -> Rule | None:
        return cast("Rule | None", self.get("impl"))

    @property
    def jvp(self) -> Rule | None:
        return cast("Rule | None", self.get("jvp"))

    @property
    def jvp_symbolic_zeros(self) -> bool:
        return cast(bool, self.get("jvp_symbolic_zeros", False))

    @property
    def nondifferentiable_in(self) -> tuple[int, ...]:
        """The operands without a derivative."""
        return cast("tuple[int, ...]", self.get("nondifferentiable_in", ()))

    @property
    def vjp_fwd(self) -> Rule | None:
        return cast("Rule | None", self.get("vjp_fwd"))

    @property
    def vjp_bwd(self) -> Rule | None:
        return cast("Rule | None", self.get("vjp_bwd"))

    @property
    def vjp_symbolic_zeros(self) -> bool:
        """fwd gets ``CustomVJPPrimal``, bwd ``SymbolicZero``."""
        return cast(bool, self.get("vjp_symbolic_zeros", False))

    @property
    def vjp_accumulate(self) -> bool:
        """bwd(res, cts, *accums) calls accum, returns None."""
        return cast(bool, self.get("vjp_accumulate", False))

    @property
    def lin(self) -> Rule | None:
        """``def_linearize``: (out, residuals) from the operands."""
        return cast("Rule | None", self.get("lin"))

    @property
    def linearized(self) -> Rule | None:
        """``def_linearize``: the tangent from residuals and tangents."""
        return cast("Rule | None", self.get("linearized"))

    @property
    def transpose(self) -> Rule | None:
        return cast("Rule | None", self.get("transpose"))

    @property
    def linear_in(self) -> tuple[int, ...] | None:
        return cast("tuple[int, ...] | None", self.get("linear_in"))

    @property
    def batching(self) -> Rule | None:
        return cast("Rule | None", self.get("batching"))

    @property
    def batching_kind(self) -> BatchingKind:
        return cast(BatchingKind, self.get("batching_kind", "default"))

    @property
    def lowerings(self) -> Mapping[str | None, LoweringEntry]:
        return cast("Mapping[str | None, LoweringEntry]", self.get("lowerings", _EMPTY))

    @property
    def sharding(self) -> ShardingRule | None:
        return cast("ShardingRule | None", self.get("sharding"))

    # --- derived --------------------------------------------------------------------------

    def with_lowering(self, platform: str | None, entry: LoweringEntry) -> Rules:
        return self.replace(lowerings=MappingProxyType({**self.lowerings, platform: entry}))

    def lowering_for(self, platform: str) -> LoweringEntry | None:
        """The rule ``platform`` lowers with: its own, then ``"gpu"``, then every-platform,
        then the reference where allowed; None when it has none."""
        table = self.lowerings
        if platform in table:
            return table[platform]
        if platform in GPU_PLATFORMS and "gpu" in table:
            return table["gpu"]
        if None in table:
            return table[None]
        if platform in self.reference_platforms:
            return _REFERENCE
        return None

    @property
    def has_custom_lowering(self) -> bool:
        return bool(self.lowerings) or self.reference_platforms != _EVERY_PLATFORM

    def batching_label(self, entry: LoweringEntry) -> str:
        if self.batching_kind != "default":
            return self.batching_kind
        return "loop" if entry.raw else "vmap"

    def sources(self) -> dict[str, str]:
        """For each rule kind with a ``source`` in the table, where it comes from:
        ``default``, ``custom``, ``none``, ..."""
        return {k.name: k.source(self) for k in self.kinds.values() if k.source is not None}

    def custom_kinds(self) -> tuple[str, ...]:
        """The rule kinds the author declared, in :meth:`sources` order: a rule derived from
        another declaration (a linear JVP from the transpose, an elementwise or batch
        sharding rule) or from the reference is not one of them (its kind's ``derived``)."""
        return tuple(
            k.name
            for k in self.kinds.values()
            if k.source is not None and k.source(self) not in k.derived
        )

    @property
    def sharding_source(self) -> Literal["custom", "elementwise", "batch"]:
        """Where the sharding rule comes from: ``def_sharding``, the elementwise declaration,
        or nothing declared (then only ``vmap``'s batch axes may be split)."""
        if self.sharding is not None:
            return "custom"
        return "elementwise" if self.batching_kind == "elementwise" else "batch"


def check_platform(primitive_name: str, platform: object) -> None:
    if platform is not None and platform not in _VALID_PLATFORMS:
        raise DefinitionError(
            f"primitive {primitive_name!r}: unknown platform {platform!r}; expected one of "
            f"{sorted(_VALID_PLATFORMS)} or None (every platform)"
        )


def reference_platforms(
    name: str, reference_lowering: bool | Collection[str]
) -> frozenset[str | None]:
    """The platforms the reference lowers on, from ``jext.primitive(reference_lowering=)``."""
    if reference_lowering is True:
        return _EVERY_PLATFORM
    if reference_lowering is False:
        return frozenset()
    out: set[str | None] = set()
    for p in reference_lowering:
        check_platform(name, p)
        out.update(GPU_PLATFORMS if p == "gpu" else (p,))
    return frozenset(out)
