"""The plugin registry: entry-point discovery, owned namespaces, phased lazy loading, isolation."""

from __future__ import annotations

import dataclasses
import inspect
import os
import threading
import traceback
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import Distribution, EntryPoint, PackageNotFoundError, distribution
from importlib.metadata import entry_points as _entry_points
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar, cast

import pluggy

from jext import _host, _jax, hookspecs
from jext._errors import PluginError, UnknownNameError
from jext._host import ENV_RNG_NATIVE, Owned, close_matches, env_flag, rng_native_wanted
from jext._registrars import (
    FfiTarget,
    FfiTargetRegistrar,
    LoweringRegistrar,
    PendingLowering,
    PrimitiveRegistrar,
    RngImplRegistrar,
    ScipyRegistrar,
    _Registrar,
)
from jext.primitives._primitive import Primitive
from jext.typing import Platform

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

ENV_DISABLE_AUTOLOAD: Final = "JEXT_DISABLE_PLUGIN_AUTOLOAD"
"""Set to 1: load no entry points (plugins can still be registered in code)."""
ENV_PLUGINS: Final = "JEXT_PLUGINS"
"""A comma-separated list: load only these entry-point plugins."""
ENV_DISABLE_PLUGINS: Final = "JEXT_DISABLE_PLUGINS"
"""A comma-separated list: do not load these entry-point plugins."""
ENV_LOWERING_PREFER: Final = "JEXT_LOWERING_PREFER"
"""Which plugin's lowering wins a clash: ``<primitive>:<platform>=<plugin>`` (comma-separated;
``<primitive>=<plugin>`` for every platform), e.g. ``example.rms_norm:rocm=example-vendor``."""
ENV_STRICT: Final = "JEXT_STRICT"
"""Set to 1: a broken plugin raises :class:`jext.PluginError` instead of a warning."""
NAMESPACE_GROUP: Final = "jext.namespaces"
"""The entry-point group where a distribution declares more namespaces for its plugin.

Each entry is ``<namespace> = "<the plugin's module>"``, e.g. in ``pyproject.toml``::

    [project.entry-points."jext.namespaces"]
    mylib = "jext_mylib"
"""
CORE_NAMESPACE: Final = "jext"
"""The namespace of jext's own names (``jext.philox4x64``): no plugin may claim it."""

# jext's core plugins: (name, module, namespaces).  They register the way any plugin does,
# but are loaded whatever the plugin switches say, before every other plugin.
_CORE_PLUGINS: Final = (("jext-rng", "jext.rng_impls._plugin", (CORE_NAMESPACE,)),)
# Optional core plugins: (name, module, distribution).  Loaded with the core where their
# distribution is installed (it has no entry point), so that core primitives can use what
# they register whatever the plugin switches say; ENV_RNG_NATIVE=0 leaves jext-rng-native
# out.  See docs/rng.md.
_OPTIONAL_CORE_PLUGINS: Final = (("jext-rng-native", "jext_rng_native", "jext-rng-native"),)
# pluggy options jext's loader does not honour: refused, never silently ignored.
_UNSUPPORTED_HOOK_OPTIONS: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast")

PluginStatus = Literal["loaded", "error", "disabled"]

T = TypeVar("T")


class _InvalidPlugin(Exception):
    """A plugin's hook implementations do not match the hookspecs."""


def _required_args(function: Callable[..., object]) -> tuple[str, ...]:
    """The argument names a hook implementation needs (those without defaults), as pluggy does."""
    func = getattr(function, "__func__", function)  # a bound method: skip self
    code = getattr(func, "__code__", None)
    if code is None:
        params = inspect.signature(function).parameters.values()
        return tuple(p.name for p in params if p.default is p.empty and p.kind is not p.VAR_KEYWORD)
    n_defaults = len(getattr(func, "__defaults__", None) or ())
    names: tuple[str, ...] = code.co_varnames[: code.co_argcount - n_defaults]
    return names[1:] if func is not function else names


def default_namespace(plugin_name: str) -> str | None:
    """The namespace a plugin owns by its name: ``jext-mylib`` owns ``jext_mylib``.

    ``-`` becomes ``_``; None when the result is not ASCII dot-separated identifiers.
    """
    candidate = plugin_name.replace("-", "_")
    return candidate if _is_namespace(candidate) else None


def _is_namespace(name: str) -> bool:
    # ASCII only: a namespace spelt with a Cyrillic "\u0435" must not pass for "jext".
    return name.isascii() and all(part.isidentifier() for part in name.split("."))


def _ffi_name_in(target: str, namespace: str) -> bool:
    """Whether the FFI target name ``target`` lies in ``namespace`` (``ns_*`` or ``ns.*``)."""
    return target.startswith((namespace + ".", namespace.replace(".", "_") + "_"))


def _platforms_of(platform: str | None) -> tuple[str, ...]:
    """The platforms a rule for ``platform`` covers (``"gpu"``: cuda and rocm; None: all)."""
    if platform is None:
        return _jax.PLATFORMS
    return ("cuda", "rocm") if platform == "gpu" else (platform,)


def _lowering_preferences() -> dict[tuple[str, str | None], str]:
    """``JEXT_LOWERING_PREFER`` as {(primitive, platform or None): plugin}."""
    prefs: dict[tuple[str, str | None], str] = {}
    for item in os.environ.get(ENV_LOWERING_PREFER, "").split(","):
        key, eq, plugin = item.partition("=")
        if not eq or not key.strip() or not plugin.strip():
            continue
        name, colon, platform = key.strip().partition(":")
        prefs[(name, platform.strip() if colon else None)] = plugin.strip()
    return prefs


