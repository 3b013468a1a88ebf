"""Threefry4x64-20 (Random123) as a counter-based JAX PRNG implementation.

Key data is 16 uint32 words::

    [k0_lo, k0_hi, ..., k3_lo, k3_hi,  c0_lo, c0_hi, ..., c3_lo, c3_hi]

the 256-bit Threefry key ``k0 + 2**64 k1 + ...`` and the 256-bit counter ``C`` of the next
block.  Stream position: ``random_bits`` enciphers the counters ``C, C + 1, C + 2, ...`` (mod
2**256, carrying across the 64-bit words) and reads each block's 64-bit outputs
``x0, x1, x2, x3`` in order as a little-endian byte stream; narrower widths read the same
bytes.  Keys are immutable: each ``random_bits`` call starts at ``C`` again; split/fold_in
children get a fresh key and ``c1..c3`` and position ``c0 = 0``.

``seed(s)`` is ``threefry4x64_key_data(s mod 2**64)``: key ``s``, counter 0.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jext.rng_impls._common import (
    U32,
    Array,
    CounterRng,
    Pair,
    Words,
    add64,
    flatten,
    int_to_words,
    pairs,
    rotl64,
    words_to_int,
    xor64,
)

__all__ = ["THREEFRY4X64", "threefry4x64_block", "threefry4x64_key_data"]

_ROUNDS = 20
# Skein / Random123 key-schedule parity constant.
_PARITY = 0x1BD11BDAA9FC1A22
# Rotation amounts R_64x4, indexed by round mod 8: (first mix, second mix).
_ROTATIONS = ((14, 16), (52, 57), (23, 40), (5, 37), (25, 33), (46, 12), (58, 22), (32, 32))


def _prepare(key: Words, rounds: int = _ROUNDS) -> Words:
    """The subkeys injected before round 0 and after every 4th round, flattened."""
    ks = pairs(key)
    parity: Pair = (jnp.asarray(_PARITY & 0xFFFFFFFF, U32), jnp.asarray(_PARITY >> 32, U32))
    for k in ks:
        parity = xor64(parity, k)
    ks.append(parity)
    out: list[Pair] = []
    for s in range(rounds // 4 + 1):
        sub = [ks[(s + i) % 5] for i in range(4)]
        # The injection number is added to the last word of each subkey.
        sub[3] = add64(sub[3], (U32(s), U32(0)))
        out.extend(sub)
    return flatten(out)


def _block(subkeys: Words, counter: Words, rounds: int = _ROUNDS) -> Words:
    """Threefry4x64 on counters given as 8 little-endian uint32 word arrays."""
    sk = pairs(subkeys)
    x = [add64(c, k) for c, k in zip(pairs(jnp.broadcast_arrays(*counter)), sk[:4], strict=True)]
    for r in range(rounds):
        r0, r1 = _ROTATIONS[r % 8]
        # Even rounds mix (x0, x1), (x2, x3); odd rounds (x0, x3), (x2, x1).
        b, d = (1, 3) if r % 2 == 0 else (3, 1)
        x[0] = add64(x[0], x[b])
        x[b] = xor64(rotl64(x[b], r0), x[0])
        x[2] = add64(x[2], x[d])
        x[d] = xor64(rotl64(x[d], r1), x[2])
        if r % 4 == 3:
            s = (r + 1) // 4
            x = [add64(xi, k) for xi, k in zip(x, sk[4 * s : 4 * s + 4], strict=True)]
    return flatten(x)


def _seed_data(lo: Array, hi: Array) -> Words:
    zero = jnp.zeros((), U32)
    return (lo, hi, *(zero,) * 14)


_RNG = CounterRng(
    name="threefry4x64",
    tag="jext_fry64",
    key_words=8,
    counter_words=8,
    position_words=2,
    block_words=8,
    prepare=_prepare,
    block=_block,
    seed_data=_seed_data,
)

THREEFRY4X64: Hashable = _RNG.define()
"""The Threefry4x64-20 PRNG implementation, for ``jax.random.key(..., impl=THREEFRY4X64)``."""


def threefry4x64_key_data(key: int, counter: int = 0) -> np.ndarray:
    """Key data for the 256-bit ``key`` whose stream starts with the block at ``counter``."""
    return np.concatenate(
        [int_to_words(key, 8, what="key"), int_to_words(counter, 8, what="counter")]
    )


@jax.jit(static_argnums=2)
def _raw_block(key: Array, counter: Array, rounds: int) -> Array:
    return jnp.stack(_block(_prepare(tuple(key), rounds), tuple(counter), rounds))


def threefry4x64_block(
    counter: Sequence[int], key: Sequence[int], rounds: int = _ROUNDS
) -> tuple[int, int, int, int]:
    """The raw Threefry4x64 block function on 64-bit words, in Random123 order (x[0] first)."""
    if len(counter) != 4 or len(key) != 4:
        raise ValueError("threefry4x64 takes 4 counter words and 4 key words")
    ctr = np.concatenate([int_to_words(c, 2, what="counter word") for c in counter])
    k = np.concatenate([int_to_words(w, 2, what="key word") for w in key])
    out = np.asarray(_raw_block(jnp.asarray(k), jnp.asarray(ctr), rounds))
    x0, x1, x2, x3 = (words_to_int(out[i : i + 2]) for i in range(0, 8, 2))
    return x0, x1, x2, x3
