"""The plugin registry: loads plugins once, thread-safely and all-or-nothing, and reads them.

Its jobs live in their own modules: discovery and namespace claims (``_discovery``),
reading and calling hooks (``_hookcall``), the store of what plugins registered and its
commits (``_store``), one table of hook kinds (``_hookkinds``), the read-side views
(``_views``).  Here: the loader (who loads, who waits, what a load that did not finish
leaves) and the process-wide registry.
"""

from __future__ import annotations

import os
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from jext import _host, hookspecs
from jext._discovery import (
    CORE_NAMESPACE,
    CORE_PLUGINS,
    ENV_DISABLE_AUTOLOAD,
    ENV_DISABLE_PLUGINS,
    ENV_PLUGINS,
    NAMESPACE_GROUP,
    OPTIONAL_CORE_PLUGINS,
    Discovery,
    Plugin,
    PluginStatus,
    claimed_namespaces,
    default_namespace,
    discover,
    env_names,
    is_namespace,
    jext_distribution,
    metadata_owner_package,
    module_of,
    namespaces_of,
    optional_core_plugin,
    settle,
)
from jext._errors import PluginError
from jext._hookcall import HookCaller, InvalidPlugin
from jext._hookkinds import KINDS
from jext._host import ENV_RNG_NATIVE, Owned, close_matches, env_flag, rng_native_wanted
from jext._store import ENV_LOWERING_PREFER, Refused, Store
from jext._views import PluginInfo, Views
from jext.primitives._primitive import Primitive

if TYPE_CHECKING:
    import jax

__all__ = [
    "CORE_NAMESPACE",
    "ENV_DISABLE_AUTOLOAD",
    "ENV_DISABLE_PLUGINS",
    "ENV_LOWERING_PREFER",
    "ENV_PLUGINS",
    "ENV_RNG_NATIVE",
    "ENV_STRICT",
    "NAMESPACE_GROUP",
    "Owned",
    "PluginInfo",
    "PluginStatus",
    "PluginWarning",
    "Registry",
    "close_matches",
    "default_namespace",
    "env_flag",
    "get_primitive",
    "load_plugins",
    "plugins",
    "primitives",
    "register_plugin",
    "registry",
    "rng_native_wanted",
]

ENV_STRICT: Final = "JEXT_STRICT"
"""Set to 1: a broken plugin raises :class:`jext.PluginError` instead of a warning."""


class PluginWarning(UserWarning):
    """A plugin failed to load or register; the message names it, its distribution and why."""


@dataclass(slots=True)
class _Stage:
    """A part of loading that runs once: jext's core, then every plugin."""

    done: bool = False
    running: bool = False  # on the thread holding the writer token


