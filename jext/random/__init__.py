"""Typed-key PRNG implementations by registered name (JEP 9263), and jext's bundled ones.

``jext.random.key(0, impl="jext.philox4x64")`` works with every ``jax.random`` function.
Plugins add implementations through the ``jext_register_rng_impls`` hook, as
``jext/rng_impls/`` adds jext's own.
"""

from jext.random._api import get_impl as get_impl
from jext.random._api import impls as impls
from jext.random._api import key as key
from jext.random._api import wrap_key_data as wrap_key_data
from jext.random._bundled import chacha20_key as chacha20_key
from jext.random._bundled import numpy_philox_key as numpy_philox_key
from jext.random._bundled import threefry4x64_key as threefry4x64_key
from jext.rng_impls._impl import KnownAnswer as KnownAnswer
from jext.rng_impls._impl import RngImpl as RngImpl

__all__ = [
    "KnownAnswer",
    "RngImpl",
    "chacha20_key",
    "get_impl",
    "impls",
    "key",
    "numpy_philox_key",
    "threefry4x64_key",
    "wrap_key_data",
]
