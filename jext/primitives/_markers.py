"""What rules receive in place of JAX's internal values: linear operands, zero tangents."""

from __future__ import annotations

from typing import Any, final

import numpy as np

from jext._jax import AbstractValue, JaxSymbolicZero, aval_str

__all__ = ["LinearOperand", "SymbolicZero", "is_zero_tangent"]


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


#: A tangent known to be zero, passed to JVP rules registered with ``symbolic_zeros=True``:
#: JAX's own ``jax.custom_derivatives.SymbolicZero``, so a rule written for
#: ``jax.custom_jvp(..., symbolic_zeros=True)`` (``isinstance`` or ``type(t) is``) runs
#: unchanged.  Its ``shape`` and ``dtype`` are the tangent's (float0 for integer primals).
SymbolicZero = JaxSymbolicZero


def is_zero_tangent(t: object) -> bool:
    """Whether a rule's tangent is a symbolic zero (:data:`SymbolicZero`)."""
    return isinstance(t, JaxSymbolicZero)
