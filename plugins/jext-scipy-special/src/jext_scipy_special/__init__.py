"""scipy.special functions that jax.scipy lacks, registered as ``jext.scipy.special.<name>``.

Each wrapper states the SciPy function it mirrors, where ``jext check`` samples it, its
edge cases and its tolerances (relative error with an absolute floor near zeros):
1e-12 in float64 and 5e-6 in float32.  The functions added by family live in
``_functions/_<family>_family.py``, each with its own ``WRAPPERS`` list; they are
reached as ``jext.scipy.special.<name>`` (see ``docs/scipy-special.md``).
"""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

import jext
from jext.scipy import Domain, EdgeCase, ScipyWrapper
from jext_scipy_special._functions import (
    _bessel_family,
    _bessel_jy_family,
    _beta_family,
    _elliptic_family,
    _gamma_family,
    _misc_family,
    _poly_family,
    ellipe,
    ellipk,
    ellipkm1,
    erfcinv,
    gammaincinv,
    kv,
    kve,
    lambertw,
    stdtr,
)
from jext_scipy_special._functions._discrete import WRAPPERS as _DISCRETE
from jext_scipy_special._functions._elementary import WRAPPERS as _ELEMENTARY
from jext_scipy_special._functions._gammadist import WRAPPERS as _GAMMADIST
from jext_scipy_special._functions._ks_family import WRAPPERS as _KS_FAMILY
from jext_scipy_special._functions._stats import WRAPPERS as _STATS
from jext_scipy_special._functions._struve import WRAPPERS as _STRUVE
from jext_scipy_special._functions._voigt import WRAPPERS as _VOIGT

__all__ = [
    "WRAPPERS",
    "ellipe",
    "ellipk",
    "ellipkm1",
    "erfcinv",
    "gammaincinv",
    "kv",
    "kve",
    "lambertw",
    "stdtr",
]

_TOL = {"float64": (1e-12, 1e-300), "float32": (5e-6, 1e-30)}
_INV_E = math.exp(-1.0)


def _real_lambertw(z: Any, k: int = 0) -> Any:
    """SciPy's lambertw where it is real, nan where it is complex (the wrapper is real)."""
    # Imported when a check calls it: SciPy is the oracle, not a runtime need.
    w = np.asarray(importlib.import_module("scipy.special").lambertw(z, k))
    return np.where(np.imag(w) == 0, np.real(w), np.nan)


def _wrapper(name: str, function: Any, domains: tuple[Domain, ...], **options: Any) -> ScipyWrapper:
    return ScipyWrapper(
        scope="special",
        name=name,
        mirrors=f"scipy.special.{name}",
        function=function,
        domains=domains,
        tolerances=options.pop("tolerances", _TOL),
        **options,
    )


_CORE: tuple[ScipyWrapper, ...] = (
    _wrapper(
        "ellipk",
        ellipk,
        (Domain(((-10.0, 0.999),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.0,)), EdgeCase((1.5,))),
    ),
    _wrapper(
        "ellipkm1",
        ellipkm1,
        (Domain(((1e-30, 1.0),), log=True), Domain(((0.0, 11.0),))),
        differentiable=(0,),
        edge_cases=(EdgeCase((-1.0,)),),
    ),
    _wrapper(
        "ellipe",
        ellipe,
        (Domain(((-10.0, 1.0),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.5,)),),
    ),
    _wrapper(
        "erfcinv",
        erfcinv,
        (Domain(((1e-6, 1.999999),)),),
        differentiable=(0,),
        edge_cases=(EdgeCase((1.0,)), EdgeCase((2.5,)), EdgeCase((-0.5,))),
    ),
    _wrapper(
        "stdtr",
        stdtr,
        (Domain(((0.5, 1000.0), (-50.0, 50.0))),),
        differentiable=(1,),
    ),
    _wrapper(
        "lambertw",
        lambertw,
        (
            Domain(((-_INV_E + 1e-4, 10.0),), kwargs={"k": 0}),
            Domain(((-_INV_E + 1e-4, -1e-3),), kwargs={"k": -1}),
        ),
        differentiable=(0,),
        oracle=_real_lambertw,
    ),
    _wrapper(
        "gammaincinv",
        gammaincinv,
        (Domain(((0.1, 100.0), (1e-6, 0.999999)), log=True),),
        differentiable=(1,),
    ),
    _wrapper(
        "kv",
        kv,
        (Domain(((-20.0, 20.0), (0.01, 100.0)), log=True),),
        differentiable=(1,),
    ),
    _wrapper(
        "kve",
        kve,
        (Domain(((-20.0, 20.0), (0.01, 100.0)), log=True),),
        differentiable=(1,),
    ),
)

#: Every wrapper the plugin registers: the original nine, then one line per family.
WRAPPERS: tuple[ScipyWrapper, ...] = (
    *_CORE,
    *_bessel_family.WRAPPERS,
    *_bessel_jy_family.WRAPPERS,
    *_elliptic_family.WRAPPERS,
    *_gamma_family.WRAPPERS,
    *_poly_family.WRAPPERS,
    *_misc_family.WRAPPERS,
    *_beta_family.WRAPPERS,
)


WRAPPERS += _ELEMENTARY
WRAPPERS += _GAMMADIST
WRAPPERS += _STATS
WRAPPERS += _DISCRETE
WRAPPERS += _KS_FAMILY
WRAPPERS += _VOIGT
WRAPPERS += _STRUVE


@jext.hooks.register_scipy_wrappers
def _register(registry: jext.ScipyRegistrar) -> None:
    for wrapper in WRAPPERS:
        registry.add(wrapper)
