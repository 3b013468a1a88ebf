"""Keys of jext's bundled RNG implementations, made from the parameters their references use."""

from __future__ import annotations

import jax

from jext.random._api import wrap_key_data
from jext.rng_impls import chacha20_key_data, numpy_philox_key_data, threefry4x64_key_data

__all__ = ["chacha20_key", "numpy_philox_key", "threefry4x64_key"]


def numpy_philox_key(key: int, counter: int = 0) -> jax.Array:
    """A ``jext.philox4x64`` key with the stream of ``numpy.random.Philox(key, counter)``.

    With ``jax_enable_x64``, ``jax.random.bits(k, (n,), jnp.uint64)`` equals
    ``numpy.random.Philox(key=key, counter=counter).random_raw(n)``; narrower widths read
    the same bytes.  ``key`` is up to 128 bits, ``counter`` up to 256.
    """
    return wrap_key_data(numpy_philox_key_data(key, counter), impl="jext.philox4x64")


def chacha20_key(key: bytes, nonce: bytes = bytes(12), counter: int = 0) -> jax.Array:
    """A ``jext.chacha20`` key whose byte stream is the RFC 8439 keystream.

    ``key`` is 32 bytes, ``nonce`` 12 and ``counter`` the 32-bit initial block counter: the
    bytes are those that encrypting zeros with ChaCha20 gives.
    """
    return wrap_key_data(chacha20_key_data(key, nonce, counter), impl="jext.chacha20")


def threefry4x64_key(key: int, counter: int = 0) -> jax.Array:
    """A ``jext.threefry4x64`` key (256-bit ``key``) whose stream starts at block ``counter``."""
    return wrap_key_data(threefry4x64_key_data(key, counter), impl="jext.threefry4x64")
