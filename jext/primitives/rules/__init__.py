"""The rule kinds a primitive declares, one module each, and their table.

Adding a rule kind is a module here (its declaration, validation and composition into
the primitive's JAX rules) and a row in :data:`KINDS`; ``Primitive``'s ``def_*`` method
for it is a typed face that hands its arguments to the row's ``declare``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from jext.primitives.rules import (
    _abstract_eval,
    _batching,
    _impl,
    _jvp,
    _linearize,
    _lowering,
    _nondifferentiable,
    _sharding,
    _transpose,
    _vjp,
)
from jext.primitives.rules._kind import Declaring, RuleKind

__all__ = ["KINDS", "MODULES", "Declaring", "RuleKind"]

#: The modules of the rule kinds, one per kind (batching's three declarations are one).
MODULES: Final = (
    _abstract_eval,
    _impl,
    _jvp,
    _transpose,
    _vjp,
    _linearize,
    _batching,
    _sharding,
    _lowering,
    _nondifferentiable,
)

#: Every rule kind by name, in the order their JAX rules are registered.
KINDS: Final[Mapping[str, RuleKind]] = MappingProxyType(
    {kind.name: kind for module in MODULES for kind in module.KINDS}
)
