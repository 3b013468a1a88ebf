"""jext: a typed plugin toolkit for extending JAX."""

from jext._errors import DefinitionError as DefinitionError
from jext._errors import DuplicateNameError as DuplicateNameError
from jext._errors import JextError as JextError
from jext._errors import LoweringError as LoweringError
from jext._errors import RuleError as RuleError
from jext._errors import StaticParamError as StaticParamError
from jext._errors import TransposeError as TransposeError
from jext._errors import UnknownNameError as UnknownNameError
from jext.primitives import LinearOperand as LinearOperand
from jext.primitives import Primitive as Primitive
from jext.primitives import SymbolicZero as SymbolicZero
from jext.primitives import primitive as primitive

__version__ = "0.1.0"

__all__ = [
    "DefinitionError",
    "DuplicateNameError",
    "JextError",
    "LinearOperand",
    "LoweringError",
    "Primitive",
    "RuleError",
    "StaticParamError",
    "SymbolicZero",
    "TransposeError",
    "UnknownNameError",
    "primitive",
]
