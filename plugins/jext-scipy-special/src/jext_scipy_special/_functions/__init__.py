"""Pure-JAX numerical kernels for SciPy special functions that JAX lacks.

Private package: the public API is re-exported by ``jext_scipy_special``.
Every function accepts array-likes, promotes to a real float dtype (float32,
or float64 under ``jax_enable_x64``), broadcasts its arguments, and is
jit-, vmap- and grad-compatible (derivatives via ``jax.custom_jvp`` with the
closed-form derivative, in the arguments documented per function).

Each module that implements wrappers declares them at its end, in its ``WRAPPERS``,
with :func:`._declare.declare`; :data:`WRAPPERS` joins them in the order below.
"""

from jext.scipy import ScipyWrapper

from . import (
    _bessel,
    _bessel_family,
    _bessel_jy_family,
    _beta_family,
    _discrete,
    _elementary,
    _elliptic,
    _elliptic_family,
    _erf,
    _gamma,
    _gamma_family,
    _gammadist,
    _ks_family,
    _lambertw,
    _misc_family,
    _poly_family,
    _stats,
    _struve,
    _t,
    _voigt,
)
from ._bessel import kv, kve
from ._elliptic import ellipe, ellipk, ellipkm1
from ._erf import erfcinv
from ._gamma import gammaincinv
from ._lambertw import lambertw
from ._t import stdtr

__all__ = [
    "DECLARING_MODULES",
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

#: The modules that declare wrappers, in the order the plugin registers them.
DECLARING_MODULES = (
    _elliptic,
    _erf,
    _t,
    _lambertw,
    _gamma,
    _bessel,
    _bessel_family,
    _bessel_jy_family,
    _elliptic_family,
    _gamma_family,
    _poly_family,
    _misc_family,
    _beta_family,
    _elementary,
    _gammadist,
    _stats,
    _discrete,
    _ks_family,
    _voigt,
    _struve,
)
WRAPPERS: tuple[ScipyWrapper, ...] = tuple(
    wrapper for module in DECLARING_MODULES for wrapper in module.WRAPPERS
)
