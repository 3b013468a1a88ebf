"""The kinds of hook, one entry each: its spec, typed decorator, registrar, commit and listing.

Adding a kind of registration is one entry here plus its registrar (and its spec in
``jext/hookspecs.py``, the document plugin authors read): the loader runs the hooks in the
order of this table, and ``jext.hooks`` hands out each entry's typed decorator.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, NamedTuple, TypeVar, final

from jext import hookspecs
from jext._discovery import Plugin
from jext._registrars import (
    FfiTargetRegistrar,
    LoweringRegistrar,
    PrimitiveRegistrar,
    RngImplRegistrar,
    ScipyRegistrar,
    _Registrar,
)
from jext._store import Store

__all__ = ["KINDS", "HookKind", "HookKinds"]

R = TypeVar("R", bound=_Registrar[Any])


@final
@dataclass(frozen=True, slots=True)
class HookKind(Generic[R]):
    """One kind of hook and everything jext does with it."""

    spec: Callable[..., None]  # its hookspec in jext.hookspecs (the hook's name and contract)
    registrar: type[R]  # what each plugin's implementation receives, to stage with
    commit: Callable[[Store, Plugin, list[Any]], str | None]  # takes it all, or says why not
    listing: Callable[[Store], Mapping[Any, Any]]  # what the store holds of this kind

    @property
    def hook(self) -> str:
        return self.spec.__name__

    def implement(self, function: Callable[[R], None]) -> Callable[[R], None]:
        """Mark ``function`` as this hook's implementation: any name, its argument typed."""

        def hook(registrar: R) -> None:
            function(registrar)

        functools.update_wrapper(hook, function)
        # The wrapper's own signature is the hook's (pluggy reads argument names through
        # __wrapped__, which would give the function's own name for its argument).
        vars(hook).pop("__wrapped__")
        marked: Callable[[R], None] = hookspecs.hookimpl(specname=self.hook)(hook)
        return marked


class HookKinds(NamedTuple):
    """The kinds in the order the loader runs them (the phases of ``jext.hookspecs``)."""

    primitives: HookKind[PrimitiveRegistrar]
    ffi_targets: HookKind[FfiTargetRegistrar]
    lowerings: HookKind[LoweringRegistrar]
    rng_impls: HookKind[RngImplRegistrar]
    scipy_wrappers: HookKind[ScipyRegistrar]


KINDS: Final = HookKinds(
    primitives=HookKind(
        hookspecs.jext_register_primitives,
        PrimitiveRegistrar,
        Store.commit_primitives,
        lambda store: store.primitives,
    ),
    ffi_targets=HookKind(
        hookspecs.jext_register_ffi_targets,
        FfiTargetRegistrar,
        Store.commit_ffi_targets,
        lambda store: store.ffi_targets(),
    ),
    lowerings=HookKind(
        hookspecs.jext_register_lowerings,
        LoweringRegistrar,
        Store.commit_lowerings,
        lambda store: store.vendor_rules,
    ),
    rng_impls=HookKind(
        hookspecs.jext_register_rng_impls,
        RngImplRegistrar,
        Store.commit_rng_impls,
        lambda store: store.rng_impls,
    ),
    scipy_wrappers=HookKind(
        hookspecs.jext_register_scipy_wrappers,
        ScipyRegistrar,
        Store.commit_scipy,
        lambda store: store.scipy,
    ),
)
