"""The shapes of the rules a primitive author writes, and the types they receive.

Read this module first when writing rules.  The rule decorators are typed with the
shapes below, so ``mypy`` reports a rule with too few positional parameters or the
wrong return type (jext also checks the arity at decoration time).

``P`` below is the primitive's signature: its positional-only *operands* (arrays or
pytrees of arrays) and its keyword-only *static params* (hashable Python values that
JAX sees in the equation's params).
Every rule receives the operands with the structure the caller passed, and the static
params as keyword arguments; a rule may declare only the params it uses by name
and take the rest with ``**params``.

=====================  ======================================================================
rule                   shape
=====================  ======================================================================
abstract eval          ``(*avals, **params) -> aval | pytree of avals``
impl                   ``(*operands, **params) -> result``
jvp                    ``(primals: tuple, tangents: tuple, /, **params) -> (primals_out,
                       tangents_out)``
transpose              ``(cotangents, *operands, **params) -> tuple`` (one entry per operand,
                       ``None`` for an operand the primitive is not linear in)
vjp (fwd, bwd)         ``fwd(*operands, **params) -> (outputs, residuals)``;
                       ``bwd(residuals, cotangents, /, **params) -> tuple`` (one entry per
                       operand, ``None`` for a zero cotangent)
batching               ``(args: tuple, dims: tuple[int | None, ...], /, **params) ->
                       (result, out_dims)``
lowering               ``(*operands, **params) -> result`` (JAX-traceable), or with
                       ``raw=True``: ``(ctx, *mlir_values, **params) -> list of mlir values``
=====================  ======================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Literal, Protocol, TypeAlias, TypeVar

from jext._jax import AbstractValue
from jext.primitives._markers import LinearOperand, SymbolicZero

if TYPE_CHECKING:
    from jext.primitives._example import Example

__all__ = [
    "AbstractEvalRule",
    "AbstractValue",
    "BatchingRule",
    "ImplRule",
    "JvpRule",
    "LinFwdRule",
    "LinearOperand",
    "LinearizedRule",
    "LoweringRule",
    "Platform",
    "RegisteredPrimitive",
    "SymbolicZero",
    "TransposeRule",
    "VjpAccumulatingBwdRule",
    "VjpBwdRule",
    "VjpFwdRule",
]

Platform: TypeAlias = Literal["cpu", "cuda", "rocm", "gpu", "tpu"]
"""A platform a lowering rule is registered for; ``"gpu"`` means both cuda and rocm."""

AbstractEvalRule = TypeVar("AbstractEvalRule", bound=Callable[..., Any])
"""``(*avals, **params) -> aval | pytree of avals``; avals are :class:`AbstractValue`."""

ImplRule = TypeVar("ImplRule", bound=Callable[..., Any])
"""``(*operands, **params) -> result``: the eager implementation, on concrete arrays."""

JvpRule = TypeVar(
    "JvpRule", bound=Callable[Concatenate[tuple[Any, ...], tuple[Any, ...], ...], tuple[Any, Any]]
)
"""``(primals, tangents, /, **params) -> (primals_out, tangents_out)``.

``primals`` and ``tangents`` are tuples with one entry per operand.  A zero tangent
arrives as an array of zeros, or as a :class:`SymbolicZero` when the rule was
registered with ``symbolic_zeros=True``; the rule may return ``SymbolicZero`` or
``None`` for a tangent that is zero.
"""

TransposeRule = TypeVar("TransposeRule", bound=Callable[Concatenate[Any, ...], tuple[Any, ...]])
"""``(cotangents, *operands, **params) -> tuple`` with one cotangent per operand.

The operands the primitive is linear in arrive as :class:`LinearOperand` (shape and
dtype only); return ``None`` for the others.  Symbolic-zero cotangents are
instantiated before the rule is called, and a rule is not called when every
cotangent is zero.
"""

VjpFwdRule: TypeAlias = Callable[..., tuple[Any, Any]]
"""``(*operands, **params) -> (outputs, residuals)``: the forward half of a VJP rule.

``outputs`` has the primitive's result structure, shapes and dtypes; ``residuals`` is
any pytree of arrays, handed to the backward half unchanged.
"""

VjpBwdRule: TypeAlias = Callable[..., tuple[Any, ...]]
"""``(residuals, cotangents, /, **params) -> tuple`` with one cotangent per operand.

``cotangents`` has the primitive's result structure (zeros instantiated); return
``None`` for an operand whose cotangent is zero.  Declared with
``def_vjp(..., symbolic_zeros=True)``, ``fwd`` gets each operand leaf as
``jax.custom_derivatives.CustomVJPPrimal(value, perturbed)`` and ``bwd`` a
:data:`jext.SymbolicZero` for a zero cotangent, and may return one.
"""

VjpAccumulatingBwdRule: TypeAlias = Callable[..., None]
"""``(residuals, cotangents, *accumulators, /, **params) -> None``: the backward half of a
VJP rule declared with ``def_vjp(..., accumulate=True)``.

It calls ``acc.accum(value)`` on one :class:`jext.GradAccum` per operand leaf (a
:class:`jext.NullAccum`, which ignores it, for a leaf not being differentiated) and
returns None.
"""

LinFwdRule: TypeAlias = Callable[..., tuple[Any, Any]]
"""``(*operands, **params) -> (outputs, residuals)``: the primal half of a linearization
(``def_linearize``), hijax's ``lin``; ``residuals`` is any pytree of arrays."""

LinearizedRule: TypeAlias = Callable[..., Any]
"""``(residuals, *tangents, /, **params) -> output tangents``: the linear half of a
linearization (``def_linearize``), hijax's ``linearized``; linear in the tangents (one per
operand, zeros instantiated), shaped like the primitive's results."""

BatchingRule = TypeVar(
    "BatchingRule",
    bound=Callable[Concatenate[tuple[Any, ...], tuple[Any, ...], ...], tuple[Any, Any]],
)
"""``(args, dims, /, **params) -> (result, out_dims)``.

``dims`` has one entry per operand (a pytree of them for a pytree operand): the
batched axis, or ``None`` for an unbatched operand.  ``out_dims`` is one int or
``None`` for every result leaf, or a pytree matching the result.  Under ``vmap``
at least one operand is batched; a JVP with only tangents batched (``jacfwd``)
differentiates the rule called with every ``dims`` entry ``None``, as ``custom_vmap``
differentiates its rule with ``in_batched`` all False.
"""

LoweringRule = TypeVar("LoweringRule", bound=Callable[..., Any])
"""``(*operands, **params) -> result``, JAX-traceable; or, with ``raw=True``,
``(ctx, *mlir_values, **params) -> list of mlir values``."""


class RegisteredPrimitive(Protocol):
    """What a primitive found by name offers; ``jext stubgen`` adds its exact ``__call__``.

    :class:`jext.Primitive` satisfies it.  The rule decorators are left out: they belong
    to the author, who holds the object itself.
    """

    @property
    def name(self) -> str: ...

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def lowering_platforms(self) -> dict[str, str]: ...

    def rule_sources(self) -> dict[str, str]: ...

    def examples(self) -> list[Example]: ...
