"""What ``jax.scipy`` itself provides, read from JAX alone (no plugin, no registry)."""

from __future__ import annotations

import functools
import importlib
import types
from typing import Any

__all__ = ["in_jax", "jax_names"]


@functools.cache
def jax_names(scope: str) -> dict[str, Any]:
    """``jax.scipy.<scope>``'s public functions and submodules (empty if JAX has no such module)."""
    try:
        module = importlib.import_module(f"jax.scipy.{scope}")
    except ImportError:
        return {}
    out: dict[str, Any] = {}
    for name in dir(module):
        obj = getattr(module, name)
        if name.startswith("_"):
            continue
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith(f"jax.scipy.{scope}."):  # e.g. jax.scipy.stats.norm
                out[name] = obj
        elif callable(obj) and not isinstance(obj, type):
            out[name] = obj
    return out


def in_jax(scope: str, name: str) -> bool:
    """Whether ``jax.scipy.<scope>`` has ``name`` (``"chi2.cdf"``: ``jax.scipy.stats.chi2.cdf``)."""
    base, _, method = name.partition(".")
    own = jax_names(scope).get(base)
    if not method:
        return own is not None
    return isinstance(own, types.ModuleType) and callable(getattr(own, method, None))
