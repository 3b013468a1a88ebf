"""``jext.Example``: example inputs a primitive declares, so that checks run without user code."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, final

__all__ = ["Example"]


@final
class Example:
    """Operands and static params for one call of a primitive: ``Example(x, y, beta=2.0)``.

    Operands are arrays (NumPy or JAX), Python scalars or pytrees of them, exactly as
    the primitive takes them; keyword arguments are its static params.  Pick points
    where the function is smooth (the JVP check compares with finite differences) and
    shapes small (every check compiles).
    """

    __slots__ = ("operands", "params")

    def __init__(self, *operands: Any, **params: Any) -> None:
        self.operands: Final[tuple[Any, ...]] = operands
        self.params: Final[Mapping[str, Any]] = params

    def __repr__(self) -> str:
        ops = ", ".join(_describe(x) for x in self.operands)
        kws = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"Example({ops}{kws})"


def _describe(x: Any) -> str:
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is not None and dtype is not None:
        return f"{dtype}{list(shape)}"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in x.items()) + "}"
    if isinstance(x, tuple | list):
        inner = ", ".join(_describe(v) for v in x)
        return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
    return repr(x)
