"""How the family modules declare their ``ScipyWrapper`` records (shared defaults)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from jext.scipy import Domain, ScipyWrapper

__all__ = ["TOL", "TOLERANCES", "declare", "declare_stats", "special_wrapper", "stats_oracle"]

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


def stats_oracle(dist: str, method: str) -> Callable[..., Any]:
    """``scipy.stats.<dist>.<method>``, looked up at the first call: SciPy is needed only
    by the checks, never to import the plugin."""

    def oracle(*args: Any) -> Any:
        return getattr(getattr(importlib.import_module("scipy.stats"), dist), method)(*args)

    return oracle


def declare_stats(
    dist: str,
    method: str,
    function: Any,
    *,
    oracle: Callable[..., Any] | None = None,
    **options: Any,
) -> ScipyWrapper:
    """:func:`declare` for the method ``scipy.stats.<dist>.<method>``, in the ``stats`` scope
    (named ``"<dist>.<method>"``) and held to that method unless another ``oracle`` is given."""
    return declare(
        f"{dist}.{method}",
        function,
        scope="stats",
        mirrors=f"scipy.stats.{dist}.{method}",
        oracle=oracle or stats_oracle(dist, method),
        **options,
    )


def special_wrapper(
    name: str, function: Any, domains: tuple[Domain, ...], **options: Any
) -> ScipyWrapper:
    """:func:`declare` with the domains positional (the Bessel, elliptic and gamma families)."""
    return declare(name, function, domains=domains, **options)
