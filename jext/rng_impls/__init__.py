"""Bit-exact counter-based RNGs for JAX typed keys: Philox4x64, ChaCha20 and Threefry4x64.

``PHILOX4X64``, ``CHACHA20`` and ``THREEFRY4X64`` are the :class:`jext.random.RngImpl`
objects the ``jext-rng`` plugin registers; their ``jax_impl`` is the JAX PRNG impl.
"""

from jext.rng_impls._bundled import CHACHA20 as CHACHA20
from jext.rng_impls._bundled import PHILOX4X64 as PHILOX4X64
from jext.rng_impls._bundled import THREEFRY4X64 as THREEFRY4X64
from jext.rng_impls._chacha20 import chacha20_block as chacha20_block
from jext.rng_impls._chacha20 import chacha20_key_data as chacha20_key_data
from jext.rng_impls._philox4x64 import numpy_philox_key_data as numpy_philox_key_data
from jext.rng_impls._philox4x64 import philox4x64_block as philox4x64_block
from jext.rng_impls._philox4x64 import philox4x64_key_data as philox4x64_key_data
from jext.rng_impls._threefry4x64 import threefry4x64_block as threefry4x64_block
from jext.rng_impls._threefry4x64 import threefry4x64_key_data as threefry4x64_key_data

__all__ = [
    "CHACHA20",
    "PHILOX4X64",
    "THREEFRY4X64",
    "chacha20_block",
    "chacha20_key_data",
    "numpy_philox_key_data",
    "philox4x64_block",
    "philox4x64_key_data",
    "threefry4x64_block",
    "threefry4x64_key_data",
]
