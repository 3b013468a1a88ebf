"""Multi-threaded C++ ``random_bits`` for jext's bundled RNGs on CPU, as XLA FFI targets.

jext's core loads this package when it is installed (it is an optional core plugin, see
docs/rng.md): :func:`register_ffi_targets` registers one FFI target per generator,
``jext_rng_<name>_bits`` on cpu, and the cpu rule of each generator's ``random_bits``
primitive calls it instead of the XLA path.  The streams are bit-identical to the XLA
path's.  ``JEXT_RNG_THREADS`` caps the threads a call uses (default: the cores this
process may run on); ``JEXT_RNG_NATIVE=0`` makes jext use the XLA path instead.
"""

from __future__ import annotations

import importlib
from typing import Final

import jext

__all__ = ["GENERATORS", "max_threads", "register_ffi_targets", "target_name"]

GENERATORS: Final = ("chacha20", "philox4x64", "threefry4x64")
"""The bundled generators this package has handlers for."""


def target_name(generator: str) -> str:
    """The cpu FFI target of ``generator``'s ``random_bits``: ``jext_rng_<name>_bits``."""
    return f"jext_rng_{generator}_bits"


def max_threads() -> int:
    """The threads a large call uses: the available cores, capped by ``JEXT_RNG_THREADS``."""
    count: int = importlib.import_module("jext_rng_native._native_cpu").max_threads()
    return count


@jext.hooks.register_ffi_targets
def register_ffi_targets(registry: jext.FfiTargetRegistrar) -> None:
    # Imported here, not at import time: a broken build fails this plugin in one line.
    native = importlib.import_module("jext_rng_native._native_cpu")
    # Built against a newer FFI API than the installed jaxlib's (XLA would refuse the
    # handlers and stop JAX's CPU backend): fail here, and jext's RNGs keep the XLA path.
    # (A build from before ffi_api_version() existed cannot say: it is registered as before.)
    if hasattr(native, "ffi_api_version"):
        built = native.ffi_api_version()
        registry.require_ffi_api(built, fallback="jext's RNGs use the XLA path")
    handlers = native.handlers()
    for generator in GENERATORS:
        registry.add(target_name(generator), handlers[target_name(generator)], platform="cpu")
