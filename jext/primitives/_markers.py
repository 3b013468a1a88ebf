"""Marker types that rules receive in place of JAX's internal ones."""

from __future__ import annotations

from typing import Any, final

import numpy as np

from jext._jax import AbstractValue, JaxSymbolicZero, aval_str

__all__ = ["LinearOperand", "SymbolicZero", "is_zero_tangent"]


class _Shaped:
    """``shape``, ``dtype``, ``ndim`` and the repr of a marker, read from ``_shaped``."""

    __slots__ = ()
    _shaped: AbstractValue

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._shaped.shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        dtype: np.dtype[Any] = self._shaped.dtype
        return dtype

    @property
    def ndim(self) -> int:
        return len(self._shaped.shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({aval_str(self._shaped)})"


@final
class LinearOperand(_Shaped):
    """An operand a transpose rule solves for: its shape and dtype, but no value."""

    __slots__ = ("_shaped", "aval")

    def __init__(self, aval: AbstractValue) -> None:
        self.aval = aval
        self._shaped = aval


@final
class SymbolicZero(_Shaped, JaxSymbolicZero):
    """A tangent known to be zero, passed to JVP rules registered with ``symbolic_zeros=True``.

    It is a ``jax.custom_derivatives.SymbolicZero`` too, so a rule written for
    ``jax.custom_jvp(..., symbolic_zeros=True)`` recognises it unchanged.  ``shape`` and
    ``dtype`` are those of the tangent (float0 for integer primals).
    """

    def __init__(self, aval: AbstractValue) -> None:
        super().__init__(aval)
        self._shaped = aval


def is_zero_tangent(t: object) -> bool:
    """Whether a rule's tangent is a symbolic zero: jext's, or JAX's own (a rule adopted
    from ``jax.custom_jvp`` may return ``jax.custom_derivatives.SymbolicZero``)."""
    return isinstance(t, JaxSymbolicZero)
