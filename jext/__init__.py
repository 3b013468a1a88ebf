"""jext: a typed plugin toolkit for extending JAX."""

# Private aliases: `dir(jext)` lists jext's names, not the modules this file uses.
import importlib as _importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING

from jext import _host

# The plugin registry answers the core's questions (which plugins, which RNG by name) once
# asked: importing it here would scan nothing but cost its own import time.
_host.install_on_first_use(lambda: _importlib.import_module("jext._registry"))

if TYPE_CHECKING:
    from jext import hooks as hooks
    from jext import random as random
    from jext._errors import DefinitionError as DefinitionError
    from jext._errors import DuplicateNameError as DuplicateNameError
    from jext._errors import JextError as JextError
    from jext._errors import LoweringError as LoweringError
    from jext._errors import PluginError as PluginError
    from jext._errors import RegistrationError as RegistrationError
    from jext._errors import RuleError as RuleError
    from jext._errors import StaticParamError as StaticParamError
    from jext._errors import TransposeError as TransposeError
    from jext._errors import UnknownNameError as UnknownNameError
    from jext._registrars import FfiTargetRegistrar as FfiTargetRegistrar
    from jext._registrars import LoweringRegistrar as LoweringRegistrar
    from jext._registrars import PrimitiveRegistrar as PrimitiveRegistrar
    from jext._registrars import RngImplRegistrar as RngImplRegistrar
    from jext._registrars import ScipyRegistrar as ScipyRegistrar
    from jext._registry import PluginInfo as PluginInfo
    from jext._registry import PluginWarning as PluginWarning
    from jext._registry import get_primitive as get_primitive
    from jext._registry import load_plugins as load_plugins
    from jext._registry import plugins as plugins
    from jext._registry import primitives as primitives
    from jext._registry import register_plugin as register_plugin
    from jext.hookspecs import hookimpl as hookimpl
    from jext.primitives import Example as Example
    from jext.primitives import GradAccum as GradAccum
    from jext.primitives import LinearOperand as LinearOperand
    from jext.primitives import NullAccum as NullAccum
    from jext.primitives import Primitive as Primitive
    from jext.primitives import SymbolicZero as SymbolicZero
    from jext.primitives import primitive as primitive

__version__ = "0.1.0"

__all__ = [
    "DefinitionError",
    "DuplicateNameError",
    "Example",
    "FfiTargetRegistrar",
    "GradAccum",
    "JextError",
    "LinearOperand",
    "LoweringError",
    "LoweringRegistrar",
    "NullAccum",
    "PluginError",
    "PluginInfo",
    "PluginWarning",
    "Primitive",
    "PrimitiveRegistrar",
    "RegistrationError",
    "RngImplRegistrar",
    "RuleError",
    "ScipyRegistrar",
    "StaticParamError",
    "SymbolicZero",
    "TransposeError",
    "UnknownNameError",
    "get_primitive",
    "hookimpl",
    "load_plugins",
    "plugins",
    "primitive",
    "primitives",
    "register_plugin",
]

# What `import jext` leaves for first use: the primitive core (which imports jax.extend,
# about 100 ms after `import jax`), pluggy and the registry.  Each name is imported from
# its module when first read (PEP 562), then kept in this module's namespace; no plugin is
# scanned until something reads the registry.  Type checkers see the imports above.
_LAZY: dict[str, str] = {
    "DefinitionError": "jext._errors",
    "DuplicateNameError": "jext._errors",
    "Example": "jext.primitives",
    "FfiTargetRegistrar": "jext._registrars",
    "GradAccum": "jext.primitives",
    "JextError": "jext._errors",
    "LinearOperand": "jext.primitives",
    "LoweringError": "jext._errors",
    "LoweringRegistrar": "jext._registrars",
    "NullAccum": "jext.primitives",
    "PluginError": "jext._errors",
    "PluginInfo": "jext._registry",
    "PluginWarning": "jext._registry",
    "Primitive": "jext.primitives",
    "PrimitiveRegistrar": "jext._registrars",
    "RegistrationError": "jext._errors",
    "RngImplRegistrar": "jext._registrars",
    "RuleError": "jext._errors",
    "ScipyRegistrar": "jext._registrars",
    "StaticParamError": "jext._errors",
    "SymbolicZero": "jext.primitives",
    "TransposeError": "jext._errors",
    "UnknownNameError": "jext._errors",
    "get_primitive": "jext._registry",
    "hookimpl": "jext.hookspecs",
    "hooks": "jext.hooks",
    "load_plugins": "jext._registry",
    "plugins": "jext._registry",
    "primitive": "jext.primitives",
    "primitives": "jext._registry",
    "random": "jext.random",
    "register_plugin": "jext._registry",
}

if not TYPE_CHECKING:  # so that type checkers flag a misspelled name instead of `object`

    def __getattr__(name: str) -> object:
        module = _LAZY.get(name)
        if module is None:
            # A submodule not imported yet (``jext._registry`` after ``import jext``).
            try:
                value = _importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as err:
                if err.name != f"{__name__}.{name}":
                    raise
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        elif module == f"{__name__}.{name}":
            value = _importlib.import_module(module)
        else:
            value = getattr(_importlib.import_module(module), name)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})


class _Facade(_types.ModuleType):
    """This module's type: ``jext.primitives`` stays the registry's function.

    Importing a subpackage binds it in its parent's namespace, and the primitive core is
    the subpackage ``jext.primitives``: its first import (at first use, see ``_LAZY``)
    must not shadow the function of that name.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name == "primitives" and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Facade