def _namespaces_of(name: str) -> list[str]:
    """The namespaces ``name`` lies in, innermost first: ``a.b.c`` -> ``a.b``, ``a``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


_JEXT_DIR: Final = os.path.dirname(os.path.abspath(hookspecs.__file__)) + os.sep


def _where(err: BaseException) -> str:
    """`` (file:line)`` of the plugin's innermost frame in ``err``'s traceback, or ``""``.

    Frames in jext itself (a registrar refusing an argument) say less than the plugin's
    line that called it.
    """
    frames = traceback.extract_tb(err.__traceback__)
    theirs = [f for f in frames if not os.path.abspath(f.filename).startswith(_JEXT_DIR)]
    chosen = theirs or list(frames)
    return f" ({chosen[-1].filename}:{chosen[-1].lineno})" if chosen else ""


class PluginWarning(UserWarning):
    """A plugin failed to load or register; the message names it, its distribution and why."""


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


@dataclass(slots=True)
class _Plugin:
    name: str
    dist: Distribution | None  # None for a plugin registered in code
    module: object = None
    status: PluginStatus = "loaded"
    error: str | None = None
    hooks_run: bool = False
    core: bool = False
    # The module the entry point names (``pkg.mod`` of ``pkg.mod:attr``), or the code object's.
    module_name: str | None = None
    loader: Callable[[], object] | None = None  # set until the plugin is imported
    claimed: tuple[str, ...] = ()  # the namespaces it declares, its default first
    owned: tuple[str, ...] = ()  # those it owns once claims are settled
    claim_error: str | None = None  # why a claim failed it, before its import
    # hook name -> (function, its argument names)
    impls: dict[str, tuple[Callable[..., object], tuple[str, ...]]] = field(default_factory=dict)
    _dist_info: tuple[str, str] | None = None

    def dist_info(self) -> tuple[str | None, str | None]:
        """Distribution name and version, read from its METADATA once, when first needed."""
        if self.dist is None:
            return None, None
        if self._dist_info is None:
            metadata = self.dist.metadata
            self._dist_info = (metadata["Name"], metadata["Version"])
        return self._dist_info

    def label(self) -> str:
        dist, version = self.dist_info()
        if self.core and dist not in (None, hookspecs.PROJECT_NAME):  # an optional core plugin
            return f"plugin {self.name!r} (distribution {dist} {version}, loaded by jext's core)"
        if self.core:
            return f"plugin {self.name!r} (core of jext {version or ''})".replace(" )", ")")
        if dist is None:
            return f"plugin {self.name!r} (registered in code)"
        return f"plugin {self.name!r} (distribution {dist} {version})"


@dataclass(slots=True)
class _Phase:
    hook: str
    registrar: type[_Registrar[Any]]
    commit: Callable[[_Plugin, list[Any]], str | None]  # returns a failure cause or None


def _env_names(value: str | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(n.strip() for n in value.split(",") if n.strip())


def _module_of(value: str) -> str:
    return value.partition(":")[0].strip()


def _jext_distribution() -> Distribution | None:
    try:
        return distribution(hookspecs.PROJECT_NAME)
    except PackageNotFoundError:  # run from a source tree
        return None


def _optional_core_plugin(name: str, module: str, dist_name: str) -> _Plugin | None:
    """The optional core plugin's entry where its distribution is installed and wanted."""
    if not rng_native_wanted():
        return None
    try:
        dist = distribution(dist_name)
    except PackageNotFoundError:
        return None
    entry = _Plugin(name, dist, core=True, module_name=module)
    entry.loader = lambda: __import__(module, fromlist=["_"])
    return entry


@dataclass(frozen=True, slots=True)
class _Discovery:
    """What the installed metadata says, read without importing any plugin."""

    plugins: tuple[EntryPoint, ...]  # the plugin entry points, by name
    namespaces: Mapping[str, tuple[str, ...]]  # plugin name -> the namespaces it declares
    problems: tuple[str, ...]  # declarations that name no plugin


def _discover(group: str) -> _Discovery:
    core_modules = {module for _, module, _ in _CORE_PLUGINS}
    found = sorted(_entry_points(group=group), key=lambda e: e.name)
    # jext's own metadata from before its RNGs became core still names the core module.
    found = [ep for ep in found if _module_of(ep.value) not in core_modules]
    namespaces: dict[str, list[str]] = {}
    problems: list[str] = []
    for ns in sorted(_entry_points(group=f"{group}.namespaces"), key=lambda e: e.name):
        dist = ns.dist.name if ns.dist is not None else None
        same_dist = [ep for ep in found if ep.dist is not None and ep.dist.name == dist]
        same_module = [ep for ep in same_dist if _module_of(ep.value) == _module_of(ns.value)]
        targets = same_module or (same_dist if len(same_dist) == 1 else [])
        if not _is_namespace(ns.name):
            problems.append(
                f"jext namespace {ns.name!r} declared by distribution {dist} is not "
                "ASCII dot-separated Python identifiers; it is ignored"
            )
        elif not targets:
            problems.append(
                f"jext namespace {ns.name!r} declared by distribution {dist} names "
                f"{ns.value!r}, which is not the module of a jext plugin of {dist}; it is ignored"
            )
        else:
            namespaces.setdefault(targets[0].name, []).append(ns.name)
    return _Discovery(tuple(found), {k: tuple(v) for k, v in namespaces.items()}, tuple(problems))


