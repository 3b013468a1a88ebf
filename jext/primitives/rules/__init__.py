"""The rule kinds a primitive declares, one module each, and their table.

Adding a rule kind touches its module here and a row in :data:`MODULES`; nothing else
reads a list of the kinds.  The module's ``KINDS`` rows (``RuleKind``) say all of it:

- the fields it keeps in the rules record (``RuleKind.fields``; ``Rules.values`` holds
  them by name, ``Rules.get`` reads them) and ``declare``, which validates the author's
  declaration into them;
- ``register``/``at_freeze``: the JAX rule it backs; ``twin``: its rule on a closure twin;
- ``source``/``derived``: its entry in ``Primitive.rule_sources()`` and whether it counts
  as the author's (``Rules.custom_kinds()``);
- ``derivative``: for a derivative rule kind, its place in each differentiation mode's
  preference (:data:`PREFERENCE`) and the JVP it gives.

What else adding a kind touches is the public face: ``Primitive``'s ``def_<name>`` method,
with its own typed signature and docstring, handing its arguments to the row's
``declare`` (``Primitive._declare``), and the stubs; and, where the core reads the kind's
fields, a typed property on ``Rules`` (``Rules.get`` serves the kind's own module).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType, ModuleType
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
from jext.primitives.rules._kind import Declaring, Derivative, RuleKind

__all__ = [
    "KINDS",
    "MODULES",
    "PREFERENCE",
    "Declaring",
    "Derivative",
    "RuleKind",
    "preference",
    "table",
]

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


def table(modules: Iterable[ModuleType]) -> Mapping[str, RuleKind]:
    """The rows (``KINDS``) of ``modules`` by name, in order."""
    return MappingProxyType({kind.name: kind for module in modules for kind in module.KINDS})


#: Every rule kind by name, in the order their JAX rules are registered.
KINDS: Final = table(MODULES)


def preference(kinds: Mapping[str, RuleKind]) -> Mapping[str, tuple[str, ...]]:
    """For each differentiation mode (``_ad.Mode``), the derivative rule kinds of ``kinds``
    in the order it prefers them (their ``Derivative.rank``)."""
    ranks = {k.name: k.derivative.rank for k in kinds.values() if k.derivative is not None}
    return MappingProxyType(
        {
            mode: tuple(sorted(ranks, key=lambda name: ranks[name][mode]))
            for mode in ("jvp", "linearize", "vjp")
        }
    )


#: The mode preference of :data:`KINDS`: a hijax primitive's ``jvp``, ``lin``/``linearized``
#: and ``vjp_fwd``/``vjp_bwd``, each for its own mode.
PREFERENCE: Final = preference(KINDS)
