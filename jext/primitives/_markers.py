"""What rules receive in place of JAX's internal values: linear operands, zero tangents."""

from __future__ import annotations

from typing import Any, final

import numpy as np

from jext._jax import AbstractValue, JaxSymbolicZero, aval_str

__all__ = ["GradAccum", "LinearOperand", "NullAccum", "SymbolicZero", "is_zero_tangent"]


@final
class LinearOperand:
    """An operand a transpose rule solves for: its shape and dtype, but no value."""

    __slots__ = ("aval",)

    def __init__(self, aval: AbstractValue) -> None:
        self.aval = aval

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.aval.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self.aval.dtype
        return dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    def __repr__(self) -> str:
        return f"LinearOperand({aval_str(self.aval)})"


@final
class GradAccum:
    """Where an accumulating backward rule (``def_vjp(..., accumulate=True)``) puts the
    cotangent of one operand leaf: each :meth:`accum` adds to it, as hijax's accumulators
    do.  ``aval`` is the cotangent's shape and dtype."""

    __slots__ = ("aval", "total")

    def __init__(self, aval: AbstractValue) -> None:
        self.aval = aval
        self.total: Any = None

    def accum(self, value: Any) -> None:
        """Add ``value`` (shaped like the operand leaf) to the cotangent."""
        self.total = value if self.total is None else self.total + value

    def __repr__(self) -> str:
        return f"GradAccum({aval_str(self.aval)})"


@final
class NullAccum:
    """The accumulator of an operand leaf that needs no cotangent (not differentiated):
    :meth:`accum` ignores its value, so a backward rule may test for it and skip the work."""

    __slots__ = ("aval",)

    def __init__(self, aval: AbstractValue) -> None:
        self.aval = aval

    def accum(self, value: Any) -> None:
        """Ignore ``value``."""

    def __repr__(self) -> str:
        return f"NullAccum({aval_str(self.aval)})"


#: A tangent known to be zero, passed to JVP rules registered with ``symbolic_zeros=True``:
#: JAX's own ``jax.custom_derivatives.SymbolicZero``, so a rule written for
#: ``jax.custom_jvp(..., symbolic_zeros=True)`` (``isinstance`` or ``type(t) is``) runs
#: unchanged.  Its ``shape`` and ``dtype`` are the tangent's (float0 for integer primals).
SymbolicZero = JaxSymbolicZero


def is_zero_tangent(t: object) -> bool:
    """Whether a rule's tangent is a symbolic zero (:data:`SymbolicZero`)."""
    return isinstance(t, JaxSymbolicZero)
