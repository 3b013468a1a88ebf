"""Marker types that rules receive in place of JAX's internal ones."""

from __future__ import annotations

from typing import Any, final

import numpy as np

from jext._jax import AbstractValue, JaxSymbolicZero, aval_str

__all__ = ["LinearOperand", "SymbolicZero", "is_zero_tangent"]


class _AvalMarker:
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
        return f"{type(self).__name__}({aval_str(self.aval)})"


@final
class LinearOperand(_AvalMarker):
    """An operand a transpose rule solves for: its shape and dtype, but no value."""

    __slots__ = ()


@final
class SymbolicZero(JaxSymbolicZero):
    """A tangent known to be zero, passed to JVP rules registered with ``symbolic_zeros=True``.

    It is a ``jax.custom_derivatives.SymbolicZero`` too, so a rule written for
    ``jax.custom_jvp(..., symbolic_zeros=True)`` recognises it unchanged.  ``shape`` and
    ``dtype`` are those of the tangent (float0 for integer primals).
    """

    def __init__(self, aval: AbstractValue) -> None:
        super().__init__(aval)
        self._aval = aval

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._aval.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self._aval.dtype
        return dtype

    @property
    def ndim(self) -> int:
        return len(self._aval.shape)

    def __repr__(self) -> str:
        return f"SymbolicZero({aval_str(self._aval)})"


def is_zero_tangent(t: object) -> bool:
    """Whether a rule's tangent is a symbolic zero: jext's, or JAX's own (a rule adopted
    from ``jax.custom_jvp`` may return ``jax.custom_derivatives.SymbolicZero``)."""
    return isinstance(t, JaxSymbolicZero)
