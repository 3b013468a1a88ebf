"""Typed hook decorators: a misspelled hook or a wrong signature is a type error, not a surprise.

pluggy's ``@jext.hookimpl`` matches hooks by function name and checks signatures only at
load time.  These decorators name the hook themselves, so the function may be called
anything, and type checkers verify what it takes::

    @jext.hooks.register_primitives
    def provide(registry: jext.PrimitiveRegistrar) -> None:
        registry.add(softplus)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from jext._registrars import (
    FfiTargetRegistrar,
    LoweringRegistrar,
    PrimitiveRegistrar,
    RngImplRegistrar,
    ScipyRegistrar,
)
from jext.hookspecs import hookimpl

__all__ = [
    "register_ffi_targets",
    "register_lowerings",
    "register_primitives",
    "register_rng_impls",
    "register_scipy_wrappers",
]

R = TypeVar(
    "R",
    PrimitiveRegistrar,
    FfiTargetRegistrar,
    LoweringRegistrar,
    RngImplRegistrar,
    ScipyRegistrar,
)


def _mark(hook: str, function: Callable[[R], None]) -> Callable[[R], None]:
    # pluggy passes the registrar by the hookspec's argument name, "registry".
    def registry_hook(registry: R) -> None:
        function(registry)

    functools.update_wrapper(registry_hook, function)
    marked: Callable[[R], None] = hookimpl(specname=hook)(registry_hook)
    return marked


def register_primitives(
    function: Callable[[PrimitiveRegistrar], None],
) -> Callable[[PrimitiveRegistrar], None]:
    """Implement ``jext_register_primitives``: ``function(registry)`` adds primitives."""
    return _mark("jext_register_primitives", function)


def register_ffi_targets(
    function: Callable[[FfiTargetRegistrar], None],
) -> Callable[[FfiTargetRegistrar], None]:
    """Implement ``jext_register_ffi_targets``: ``function(registry)`` adds FFI handlers."""
    return _mark("jext_register_ffi_targets", function)


def register_lowerings(
    function: Callable[[LoweringRegistrar], None],
) -> Callable[[LoweringRegistrar], None]:
    """Implement ``jext_register_lowerings``: ``function(registry)`` adds lowering rules."""
    return _mark("jext_register_lowerings", function)


def register_rng_impls(
    function: Callable[[RngImplRegistrar], None],
) -> Callable[[RngImplRegistrar], None]:
    """Implement ``jext_register_rng_impls``: ``function(registry)`` adds RNG implementations."""
    return _mark("jext_register_rng_impls", function)


def register_scipy_wrappers(
    function: Callable[[ScipyRegistrar], None],
) -> Callable[[ScipyRegistrar], None]:
    """Implement ``jext_register_scipy_wrappers``: ``function(registry)`` adds SciPy wrappers."""
    return _mark("jext_register_scipy_wrappers", function)
