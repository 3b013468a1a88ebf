"""Lowering helpers: export for several platforms at once and see which rule each used."""

from jext.lowering._export import ALL_PLATFORMS as ALL_PLATFORMS
from jext.lowering._export import PlatformExport as PlatformExport
from jext.lowering._export import export as export

__all__ = ["ALL_PLATFORMS", "PlatformExport", "export"]