class Registry(Views):
    """Everything the loaded plugins registered; one per process (see :func:`registry`)."""

    def __init__(self, *, group: str = hookspecs.PROJECT_NAME) -> None:
        self._group = group
        # Loading is guarded by a writer token, never by a lock held while plugin code
        # runs: a plugin's import may start threads that use jext (a core RNG, say), and
        # those must not wait for the import that waits for them.
        self._gate = threading.Condition(threading.Lock())
        self._writer: int | None = None  # the thread changing the registry, if any
        self._core = _Stage()  # jext's core plugins
        self._all = _Stage()  # every plugin
        self._report_lock = threading.Lock()
        self._discovery: Discovery | None = None
        self._discovery_lock = threading.Lock()
        self._hooks = HookCaller()
        self._store = Store()
        self._delivered = 0  # problems warned about (a warning turned error is not delivered)
        self._unreported = threading.local()  # .on: this thread reads without reporting
        # Plugins registered while hooks run (a meta-plugin's hook registering its
        # companions): their hooks run in the next round of the same load.  None: no hooks
        # are running.  Only the thread holding the writer token touches it.
        self._joining: list[Plugin] | None = None

    # --- loading: who loads, who waits ---------------------------------------------------------

    def load(self, *, report: bool = True) -> None:
        """Discover and load plugins once, then report what failed (thread-safe).

        A failure is a :class:`PluginWarning` once per failure; with ``JEXT_STRICT=1``
        every call raises :class:`jext.PluginError` while anything failed, and a warning
        that a filter turns into an error is raised again on the next call, so no call
        returns a partial registry silently.  Other threads wait for the one load in
        progress; a plugin that reads the registry while it is being loaded (on the
        loading thread) sees what is registered so far.  ``report=False`` only loads
        (a primitive's first bind loads plugins for their lowerings; the next reader
        reports).  A load that does not finish (``KeyboardInterrupt``) is rolled back:
        the next call loads again from the state before it.
        """
        if not self._all.done:
            self._ensure_loaded()
        if report and not self._all.running and not getattr(self._unreported, "on", False):
            self._report()

    def load_plugins(self) -> None:
        """:class:`jext._host.Host`: load every plugin; failures wait for a reader."""
        if not self._all.done:
            self._ensure_loaded()

    @property
    def store(self) -> Store:
        return self._store

    def load_core(self, *, report: bool) -> None:
        self._load_core()
        if report and not self._all.running and not getattr(self._unreported, "on", False):
            self._report()

    def load_quietly(self) -> None:
        self._ensure_loaded()

    @contextmanager
    def unreported(self) -> Iterator[None]:
        """Read the registry on this thread without reporting failed plugins.

        For a reader that shows failures itself (``jext list``): within the block no call
        warns or, with ``JEXT_STRICT=1``, raises; failures stay undelivered, so the next
        reader outside it still reports them.
        """
        previous = getattr(self._unreported, "on", False)
        self._unreported.on = True
        try:
            yield
        finally:
            self._unreported.on = previous

    def _ensure_loaded(self) -> None:
        """Load without reporting: for the readers that report failures themselves."""
        self._load_core()
        self._run_stage(self._all, self._load_plugins)

    def _load_core(self) -> None:
        """Register jext's core plugins (whatever the switches say), once."""
        self._run_stage(self._core, self._load_core_plugins)

    def _run_stage(self, stage: _Stage, work: Callable[[], None]) -> None:
        """Run ``work`` as ``stage``, once per registry, on whichever thread comes first.

        Other threads wait until it has finished.  On the thread running it, a nested
        call (a plugin reading the registry while it is imported) returns at once with
        what is registered so far.  The writer token is a flag, not a lock held while
        plugin code runs.  A ``work`` that raises (``KeyboardInterrupt`` too) is rolled
        back and the stage stays to do: the next call starts it again, never from half
        a state.
        """
        me = threading.get_ident()
        with self._gate:
            while not stage.done:
                if stage.running and self._writer == me:
                    return  # this thread's own load, in progress
                if self._writer in (None, me):
                    break
                self._gate.wait()
            else:
                return
            outer, self._writer = self._writer, me
            stage.running = True
        self._write(work, outer, stage)

    def _exclusive(self, work: Callable[[], None]) -> None:
        """Run ``work`` as the only thread changing the registry (nested on that thread)."""
        me = threading.get_ident()
        with self._gate:
            while self._writer not in (None, me):
                self._gate.wait()
            outer, self._writer = self._writer, me
        self._write(work, outer, None)

    def _write(self, work: Callable[[], None], outer: int | None, stage: _Stage | None) -> None:
        saved = self._store.copy()
        finished = False
        try:
            work()
            finished = True
        finally:
            with self._gate:
                if not finished:  # rolled back whole: never resumed on top of half a state
                    self._store = saved
                    self._delivered = min(self._delivered, len(saved.problems))
                if stage is not None:
                    stage.running, stage.done = False, finished
                self._writer = outer
                self._gate.notify_all()

    # --- loading: what a load does ---------------------------------------------------------------

    def _load_plugins(self) -> None:
        self._add_entry_points()
        self._settle_claims()
        for plugin in sorted(self._store.plugins.values(), key=lambda p: p.name):
            if plugin.status != "loaded":
                continue
            if plugin.claim_error is not None:
                self._store.fail(plugin, plugin.claim_error)
            elif plugin.loader is not None:
                self._import(plugin)
        self._run_hooks([p for p in self._store.plugins.values() if not p.hooks_run])

    def _load_core_plugins(self) -> None:
        dist = jext_distribution()
        core = []
        for name, module, namespaces in CORE_PLUGINS:
            entry = Plugin(
                name, dist, core=True, module_name=module, claimed=namespaces, owned=namespaces
            )
            entry.loader = lambda module=module: __import__(module, fromlist=["_"])
            self._store.plugins[name] = entry
            self._store.owners.update(dict.fromkeys(namespaces, name))
            self._import(entry)
            core.append(entry)
        for name, module, dist_name in OPTIONAL_CORE_PLUGINS:
            optional = optional_core_plugin(name, module, dist_name)
            if optional is not None:
                self._store.plugins[name] = optional
                self._import(optional)
                core.append(optional)
        self._run_hooks(core)

    def register(
        self, plugin: object, name: str | None = None, *, namespaces: Sequence[str] = ()
    ) -> None:
        """Register a plugin object (a module, class or instance with hook implementations).

        It owns the namespace of its name (``-`` as ``_``) and ``namespaces``, by the rules
        entry-point plugins follow.  Before loading, it joins the others.  Registered while
        plugins load (from another plugin's import or hook), it joins that load: it takes
        the namespaces nobody owns yet (one another plugin owns fails it), and its hooks
        run with those of the plugins imported, or, registered from a hook, in a round
        after the current one, each round kind by kind in order of plugin name.  After
        loading, its hooks run at once, as such a round.
        """
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        if isinstance(namespaces, str) or not all(
            isinstance(n, str) and is_namespace(n) for n in namespaces
        ):
            raise PluginError(
                f"plugin {name!r}: namespaces must be a sequence of ASCII dot-separated "
                f"identifiers, got {namespaces!r}"
            )

        def add() -> None:
            if name in self._store.plugins:
                raise PluginError(f"a plugin named {name!r} is already registered")
            entry = Plugin(
                name,
                None,
                module_name=plugin.__name__ if isinstance(plugin, types.ModuleType) else None,
                claimed=claimed_namespaces(name, namespaces),
            )
            entry.loader = lambda: plugin
            self._store.plugins[name] = entry
            # Plugin code runs in a load only after its claims are settled: a plugin
            # registered from there takes what is left, as one registered after loading.
            settled = self._all.done or self._all.running
            if settled:
                self._settle_late(entry)
            self._import(entry)
            if settled and self._joining is not None:  # hooks are running: their next round
                self._joining.append(entry)
            elif self._all.done:
                self._run_hooks([entry])

        self._exclusive(add)
        if not self._all.running:
            self._report()

    def _discovered(self) -> Discovery:
        """The installed plugins' metadata, read once (no plugin is imported)."""
        with self._discovery_lock:
            if self._discovery is None:
                self._discovery = discover(self._group)
            return self._discovery

    def _add_entry_points(self) -> None:
        found = self._discovered()
        for line in found.problems:
            self._store.add_problem(line, None)
        only = env_names(os.environ.get(ENV_PLUGINS))
        blocked = env_names(os.environ.get(ENV_DISABLE_PLUGINS)) or frozenset()
        autoload = not env_flag(os.environ.get(ENV_DISABLE_AUTOLOAD))
        for ep in found.plugins:
            known = self._store.plugins.get(ep.name)
            if known is not None:
                other = Plugin(ep.name, ep.dist)
                self._store.add_problem(
                    f"jext plugin name {ep.name!r} is declared twice: {other.label()} is "
                    f"ignored, {known.label()} is loaded",
                    None,
                )
                continue
            # Disabled plugins still hold their namespaces: switches never move ownership.
            entry = Plugin(
                ep.name,
                ep.dist,
                module_name=module_of(ep.value),
                claimed=claimed_namespaces(ep.name, found.namespaces.get(ep.name, ())),
            )
            why = (
                ENV_DISABLE_AUTOLOAD
                if not autoload
                else ENV_DISABLE_PLUGINS
                if ep.name in blocked
                else ENV_PLUGINS
                if only is not None and ep.name not in only
                else None
            )
            if why is not None:
                entry.status, entry.error = "disabled", f"disabled by {why}"
            else:
                entry.loader = ep.load
            self._store.plugins[ep.name] = entry

    def _settle_claims(self) -> None:
        owners, errors = settle(
            [(p.name, p.claimed, p.core) for p in self._store.plugins.values()],
            self._store.owner_label,
        )
        self._store.owners = owners
        for plugin in self._store.plugins.values():
            plugin.owned = tuple(sorted(ns for ns, o in owners.items() if o == plugin.name))
            plugin.claim_error = errors.get(plugin.name)

    def _settle_late(self, plugin: Plugin) -> None:
        """A plugin registered after loading: it takes only namespaces nobody owns."""
        for ns in plugin.claimed:
            taken = [o for o in (ns, *namespaces_of(ns)) if o in self._store.owners]
            if taken:
                owner = self._store.owner_label(self._store.owners[taken[0]])
                self._store.fail(plugin, f"claims namespace {ns!r}, which belongs to {owner}")
                return
        self._store.owners.update(dict.fromkeys(plugin.claimed, plugin.name))
        plugin.owned = tuple(sorted(plugin.claimed))

    def _import(self, entry: Plugin) -> None:
        load, entry.loader = entry.loader, None
        if load is None:
            return
        try:
            entry.module = load()
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as err:  # a plugin's import must never abort jext's
            self._store.fail(entry, f"import failed: {type(err).__name__}: {err}", err)
            return
        try:
            entry.impls = self._hooks.implementations(entry.module, entry.name)
        except (InvalidPlugin, Warning) as err:  # a Warning: a filter made it an error
            self._store.fail(entry, str(err))

    def _run_hooks(self, plugins: Sequence[Plugin]) -> None:
        """Run ``plugins``' hooks, then, round after round, those of the plugins their
        hooks registered (see :meth:`register`) until none is left."""
        outer, self._joining = self._joining, []
        try:
            batch = list(plugins)
            while batch:
                self._run_round(batch)
                batch, self._joining = self._joining, []
        finally:
            self._joining = outer

    def _run_round(self, plugins: Sequence[Plugin]) -> None:
        # Kind by kind, in the order of the table; in order of plugin name within a kind,
        # whether registered in code or by entry point.
        plugins = sorted(plugins, key=lambda p: p.name)
        store = self._store
        for kind in KINDS:
            for plugin in plugins:
                impl = plugin.impls.get(kind.hook)
                if plugin.status != "loaded" or impl is None:
                    continue
                registrar = kind.registrar(plugin.name)
                try:
                    self._hooks.call(impl, registrar)
                except (KeyboardInterrupt, GeneratorExit):
                    raise
                except BaseException as err:  # isolate the plugin, keep the others
                    store.fail(plugin, f"{kind.hook} raised {type(err).__name__}: {err}", err)
                    continue
                try:
                    cause = kind.commit(store, plugin, registrar.staged())
                except Refused as refused:
                    store.fail(plugin, f"{kind.hook}: {refused}", refused.__cause__)
                    continue
                if cause is not None:
                    store.fail(plugin, f"{kind.hook}: {cause}")
        # Once every plugin's rules are in: which vendor fills a platform never depends on
        # which plugin's hook ran first.
        store.apply_lowerings()
        for plugin in plugins:
            plugin.hooks_run = True

    def _report(self) -> None:
        if not self._store.problems:
            return
        if env_flag(os.environ.get(ENV_STRICT)):
            cause = next((c for c in self._store.causes if c is not None), None)
            raise PluginError("\n".join(self._store.problems)) from cause
        with self._report_lock:
            for i in range(self._delivered, len(self._store.problems)):
                try:
                    warnings.warn(self._store.problems[i], PluginWarning, stacklevel=4)
                except PluginWarning as err:
                    # A filter made it an error (-W error): raise every failure not yet
                    # delivered, now and on each later call, never a silent partial registry.
                    rest = self._store.problems[i:]
                    cause = next((c for c in self._store.causes[i:] if c is not None), None)
                    if len(rest) == 1 and cause is None:
                        raise
                    raise PluginWarning("\n".join(rest)) from cause or err
                self._delivered = i + 1

    def definition_may_replace(self, name: str, known_module: str, new_module: str) -> bool:
        """Whether a primitive defined in ``new_module`` replaces one of ``known_module``.

        True when ``new_module`` is in the package of the plugin that owns ``name``'s
        namespace and ``known_module`` is not, so an impostor imported first never keeps
        an owner from defining its own names.  Read from metadata (no plugin is imported).
        """
        # Read afresh: rare (two definitions of one name), and sys.path may have grown.
        owner = metadata_owner_package(discover(self._group), name)
        if owner is None:
            return False

        def inside(module: str) -> bool:
            return module == owner or module.startswith(owner + ".")

        return inside(new_module) and not inside(known_module)

    def may_replace(self, name: str, known_module: str, new_module: str) -> bool:
        """:class:`jext._host.Host`: see :meth:`definition_may_replace`."""
        return self.definition_may_replace(name, known_module, new_module)


