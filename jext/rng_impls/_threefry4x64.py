"""Threefry4x64-20 (Random123) as a counter-based JAX PRNG implementation.

Key data is 16 uint32 words::

    [k0_lo, k0_hi, ..., k3_lo, k3_hi,  c0_lo, c0_hi, ..., c3_lo, c3_hi]

the 256-bit Threefry key ``k0 + 2**64 k1 + ...`` and the 256-bit counter ``C`` of the first
block of the key's stream.  Stream position: ``random_bits`` enciphers the counters ``C, C + 1,
C + 2, ...`` (mod 2**256, carrying across the 64-bit words) and reads each block's 64-bit
outputs ``x0, x1, x2, x3`` in order as a little-endian byte stream; narrower widths read the
same bytes.  Keys are immutable: every ``random_bits`` call on a key starts at ``C`` again.
split/fold_in children get a fresh pseudorandom 256-bit key and ``C = 0``: a new stream at
position 0.

``seed(s)`` is ``threefry4x64_key_data(s mod 2**64)``: key ``s``, counter 0.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

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
    block_on_ints,
    flatten,
    interleave,
    pairs,
    rotl64,
    run_rounds,
    xor64,
)

__all__ = ["THREEFRY4X64_RNG", "threefry4x64_block", "threefry4x64_key_data"]

_ROUNDS = 20
# Skein / Random123 key-schedule parity constant.
_PARITY = 0x1BD11BDAA9FC1A22
# Rotation amounts R_64x4, indexed by round mod 8: (first mix, second mix).
_ROTATIONS = ((14, 16), (52, 57), (23, 40), (5, 37), (25, 33), (46, 12), (58, 22), (32, 32))


def _prepare(key: Words) -> Words:
    """The five subkey words of the key schedule: the key and its parity word, flattened."""
    ks = pairs(key)
    parity: Pair = (jnp.asarray(_PARITY & 0xFFFFFFFF, U32), jnp.asarray(_PARITY >> 32, U32))
    for k in ks:
        parity = xor64(parity, k)
    return flatten([*ks, parity])


def _subkey(ks: Sequence[Pair], s: int) -> list[Pair]:
    """The subkey of injection ``s``: words ``s .. s + 3`` (mod 5), plus ``s`` on the last."""
    sub = [ks[(s + i) % 5] for i in range(4)]
    sub[3] = add64(sub[3], (U32(s), U32(0)))
    return sub


def _mix(x: list[Pair], first: int, stop: int) -> list[Pair]:
    """Rounds ``first .. stop - 1`` (without key injections)."""
    x = list(x)
    for r in range(first, stop):
        r0, r1 = _ROTATIONS[r % 8]
        # Even rounds mix (x0, x1), (x2, x3); odd rounds (x0, x3), (x2, x1).
        b, d = (1, 3) if r % 2 == 0 else (3, 1)
        x[0] = add64(x[0], x[b])
        x[b] = xor64(rotl64(x[b], r0), x[0])
        x[2] = add64(x[2], x[d])
        x[d] = xor64(rotl64(x[d], r1), x[2])
    return x


def _inject(x: list[Pair], subkey: Sequence[Pair]) -> list[Pair]:
    return [add64(xi, k) for xi, k in zip(x, subkey, strict=True)]


def _eight_rounds(state: Words, subkeys: Words) -> Words:
    """Rounds 8g .. 8g + 7 and the two subkey injections after rounds 8g + 3 and 8g + 7."""
    sk = pairs(subkeys)
    x = _inject(_mix(pairs(state), 0, 4), sk[:4])
    return flatten(_inject(_mix(x, 4, 8), sk[4:]))


def _block(subkeys: Words, counter: Words, rolled: int = 0, rounds: int = _ROUNDS) -> Words:
    """Threefry4x64 on counters given as 8 little-endian uint32 word arrays."""
    ks = pairs(subkeys)
    x = _inject(pairs(jnp.broadcast_arrays(*counter)), _subkey(ks, 0))
    # Rotations repeat every 8 rounds, so 8 rounds with their 2 injections form the unit.
    units = rounds // 8
    params = [flatten(_subkey(ks, 2 * g + 1) + _subkey(ks, 2 * g + 2)) for g in range(units)]
    x = pairs(run_rounds([_eight_rounds], flatten(x), params, rolled=rolled))
    for r in range(8 * units, rounds):
        x = _mix(x, r, r + 1)
        if r % 4 == 3:
            x = _inject(x, _subkey(ks, (r + 1) // 4))
    return flatten(x)


def _seed_data(lo: Array, hi: Array) -> Words:
    zero = jnp.zeros((), U32)
    return (lo, hi, *(zero,) * 14)


# The layout and the seed / split / fold_in / random_bits functions, unjitted.
THREEFRY4X64_RNG = CounterRng(
    name="threefry4x64",
    tag="jext_fry64",
    key_words=8,
    counter_words=8,
    block_words=8,
    fresh_words=tuple(range(8)),
    prepare=_prepare,
    block=_block,
    seed_data=_seed_data,
    unroll=1,  # the rolled form: two eight-round units: two loop iterations
)


def threefry4x64_key_data(key: int, counter: int = 0) -> np.ndarray:
    """Key data for the 256-bit ``key`` whose stream starts with the block at ``counter``."""
    return THREEFRY4X64_RNG.key_data(key, counter)


@jax.jit(static_argnums=2)
def _raw_block(key: Array, counter: Array, rounds: int) -> Array:
    return interleave(_block(_prepare(tuple(key)), tuple(counter), True, rounds))


def threefry4x64_block(
    counter: Sequence[int], key: Sequence[int], rounds: int = _ROUNDS
) -> tuple[int, ...]:
    """The raw Threefry4x64 block function on 64-bit words, in Random123 order (x[0] first)."""
    if len(counter) != 4 or len(key) != 4:
        raise ValueError("threefry4x64 takes 4 counter words and 4 key words")
    return block_on_ints(functools.partial(_raw_block, rounds=rounds), counter, key)
