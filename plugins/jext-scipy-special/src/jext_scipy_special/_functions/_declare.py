"""The one way this plugin declares a SciPy wrapper: :func:`declare`, at the end of the
module that implements the function, in that module's ``WRAPPERS``."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

from jext.scipy import Domain, ScipyWrapper

__all__ = ["TOL", "declare", "quiet_oracle", "scipy_function"]

#: ``(rtol, atol)`` per dtype: relative error with an absolute floor near zeros.
TOL = {"float64": (1e-12, 1e-300), "float32": (5e-6, 1e-30)}


def declare(
    name: str,
    function: Any,
    *,
    domains: tuple[Domain, ...],
    scope: str = "special",
    tolerances: dict[str, tuple[float, float]] = TOL,
    **options: Any,
) -> ScipyWrapper:
    """The wrapper ``jext.scipy.<scope>.<name>``, held to ``scipy.<scope>.<name>`` (a
    method of a distribution for ``scope="stats"``: ``declare("t.cdf", ..., scope="stats")``)
    unless ``oracle=`` says otherwise.  ``options`` are :class:`~jext.scipy.ScipyWrapper`'s
    other fields."""
    return ScipyWrapper(
        scope=scope,
        name=name,
        mirrors=f"scipy.{scope}.{name}",
        function=function,
        domains=domains,
        tolerances=tolerances,
        **options,
    )


def scipy_function(dotted: str) -> Callable[..., Any]:
    """``scipy.<...>`` named by ``dotted`` (``"special.pdtr"``, ``"stats.poisson.isf"``),
    looked up at each call: SciPy is needed by the checks only, never to import the plugin."""
    module, *attributes = dotted.split(".")

    def call(*args: Any) -> Any:
        found: Any = importlib.import_module(f"scipy.{module}")
        for attribute in attributes:
            found = getattr(found, attribute)
        return found(*args)

    return call


def quiet_oracle(dotted: str, *ignored: type[Warning]) -> Callable[..., Any]:
    """:func:`scipy_function` without the warnings of the given categories (every warning if
    none is given): SciPy warns where it floors or truncates a count, as the wrappers do
    silently."""
    fn = scipy_function(dotted)

    def oracle(*args: Any) -> Any:
        with warnings.catch_warnings():
            for category in ignored or (Warning,):
                warnings.simplefilter("ignore", category)
            return fn(*args)

    return oracle
