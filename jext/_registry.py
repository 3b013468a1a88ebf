"""The plugin registry: entry-point discovery, phased lazy loading, isolation of broken plugins."""

from __future__ import annotations

import difflib
import inspect
import os
import threading
import types
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import Distribution, entry_points
from types import MappingProxyType
from typing import Any, Final, Generic, Literal, TypeVar

import pluggy

from jext import hookspecs
from jext._errors import PluginError, UnknownNameError
from jext._registrars import (
    LoweringRegistrar,
    PendingLowering,
    PrimitiveRegistrar,
    RngImplRegistrar,
    ScipyRegistrar,
    _Registrar,
)
from jext.primitives._primitive import Primitive

__all__ = [
    "ENV_DISABLE_AUTOLOAD",
    "ENV_DISABLE_PLUGINS",
    "ENV_PLUGINS",
    "ENV_STRICT",
    "PluginInfo",
    "PluginStatus",
    "PluginWarning",
    "Registry",
    "close_matches",
    "get_primitive",
    "load_plugins",
    "plugins",
    "primitives",
    "register_plugin",
    "registry",
]

ENV_DISABLE_AUTOLOAD: Final = "JEXT_DISABLE_PLUGIN_AUTOLOAD"
"""Set to 1: load no entry points (plugins can still be registered in code)."""
ENV_PLUGINS: Final = "JEXT_PLUGINS"
"""A comma-separated list: load only these entry-point plugins."""
ENV_DISABLE_PLUGINS: Final = "JEXT_DISABLE_PLUGINS"
"""A comma-separated list: do not load these entry-point plugins."""
ENV_STRICT: Final = "JEXT_STRICT"
"""Set to 1: a broken plugin raises :class:`jext.PluginError` instead of a warning."""

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


@dataclass(frozen=True, slots=True)
class Owned(Generic[T]):
    """A registered item and the plugin that owns it."""

    item: T
    plugin: str


@dataclass(slots=True)
class _Plugin:
    name: str
    dist: Distribution | None  # None for a plugin registered in code
    module: object = None
    status: PluginStatus = "loaded"
    error: str | None = None
    hooks_run: bool = False
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
        if dist is None:
            return f"plugin {self.name!r} (registered in code)"
        return f"plugin {self.name!r} (distribution {dist} {version})"


@dataclass(slots=True)
class _Phase:
    hook: str
    registrar: type[_Registrar[Any]]
    commit: Callable[[_Plugin, list[Any]], str | None]  # returns a failure cause or None


def close_matches(name: str, candidates: Iterable[str]) -> str:
    """`` Did you mean 'a', 'b'?`` for the candidates close to ``name``, or an empty string."""
    matches = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.8)
    return f" Did you mean {', '.join(repr(m) for m in matches)}?" if matches else ""


