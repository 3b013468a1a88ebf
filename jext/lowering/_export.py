"""Exporting a function for several platforms at once, reporting which rule each platform used."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import jax

from jext import _host, _jax
from jext.lowering._ffi import ffi_targets
from jext.primitives._lowering import rule_ffi_targets
from jext.primitives._primitive import Primitive, defined_primitives

__all__ = ["ALL_PLATFORMS", "PlatformExport", "export", "primitives_in"]

ALL_PLATFORMS: tuple[str, ...] = _jax.PLATFORMS
"""Every platform jext lowers for: ``("cpu", "cuda", "rocm", "tpu")``."""


@dataclass(frozen=True, slots=True)
class PlatformExport:
    """A multi-platform export and, per platform, the rule each jext primitive lowered with."""

    exported: jax.export.Exported
    """The ``jax.export.Exported`` module; it picks a platform's code when called."""

    rules: Mapping[str, Mapping[str, str]]
    """``rules[platform][primitive name]``: ``"reference"`` or the rule's qualified name."""

    custom_calls: tuple[str, ...] = ()
    """The custom-call targets in the module that ``jax.export`` refuses by default and
    jext allowed (FFI targets of jext rules and plugins, Pallas GPU kernels), sorted."""

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(self.exported.platforms)

    def call(self, *args: Any) -> Any:
        """Run the export on the current backend (its own platform's code)."""
        return _jax.call_exported(self.exported, *args)


def primitives_in(fn: Callable[..., Any], *args: Any) -> list[Primitive[..., Any]]:
    """The jext primitives whose equations ``fn`` at ``args`` contains (any depth, in order)."""
    by_jax = {id(p.jax_primitive): p for p in defined_primitives().values()}
    closed = jax.make_jaxpr(fn)(*args)
    found: dict[str, Primitive[..., Any]] = {}
    for eqn in _jax.iter_equations(closed):
        prim = by_jax.get(id(eqn.primitive))
        if prim is not None:
            found.setdefault(prim.name, prim)
    return list(found.values())


def export(
    fn: Callable[..., Any], *args: Any, platforms: Sequence[str] = ALL_PLATFORMS
) -> PlatformExport:
    """Export ``fn`` at ``args`` (arrays or ``jax.ShapeDtypeStruct``) for each of ``platforms``.

    No accelerator is needed: every platform's rule is lowered on this machine.  Raises
    :class:`jext.LoweringError` if a jext primitive in ``fn`` has no rule for one of
    the platforms.  The report is read from each primitive's rules record, so it is the
    same however often ``fn`` is exported, batched or differentiated.

    Example:

    >>> import jax.numpy as jnp, jext.lowering
    >>> result = jext.lowering.export(jnp.sin, jnp.ones(3))
    >>> result.rules["tpu"]  # no jext primitive in jnp.sin
    {}
    >>> result.call(jnp.zeros(3)).tolist()  # runs the CPU code
    [0.0, 0.0, 0.0]
    """
    specs = [
        a
        if isinstance(a, jax.ShapeDtypeStruct)
        else _jax.shape_dtype_struct(jax.numpy.shape(a), jax.numpy.result_type(a))
        for a in args
    ]
    used = primitives_in(fn, *specs)
    # FFI and Pallas GPU custom calls are refused by jax.export unless allowed by name:
    # a jext rule that emits one is deliberate.  The module then runs only where the same
    # plugin (FFI) or jax version (Pallas) is installed.
    # Reading the plugins' targets loads plugins, which jext's own primitives never do.
    plugins = any(not prim.name.startswith("jext.") for prim in used)
    allowed = _allowed_custom_calls(plugins)
    try:
        exported = _jax.export(fn, specs, platforms, custom_calls=allowed)
    except ValueError as err:
        # A hand-written rule's ffi_call is known once its trace is read, which lowering
        # does: exporting again then allows it.
        again = _allowed_custom_calls(plugins)
        if _REFUSED not in str(err) or again == allowed:
            raise
        allowed = again
        exported = _jax.export(fn, specs, platforms, custom_calls=allowed)
    rules = {
        platform: {prim.name: prim.lowering_platforms().get(platform, "missing") for prim in used}
        for platform in platforms
    }
    called = set(_CUSTOM_CALL.findall(exported.mlir_module()))
    custom_calls = tuple(sorted(called.intersection(allowed)))
    return PlatformExport(exported, rules, custom_calls)


# The start of jax.export's message for a custom call it does not allow (jax 0.8 to 0.11).
_REFUSED: Final = "Cannot serialize code with custom calls"
# A custom call's target in the module's text: @name, or @"name" where it has `$` or `.`.
_CUSTOM_CALL: Final = re.compile(r'stablehlo\.custom_call @"?([^"(\s]+)')


def _allowed_custom_calls(plugins: bool) -> tuple[str, ...]:
    """The custom-call targets export allows: every FFI target of a jext rule seen so far
    and, with ``plugins``, every target a plugin registered (on any platform)."""
    targets = set(ffi_targets()) | rule_ffi_targets()
    if plugins:
        _host.host().load_plugins()
        targets.update(name for name, _ in _host.FFI_TARGETS)
    return (*sorted(targets), *_jax.PALLAS_GPU_CUSTOM_CALLS)
