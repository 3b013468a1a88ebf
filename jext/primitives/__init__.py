"""Defining JAX primitives from reference implementations: ``jext.primitive`` and its rules."""

from jext.primitives._example import CheckOptions as CheckOptions
from jext.primitives._example import Example as Example
from jext.primitives._markers import GradAccum as GradAccum
from jext.primitives._markers import LinearOperand as LinearOperand
from jext.primitives._markers import NullAccum as NullAccum
from jext.primitives._markers import SymbolicZero as SymbolicZero
from jext.primitives._primitive import CACHE_SIZE as CACHE_SIZE
from jext.primitives._primitive import LoweringInfo as LoweringInfo
from jext.primitives._primitive import Primitive as Primitive
from jext.primitives._primitive import defined_primitives as defined_primitives
from jext.primitives._primitive import primitive as primitive

__all__ = [
    "CACHE_SIZE",
    "CheckOptions",
    "Example",
    "GradAccum",
    "LinearOperand",
    "LoweringInfo",
    "NullAccum",
    "Primitive",
    "SymbolicZero",
    "defined_primitives",
    "primitive",
]
