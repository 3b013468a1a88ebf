"""Lowering helpers: native (XLA FFI) rules, and export for several platforms at once."""

from jext.lowering._export import ALL_PLATFORMS as ALL_PLATFORMS
from jext.lowering._export import PlatformExport as PlatformExport
from jext.lowering._export import export as export
from jext.lowering._ffi import AttrType as AttrType
from jext.lowering._ffi import ComputedAttr as ComputedAttr
from jext.lowering._ffi import VmapMethod as VmapMethod
from jext.lowering._ffi import ffi_rule as ffi_rule

__all__ = [
    "ALL_PLATFORMS",
    "AttrType",
    "ComputedAttr",
    "PlatformExport",
    "VmapMethod",
    "export",
    "ffi_rule",
]
