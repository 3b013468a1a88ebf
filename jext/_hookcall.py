"""Plugins' hook implementations, read through pluggy's public API, checked and called.

jext calls each hook itself, once per plugin in order of plugin name, so that it knows
which plugin registered what; pluggy's markers, specs and their options are read with
``PluginManager.parse_hookimpl_opts`` and ``HookImpl`` as pluggy itself reads them.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, final

import pluggy

from jext import hookspecs
from jext._discovery import Impl
from jext._host import close_matches

__all__ = ["HookCaller", "InvalidPlugin"]

# pluggy options jext's loader does not honour: refused, never silently ignored.
_UNSUPPORTED_OPTIONS: Final = ("wrapper", "hookwrapper", "tryfirst", "trylast")
# Former names of the hooks' arguments: implementations that take them still work.
_FORMER_ARGS: Final = {"registrar": "registry"}


class InvalidPlugin(Exception):
    """A plugin's hook implementations do not match the hookspecs."""


@dataclass(frozen=True, slots=True)
class _Spec:
    args: tuple[str, ...]  # the argument names an implementation may take
    renamed_to: str | None  # the hook this one is a former name of
    warning: Warning | None  # pluggy's warn_on_impl: given when a plugin implements it


@final
class HookCaller:
    """Reads and calls the hooks the specs module (``jext.hookspecs``) declares."""

    __slots__ = ("_pm", "_specs")

    def __init__(self, specs: types.ModuleType = hookspecs) -> None:
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(specs)
        renamed: Mapping[str, str] = getattr(specs, "RENAMED_HOOKS", {})
        self._specs: dict[str, _Spec] = {}
        for name, caller in vars(self._pm.hook).items():
            if isinstance(caller, pluggy.HookCaller) and caller.spec is not None:
                args = tuple(caller.spec.argnames)
                args += tuple(_FORMER_ARGS[a] for a in args if a in _FORMER_ARGS)
                self._specs[name] = _Spec(args, renamed.get(name), caller.spec.warn_on_impl)

    def implementations(self, plugin: object, plugin_name: str) -> dict[str, Impl]:
        """The ``@jext.hookimpl`` functions of ``plugin`` by hook name, checked against the specs.

        An implementation of a renamed hook comes back under the new name, after the
        spec's ``warn_on_impl`` warning (which names it) is given at the function.
        Raises :class:`InvalidPlugin` for an unknown hook, a pluggy option jext does not
        honour or an argument the hook does not pass.
        """
        attributes = (
            vars(plugin)
            if isinstance(plugin, types.ModuleType)
            else {n: getattr(plugin, n, None) for n in dir(plugin)}
        )
        impls: dict[str, Impl] = {}
        unknown: list[str] = []
        for attr, value in attributes.items():
            # Only functions carry the marker; asking a module for another attribute could
            # run its __getattr__ (a jext.scipy scope would load plugins inside loading).
            if not isinstance(value, types.FunctionType | types.MethodType):
                continue
            opts = self._pm.parse_hookimpl_opts(plugin, attr)
            if opts is None:
                continue
            hook = opts.get("specname") or attr
            unsupported = [o for o in _UNSUPPORTED_OPTIONS if opts.get(o)]
            if unsupported:
                options = ", ".join(f"{o}=True" for o in unsupported)
                raise InvalidPlugin(
                    f"hook implementation {attr} ({hook}) uses pluggy's {options}, which "
                    "jext does not support: jext calls every plugin's hook once, in order of "
                    "plugin name, with no wrappers; remove the option"
                )
            spec = self._specs.get(hook)
            if spec is None:
                if not opts.get("optionalhook"):
                    unknown.append(hook)
                continue
            argnames = tuple(pluggy.HookImpl(plugin, plugin_name, value, opts).argnames)
            extra = [a for a in argnames if a not in spec.args]
            if extra:
                raise InvalidPlugin(
                    f"invalid hook implementation: {hook} takes {list(argnames)}, but the hook "
                    f"passes only {list(spec.args)} (unknown: {extra})"
                )
            if spec.warning is not None:
                _warn_at(spec.warning, value)
            target = spec.renamed_to or hook
            if target in impls:
                raise InvalidPlugin(f"implements {target} twice (under its former name too)")
            impls[target] = (value, argnames)
        if unknown:
            hints = "".join(close_matches(u, self._specs) for u in unknown)
            raise InvalidPlugin(f"implements unknown hook(s) {sorted(unknown)}.{hints}")
        return impls

    @staticmethod
    def call(impl: Impl, registrar: Any) -> None:
        """Call one implementation with ``registrar`` under every name it takes it by."""
        function, argnames = impl
        function(**dict.fromkeys(argnames, registrar))


def _warn_at(warning: Warning, function: Any) -> None:
    """Give ``warning`` at ``function``'s definition, as pluggy does for ``warn_on_impl``."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is None:
        warnings.warn(warning, stacklevel=2)
        return
    warnings.warn_explicit(
        warning, type(warning), filename=code.co_filename, lineno=code.co_firstlineno
    )
