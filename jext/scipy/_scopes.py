"""Scoped namespaces ``jext.scipy.<module>``: plugin wrappers over ``jax.scipy``'s own functions."""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

import jax

from jext._errors import JextError
from jext._registry import Owned, Registry, close_matches, registry
from jext.scipy._jax_scipy import in_jax, jax_names
from jext.scipy._wrapper import ScipyWrapper

__all__ = [
    "ENV_PREFER",
    "KNOWN_SCOPES",
    "EntryStatus",
    "ScipyConflictError",
    "ScipyFunction",
    "ScopeCoverage",
    "ScopeEntry",
    "coverage",
    "entries",
    "in_jax",
    "jax_names",
    "lookup",
    "module_dir",
    "module_getattr",
    "scipy_callables",
    "scope_module",
]

KNOWN_SCOPES: Final = ("special", "stats", "linalg", "signal")
"""Scopes with a module file (``jext/scipy/special.py``, ...); others are made on demand."""

ENV_PREFER: Final = "JEXT_SCIPY_PREFER"
"""``special.ellipk=plugin-a,stats.foo=plugin-b``: which plugin wins a name two provide."""

EntryStatus = Literal["plugin", "jax", "replacement", "conflict"]


class ScipyFunction(Protocol):
    """What a name in a ``jext.scipy`` scope is, statically: a function returning an array."""

    def __call__(self, *args: Any, **kwargs: Any) -> jax.Array: ...


class ScipyConflictError(JextError, AttributeError):
    """Two plugins provide the same ``jext.scipy`` name and nothing says which wins."""


@dataclass(frozen=True, slots=True)
class ScopeEntry:
    """One name in a scope as ``jext list`` shows it."""

    scope: str
    name: str
    status: EntryStatus
    providers: tuple[str, ...]  # plugin names; ("jax",) for jax.scipy's own
    mirrors: str | None
    note: str = ""


def _preferences() -> dict[tuple[str, str], str]:
    prefs: dict[tuple[str, str], str] = {}
    for item in os.environ.get(ENV_PREFER, "").split(","):
        if "=" in item and "." in item.split("=", 1)[0]:
            key, plugin = item.split("=", 1)
            scope, name = key.strip().split(".", 1)
            prefs[(scope, name)] = plugin.strip()
    return prefs


def _winner(scope: str, name: str, owners: Sequence[Owned[Any]]) -> Owned[Any] | None:
    if len(owners) == 1:
        return owners[0]
    preferred = _preferences().get((scope, name))
    return next((o for o in owners if o.plugin == preferred), None)


def lookup(scope: str, name: str) -> ScipyFunction:
    """The function ``jext.scipy.<scope>.<name>``: a plugin's wrapper, else ``jax.scipy``'s."""
    owners = registry().scipy_wrappers().get((scope, name), ())
    if owners:
        winner = _winner(scope, name, owners)
        if winner is None:
            plugins = ", ".join(repr(o.plugin) for o in owners)
            raise ScipyConflictError(
                f"jext.scipy.{scope}.{name} is provided by plugins {plugins}, and neither wins; "
                f"choose one with {ENV_PREFER}={scope}.{name}=<plugin> or uninstall one"
            )
        wrapper: ScipyWrapper = winner.item
        public: ScipyFunction = wrapper.public
        return public
    own = jax_names(scope)
    methods = sorted(
        n.partition(".")[2]
        for (s, n) in registry().scipy_wrappers()
        if s == scope and n.startswith(f"{name}.")
    )
    if methods:
        namespace: ScipyFunction = _distribution(scope, name, methods)
        return namespace
    if name in own:
        fn: ScipyFunction = own[name]
        return fn
    known = sorted({n for (s, n) in registry().scipy_wrappers() if s == scope} | set(own))
    raise AttributeError(
        f"module 'jext.scipy.{scope}' has no attribute {name!r}: no installed plugin provides "
        f"it and jax.scipy.{scope} has no such function.{close_matches(name, known)}"
    )


def _distribution(scope: str, name: str, methods: Sequence[str]) -> Any:
    """``jext.scipy.<scope>.<name>`` for a distribution some plugin adds methods to.

    A namespace holding ``jax.scipy.<scope>.<name>``'s own functions and the plugins'
    ``"<name>.<method>"`` wrappers (which win a name both have only with ``replaces_jax``,
    as for any other name; ``jext list`` shows it).
    """
    namespace = types.SimpleNamespace()
    base = jax_names(scope).get(name)
    if isinstance(base, types.ModuleType):
        for attr in dir(base):
            obj = getattr(base, attr)
            if not attr.startswith("_") and callable(obj) and not isinstance(obj, type):
                setattr(namespace, attr, obj)
    for method in methods:
        setattr(namespace, method, lookup(scope, f"{name}.{method}"))
    return namespace


