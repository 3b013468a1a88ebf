"""SciPy's functions for JAX in scoped namespaces: ``jext.scipy.special``, ``stats``, ...

Each scope holds ``jax.scipy``'s own functions of that module and those plugins register
through ``jext_register_scipy_wrappers``; attribute access loads plugins on first use::

    from jext.scipy import special
    special.ellipk(0.5)
"""

import types

from jext.scipy._scopes import KNOWN_SCOPES as KNOWN_SCOPES
from jext.scipy._scopes import ScipyConflictError as ScipyConflictError
from jext.scipy._scopes import ScipyFunction as ScipyFunction
from jext.scipy._scopes import ScopeEntry as ScopeEntry
from jext.scipy._scopes import entries as entries
from jext.scipy._scopes import scope_module
from jext.scipy._wrapper import Domain as Domain
from jext.scipy._wrapper import EdgeCase as EdgeCase
from jext.scipy._wrapper import ScipyWrapper as ScipyWrapper

__all__ = [
    "KNOWN_SCOPES",
    "Domain",
    "EdgeCase",
    "ScipyConflictError",
    "ScipyFunction",
    "ScipyWrapper",
    "ScopeEntry",
    "entries",
]


def __getattr__(name: str) -> types.ModuleType:
    # jext.scipy.special (before it is imported) and scopes with no module file alike.
    return scope_module(name)
