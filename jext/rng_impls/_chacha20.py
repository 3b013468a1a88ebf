"""The ChaCha20 block function (RFC 8439) as a counter-based JAX PRNG implementation.

Key data is 12 uint32 words::

    [k0, ..., k7,  counter, n0, n1, n2]

the 256-bit key and the RFC 8439 state words 12..15 (32-bit block counter and 96-bit nonce),
all read little-endian from the RFC's byte strings.  Stream position: ``random_bits`` runs
the block function at ``(counter, nonce), (counter + 1, nonce), ...`` and reads the 64-byte
blocks in order as a little-endian byte stream, so for a key made by
:func:`chacha20_key_data` the bytes are the RFC 8439 keystream.  The RFC stops at 2**32
blocks; here the counter carries on into ``n0, n1, n2`` (a 128-bit little-endian counter), as
in the original 64-bit-nonce ChaCha.  Keys are immutable: every ``random_bits`` call on a key
starts at ``counter`` again.  split/fold_in children get a fresh pseudorandom key and nonce and
``counter = 0``: a new stream at position 0.

``seed(s)`` is ``chacha20_key_data((s mod 2**64).to_bytes(8, "little") + bytes(24))``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jext.rng_impls._common import (
    U32,
    Array,
    CounterRng,
    Stage,
    Words,
    interleave,
    rotl32,
    run_rounds,
)

__all__ = ["CHACHA20_RNG", "chacha20_block", "chacha20_key_data"]

# "expand 32-byte k", little-endian.
_SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)
_DOUBLE_ROUNDS = 10


def _quarter_rounds(quads: tuple[tuple[int, int, int, int], ...]) -> Stage:
    """The stage applying the quarter round to each (a, b, c, d) of ``quads``."""

    def stage(state: Words, _: Words) -> Words:
        x = list(state)
        for a, b, c, d in quads:
            x[a] = x[a] + x[b]
            x[d] = rotl32(x[d] ^ x[a], 16)
            x[c] = x[c] + x[d]
            x[b] = rotl32(x[b] ^ x[c], 12)
            x[a] = x[a] + x[b]
            x[d] = rotl32(x[d] ^ x[a], 8)
            x[c] = x[c] + x[d]
            x[b] = rotl32(x[b] ^ x[c], 7)
        return tuple(x)

    return stage


_COLUMN_ROUND = _quarter_rounds(((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)))
_DIAGONAL_ROUND = _quarter_rounds(((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)))


def _prepare(key: Words) -> Words:
    """ChaCha has no key schedule: the key words enter the state as they are."""
    return key


def _block(key: Words, counter: Words, rolled: int = 0) -> Words:
    """The ChaCha20 block function: 16 output words from 8 key and 4 counter/nonce words."""
    ctr = jnp.broadcast_arrays(*counter)
    shape = ctr[0].shape
    initial = (
        *(jnp.full(shape, U32(c)) for c in _SIGMA),
        *(jnp.broadcast_to(k, shape) for k in key),
        *ctr,
    )
    x = run_rounds([_COLUMN_ROUND, _DIAGONAL_ROUND], initial, [()] * _DOUBLE_ROUNDS, rolled=rolled)
    return tuple(w + w0 for w, w0 in zip(x, initial, strict=True))


def _seed_data(lo: Array, hi: Array) -> Words:
    zero = jnp.zeros((), U32)
    return (lo, hi, *(zero,) * 10)


# The layout and the seed / split / fold_in / random_bits functions, unjitted.
CHACHA20_RNG = CounterRng(
    name="chacha20",
    tag="jext_chacha20",
    key_words=8,
    counter_words=4,
    block_words=16,
    fresh_words=(0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11),
    prepare=_prepare,
    block=_block,
    seed_data=_seed_data,
    unroll=2,  # the rolled form: ten double rounds: five loop iterations
)


def chacha20_key_data(key: bytes, nonce: bytes = bytes(12), counter: int = 0) -> np.ndarray:
    """Key data whose byte stream is the RFC 8439 keystream for ``key``, ``nonce``, ``counter``."""
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError(f"key and nonce must be 32 and 12 bytes, got {len(key)} and {len(nonce)}")
    if not 0 <= counter < 1 << 32:
        raise ValueError(f"counter must be in [0, 2**32), got {counter}")
    # State words 12..15 read as one little-endian 128-bit counter: counter, then the nonce.
    position = counter + (int.from_bytes(nonce, "little") << 32)
    return CHACHA20_RNG.key_data(int.from_bytes(key, "little"), position)


@jax.jit
def _raw_block(key: Array, counter: Array) -> Array:
    return interleave(_block(tuple(key), tuple(counter), rolled=True))


def chacha20_block(key: bytes, counter: int, nonce: bytes) -> bytes:
    """The raw RFC 8439 block function: the 64-byte serialized output block."""
    data = chacha20_key_data(key, nonce, counter)
    out = np.asarray(_raw_block(jnp.asarray(data[:8]), jnp.asarray(data[8:])))
    return out.astype("<u4").tobytes()