def entries(scope: str | None = None, *, reg: Registry | None = None) -> list[ScopeEntry]:
    """Every name in ``scope`` (or in every scope with a name), with provider and status."""
    wrappers = (reg or registry()).scipy_wrappers()
    scopes = [scope] if scope else sorted({s for s, _ in wrappers} | set(KNOWN_SCOPES))
    out: list[ScopeEntry] = []
    for s in scopes:
        own = jax_names(s)
        plugin_names = {n for (sc, n) in wrappers if sc == s}
        for name in sorted(plugin_names | set(own)):
            owners = wrappers.get((s, name), ())
            if not owners:
                out.append(ScopeEntry(s, name, "jax", ("jax",), f"scipy.{s}.{name}"))
                continue
            providers = tuple(o.plugin for o in owners)
            winner = _winner(s, name, owners)
            if winner is None:
                out.append(
                    ScopeEntry(
                        s, name, "conflict", providers, owners[0].item.mirrors, "neither wins"
                    )
                )
                continue
            wrapper: ScipyWrapper = winner.item
            if in_jax(s, name):
                note = f"replaces jax.scipy.{s}.{name}: {wrapper.replaces_jax}"
                out.append(ScopeEntry(s, name, "replacement", providers, wrapper.mirrors, note))
            else:
                out.append(ScopeEntry(s, name, "plugin", providers, wrapper.mirrors))
    return out


@dataclass(frozen=True, slots=True)
class ScopeCoverage:
    """How many of ``scipy.<scope>``'s public callables ``jext.scipy.<scope>`` provides."""

    scope: str
    scipy_version: str | None  # None: SciPy (or this module of it) is not installed
    callables: int  # the names in scipy.<scope>.__all__ that are callable
    from_jax: int  # covered by jax.scipy's own functions
    from_plugins: int  # covered by plugins (replacements of jax.scipy's included)
    missing: tuple[str, ...]

    @property
    def covered(self) -> int:
        return self.from_jax + self.from_plugins


def scipy_callables(scope: str) -> tuple[str | None, list[str]]:
    """SciPy's version and ``scipy.<scope>``'s public callables (``None, []`` without it)."""
    try:
        scipy = importlib.import_module("scipy")
        module = importlib.import_module(f"scipy.{scope}")
    except ImportError:
        return None, []
    # A set: SciPy 1.17's special.__all__ lists gammaln twice (359 entries, 358 names).
    names = set(getattr(module, "__all__", None) or [n for n in dir(module) if n[:1] != "_"])
    public = [
        n
        for n in names
        if callable(getattr(module, n, None))
        and not isinstance(getattr(module, n), types.ModuleType)
    ]
    return str(scipy.__version__), sorted(public)


def coverage(listed: Sequence[ScopeEntry]) -> list[ScopeCoverage]:
    """Per scope of ``listed`` (see :func:`entries`), the SciPy callables it provides.

    A name counts when the scope has it, or for a distribution (``stats.gamma``) when the
    scope has any of its methods (``gamma.ppf``); a name two plugins provide with neither
    chosen (a conflict) does not count.
    """
    by_scope: dict[str, dict[str, str]] = {}
    for e in listed:
        if e.status != "conflict":
            head = e.name.partition(".")[0]
            kinds = by_scope.setdefault(e.scope, {})
            # A plugin's method of a distribution jax.scipy has still leaves it jax's.
            if kinds.get(head) != "jax":
                kinds[head] = "jax" if e.status == "jax" else "plugins"
    out = []
    for scope, kinds in sorted(by_scope.items()):
        version, public = scipy_callables(scope)
        have = [n for n in public if n in kinds]
        out.append(
            ScopeCoverage(
                scope,
                version,
                len(public),
                sum(1 for n in have if kinds[n] == "jax"),
                sum(1 for n in have if kinds[n] == "plugins"),
                tuple(n for n in public if n not in kinds),
            )
        )
    return out


def scope_module(scope: str) -> types.ModuleType:
    """The module ``jext.scipy.<scope>``, made on first use for a scope with no file."""
    if not scope.isidentifier() or scope.startswith("_"):
        raise AttributeError(f"module 'jext.scipy' has no attribute {scope!r}")
    qualified = f"jext.scipy.{scope}"
    if scope in KNOWN_SCOPES:
        return importlib.import_module(qualified)
    module = sys.modules.get(qualified)
    if module is None:
        module = types.ModuleType(qualified, f"SciPy's {scope} functions for JAX, from plugins.")
        vars(module).update(
            __getattr__=lambda name: module_getattr(scope, name),
            __dir__=lambda: module_dir(scope),
        )
        sys.modules[qualified] = module
    return module


def module_getattr(scope: str, name: str) -> ScipyFunction:
    """A scope module's ``__getattr__``: plugins load on first access."""
    if name.startswith("__"):
        raise AttributeError(f"module 'jext.scipy.{scope}' has no attribute {name!r}")
    return lookup(scope, name)


def module_dir(scope: str) -> list[str]:
    return sorted({e.name.partition(".")[0] for e in entries(scope)})
