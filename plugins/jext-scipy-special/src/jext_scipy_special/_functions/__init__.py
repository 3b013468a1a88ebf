"""Pure-JAX numerical kernels for SciPy special functions that JAX lacks.

Private package: the public API is re-exported by ``jext_scipy_special``.
Every function accepts array-likes, promotes to a real float dtype (float32,
or float64 under ``jax_enable_x64``), broadcasts its arguments, and is
jit-, vmap- and grad-compatible (derivatives via ``jax.custom_jvp`` with the
closed-form derivative, in the arguments documented per function).
"""

from ._bessel import kv, kve
from ._elliptic import ellipe, ellipk, ellipkm1
from ._erf import erfcinv
from ._gamma import gammaincinv
from ._lambertw import lambertw
from ._t import stdtr

__all__ = [
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