def _env_names(value: str | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(n.strip() for n in value.split(",") if n.strip())


def _env_flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


class Registry:
    """Everything the loaded plugins registered; one per process (see :func:`registry`)."""

    def __init__(self, *, group: str = hookspecs.PROJECT_NAME) -> None:
        self._group = group
        self._lock = threading.RLock()
        self._loaded = False
        self._loading = False  # on the thread holding the lock
        pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        pm.add_hookspecs(hookspecs)
        # Each hook's argument names, as pluggy reads them from the hookspecs.
        self._spec_args: dict[str, tuple[str, ...]] = {
            name: tuple(caller.spec.argnames)
            for name, caller in vars(pm.hook).items()
            if isinstance(caller, pluggy.HookCaller) and caller.spec is not None
        }
        self._plugins: dict[str, _Plugin] = {}
        self._primitives: dict[str, Owned[Primitive[..., Any]]] = {}
        self._lowerings: list[PendingLowering] = []
        self._applied_lowerings: set[int] = set()  # indices into _lowerings
        self._rng_impls: dict[str, Owned[Any]] = {}
        self._scipy: dict[tuple[str, str], list[Owned[Any]]] = {}
        self._problems: list[str] = []
        self._phases = [
            _Phase("jext_register_primitives", PrimitiveRegistrar, self._commit_primitives),
            _Phase("jext_register_lowerings", LoweringRegistrar, self._commit_lowerings),
            _Phase("jext_register_rng_impls", RngImplRegistrar, self._commit_rng_impls),
            _Phase("jext_register_scipy_wrappers", ScipyRegistrar, self._commit_scipy),
        ]

    # --- loading -----------------------------------------------------------------------------

    def load(self) -> None:
        """Discover and load plugins once; later calls return at once (thread-safe).

        A plugin that reads the registry while it is being imported (e.g. calls a
        ``jext.scipy`` function at import time) sees what is registered so far.
        """
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                start = len(self._problems)
                if not _env_flag(os.environ.get(ENV_DISABLE_AUTOLOAD)):
                    self._import_entry_points()
                self._run_hooks([p for p in self._plugins.values() if not p.hooks_run])
                self._loaded = True
            finally:
                self._loading = False
            self._report(self._problems[start:])

    def register(self, plugin: object, name: str | None = None) -> None:
        """Register a plugin object (a module, class or instance with hook implementations).

        Before loading, it joins the others; after, its hooks run at once.
        """
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        with self._lock:
            if name in self._plugins:
                raise PluginError(f"a plugin named {name!r} is already registered")
            start = len(self._problems)
            entry = self._add_plugin(name, None, lambda: plugin)
            if self._loaded:
                self._run_hooks([entry])
            self._report(self._problems[start:])

    def _import_entry_points(self) -> None:
        only = _env_names(os.environ.get(ENV_PLUGINS))
        blocked = _env_names(os.environ.get(ENV_DISABLE_PLUGINS)) or frozenset()
        for ep in sorted(entry_points(group=self._group), key=lambda e: e.name):
            known = self._plugins.get(ep.name)
            if known is not None:
                other = _Plugin(ep.name, ep.dist)
                self._problems.append(
                    f"jext plugin name {ep.name!r} is declared by two distributions: "
                    f"{other.label()} is ignored, {known.label()} is loaded"
                )
                continue
            if ep.name in blocked or (only is not None and ep.name not in only):
                why = ENV_DISABLE_PLUGINS if ep.name in blocked else ENV_PLUGINS
                self._plugins[ep.name] = _Plugin(
                    ep.name, ep.dist, status="disabled", error=f"disabled by {why}"
                )
                continue
            self._add_plugin(ep.name, ep.dist, ep.load)

    def _add_plugin(
        self, name: str, dist: Distribution | None, load: Callable[[], object]
    ) -> _Plugin:
        entry = _Plugin(name, dist)
        self._plugins[name] = entry
        try:
            entry.module = load()
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as err:  # a plugin's import must never abort jext's
            self._fail(entry, f"import failed: {type(err).__name__}: {err}")
            return entry
        try:
            entry.impls = self._hook_impls(entry.module)
        except _InvalidPlugin as err:
            self._fail(entry, str(err))
        return entry

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
            spec_args = self._spec_args.get(hook)
            if spec_args is None:
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
                    self._fail(plugin, f"{phase.hook} raised {type(err).__name__}: {err}")
                    continue
                cause = phase.commit(plugin, registrar.staged())
                if cause is not None:
                    self._fail(plugin, f"{phase.hook}: {cause}")
        for plugin in plugins:
            plugin.hooks_run = True

    def _call(self, plugin: _Plugin, hook: str, registrar: _Registrar[Any]) -> None:
        impl = plugin.impls.get(hook)
        if impl is not None:
            function, argnames = impl
            function(**dict.fromkeys(argnames, registrar))

    def _fail(self, plugin: _Plugin, cause: str) -> None:
        plugin.status = "error"
        plugin.error = cause.splitlines()[0] if cause else "failed"
        self._problems.append(f"jext {plugin.label()}: {plugin.error}")

    def _report(self, problems: list[str]) -> None:
        if not problems:
            return
        if _env_flag(os.environ.get(ENV_STRICT)):
            raise PluginError("\n".join(problems))
        for line in problems:
            warnings.warn(line, PluginWarning, stacklevel=4)

    # --- committing what a plugin registered -------------------------------------------------

    def _owner_label(self, plugin: str) -> str:
        entry = self._plugins.get(plugin)
        return entry.label() if entry is not None else f"plugin {plugin!r}"

    def _commit_named(
        self, table: dict[str, Owned[Any]], plugin: _Plugin, staged: list[Any], what: str
    ) -> str | None:
        """Commit ``staged`` items by name into ``table``, all or none; a clash is the cause."""
        seen: set[str] = set()
        for item in staged:
            owner = table.get(item.name)
            if owner is not None:
                by = self._owner_label(owner.plugin)
                return f"{what} {item.name!r} is already registered by {by}"
            if item.name in seen:
                return f"{what} {item.name!r} registered twice"
            seen.add(item.name)
        for item in staged:
            table[item.name] = Owned(item, plugin.name)
        return None

    def _commit_primitives(self, plugin: _Plugin, staged: list[Primitive[..., Any]]) -> str | None:
        cause = self._commit_named(self._primitives, plugin, staged, "primitive")
        if cause is None:
            self._apply_lowerings()
        return cause

    def _commit_lowerings(self, plugin: _Plugin, staged: list[PendingLowering]) -> str | None:
        for low in staged:
            owner = self._primitives.get(low.primitive)
            if owner is not None:
                try:
                    owner.item.validate_lowering(low.rule, platform=low.platform, raw=low.raw)
                except Exception as err:
                    return str(err)
        self._lowerings.extend(staged)
        self._apply_lowerings()
        return None

    def _apply_lowerings(self) -> None:
        for i, low in enumerate(self._lowerings):
            owner = self._primitives.get(low.primitive)
            if i in self._applied_lowerings or owner is None:
                continue
            self._applied_lowerings.add(i)
            try:
                owner.item.def_lowering(low.rule, platform=low.platform, raw=low.raw)
            except Exception as err:  # a rule that waited for its primitive and does not fit it
                vendor = self._plugins.get(low.plugin)
                if vendor is not None:
                    self._fail(vendor, f"jext_register_lowerings: {err}")

    def _commit_rng_impls(self, plugin: _Plugin, staged: list[Any]) -> str | None:
        return self._commit_named(self._rng_impls, plugin, staged, "RNG implementation")

    def _commit_scipy(self, plugin: _Plugin, staged: list[Any]) -> str | None:
        if not staged:
            return None
        from jext.scipy._scopes import in_jax  # jext.scipy imports this module

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
        return MappingProxyType({n: o.item for n, o in sorted(self._primitives.items())})

    def primitive_owners(self) -> Mapping[str, str]:
        self.load()
        return MappingProxyType({n: o.plugin for n, o in sorted(self._primitives.items())})

    def get_primitive(self, name: str) -> Primitive[..., Any]:
        self.load()
        owned = self._primitives.get(name)
        if owned is None:
            raise UnknownNameError(
                f"no registered primitive is named {name!r}."
                f"{close_matches(name, self._primitives)} See `jext list` for what is installed."
            )
        return owned.item

    def rng_impls(self) -> Mapping[str, Owned[Any]]:
        self.load()
        return MappingProxyType(dict(sorted(self._rng_impls.items())))

    def scipy_wrappers(self) -> Mapping[tuple[str, str], Sequence[Owned[Any]]]:
        self.load()
        return MappingProxyType({k: tuple(v) for k, v in sorted(self._scipy.items())})

    def plugins(self) -> list[PluginInfo]:
        self.load()
        with self._lock:
            notes: dict[str, list[str]] = {}
            for i, low in enumerate(self._lowerings):
                if i not in self._applied_lowerings:
                    notes.setdefault(low.plugin, []).append(
                        f"unused lowering for {low.primitive!r} on "
                        f"{low.platform or 'every platform'}: no loaded plugin defines it"
                    )
            return [
                PluginInfo(p.name, *p.dist_info(), p.status, p.error, tuple(notes.get(p.name, ())))
                for p in sorted(self._plugins.values(), key=lambda p: p.name)
            ]

    def problems(self) -> list[str]:
        self.load()
        return list(self._problems)


_REGISTRY: Final = Registry()


def registry() -> Registry:
    """The process-wide registry that ``jext.primitives()`` and the CLI read."""
    return _REGISTRY


def load_plugins() -> None:
    """Discover plugins through the ``jext`` entry-point group and run their hooks, once.

    Idempotent and thread-safe.  A broken plugin is reported (a :class:`PluginWarning`,
    or a :class:`jext.PluginError` with ``JEXT_STRICT=1``) and the others still load.
    """
    _REGISTRY.load()


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Register a plugin in code, e.g. with ``JEXT_DISABLE_PLUGIN_AUTOLOAD=1``.

    ``plugin`` is a module or object with ``@jext.hookimpl`` functions; ``name``
    defaults to its ``__name__``.
    """
    _REGISTRY.register(plugin, name)


def primitives() -> Mapping[str, Primitive[..., Any]]:
    """Every primitive the loaded plugins registered, by name (read-only, sorted)."""
    return _REGISTRY.primitives()


def get_primitive(name: str) -> Primitive[..., Any]:
    """The registered primitive ``name``; :class:`jext.UnknownNameError` (a KeyError) if none."""
    return _REGISTRY.get_primitive(name)


def plugins() -> list[PluginInfo]:
    """Every discovered plugin: name, distribution, version, status and error, by name."""
    return _REGISTRY.plugins()
