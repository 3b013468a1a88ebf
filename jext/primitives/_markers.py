"""Marker types that rules receive in place of JAX's internal ones."""

from __future__ import annotations

from typing import Any, final

import numpy as np

from jext._jax import AbstractValue, aval_str

__all__ = ["LinearOperand", "SymbolicZero"]


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
class SymbolicZero(_AvalMarker):
    """A tangent known to be zero, passed to JVP rules registered with ``symbolic_zeros=True``.

    ``shape`` and ``dtype`` are those of the tangent (float0 for integer primals).
    """

    __slots__ = ()
