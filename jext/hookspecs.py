"""The hooks a jext plugin implements: what each receives, when it is called, and in which order.

A plugin is a module that marks functions with :data:`jext.hookimpl` and is named in its
distribution's ``[project.entry-points.jext]`` table::

    # pyproject.toml
    [project.entry-points.jext]
    myplugin = "jext_myplugin"

    # jext_myplugin/__init__.py
    import jext

    @jext.hookimpl
    def jext_register_primitives(registrar: jext.PrimitiveRegistrar) -> None:
        registrar.add(my_primitive)

jext imports plugins lazily, the first time anything reads the registry
(:func:`jext.load_plugins`, :func:`jext.primitives`, ``jext list``, ...), never at
``import jext``.  jext's core plugin ``jext-rng`` (namespace ``jext``) goes first, whatever
the plugin switches say.  Then loading runs in phases, each over every loaded plugin
(entry-point and code-registered alike) in order of plugin name before the next phase
starts:

1. settle namespace ownership from the installed metadata, then import every plugin
   module (a plugin whose claim failed is not imported);
2. :func:`jext_register_primitives`;
3. :func:`jext_register_ffi_targets` (native handlers, after the primitives so that a
   primitive whose handler fails to load stays registered with its other rules);
4. :func:`jext_register_lowerings` (so a rule finds its primitive whatever plugin
   defines it);
5. :func:`jext_register_rng_impls`;
6. :func:`jext_register_scipy_wrappers`.

Each hook is called once per plugin with a registrar of its own, so jext knows which
plugin registered what.  The argument is named ``registrar``; ``registry``, its former
name, still works.  What a plugin registers in one hook is committed only if the
hook returns normally and nothing in it is invalid or already owned by another plugin;
otherwise none of it is, the plugin's status becomes ``error`` with a one-line reason,
and every other plugin carries on.  Hooks return nothing; their return values are
ignored.  pluggy's ``wrapper``, ``hookwrapper``, ``tryfirst`` and ``trylast`` options are
refused at load (jext calls each hook itself, once per plugin, in name order).  A hook
that is renamed keeps its former name as a spec with pluggy's ``warn_on_impl``: a plugin
implementing it still runs, as the new hook, and gets a ``DeprecationWarning`` naming the
new name (:data:`RENAMED_HOOKS`).

Names are owned by namespace: a primitive or RNG implementation ``"<ns>.<name>"`` must lie
in a namespace the plugin owns, by its entry-point name (``jext-mylib`` owns
``jext_mylib``) or declared in the ``jext.namespaces`` entry-point group
(``mylib = "jext_mylib"``).  Vendor lowerings may target any primitive; SciPy wrappers
carry SciPy's names and are not namespaced.  See docs/plugins.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

import pluggy

if TYPE_CHECKING:
    from jext._registrars import (
        FfiTargetRegistrar,
        LoweringRegistrar,
        PrimitiveRegistrar,
        RngImplRegistrar,
        ScipyRegistrar,
    )

__all__ = [
    "PROJECT_NAME",
    "RENAMED_HOOKS",
    "hookimpl",
    "hookspec",
    "jext_register_ffi_targets",
    "jext_register_lowerings",
    "jext_register_primitives",
    "jext_register_rng_impls",
    "jext_register_scipy_wrappers",
]

PROJECT_NAME: Final = "jext"
"""The pluggy project name and the entry-point group plugins are discovered in."""

hookspec: Final = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl: Final = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a plugin's hook implementation: ``@jext.hookimpl``."""

RENAMED_HOOKS: Final[Mapping[str, str]] = MappingProxyType({})
"""Former hook names and the hooks they became (none yet).

Each former name also has a spec here, declared with
``@hookspec(warn_on_impl=DeprecationWarning("jext_old is deprecated: implement jext_new"))``
and the new hook's arguments.
"""


# --- primitives ----------------------------------------------------------------------------


@hookspec
def jext_register_primitives(registrar: PrimitiveRegistrar) -> None:
    """Register the plugin's primitives with ``registrar.add(prim)``.

    Called once per plugin, in phase 2, before any lowering hook.  ``prim`` is a
    :class:`jext.Primitive` (made with :func:`jext.primitive`); its name must not be
    registered by another plugin.  Define the primitive at module level (import
    time) and only register it here.
    """


@hookspec
def jext_register_ffi_targets(registrar: FfiTargetRegistrar) -> None:
    """Register the plugin's native XLA FFI handlers with ``registrar.add(name, handler)``.

    Called once per plugin, in phase 3: after every plugin's primitives, before any
    lowering hook.  ``registrar.add(name, handler, platform="cpu" | "cuda" | "rocm",
    batch_partitionable=False)`` takes a PyCapsule from a compiled extension module, or a
    ``ctypes`` function from ``registrar.load_library(path)``.  A target's name lies in
    one of the plugin's namespaces, ``<namespace>_<kernel>`` (``mylib_softplus``): XLA has
    one table of handler names for the whole process, jaxlib's own included, so a name
    outside them fails the plugin before it reaches XLA.  Load libraries and import
    extension modules here, not at module level: nothing native is loaded at ``import
    jext``, and a library that fails to load (``load_library`` raises
    :class:`jext.RegistrationError` naming it and the OS error) fails this plugin in one
    line while its primitives stay registered and their other platforms' rules keep
    working.  Register only the handlers that were built (e.g. skip CUDA ones on a machine
    built without ``nvcc``); a lowering rule (:func:`jext.lowering.ffi_rule`) exports
    without its handler, and needs it only to run.
    """


@hookspec
def jext_register_lowerings(registrar: LoweringRegistrar) -> None:
    """Add platform lowering rules to primitives, usually ones another package defines.

    ``registrar.add_lowering(name, rule, platform=...)`` with ``platform`` one of
    ``"cpu"``, ``"cuda"``, ``"rocm"``, ``"gpu"``, ``"tpu"`` or None; ``rule`` as for
    :meth:`jext.Primitive.def_lowering` (``raw=True`` for an MLIR rule).  Called in
    phase 4, after every plugin's primitives and FFI targets.  A rule for a primitive
    no loaded plugin defines is kept as *unused*: ``jext list`` shows it as a note and
    the plugin stays ``loaded``; it is applied if that primitive is registered later.
    Rules are applied once every plugin's are in: a rule for another plugin's primitive
    fills only a platform its owner left to the reference; a clash with the owner's rule
    or another vendor's is reported (a :class:`jext.PluginWarning` naming both) and the
    user chooses with ``JEXT_LOWERING_PREFER=<primitive>:<platform>=<plugin>``.
    """


# --- random number generators ------------------------------------------------------------


@hookspec
def jext_register_rng_impls(registrar: RngImplRegistrar) -> None:
    """Register typed-key PRNG implementations with ``registrar.add(impl)``.

    Called in phase 5.  ``impl`` is a :class:`jext.random.RngImpl`; its name (namespaced
    ``"<lib>.<rng>"``) becomes usable as ``jext.random.key(seed, impl=name)``; its
    ``tag`` names its key type (``key<tag>``) and must be one no other impl has.
    """


# --- SciPy wrappers ----------------------------------------------------------------------


@hookspec
def jext_register_scipy_wrappers(registrar: ScipyRegistrar) -> None:
    """Register JAX versions of SciPy functions with ``registrar.add(wrapper)``.

    Called in phase 6.  ``wrapper`` is a :class:`jext.scipy.ScipyWrapper` naming its
    scope (``"special"``, ``"stats"``, ...), its name there and the SciPy function it
    mirrors; it becomes ``jext.scipy.<scope>.<name>``.
    """