def _settle(
    claims: Sequence[tuple[str, tuple[str, ...], bool]], label: Callable[[str], str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Who owns each namespace, and why a claimant fails: ``(owners, errors)``.

    ``claims`` are ``(plugin, namespaces, is_core)``.  The answer depends on the claims
    alone, never on their order: jext's core owns its namespaces; else a plugin owns the
    namespace its name gives it (``jext-mylib`` -> ``jext_mylib``); else the one plugin
    that declares it.  Two plugins declaring one namespace that is neither's by name both
    fail, and so does a claim inside a namespace another plugin owns.
    """
    by_ns: dict[str, list[str]] = {}
    owners: dict[str, str] = {}
    for plugin, namespaces, is_core in claims:
        for ns in namespaces:
            if is_core:
                owners[ns] = plugin
            else:
                by_ns.setdefault(ns, []).append(plugin)
    errors: dict[str, str] = {}
    for ns, names in sorted(by_ns.items()):
        if ns in owners:
            winner: str | None = owners[ns]
        else:
            by_name = [n for n in names if default_namespace(n) == ns]
            winner = by_name[0] if len(by_name) == 1 else None
            if winner is None and len(names) == 1:
                winner = names[0]
            if winner is not None:
                owners[ns] = winner
        for name in names:
            if name == winner or name in errors:
                continue
            if winner is not None:
                errors[name] = f"claims namespace {ns!r}, which belongs to {label(winner)}"
            else:
                others = ", ".join(label(n) for n in names if n != name)
                errors[name] = (
                    f"claims namespace {ns!r}, which {others} also claims; a namespace has "
                    "one owner and jext does not pick one by order (rename one)"
                )
    # A namespace inside another's (``mylib.extra`` in ``mylib``) belongs to that owner.
    for ns, owner in sorted(owners.items()):
        outer = next((o for o in _namespaces_of(ns) if owners.get(o, owner) != owner), None)
        if outer is not None:
            del owners[ns]
            errors.setdefault(
                owner,
                f"claims namespace {ns!r}, inside {outer!r}, which belongs to "
                f"{label(owners[outer])}",
            )
    for name in errors:  # a failed plugin owns nothing
        for ns in [n for n, o in owners.items() if o == name]:
            del owners[ns]
    return owners, errors


@dataclass(slots=True)
class _Stage:
    """A part of loading that runs once: jext's core, then every plugin."""

    done: bool = False
    running: bool = False  # on the thread holding the writer token


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """What a load changes, to roll it back when it does not finish."""

    plugins: dict[str, _Plugin]
    owners: dict[str, str]
    primitives: dict[str, str]
    lowerings: list[PendingLowering]
    applied: set[int]
    vendor_rules: dict[tuple[str, str], str]
    notes: dict[str, list[str]]
    rng_impls: dict[str, Owned[Any]]
    scipy: dict[tuple[str, str], list[Owned[Any]]]
    problems: list[str]
    causes: list[BaseException | None]


class _Refused(Exception):
    """A commit refuses what a plugin staged; ``__cause__`` is the underlying error, if any."""


class Registry:
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
        self._discovery: _Discovery | None = None
        self._discovery_lock = threading.Lock()
        pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        pm.add_hookspecs(hookspecs)
        # Each hook's argument names, as pluggy reads them from the hookspecs.
        self._spec_args: dict[str, tuple[str, ...]] = {
            name: tuple(caller.spec.argnames)
            for name, caller in vars(pm.hook).items()
            if isinstance(caller, pluggy.HookCaller) and caller.spec is not None
        }
        self._plugins: dict[str, _Plugin] = {}
        self._owners: dict[str, str] = {}  # namespace -> plugin, once claims are settled
        self._primitives: dict[str, str] = {}  # name -> plugin; the primitive is _host's
        self._lowerings: list[PendingLowering] = []
        self._applied_lowerings: set[int] = set()  # indices into _lowerings
        # (primitive, platform) -> the vendor whose rule fills it; notes on clashes
        self._vendor_rules: dict[tuple[str, str], str] = {}
        self._notes: dict[str, list[str]] = {}
        self._rng_impls: dict[str, Owned[Any]] = {}
        self._scipy: dict[tuple[str, str], list[Owned[Any]]] = {}
        self._problems: list[str] = []
        self._causes: list[BaseException | None] = []  # the exception behind each problem
        self._delivered = 0  # problems warned about (a warning turned error is not delivered)
        self._unreported = threading.local()  # .on: this thread reads without reporting
        # One phase per hook, in the order the hookspecs document; a new hook is one line.
        self._phases = [
            _Phase("jext_register_primitives", PrimitiveRegistrar, self._commit_primitives),
            _Phase("jext_register_ffi_targets", FfiTargetRegistrar, self._commit_ffi_targets),
            _Phase("jext_register_lowerings", LoweringRegistrar, self._commit_lowerings),
            _Phase("jext_register_rng_impls", RngImplRegistrar, self._commit_rng_impls),
            _Phase("jext_register_scipy_wrappers", ScipyRegistrar, self._commit_scipy),
        ]

    # --- loading -----------------------------------------------------------------------------

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
        saved = self._snapshot()
        finished = False
        try:
            work()
            finished = True
        finally:
            with self._gate:
                if not finished:
                    self._restore(saved)
                if stage is not None:
                    stage.running, stage.done = False, finished
                self._writer = outer
                self._gate.notify_all()

    def _snapshot(self) -> _Snapshot:
        return _Snapshot(
            plugins={n: dataclasses.replace(p) for n, p in self._plugins.items()},
            owners=dict(self._owners),
            primitives=dict(self._primitives),
            lowerings=list(self._lowerings),
            applied=set(self._applied_lowerings),
            vendor_rules=dict(self._vendor_rules),
            notes={k: list(v) for k, v in self._notes.items()},
            rng_impls=dict(self._rng_impls),
            scipy={k: list(v) for k, v in self._scipy.items()},
            problems=list(self._problems),
            causes=list(self._causes),
        )

    def _restore(self, saved: _Snapshot) -> None:
        self._plugins = saved.plugins
        self._owners = saved.owners
        self._primitives = saved.primitives
        self._lowerings = saved.lowerings
        self._applied_lowerings = saved.applied
        self._vendor_rules = saved.vendor_rules
        self._notes = saved.notes
        self._rng_impls = saved.rng_impls
        self._scipy = saved.scipy
        self._problems = saved.problems
        self._causes = saved.causes
        self._delivered = min(self._delivered, len(self._problems))

    def _load_plugins(self) -> None:
        self._add_entry_points()
        self._settle_claims()
        for plugin in sorted(self._plugins.values(), key=lambda p: p.name):
            if plugin.status != "loaded":
                continue
            if plugin.claim_error is not None:
                self._fail(plugin, plugin.claim_error)
            elif plugin.loader is not None:
                self._import(plugin)
        self._run_hooks([p for p in self._plugins.values() if not p.hooks_run])

    def _load_core_plugins(self) -> None:
        dist = _jext_distribution()
        core = []
        for name, module, namespaces in _CORE_PLUGINS:
            entry = _Plugin(
                name, dist, core=True, module_name=module, claimed=namespaces, owned=namespaces
            )
            entry.loader = lambda module=module: __import__(module, fromlist=["_"])
            self._plugins[name] = entry
            self._owners.update(dict.fromkeys(namespaces, name))
            self._import(entry)
            core.append(entry)
        for name, module, dist_name in _OPTIONAL_CORE_PLUGINS:
            optional = _optional_core_plugin(name, module, dist_name)
            if optional is not None:
                self._plugins[name] = optional
                self._import(optional)
                core.append(optional)
        self._run_hooks(core)

    def register(
        self, plugin: object, name: str | None = None, *, namespaces: Sequence[str] = ()
    ) -> None:
        """Register a plugin object (a module, class or instance with hook implementations).

        It owns the namespace of its name (``-`` as ``_``) and ``namespaces``, by the rules
        entry-point plugins follow.  Before loading, it joins the others; after, its hooks
        run at once, and a namespace another plugin already owns fails it.
        """
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        if isinstance(namespaces, str) or not all(
            isinstance(n, str) and _is_namespace(n) for n in namespaces
        ):
            raise PluginError(
                f"plugin {name!r}: namespaces must be a sequence of ASCII dot-separated "
                f"identifiers, got {namespaces!r}"
            )

        def add() -> None:
            if name in self._plugins:
                raise PluginError(f"a plugin named {name!r} is already registered")
            entry = _Plugin(
                name,
                None,
                module_name=plugin.__name__ if isinstance(plugin, types.ModuleType) else None,
                claimed=self._claims(name, namespaces),
            )
            entry.loader = lambda: plugin
            self._plugins[name] = entry
            self._import(entry)
            if self._all.done:
                self._settle_late(entry)
                self._run_hooks([entry])

        self._exclusive(add)
        if not self._all.running:
            self._report()

    @staticmethod
    def _claims(name: str, declared: Iterable[str]) -> tuple[str, ...]:
        default = default_namespace(name)
        return tuple(dict.fromkeys([*([default] if default else []), *declared]))

    def _discovered(self) -> _Discovery:
        """The installed plugins' metadata, read once (no plugin is imported)."""
        with self._discovery_lock:
            if self._discovery is None:
                self._discovery = _discover(self._group)
            return self._discovery

    def _add_entry_points(self) -> None:
        found = self._discovered()
        for line in found.problems:
            self._add_problem(line, None)
        only = _env_names(os.environ.get(ENV_PLUGINS))
        blocked = _env_names(os.environ.get(ENV_DISABLE_PLUGINS)) or frozenset()
        autoload = not env_flag(os.environ.get(ENV_DISABLE_AUTOLOAD))
        for ep in found.plugins:
            known = self._plugins.get(ep.name)
            if known is not None:
                other = _Plugin(ep.name, ep.dist)
                self._add_problem(
                    f"jext plugin name {ep.name!r} is declared twice: {other.label()} is "
                    f"ignored, {known.label()} is loaded",
                    None,
                )
                continue
            # Disabled plugins still hold their namespaces: switches never move ownership.
            entry = _Plugin(
                ep.name,
                ep.dist,
                module_name=_module_of(ep.value),
                claimed=self._claims(ep.name, found.namespaces.get(ep.name, ())),
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
            self._plugins[ep.name] = entry

    def _settle_claims(self) -> None:
        owners, errors = _settle(
            [(p.name, p.claimed, p.core) for p in self._plugins.values()], self._owner_label
        )
        self._owners = owners
        for plugin in self._plugins.values():
            plugin.owned = tuple(sorted(ns for ns, o in owners.items() if o == plugin.name))
            plugin.claim_error = errors.get(plugin.name)

    def _settle_late(self, plugin: _Plugin) -> None:
        """A plugin registered after loading: it takes only namespaces nobody owns."""
        for ns in plugin.claimed:
            taken = [o for o in (ns, *_namespaces_of(ns)) if o in self._owners]
            if taken:
                owner = self._owner_label(self._owners[taken[0]])
                self._fail(plugin, f"claims namespace {ns!r}, which belongs to {owner}")
                return
        self._owners.update(dict.fromkeys(plugin.claimed, plugin.name))
        plugin.owned = tuple(sorted(plugin.claimed))

    def _import(self, entry: _Plugin) -> None:
        load, entry.loader = entry.loader, None
        if load is None:
            return
        try:
            entry.module = load()
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as err:  # a plugin's import must never abort jext's
            self._fail(entry, f"import failed: {type(err).__name__}: {err}", err)
            return
        try:
            entry.impls = self._hook_impls(entry.module)
        except _InvalidPlugin as err:
            self._fail(entry, str(err))

    def _hook_impls(
        self, plugin: object
    ) -> dict[str, tuple[Callable[..., object], tuple[str, ...]]]:
        """The ``@jext.hookimpl`` functions of ``plugin`` by hook name, validated against the specs.

        pluggy's markers and specs, read directly: ``PluginManager.register`` inspects
        every attribute and signature and would make loading many plugins 25% slower.
        """
        marker = f"{hookspecs.PROJECT_NAME}_impl"
        attributes = (
            vars(plugin)
            if isinstance(plugin, types.ModuleType)
            else {n: getattr(plugin, n, None) for n in dir(plugin)}
        )
        impls: dict[str, tuple[Callable[..., object], tuple[str, ...]]] = {}
        unknown: list[str] = []
        for attr, value in attributes.items():
            # Only functions carry the marker; asking a module for it could run its
            # __getattr__ (a jext.scipy scope would load plugins from inside loading).
            if not isinstance(value, types.FunctionType | types.MethodType):
                continue
            opts = getattr(value, marker, None)
            if not isinstance(opts, dict):
                continue
            hook = opts.get("specname") or attr
            # jext calls each hook itself, once per plugin in name order: pluggy's
            # wrappers and ordering would be silently skipped, so they are refused.
            unsupported = [o for o in _UNSUPPORTED_HOOK_OPTIONS if opts.get(o)]
            if unsupported:
                options = ", ".join(f"{o}=True" for o in unsupported)
                raise _InvalidPlugin(
                    f"hook implementation {attr} ({hook}) uses pluggy's {options}, which "
                    "jext does not support: jext calls every plugin's hook once, in order of "
                    "plugin name, with no wrappers; remove the option"
                )
            spec_args = self._spec_args.get(hook)
            if spec_args is None:
                if not opts.get("optionalhook"):
                    unknown.append(hook)
                continue
            argnames = _required_args(value)
            extra = [a for a in argnames if a not in spec_args]
            if extra:
                raise _InvalidPlugin(
                    f"invalid hook implementation: {hook} takes {list(argnames)}, but the hook "
                    f"passes only {list(spec_args)} (unknown: {extra})"
                )
            impls[hook] = (value, argnames)
        if unknown:
            hints = "".join(close_matches(u, self._spec_args) for u in unknown)
            raise _InvalidPlugin(f"implements unknown hook(s) {sorted(unknown)}.{hints}")
        return impls

    def _run_hooks(self, plugins: Sequence[_Plugin]) -> None:
        # In order of plugin name, whether registered in code or by entry point.
        plugins = sorted(plugins, key=lambda p: p.name)
        for phase in self._phases:
            for plugin in plugins:
                if plugin.status != "loaded":
                    continue
                registrar = phase.registrar(plugin.name)
                try:
                    self._call(plugin, phase.hook, registrar)
                except (KeyboardInterrupt, GeneratorExit):
                    raise
                except BaseException as err:  # isolate the plugin, keep the others
                    self._fail(plugin, f"{phase.hook} raised {type(err).__name__}: {err}", err)
                    continue
                try:
                    cause = phase.commit(plugin, registrar.staged())
                except _Refused as refused:
                    self._fail(plugin, f"{phase.hook}: {refused}", refused.__cause__)
                    continue
                if cause is not None:
                    self._fail(plugin, f"{phase.hook}: {cause}")
        # Once every plugin's rules are in: which vendor fills a platform never depends on
        # which plugin's hook ran first.
        self._apply_lowerings()
        for plugin in plugins:
            plugin.hooks_run = True

    def _call(self, plugin: _Plugin, hook: str, registrar: _Registrar[Any]) -> None:
        impl = plugin.impls.get(hook)
        if impl is not None:
            function, argnames = impl
            function(**dict.fromkeys(argnames, registrar))

    def _fail(self, plugin: _Plugin, cause: str, err: BaseException | None = None) -> None:
        if plugin.status == "error":  # reported once, with its first cause
            return
        plugin.status = "error"
        first = cause.splitlines()[0] if cause else "failed"
        plugin.error = first + (_where(err) if err is not None else "")
        self._add_problem(f"jext {plugin.label()}: {plugin.error}", err)

    def _add_problem(self, line: str, err: BaseException | None) -> None:
        self._problems.append(line)
        self._causes.append(err)

    def _report(self) -> None:
        if not self._problems:
            return
        if env_flag(os.environ.get(ENV_STRICT)):
            cause = next((c for c in self._causes if c is not None), None)
            raise PluginError("\n".join(self._problems)) from cause
        with self._report_lock:
            for i in range(self._delivered, len(self._problems)):
                try:
                    warnings.warn(self._problems[i], PluginWarning, stacklevel=4)
                except PluginWarning as err:
                    # A filter made it an error (-W error): raise every failure not yet
                    # delivered, now and on each later call, never a silent partial registry.
                    rest = self._problems[i:]
                    cause = next((c for c in self._causes[i:] if c is not None), None)
                    if len(rest) == 1 and cause is None:
                        raise
                    raise PluginWarning("\n".join(rest)) from cause or err
                self._delivered = i + 1

    # --- namespaces --------------------------------------------------------------------------

    def _owner_of(self, name: str) -> tuple[str, str] | None:
        """``(namespace, plugin)`` owning ``name``, innermost namespace first; None if none."""
        for ns in _namespaces_of(name):
            owner = self._owners.get(ns)
            if owner is not None:
                return ns, owner
        return None

    def _check_namespace(self, plugin: _Plugin, name: str, what: str) -> str | None:
        owner = self._owner_of(name)
        if owner is not None and owner[1] == plugin.name:
            return None
        mine = list(plugin.owned)
        if owner is None:
            return (
                f"{what} {name!r} is outside its namespaces {mine}, and no plugin owns "
                f"{_namespaces_of(name)[-1]!r}: declare the namespace (entry-point group "
                f"{NAMESPACE_GROUP!r}, see docs/plugins.md)"
            )
        ns, other = owner
        return (
            f"{what} {name!r} is in namespace {ns!r}, which belongs to "
            f"{self._owner_label(other)}; {plugin.name!r} may define names only in {mine}"
        )

    def _check_ffi_namespace(self, plugin: _Plugin, target: str) -> str | None:
        """Why ``target`` is not an FFI target name ``plugin`` may register, or None.

        XLA keeps one table of handler names for the whole process, jaxlib's own
        (``lapack_sgetrf_ffi``, ...) included, and a second handler under a name aborts
        every later compilation: a plugin names its targets in its own namespaces,
        ``<namespace>_<kernel>`` (dots as ``_``) or ``<namespace>.<kernel>``.  jext's core
        plugins own ``jext_*``.
        """
        mine = [*plugin.owned, *([CORE_NAMESPACE] if plugin.core else [])]
        if any(_ffi_name_in(target, ns) for ns in mine):
            return None
        others = sorted(
            (ns, owner)
            for ns, owner in self._owners.items()
            if owner != plugin.name and _ffi_name_in(target, ns)
        )
        where = (
            f"in namespace {others[-1][0]!r}, which belongs to {self._owner_label(others[-1][1])}"
            if others
            else "outside its namespaces"
        )
        return (
            f"FFI target {target!r} is {where}: XLA has one table of handler names for the "
            f"whole process (jaxlib's own included), so {plugin.name!r} names its targets "
            f"'<namespace>_<kernel>' in its namespaces {sorted(mine)}"
        )

    def definition_may_replace(self, name: str, known_module: str, new_module: str) -> bool:
        """Whether a primitive defined in ``new_module`` replaces one of ``known_module``.

        True when ``new_module`` is in the package of the plugin that owns ``name``'s
        namespace and ``known_module`` is not, so an impostor imported first never keeps
        an owner from defining its own names.  Read from metadata (no plugin is imported).
        """
        # Read afresh: rare (two definitions of one name), and sys.path may have grown.
        owner = self._metadata_owner_package(_discover(self._group), name)
        if owner is None:
            return False

        def inside(module: str) -> bool:
            return module == owner or module.startswith(owner + ".")

        return inside(new_module) and not inside(known_module)

    def _metadata_owner_package(self, found: _Discovery, name: str) -> str | None:
        claims: list[tuple[str, tuple[str, ...], bool]] = [
            (n, ns, True) for n, _, ns in _CORE_PLUGINS
        ]
        claims += [(ep.name, self._claims(ep.name, found.namespaces.get(ep.name, ())), False)
                   for ep in found.plugins]  # fmt: skip
        owners, _ = _settle(claims, repr)
        modules = {n: m for n, m, _ in _CORE_PLUGINS}
        modules.update((ep.name, _module_of(ep.value)) for ep in found.plugins)
        for ns in _namespaces_of(name):
            if ns in owners:
                return modules[owners[ns]].split(".")[0]
        return None

    # --- committing what a plugin registered -------------------------------------------------

    def _owner_label(self, plugin: str) -> str:
        entry = self._plugins.get(plugin)
        return entry.label() if entry is not None else f"plugin {plugin!r}"

    def _commit_named(
        self, table: dict[str, Any], plugin: _Plugin, staged: list[Any], what: str
    ) -> str | None:
        """Check ``staged`` items by name against ``table``; a clash is the cause."""
        seen: set[str] = set()
        for item in staged:
            cause = self._check_namespace(plugin, item.name, what)
            if cause is not None:
                return cause
            owner = table.get(item.name)
            if owner is not None:
                by = self._owner_label(owner if isinstance(owner, str) else owner.plugin)
                return f"{what} {item.name!r} is already registered by {by}"
            if item.name in seen:
                return f"{what} {item.name!r} registered twice"
            seen.add(item.name)
        return None

    def _commit_primitives(self, plugin: _Plugin, staged: list[Primitive[..., Any]]) -> str | None:
        cause = self._commit_named(self._primitives, plugin, staged, "primitive")
        if cause is not None:
            return cause
        with _host.DEFINITIONS_LOCK:
            stale = [p.name for p in staged if _host.DEFINITIONS.get(p.name) is not p]
        if stale:  # one table of names: the registered primitive is the one defined
            return (
                f"primitive {stale[0]!r} is not the one defined under that name in this "
                "process (a later definition replaced it); register the current one"
            )
        self._primitives.update(dict.fromkeys((p.name for p in staged), plugin.name))
        return None

    def _commit_lowerings(self, plugin: _Plugin, staged: list[PendingLowering]) -> str | None:
        for low in staged:
            if low.primitive in self._primitives:
                try:
                    self._primitive(low.primitive).validate_lowering(
                        low.rule, platform=low.platform, raw=low.raw
                    )
                except Exception as err:
                    raise _Refused(str(err)) from err
        self._lowerings.extend(staged)
        return None

    def _apply_lowerings(self) -> None:
        """Apply the staged lowerings whose primitive is now registered.

        The owner's own rules apply as they are.  A vendor's rule fills only a platform
        its owner left to the reference; where the owner has a rule, or several vendors
        offer one, the clash is reported and ``JEXT_LOWERING_PREFER`` chooses (else the
        owner's rule stays, or, between vendors only, the reference does).  Never decided
        by plugin order.
        """
        slots: dict[tuple[str, str], list[PendingLowering]] = {}
        for i, low in enumerate(self._lowerings):
            vendor = self._plugins.get(low.plugin)
            if i in self._applied_lowerings or low.primitive not in self._primitives:
                continue
            self._applied_lowerings.add(i)
            if vendor is not None and vendor.status == "error":
                continue  # a failed plugin's rules are not applied
            if self._primitives[low.primitive] == low.plugin:  # the owner's own rule
                self._define_lowering(low, low.platform)
                continue
            for platform in _platforms_of(low.platform):
                slots.setdefault((low.primitive, platform), []).append(low)
        preferred = _lowering_preferences()
        for (name, platform), offers in sorted(slots.items()):
            owner = self._primitives[name]
            entry = self._primitive(name).rules.lowering_for(platform)
            earlier = self._vendor_rules.get((name, platform))
            in_place = entry.rule.fn if entry is not None and entry.rule is not None else None
            # A vendor rule already in place (applied by another registry of this process).
            earlier = next((o.plugin for o in offers if o.rule is in_place), earlier)
            has_own = earlier is None and entry is not None and entry.kind != "reference"
            parties = [*([owner] if has_own else []), *([earlier] if earlier else [])]
            parties = list(dict.fromkeys([*parties, *(low.plugin for low in offers)]))
            choice = preferred.get((name, platform), preferred.get((name, None)))
            if len(parties) == 1:
                choice = parties[0]
            elif choice not in parties:
                self._report_clash(name, platform, parties, owner if has_own else earlier)
                continue
            chosen = next((low for low in offers if low.plugin == choice), None)
            if chosen is not None and self._define_lowering(chosen, platform):
                self._vendor_rules[(name, platform)] = chosen.plugin

    def _define_lowering(self, low: PendingLowering, platform: str | None) -> bool:
        try:
            # Platforms come from the registrar (checked there) or _platforms_of.
            target = cast("Platform | None", platform)
            self._primitive(low.primitive).def_lowering(low.rule, platform=target, raw=low.raw)
        except Exception as err:  # a rule that waited for its primitive, or came too late:
            vendor = self._plugins.get(low.plugin)
            if vendor is not None:  # the vendor's fault, never the primitive owner's
                self._fail(vendor, f"jext_register_lowerings: {err}", err)
            return False
        return True

    def _report_clash(
        self, name: str, platform: str, parties: Sequence[str], kept: str | None
    ) -> None:
        labels = " and ".join(self._owner_label(p) for p in dict.fromkeys(parties))
        outcome = (
            f"{self._owner_label(kept)}'s rule is kept"
            if kept is not None
            else "none is used (the reference is)"
        )
        line = (
            f"jext: lowering of {name!r} on {platform}: {labels} each provide one; {outcome}. "
            f"Choose with {ENV_LOWERING_PREFER}={name}:{platform}=<plugin>"
        )
        self._add_problem(line, None)
        for plugin in dict.fromkeys(parties):
            self._notes.setdefault(plugin, []).append(line.removeprefix("jext: "))

    def _commit_ffi_targets(self, plugin: _Plugin, staged: list[FfiTarget]) -> str | None:
        """Register ``staged`` handlers with XLA, all or none; a name clash is the cause."""
        seen: set[tuple[str, str]] = set()
        for target in staged:
            cause = self._check_ffi_namespace(plugin, target.name)
            if cause is not None:
                return cause
            key = (target.name, target.platform)
            owner = _host.FFI_TARGETS.get(key)
            if owner is not None and owner.plugin != plugin.name:
                by = self._owner_label(owner.plugin)
                return (
                    f"FFI target {target.name!r} on {target.platform} is already registered by {by}"
                )
            if key in seen:
                return f"FFI target {target.name!r} on {target.platform} registered twice"
            seen.add(key)
        if not staged:
            return None
        from jext import _jax  # noqa: PLC0415 - jax loads only once a plugin has native handlers

        for target in staged:
            key = (target.name, target.platform)
            if key in _host.FFI_TARGETS:  # this plugin's, from a load rolled back: XLA has it
                continue
            try:
                _jax.register_ffi_target(target.name, target.handler, target.platform)
                if target.batch_partitionable:
                    _jax.register_ffi_target_as_batch_partitionable(target.name)
            except Exception as err:  # XLA refused it: report, as for any plugin fault
                return f"XLA refused FFI target {target.name!r} on {target.platform}: {err}"
            _host.FFI_TARGETS[key] = Owned(target, plugin.name)
        return None

    def _commit_rng_impls(self, plugin: _Plugin, staged: list[Any]) -> str | None:
        cause = self._commit_named(self._rng_impls, plugin, staged, "RNG implementation")
        if cause is None:
            cause = self._check_rng_tags(staged)
        if cause is None:
            self._rng_impls.update((impl.name, Owned(impl, plugin.name)) for impl in staged)
        return cause

    def _check_rng_tags(self, staged: list[Any]) -> str | None:
        """Why ``staged`` impls' tags clash: a tag names a key type (``key<tag>``), so two
        impls with one tag would print and look alike."""
        used = {o.item.tag: o for o in self._rng_impls.values()}
        for impl in staged:
            other = used.get(impl.tag)
            if other is not None:
                by = self._owner_label(other.plugin)
                return (
                    f"RNG implementation {impl.name!r} has tag {impl.tag!r}, which "
                    f"{other.item.name!r} of {by} already has; each impl needs a tag of its own"
                )
            used[impl.tag] = Owned(impl, "")
        return None

    def _commit_scipy(self, plugin: _Plugin, staged: list[Any]) -> str | None:
        if not staged:
            return None
        from jext.scipy._scopes import in_jax  # noqa: PLC0415 - jext.scipy imports this module

        for wrapper in staged:
            if wrapper.replaces_jax is None and in_jax(wrapper.scope, wrapper.name):
                return (
                    f"jax.scipy.{wrapper.scope}.{wrapper.name} exists; a plugin replaces it "
                    "only by saying why (ScipyWrapper(replaces_jax=...))"
                )
            if any(
                o.plugin == plugin.name for o in self._scipy.get((wrapper.scope, wrapper.name), [])
            ):
                return f"jext.scipy.{wrapper.scope}.{wrapper.name} registered twice"
        for wrapper in staged:
            self._scipy.setdefault((wrapper.scope, wrapper.name), []).append(
                Owned(wrapper, plugin.name)
            )
        return None

    # --- reading -----------------------------------------------------------------------------

    def primitives(self) -> Mapping[str, Primitive[..., Any]]:
        self.load()
        return MappingProxyType({n: self._primitive(n) for n in sorted(self._primitives)})

    def primitive_owners(self) -> Mapping[str, str]:
        self.load()
        return MappingProxyType(dict(sorted(self._primitives.items())))

    @staticmethod
    def _primitive(name: str) -> Primitive[..., Any]:
        with _host.DEFINITIONS_LOCK:
            return _host.DEFINITIONS[name]

    def get_primitive(self, name: str) -> Primitive[..., Any]:
        self.load()
        if name not in self._primitives:
            raise UnknownNameError(
                f"no registered primitive is named {name!r}.{self.broken_owner_hint(name)}"
                f"{close_matches(name, self._primitives)} See `jext list` for what is installed."
            )
        return self._primitive(name)

    def primitive(self, name: str) -> Primitive[..., Any]:
        """:class:`jext._host.Host`: the registered primitive ``name`` (unpickling)."""
        return self.get_primitive(name)

    def may_replace(self, name: str, known_module: str, new_module: str) -> bool:
        """:class:`jext._host.Host`: see :meth:`definition_may_replace`."""
        return self.definition_may_replace(name, known_module, new_module)

    def broken_owner_hint(self, name: str) -> str:
        """`` Its namespace's owner, plugin 'x' (...), failed: why.`` or an empty string."""
        owner = self._owner_of(name)
        entry = self._plugins.get(owner[1]) if owner is not None else None
        if entry is None or entry.status == "loaded":
            return ""
        return f" Its namespace's owner, {entry.label()}, is {entry.status}: {entry.error}."

    def rng_impls(self) -> Mapping[str, Owned[Any]]:
        self.load()
        return MappingProxyType(dict(sorted(self._rng_impls.items())))

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
        if _namespaces_of(name)[-1:] == [CORE_NAMESPACE]:
            self._load_core()
            found = self._rng_impls.get(name)
            if found is not None and self._plugins[found.plugin].core:
                return found
        self.load()
        return self._rng_impls.get(name)

    def core_ffi_target(self, name: str, platform: str) -> bool:
        """Whether a core plugin registered the FFI target ``name`` on ``platform``.

        Loads only jext's core (as :meth:`rng_impl` does for core names): jext's own
        primitives use native kernels without importing any other plugin, and never one
        that a third-party plugin registered under the same name.  A core plugin that
        failed (jext-rng-native built for a newer FFI API, say) is reported here as by any
        reader: its users fall back to the XLA path, and must hear why.
        """
        self._load_core()
        if not self._all.running and not getattr(self._unreported, "on", False):
            self._report()
        owned = _host.FFI_TARGETS.get((name, platform))
        entry = None if owned is None else self._plugins.get(owned.plugin)
        return entry is not None and entry.core

    def ffi_targets(self) -> Mapping[tuple[str, str], Owned[FfiTarget]]:
        """Every registered FFI handler by ``(target name, platform)``, and its plugin."""
        self.load()
        mine = {k: o for k, o in _host.FFI_TARGETS.items() if o.plugin in self._plugins}
        return MappingProxyType(dict(sorted(mine.items())))

    def scipy_wrappers(self) -> Mapping[tuple[str, str], Sequence[Owned[Any]]]:
        self.load()
        return MappingProxyType({k: tuple(v) for k, v in sorted(self._scipy.items())})

    def plugins(self) -> list[PluginInfo]:
        """Every plugin with its status; failures are data here, not warnings or errors."""
        self._ensure_loaded()
        notes = {k: list(v) for k, v in self._notes.items()}
        for i, low in enumerate(self._lowerings):
            if i not in self._applied_lowerings:
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
            for p in sorted(self._plugins.values(), key=lambda p: p.name)
        ]

    def problems(self) -> list[str]:
        """Every failure, one line each (as warned)."""
        self._ensure_loaded()
        return list(self._problems)


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
    with the entry-point plugins', in order of plugin name.
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
