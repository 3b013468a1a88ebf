"""How a family module declares its ``ScipyWrapper`` registrations (one helper, one tolerance)."""

from __future__ import annotations

from typing import Any

from jext.scipy import Domain, ScipyWrapper

__all__ = ["TOLERANCES", "special_wrapper"]

#: Relative error with an absolute floor near zeros, per dtype.
TOLERANCES = {"float64": (1e-12, 1e-300), "float32": (5e-6, 1e-30)}


def special_wrapper(
    name: str, function: Any, domains: tuple[Domain, ...], **options: Any
) -> ScipyWrapper:
    """``jext.scipy.special.<name>`` mirroring ``scipy.special.<name>`` (default tolerances)."""
    return ScipyWrapper(
        scope="special",
        name=name,
        mirrors=f"scipy.special.{name}",
        function=function,
        domains=domains,
        tolerances=options.pop("tolerances", TOLERANCES),
        **options,
    )
