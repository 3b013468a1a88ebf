"""jext's core plugin ``jext-rng``: the bundled RNGs, registered through the plugin hook.

The registry loads it whatever the plugin switches say, with no entry point, before every
other plugin; it owns the namespace ``jext``.  The implementations themselves are core
(``jext.rng_impls``), which never imports the plugin layer this module belongs to.
"""

from __future__ import annotations

from jext._registrars import RngImplRegistrar
from jext.hookspecs import hookimpl
from jext.rng_impls._bundled import CHACHA20, PHILOX4X64, THREEFRY4X64

__all__ = ["jext_register_rng_impls"]


@hookimpl
def jext_register_rng_impls(registrar: RngImplRegistrar) -> None:
    for impl in (PHILOX4X64, CHACHA20, THREEFRY4X64):
        registrar.add(impl)
