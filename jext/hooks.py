"""Typed hook decorators: a misspelled hook or a wrong signature is a type error, not a surprise.

pluggy's ``@jext.hookimpl`` matches hooks by function name and checks signatures only at
load time.  These decorators name the hook themselves, so the function may be called
anything, and type checkers verify what it takes::

    @jext.hooks.register_primitives
    def provide(registrar: jext.PrimitiveRegistrar) -> None:
        registrar.add(softplus)

Each is its hook kind's entry in jext's one table of hook kinds.
"""

from __future__ import annotations

from typing import Final

from jext._hookkinds import KINDS

__all__ = [
    "register_ffi_targets",
    "register_lowerings",
    "register_primitives",
    "register_rng_impls",
    "register_scipy_wrappers",
]

register_primitives: Final = KINDS.primitives.implement
"""Implement ``jext_register_primitives``: ``function(registrar)`` adds primitives."""
register_ffi_targets: Final = KINDS.ffi_targets.implement
"""Implement ``jext_register_ffi_targets``: ``function(registrar)`` adds FFI handlers."""
register_lowerings: Final = KINDS.lowerings.implement
"""Implement ``jext_register_lowerings``: ``function(registrar)`` adds lowering rules."""
register_rng_impls: Final = KINDS.rng_impls.implement
"""Implement ``jext_register_rng_impls``: ``function(registrar)`` adds RNG implementations."""
register_scipy_wrappers: Final = KINDS.scipy_wrappers.implement
"""Implement ``jext_register_scipy_wrappers``: ``function(registrar)`` adds SciPy wrappers."""
