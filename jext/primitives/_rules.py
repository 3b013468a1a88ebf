"""The rules record of a primitive: what its author declared, frozen at the first bind."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

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


@dataclass(frozen=True, slots=True)
class Rules:
    """Every rule of one primitive.  Replaced whole by each ``def_*`` until the first bind."""

    reference_platforms: frozenset[str | None] = _EVERY_PLATFORM
    abstract_eval: Rule | None = None
    impl: Rule | None = None
    jvp: Rule | None = None
    jvp_symbolic_zeros: bool = False
    nondifferentiable_in: tuple[int, ...] = ()  # operands without a derivative
    vjp_fwd: Rule | None = None
    vjp_bwd: Rule | None = None
    vjp_symbolic_zeros: bool = False  # fwd gets CustomVJPPrimal, bwd SymbolicZero
    vjp_accumulate: bool = False  # bwd(res, cts, *accums) calls accum, returns None
    lin: Rule | None = None  # def_linearize: (out, residuals) from the operands
    linearized: Rule | None = None  # and the tangent from residuals and tangents
    transpose: Rule | None = None
    linear_in: tuple[int, ...] | None = None
    batching: Rule | None = None
    batching_kind: BatchingKind = "default"
    lowerings: Mapping[str | None, LoweringEntry] = field(
        default_factory=lambda: MappingProxyType({})
    )
    sharding: ShardingRule | None = None

    def replace(self, **changes: Any) -> Rules:
        return dataclasses.replace(self, **changes)

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
        """For each rule kind, where it comes from: ``default``, ``custom``, ``none``, ..."""

        def source(rule: Rule | None) -> str:
            return "default" if rule is None else "custom"

        custom = sorted("all" if p is None else p for p in self.lowerings)
        return {
            "abstract_eval": source(self.abstract_eval),
            "impl": source(self.impl),
            "jvp": self._jvp_source(),
            "transpose": "none" if self.transpose is None else "custom",
            "vjp": "none" if self.vjp_fwd is None else "custom",
            "linearize": "none" if self.lin is None else "custom",
            "batching": self.batching_kind,
            "lowering": ("custom:" + ",".join(custom)) if custom else "default",
            "sharding": self.sharding_source,
        }

    def _jvp_source(self) -> str:
        if self.jvp is not None and getattr(self.jvp.fn, NONDIFFERENTIABLE_ATTR, False):
            return "nondifferentiable"
        if self.jvp is None and self.lin is not None:
            return "linearize"
        if self.jvp is None and self.vjp_fwd is not None:
            return "reverse only"
        if self.jvp is None and self.transpose is not None:
            return "linear"
        return "default" if self.jvp is None else "custom"

    def custom_kinds(self) -> tuple[str, ...]:
        """The rule kinds the author declared, in :meth:`sources` order: a rule derived from
        another declaration (a linear JVP from the transpose, an elementwise or batch
        sharding rule) or from the reference is not one of them."""
        derived = {
            "jvp": {"default", "linear", "reverse only", "linearize"},
            "transpose": {"none"},
            "vjp": {"none"},
            "linearize": {"none"},
            "sharding": {"elementwise", "batch"},
        }
        return tuple(
            kind
            for kind, source in self.sources().items()
            if source not in derived.get(kind, {"default"})
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
