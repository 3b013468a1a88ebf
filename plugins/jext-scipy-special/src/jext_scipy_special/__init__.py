"""SciPy functions that ``jax.scipy`` lacks, registered as ``jext.scipy.<scope>.<name>``
(``special`` and ``stats``).

Each wrapper is declared once, with ``_functions._declare.declare``, at the end of the
module that implements it: the SciPy function it mirrors, where ``jext check`` samples
it, its edge cases and its tolerances (relative error with an absolute floor near zeros;
1e-12 in float64 and 5e-6 in float32 unless a wrapper says otherwise).  ``WRAPPERS`` is
every declaration, in the order registered.  Users reach them as
``jext.scipy.special.<name>`` (see ``docs/scipy.md``).
"""

from __future__ import annotations

import jext
from jext_scipy_special._functions import (
    WRAPPERS,
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


@jext.hooks.register_scipy_wrappers
def _register(registrar: jext.ScipyRegistrar) -> None:
    for wrapper in WRAPPERS:
        registrar.add(wrapper)
