"""jext: a typed plugin toolkit for extending JAX."""

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
from jext.primitives import LinearOperand as LinearOperand
from jext.primitives import Primitive as Primitive
from jext.primitives import SymbolicZero as SymbolicZero
from jext.primitives import primitive as primitive

__version__ = "0.1.0"

__all__ = [
    "DefinitionError",
    "DuplicateNameError",
    "Example",
    "FfiTargetRegistrar",
    "JextError",
    "LinearOperand",
    "LoweringError",
    "LoweringRegistrar",
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
