"""Process-wide state jext's core shares with its plugin layer, and what the core asks of it.

jext's core (``jext.primitives``, ``jext.lowering``, ``jext.rng_impls``, ``jext.random``)
never imports the plugin registry.  Where it needs what only plugins know (load them
before a primitive's first bind, find an RNG implementation or a native kernel by
name, decide who may redefine a primitive name) it asks the :class:`Host` installed
here.  ``jext._registry`` installs itself when imported; ``import jext`` names it as the
host to import on the first question, so that importing jext stays cheap; a process
that imports jext's core alone has a host without plugins.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar

from jext._errors import UnknownNameError

if TYPE_CHECKING:
    from jext.primitives._primitive import Primitive
    from jext.rng_impls._impl import RngImpl

__all__ = [
    "DEFINITIONS",
    "DEFINITIONS_LOCK",
    "ENV_RNG_NATIVE",
    "FFI_RULE_TARGETS",
    "FFI_TARGETS",
    "KNOWN_FFI_HANDLERS",
    "Host",
    "Owned",
    "close_matches",
    "env_flag",
    "host",
    "install",
    "install_on_first_use",
    "rng_native_wanted",
]

T = TypeVar("T")

ENV_RNG_NATIVE: Final = "JEXT_RNG_NATIVE"
"""Set to 0: the bundled RNGs use their XLA path on CPU, not jext-rng-native's kernels."""


@dataclass(frozen=True, slots=True)
class Owned(Generic[T]):
    """A registered item and the plugin that owns it."""

    item: T
    plugin: str


# The one table of primitive names: every jext.Primitive defined in this process.  A
# registered primitive is the entry here; the registry records only who owns it.
DEFINITIONS: Final[dict[str, Primitive[..., Any]]] = {}
DEFINITIONS_LOCK: Final = threading.Lock()

# Every FFI handler a plugin handed to XLA, by (target name, platform).  XLA cannot
# forget a handler, so neither does this table: a rolled-back load keeps it.
FFI_TARGETS: Final[dict[tuple[str, str], Owned[Any]]] = {}
# (target, platform) of handlers registered with jax.ffi directly (not through jext),
# found by compiling a probe; a miss is not cached, the handler may come later.
KNOWN_FFI_HANDLERS: Final[set[tuple[str, str]]] = set()
# The target names of every jext.lowering.ffi_rule made in this process.
FFI_RULE_TARGETS: Final[set[str]] = set()


class Host(Protocol):
    """What jext's core asks of the plugin layer; each call may load plugins."""

    def load_plugins(self) -> None:
        """Return once every plugin is loaded (before a primitive's first bind).

        On another thread's load in progress it waits for it to finish; on the loading
        thread itself (a plugin calling a primitive while it is imported) it returns at
        once.  Never raises for a broken plugin: the registry's readers report those.
        """

    def primitive(self, name: str) -> Primitive[..., Any]:
        """The registered primitive ``name``; :class:`jext.UnknownNameError` if none."""

    def may_replace(self, name: str, known_module: str, new_module: str) -> bool:
        """Whether a definition of ``name`` in ``new_module`` replaces ``known_module``'s."""

    def core_ffi_target(self, name: str, platform: str) -> bool:
        """Whether jext's core registered the FFI target ``name`` on ``platform``.

        Loads jext's core only: jext's own primitives never wait for another plugin.
        """

    def rng_impl(self, name: str) -> RngImpl:
        """The registered RNG implementation ``name``; :class:`jext.UnknownNameError` if none.

        A name in jext's namespace (``jext.philox4x64``) loads jext's core only.
        """

    def rng_impl_names(self) -> list[str]:
        """Every registered RNG implementation's name, sorted."""


class _NoPlugins:
    """The host of a process whose plugin layer is not imported: core names only."""

    def load_plugins(self) -> None:
        return

    def primitive(self, name: str) -> Primitive[..., Any]:
        with DEFINITIONS_LOCK:
            found = DEFINITIONS.get(name)
        if found is None:
            raise UnknownNameError(f"no primitive is named {name!r} (no plugins are loaded)")
        return found

    def may_replace(self, name: str, known_module: str, new_module: str) -> bool:
        return False

    def core_ffi_target(self, name: str, platform: str) -> bool:
        return False

    def rng_impl(self, name: str) -> RngImpl:
        raise UnknownNameError(f"no RNG implementation is named {name!r} (no plugins are loaded)")

    def rng_impl_names(self) -> list[str]:
        return []


_HOST: list[Host] = [_NoPlugins()]
_PENDING: list[Callable[[], object]] = []
_PENDING_LOCK: Final = threading.Lock()


def host() -> Host:
    """The installed host: the plugin registry once ``jext`` is imported (it is imported
    on the first question, see :func:`install_on_first_use`)."""
    if _PENDING:
        with _PENDING_LOCK:
            pending = _PENDING[:]
            _PENDING.clear()
        for install_host in pending:
            install_host()
    return _HOST[0]


def install_on_first_use(importer: Callable[[], object]) -> None:
    """Call ``importer`` (which installs the host) when the core first asks the host."""
    with _PENDING_LOCK:
        _PENDING.append(importer)


def install(implementation: Host) -> None:
    """Make ``implementation`` the host the core asks (``jext._registry`` does, once)."""
    _HOST[0] = implementation


def close_matches(name: str, candidates: Iterable[str]) -> str:
    """`` Did you mean 'a', 'b'?`` for the candidates close to ``name``, or an empty string."""
    matches = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.8)
    return f" Did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""


def env_flag(value: str | None) -> bool:
    """Whether an environment switch's ``value`` turns it on (unset, ``0``, ``no``: off)."""
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


def rng_native_wanted() -> bool:
    """False where ``JEXT_RNG_NATIVE`` is 0 (read on each call, so also at lowering time)."""
    value = os.environ.get(ENV_RNG_NATIVE, "").strip()
    return not value or env_flag(value)
