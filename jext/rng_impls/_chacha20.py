"""The ChaCha20 block function (RFC 8439) as a counter-based JAX PRNG implementation.

Key data is 12 uint32 words::

    [k0, ..., k7,  counter, n0, n1, n2]

the 256-bit key and the RFC 8439 state words 12..15 (32-bit block counter and 96-bit nonce),
all read little-endian from the RFC's byte strings.  Stream position: ``random_bits`` runs
the block function at ``(counter, nonce), (counter + 1, nonce), ...`` and reads the 64-byte
blocks in order as a little-endian byte stream, so for a key made by
:func:`chacha20_key_data` the bytes are the RFC 8439 keystream.  The RFC stops at 2**32
blocks; here the counter carries on into ``n0, n1, n2`` (a 128-bit little-endian counter), as
in the original 64-bit-nonce ChaCha.  Keys are immutable: each ``random_bits`` call starts at
``counter`` again; split/fold_in children get a fresh key and nonce and ``counter = 0``.

``seed(s)`` is ``chacha20_key_data((s mod 2**64).to_bytes(8, "little") + bytes(24))``.
"""

from __future__ import annotations

from collections.abc import Hashable

import jax
import jax.numpy as jnp
import numpy as np

from jext.rng_impls._common import U32, Array, CounterRng, Words, int_to_words, rotl32

__all__ = ["CHACHA20", "chacha20_block", "chacha20_key_data"]

# "expand 32-byte k", little-endian.
_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)
_DOUBLE_ROUNDS = 10
# (a, b, c, d) state indices of the column and diagonal quarter rounds.
_QUARTER_ROUNDS = (
    (0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
    (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14),
)  # fmt: skip


def _prepare(key: Words) -> Words:
    return key


def _block(key: Words, counter: Words) -> Words:
    """The ChaCha20 block function: 16 output words from 8 key and 4 counter/nonce words."""
    ctr = jnp.broadcast_arrays(*counter)
    shape = ctr[0].shape
    initial = [
        *(jnp.full(shape, U32(c)) for c in _SIGMA),
        *(jnp.broadcast_to(k, shape) for k in key),
        *ctr,
    ]
    x = list(initial)
    for _ in range(_DOUBLE_ROUNDS):
        for a, b, c, d in _QUARTER_ROUNDS:
            x[a] = x[a] + x[b]
            x[d] = rotl32(x[d] ^ x[a], 16)
            x[c] = x[c] + x[d]
            x[b] = rotl32(x[b] ^ x[c], 12)
            x[a] = x[a] + x[b]
            x[d] = rotl32(x[d] ^ x[a], 8)
            x[c] = x[c] + x[d]
            x[b] = rotl32(x[b] ^ x[c], 7)
    return tuple(w + w0 for w, w0 in zip(x, initial, strict=True))


def _seed_data(lo: Array, hi: Array) -> Words:
    zero = jnp.zeros((), U32)
    return (lo, hi, *(zero,) * 10)


_RNG = CounterRng(
    name="chacha20",
    tag="jext_chacha20",
    key_words=8,
    counter_words=4,
    position_words=1,
    block_words=16,
    prepare=_prepare,
    block=_block,
    seed_data=_seed_data,
)

CHACHA20: Hashable = _RNG.define()
"""The ChaCha20 PRNG implementation, for ``jax.random.key(..., impl=CHACHA20)``."""


def _le_words(data: bytes, nbytes: int, what: str) -> np.ndarray:
    if len(data) != nbytes:
        raise ValueError(f"{what} must be {nbytes} bytes, got {len(data)}")
    return np.frombuffer(data, dtype="<u4").astype(U32)


def chacha20_key_data(key: bytes, nonce: bytes = bytes(12), counter: int = 0) -> np.ndarray:
    """Key data whose byte stream is the RFC 8439 keystream for ``key``, ``nonce``, ``counter``."""
    return np.concatenate(
        [
            _le_words(key, 32, "key"),
            int_to_words(counter, 1, what="counter"),
            _le_words(nonce, 12, "nonce"),
        ]
    )


@jax.jit
def _raw_block(key: Array, counter: Array) -> Array:
    return jnp.stack(_block(tuple(key), tuple(counter)))


def chacha20_block(key: bytes, counter: int, nonce: bytes) -> bytes:
    """The raw RFC 8439 block function: the 64-byte serialized output block."""
    data = chacha20_key_data(key, nonce, counter)
    out = np.asarray(_raw_block(jnp.asarray(data[:8]), jnp.asarray(data[8:])))
    return out.astype("<u4").tobytes()
