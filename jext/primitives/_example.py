"""``jext.Example``: example inputs a primitive declares, so that checks run without user code,
and what a primitive or an example tells the checks (``CheckOptions``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, final

import jax.numpy as jnp
import numpy as np
from numpy.typing import DTypeLike

from jext._errors import DefinitionError

__all__ = ["TOLERANCE_CHECKS", "CheckOptions", "Example", "checked_factory", "examples_of"]

TOLERANCE_CHECKS: Final = ("jit", "jvp", "transpose", "batching", "lowering", "higher_order")
"""The checks whose tolerances a primitive or an example may declare."""


@final
@dataclass(frozen=True, slots=True)
class CheckOptions:
    """What a primitive (``def_check_options``) or one example (``Example.with_options``)
    tells the checks: the floating-point dtypes it supports (None: every one) and
    ``(rtol, atol)`` per check replacing the check's own tolerances."""

    dtypes: frozenset[np.dtype[Any]] | None = None
    tolerances: Mapping[str, tuple[float, float]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @classmethod
    def make(
        cls,
        where: str,
        *,
        dtypes: Iterable[DTypeLike] | None = None,
        tolerances: Mapping[str, tuple[float, float]] | None = None,
    ) -> CheckOptions:
        """Validated options; DefinitionError (naming ``where``) for a dtype that is not a
        floating-point one, an unknown check or a tolerance that is not two numbers >= 0."""
        kinds: frozenset[np.dtype[Any]] | None = None
        if dtypes is not None:
            if isinstance(dtypes, str | type | np.dtype):
                dtypes = (dtypes,)
            kinds = frozenset(np.dtype(d) for d in dtypes)
            wrong = sorted(d.name for d in kinds if not jnp.issubdtype(d, jnp.inexact))
            if wrong or not kinds:
                raise DefinitionError(
                    f"{where}: dtypes must name floating-point dtypes (e.g. [np.float32]), "
                    f"got {wrong or 'none'}"
                )
        checked: dict[str, tuple[float, float]] = {}
        for check, tol in (tolerances or {}).items():
            if check not in TOLERANCE_CHECKS:
                raise DefinitionError(
                    f"{where}: no check {check!r} takes a tolerance; expected one of "
                    f"{list(TOLERANCE_CHECKS)}"
                )
            pair = tuple(tol) if isinstance(tol, tuple | list) else ()
            if len(pair) != 2 or not all(_non_negative(v) for v in pair):
                raise DefinitionError(
                    f"{where}: the tolerance of {check!r} must be (rtol, atol), two numbers "
                    f">= 0, got {tol!r}"
                )
            checked[check] = (float(pair[0]), float(pair[1]))
        return cls(kinds, MappingProxyType(checked))

    def merged(self, over: CheckOptions) -> CheckOptions:
        """These options with ``over``'s declarations in their place (tolerances per check)."""
        dtypes = self.dtypes if over.dtypes is None else over.dtypes
        return CheckOptions(dtypes, MappingProxyType({**self.tolerances, **over.tolerances}))


def _non_negative(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < math.inf


_NO_OPTIONS: Final = CheckOptions()


@final
class Example:
    """Operands and static params for one call of a primitive: ``Example(x, y, beta=2.0)``.

    Operands are arrays (NumPy or JAX), Python scalars or pytrees of them, exactly as
    the primitive takes them; keyword arguments are its static params.  Pick points
    where the function is smooth (the JVP check compares with finite differences) and
    shapes small (every check compiles).  :meth:`with_options` tells the checks what
    this example's call supports.
    """

    __slots__ = ("operands", "options", "params")

    def __init__(self, *operands: Any, **params: Any) -> None:
        self.operands: Final[tuple[Any, ...]] = operands
        self.params: Final[Mapping[str, Any]] = params
        self.options: CheckOptions = _NO_OPTIONS

    def with_options(
        self,
        *,
        dtypes: Iterable[DTypeLike] | None = None,
        tolerances: Mapping[str, tuple[float, float]] | None = None,
    ) -> Example:
        """This example, with what the checks should know about its call (each replaces
        what the primitive declares with ``def_check_options``):

        - ``dtypes``: the floating-point dtypes the call supports; the ``jvp`` and
          ``higher_order`` checks skip the others (float32, float64) and say so;
        - ``tolerances``: ``(rtol, atol)`` per check name (``"jit"``, ``"jvp"``,
          ``"transpose"``, ``"batching"``, ``"lowering"``, ``"higher_order"``), in place
          of the check's own, in every dtype it runs in.

        Raises :class:`jext.DefinitionError` for a dtype that is not floating-point, an
        unknown check, or a tolerance that is not two numbers >= 0.

        Example::

            jext.Example(x).with_options(dtypes=[np.float32], tolerances={"jvp": (1e-3, 1e-5)})
        """
        out = Example(*self.operands, **self.params)
        out.options = self.options.merged(
            CheckOptions.make(repr(self), dtypes=dtypes, tolerances=tolerances)
        )
        return out

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


def checked_factory(
    name: str, factory: Callable[[], Iterable[Example]]
) -> Callable[[], Iterable[Example]]:
    """``factory`` for ``def_examples`` of primitive ``name``; DefinitionError if not callable."""
    if not callable(factory):
        raise DefinitionError(
            f"primitive {name!r}: def_examples takes a function returning "
            f"jext.Example objects, got {factory!r}"
        )
    return factory


def examples_of(name: str, factory: Callable[[], Iterable[Example]]) -> list[Example]:
    """The examples ``factory`` makes; DefinitionError for anything else it gives."""
    examples = list(factory())
    for ex in examples:
        if not isinstance(ex, Example):
            raise DefinitionError(
                f"examples of primitive {name!r} must be jext.Example objects, got {ex!r}"
            )
    return examples
