"""Plugin discovery from installed metadata, and who owns which namespace.

Everything here is read without importing a plugin: entry points, declared namespaces,
and the rules that settle ownership (never by order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import Distribution, EntryPoint, PackageNotFoundError, distribution
from importlib.metadata import entry_points as _entry_points
from typing import Final, Literal

from jext import hookspecs
from jext._host import rng_native_wanted

__all__ = [
    "CORE_NAMESPACE",
    "CORE_PLUGINS",
    "ENV_DISABLE_AUTOLOAD",
    "ENV_DISABLE_PLUGINS",
    "ENV_PLUGINS",
    "NAMESPACE_GROUP",
    "OPTIONAL_CORE_PLUGINS",
    "Discovery",
    "Impl",
    "Plugin",
    "PluginStatus",
    "claimed_namespaces",
    "default_namespace",
    "discover",
    "env_names",
    "ffi_name_in",
    "is_namespace",
    "jext_distribution",
    "metadata_owner_package",
    "module_of",
    "namespaces_of",
    "optional_core_plugin",
    "settle",
]

ENV_DISABLE_AUTOLOAD: Final = "JEXT_DISABLE_PLUGIN_AUTOLOAD"
"""Set to 1: load no entry points (plugins can still be registered in code)."""
ENV_PLUGINS: Final = "JEXT_PLUGINS"
"""A comma-separated list: load only these entry-point plugins."""
ENV_DISABLE_PLUGINS: Final = "JEXT_DISABLE_PLUGINS"
"""A comma-separated list: do not load these entry-point plugins."""
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
CORE_PLUGINS: Final = (("jext-rng", "jext._bundled_rng_plugin", (CORE_NAMESPACE,)),)
# Modules that were the core plugin's: an older jext's metadata may name them in entry points.
_FORMER_CORE_MODULES: Final = ("jext.rng_impls._plugin",)
# Optional core plugins: (name, module, distribution).  Loaded with the core where their
# distribution is installed (it has no entry point), so that core primitives can use what
# they register whatever the plugin switches say; ENV_RNG_NATIVE=0 leaves jext-rng-native
# out.  See docs/rng.md.
OPTIONAL_CORE_PLUGINS: Final = (("jext-rng-native", "jext_rng_native", "jext-rng-native"),)

PluginStatus = Literal["loaded", "error", "disabled"]

Impl = tuple[Callable[..., object], tuple[str, ...]]
"""A hook implementation: the function, and the argument names it takes."""


def default_namespace(plugin_name: str) -> str | None:
    """The namespace a plugin owns by its name: ``jext-mylib`` owns ``jext_mylib``.

    ``-`` becomes ``_``; None when the result is not ASCII dot-separated identifiers.
    """
    candidate = plugin_name.replace("-", "_")
    return candidate if is_namespace(candidate) else None


def is_namespace(name: str) -> bool:
    # ASCII only: a namespace spelt with a Cyrillic "\u0435" must not pass for "jext".
    return name.isascii() and all(part.isidentifier() for part in name.split("."))


def ffi_name_in(target: str, namespace: str) -> bool:
    """Whether the FFI target name ``target`` lies in ``namespace`` (``ns_*`` or ``ns.*``)."""
    return target.startswith((namespace + ".", namespace.replace(".", "_") + "_"))


def namespaces_of(name: str) -> list[str]:
    """The namespaces ``name`` lies in, innermost first: ``a.b.c`` -> ``a.b``, ``a``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


@dataclass(slots=True)
class Plugin:
    """One plugin as jext loads it: where it comes from, what it claims, how it fares."""

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
    impls: dict[str, Impl] = field(default_factory=dict)  # by hook name
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

    def copy(self) -> Plugin:
        """A copy to roll back to (the fields a load changes are replaced, never mutated)."""
        return dataclasses.replace(self)


def env_names(value: str | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(n.strip() for n in value.split(",") if n.strip())


def module_of(value: str) -> str:
    return value.partition(":")[0].strip()


def jext_distribution() -> Distribution | None:
    try:
        return distribution(hookspecs.PROJECT_NAME)
    except PackageNotFoundError:  # run from a source tree
        return None


def optional_core_plugin(name: str, module: str, dist_name: str) -> Plugin | None:
    """The optional core plugin's entry where its distribution is installed and wanted."""
    if not rng_native_wanted():
        return None
    try:
        dist = distribution(dist_name)
    except PackageNotFoundError:
        return None
    entry = Plugin(name, dist, core=True, module_name=module)
    entry.loader = lambda: __import__(module, fromlist=["_"])
    return entry


@dataclass(frozen=True, slots=True)
class Discovery:
    """What the installed metadata says, read without importing any plugin."""

    plugins: tuple[EntryPoint, ...]  # the plugin entry points, by name
    namespaces: Mapping[str, tuple[str, ...]]  # plugin name -> the namespaces it declares
    problems: tuple[str, ...]  # declarations that name no plugin


def discover(group: str) -> Discovery:
    core_modules = {*(module for _, module, _ in CORE_PLUGINS), *_FORMER_CORE_MODULES}
    found = sorted(_entry_points(group=group), key=lambda e: e.name)
    # jext's own metadata from before its RNGs became core still names the core module.
    found = [ep for ep in found if module_of(ep.value) not in core_modules]
    namespaces: dict[str, list[str]] = {}
    problems: list[str] = []
    for ns in sorted(_entry_points(group=f"{group}.namespaces"), key=lambda e: e.name):
        dist = ns.dist.name if ns.dist is not None else None
        same_dist = [ep for ep in found if ep.dist is not None and ep.dist.name == dist]
        same_module = [ep for ep in same_dist if module_of(ep.value) == module_of(ns.value)]
        targets = same_module or (same_dist if len(same_dist) == 1 else [])
        if not is_namespace(ns.name):
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
    return Discovery(tuple(found), {k: tuple(v) for k, v in namespaces.items()}, tuple(problems))


def settle(
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
        outer = next((o for o in namespaces_of(ns) if owners.get(o, owner) != owner), None)
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


def claimed_namespaces(name: str, declared: Iterable[str]) -> tuple[str, ...]:
    """The namespaces plugin ``name`` claims: its default one first, then ``declared``."""
    default = default_namespace(name)
    return tuple(dict.fromkeys([*([default] if default else []), *declared]))


def metadata_owner_package(found: Discovery, name: str) -> str | None:
    """The top-level package of the plugin owning ``name``'s namespace, from metadata."""
    core: list[tuple[str, tuple[str, ...], bool]] = [(n, ns, True) for n, _, ns in CORE_PLUGINS]
    core += [(ep.name, claimed_namespaces(ep.name, found.namespaces.get(ep.name, ())), False)
             for ep in found.plugins]  # fmt: skip
    owners, _ = settle(core, repr)
    modules = {n: m for n, m, _ in CORE_PLUGINS}
    modules.update((ep.name, module_of(ep.value)) for ep in found.plugins)
    for ns in namespaces_of(name):
        if ns in owners:
            return modules[owners[ns]].split(".")[0]
    return None
