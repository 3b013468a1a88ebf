"""The read side of the plugin registry: each view loads what it needs, then reads the store."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from jext import _host
from jext._discovery import CORE_NAMESPACE, PluginStatus, namespaces_of
from jext._errors import UnknownNameError
from jext._hookkinds import KINDS
from jext._host import Owned, close_matches
from jext._registrars import FfiTarget
from jext._store import Store
from jext.primitives._primitive import Primitive

__all__ = ["PluginInfo", "Views"]


@dataclass(frozen=True, slots=True)
class PluginInfo:
    """One plugin as ``jext.plugins()`` and ``jext list`` report it."""

    name: str
    distribution: str | None  # None for a plugin registered in code
    version: str | None
    status: PluginStatus
    error: str | None = None
    notes: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()  # the namespaces it owns
    core: bool = False  # part of jext itself: loaded whatever the switches say


class Views(abc.ABC):
    """What the registry shows: primitives, RNGs, FFI targets, wrappers, plugins, problems.

    Also the read side of :class:`jext._host.Host` (``primitive``, ``rng_impl``, ...),
    which the core asks through.  A subclass says how to load.
    """

    @property
    @abc.abstractmethod
    def store(self) -> Store:
        """The store as it stands (replaced whole when a load is rolled back)."""

    @abc.abstractmethod
    def load(self, *, report: bool = True) -> None:
        """Load every plugin once, then report what failed."""

    @abc.abstractmethod
    def load_core(self, *, report: bool) -> None:
        """Load jext's core plugins only (never waiting for another plugin)."""

    @abc.abstractmethod
    def load_quietly(self) -> None:
        """Load every plugin once, reporting nothing (for views that show failures)."""

    def primitives(self) -> Mapping[str, Primitive[..., Any]]:
        self.load()
        store = self.store
        return MappingProxyType({n: store.primitive(n) for n in sorted(store.primitives)})

    def primitive_owners(self) -> Mapping[str, str]:
        self.load()
        return MappingProxyType(dict(sorted(self.store.primitives.items())))

    def get_primitive(self, name: str) -> Primitive[..., Any]:
        self.load()
        if name not in self.store.primitives:
            raise UnknownNameError(
                f"no registered primitive is named {name!r}.{self.broken_owner_hint(name)}"
                f"{close_matches(name, self.store.primitives)} See `jext list` for what is "
                "installed."
            )
        return self.store.primitive(name)

    def primitive(self, name: str) -> Primitive[..., Any]:
        """:class:`jext._host.Host`: the registered primitive ``name`` (unpickling)."""
        return self.get_primitive(name)

    def broken_owner_hint(self, name: str) -> str:
        """`` Its namespace's owner, plugin 'x' (...), failed: why.`` or an empty string."""
        owner = self.store.owner_of(name)
        entry = self.store.plugins.get(owner[1]) if owner is not None else None
        if entry is None or entry.status == "loaded":
            return ""
        return f" Its namespace's owner, {entry.label()}, is {entry.status}: {entry.error}."

    def rng_impls(self) -> Mapping[str, Owned[Any]]:
        self.load()
        return MappingProxyType(dict(sorted(KINDS.rng_impls.listing(self.store).items())))

    def rng_impl_names(self) -> list[str]:
        """:class:`jext._host.Host`: every registered RNG implementation's name, sorted."""
        return list(self.rng_impls())

    def rng_impl(self, name: str) -> Any:
        """The registered RNG implementation ``name``; :class:`jext.UnknownNameError` if none.

        A name in jext's own namespace needs only jext's core: no plugin is loaded for it,
        so the bundled generators work whatever the plugin switches say, and never wait
        for another plugin's import.
        """
        owned = self.owned_rng_impl(name)
        if owned is None:
            names = self.rng_impl_names()
            raise UnknownNameError(
                f"no RNG implementation is named {name!r}.{self.broken_owner_hint(name)}"
                f"{close_matches(name, names)} Registered: {names}"
            )
        return owned.item

    def owned_rng_impl(self, name: str) -> Owned[Any] | None:
        """The RNG implementation ``name`` and its plugin, or None."""
        if namespaces_of(name)[-1:] == [CORE_NAMESPACE]:
            self.load_core(report=False)
            found = self.store.rng_impls.get(name)
            if found is not None and self.store.plugins[found.plugin].core:
                return found
        self.load()
        return self.store.rng_impls.get(name)

    def core_ffi_target(self, name: str, platform: str) -> bool:
        """Whether a core plugin registered the FFI target ``name`` on ``platform``.

        Loads only jext's core (as :meth:`rng_impl` does for core names): jext's own
        primitives use native kernels without importing any other plugin, and never one
        that a third-party plugin registered under the same name.  A core plugin that
        failed (jext-rng-native built for a newer FFI API, say) is reported here as by any
        reader: its users fall back to the XLA path, and must hear why.
        """
        self.load_core(report=True)
        owned = _host.FFI_TARGETS.get((name, platform))
        entry = None if owned is None else self.store.plugins.get(owned.plugin)
        return entry is not None and entry.core

    def ffi_targets(self) -> Mapping[tuple[str, str], Owned[FfiTarget]]:
        """Every registered FFI handler by ``(target name, platform)``, and its plugin."""
        self.load()
        return MappingProxyType(dict(sorted(KINDS.ffi_targets.listing(self.store).items())))

    def scipy_wrappers(self) -> Mapping[tuple[str, str], Sequence[Owned[Any]]]:
        self.load()
        return MappingProxyType({k: tuple(v) for k, v in sorted(self.store.scipy.items())})

    def plugins(self) -> list[PluginInfo]:
        """Every plugin with its status; failures are data here, not warnings or errors."""
        self.load_quietly()
        notes = {k: list(v) for k, v in self.store.notes.items()}
        for i, low in enumerate(self.store.lowerings):
            if i not in self.store.applied_lowerings:
                notes.setdefault(low.plugin, []).append(
                    f"unused lowering for {low.primitive!r} on "
                    f"{low.platform or 'every platform'}: no loaded plugin defines it"
                )
        return [
            PluginInfo(
                p.name,
                *p.dist_info(),
                p.status,
                p.error,
                tuple(notes.get(p.name, ())),
                namespaces=p.owned,
                core=p.core,
            )
            for p in sorted(self.store.plugins.values(), key=lambda p: p.name)
        ]

    def problems(self) -> list[str]:
        """Every failure, one line each (as warned)."""
        self.load_quietly()
        return list(self.store.problems)
