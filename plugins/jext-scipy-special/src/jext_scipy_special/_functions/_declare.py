"""How the family modules declare their ``ScipyWrapper`` records (shared defaults)."""

from __future__ import annotations

from typing import Any

from jext.scipy import Domain, ScipyWrapper

__all__ = ["TOL", "TOLERANCES", "declare", "special_wrapper"]

#: ``(rtol, atol)`` per dtype: relative error with an absolute floor near zeros.
TOL = {"float64": (1e-12, 1e-300), "float32": (5e-6, 1e-30)}
TOLERANCES = TOL


def declare(name: str, function: Any, **options: Any) -> ScipyWrapper:
    """``ScipyWrapper`` for ``scipy.special.<name>`` with the plugin's default tolerances."""
    options.setdefault("tolerances", TOL)
    return ScipyWrapper(
        scope=options.pop("scope", "special"),
        name=name,
        mirrors=options.pop("mirrors", f"scipy.special.{name}"),
        function=function,
        **options,
    )


def special_wrapper(
    name: str, function: Any, domains: tuple[Domain, ...], **options: Any
) -> ScipyWrapper:
    """:func:`declare` with the domains positional (the Bessel, elliptic and gamma families)."""
    return declare(name, function, domains=domains, **options)