_REGISTRY: Final = Registry()
# jext's core asks the process-wide registry what only plugins know (see jext._host).
_host.install(_REGISTRY)


def registry() -> Registry:
    """The process-wide registry that ``jext.primitives()`` and the CLI read."""
    return _REGISTRY


def load_plugins() -> None:
    """Discover plugins through the ``jext`` entry-point group and run their hooks, once.

    Idempotent and thread-safe.  A broken plugin is reported (a :class:`PluginWarning`,
    or a :class:`jext.PluginError` with ``JEXT_STRICT=1``) and the others still load.
    """
    _REGISTRY.load()


def register_plugin(
    plugin: object, name: str | None = None, *, namespaces: Sequence[str] = ()
) -> None:
    """Register a plugin in code, e.g. with ``JEXT_DISABLE_PLUGIN_AUTOLOAD=1``.

    ``plugin`` is a module or object with ``@jext.hookimpl`` functions; ``name``
    defaults to its ``__name__``.  It owns the namespace of its name (``-`` as ``_``)
    and ``namespaces``; its names must lie in them (see docs/plugins.md).  Its hooks run
    with the entry-point plugins', in order of plugin name.  A plugin may register its
    companions from its import or its hooks: they join the load in progress (see
    :meth:`Registry.register`).
    """
    _REGISTRY.register(plugin, name, namespaces=namespaces)


def primitives() -> Mapping[str, Primitive[..., Any]]:
    """Every primitive the loaded plugins registered, by name (read-only, sorted)."""
    return _REGISTRY.primitives()


def get_primitive(name: str) -> Primitive[..., jax.Array]:
    """The registered primitive ``name``; :class:`jext.UnknownNameError` (a KeyError) if none.

    Typed to return ``jax.Array``; ``jext stubgen`` gives each installed name its exact
    signature (a primitive returning a pytree, for one).
    """
    return _REGISTRY.get_primitive(name)


def plugins() -> list[PluginInfo]:
    """Every discovered plugin: name, distribution, version, status and error, by name."""
    return _REGISTRY.plugins()
