"""Philox4x64-10 as a JAX PRNG implementation, bit-exact with ``numpy.random.Philox``.

Key data is 12 uint32 words::

    [k0_lo, k0_hi, k1_lo, k1_hi,  c0_lo, c0_hi, c1_lo, c1_hi, c2_lo, c2_hi, c3_lo, c3_hi]

the 128-bit Philox key ``k0 + 2**64 k1`` and the 256-bit counter ``C = c0 + 2**64 c1 + ...``
of the first block of the key's stream.  Stream position: ``random_bits`` enciphers the
counters ``C, C + 1, C + 2, ...`` (mod 2**256, carrying across the 64-bit words) and reads each
block's 64-bit outputs ``v0, v1, v2, v3`` in order as a little-endian byte stream; narrower
widths read the same bytes.  numpy's ``Philox(key, counter)`` increments its counter *before*
each block, so :func:`numpy_philox_key_data` stores ``counter + 1``.  Keys are immutable:
every ``random_bits`` call on a key starts at ``C`` again.  split/fold_in children get a fresh
pseudorandom key, ``c1`` and ``c2``, and ``c0 = c3 = 0``: a new stream at position 0.

``seed(s)`` is ``numpy_philox_key_data(s mod 2**64)``, so
``jext.random.key(s, impl="jext.philox4x64")`` reproduces ``numpy.random.Philox(key=s)``
for ``0 <= s < 2**63``, with x64 on or off.
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
    Words,
    add64,
    block_on_ints,
    flatten,
    interleave,
    mulhilo64,
    pairs,
    run_rounds,
    xor64,
)

__all__ = [
    "PHILOX4X64_RNG",
    "numpy_philox_key_data",
    "philox4x64_block",
    "philox4x64_key_data",
]

# Random123 Philox4x64 multipliers and Weyl key increments.
_M0 = 0xD2E7470EE14C6C93
_M1 = 0xCA5A826395121157
_W0 = 0x9E3779B97F4A7C15
_W1 = 0xBB67AE8584CAA73B
_ROUNDS = 10


def _prepare(key: Words, rounds: int = _ROUNDS) -> Words:
    """The round keys: round ``r`` uses the key plus ``r`` times the Weyl increments."""
    k0, k1 = pairs(key)
    out: list[Array] = []
    for r in range(rounds):
        out.extend((*add64(k0, _const64(r * _W0)), *add64(k1, _const64(r * _W1))))
    return tuple(out)


def _const64(value: int) -> tuple[np.uint32, np.uint32]:
    value %= 1 << 64
    return U32(value & 0xFFFFFFFF), U32(value >> 32)


def _round(x: Words, round_key: Words) -> Words:
    """One Philox4x64 round on the 8 little-endian uint32 words of the counter."""
    v = pairs(x)
    k0, k1 = pairs(round_key)
    lo0, hi0 = mulhilo64(v[0], _M0)
    lo1, hi1 = mulhilo64(v[2], _M1)
    return flatten([xor64(xor64(hi1, v[1]), k0), lo1, xor64(xor64(hi0, v[3]), k1), lo0])


def _block(round_keys: Words, counter: Words, rolled: int = 0) -> Words:
    """Philox4x64 on counters given as 8 little-endian uint32 word arrays."""
    params = [round_keys[i : i + 4] for i in range(0, len(round_keys), 4)]
    return run_rounds([_round], tuple(jnp.broadcast_arrays(*counter)), params, rolled=rolled)


def _seed_data(lo: Array, hi: Array) -> Words:
    zero = jnp.zeros((), U32)
    # numpy's Philox(key=s) starts at counter 0 + 1.
    return (lo, hi, zero, zero, jnp.ones((), U32), *(zero,) * 7)


# The layout and the seed / split / fold_in / random_bits functions, unjitted.
PHILOX4X64_RNG = CounterRng(
    name="philox4x64",
    tag="jext_phx64",
    key_words=4,
    counter_words=8,
    block_words=8,
    fresh_words=(0, 1, 2, 3, 6, 7, 8, 9),
    prepare=_prepare,
    block=_block,
    seed_data=_seed_data,
    unroll=2,  # the rolled form: ten one-round units: five loop iterations
)


def philox4x64_key_data(key: int, counter: int = 0) -> np.ndarray:
    """Key data for the 128-bit ``key`` whose stream starts with the block at ``counter``."""
    return PHILOX4X64_RNG.key_data(key, counter)


def numpy_philox_key_data(key: int, counter: int = 0) -> np.ndarray:
    """Key data whose stream equals ``numpy.random.Philox(key=key, counter=counter)``'s.

    ``bits(wrap_key_data(data, impl="jext.philox4x64"), (n,), uint64)`` is ``random_raw(n)``.
    """
    if not 0 <= counter < 1 << 256:
        raise ValueError(f"counter must be in [0, 2**256), got {counter}")
    return philox4x64_key_data(key, (counter + 1) % (1 << 256))


@jax.jit(static_argnums=2)
def _raw_block(key: Array, counter: Array, rounds: int) -> Array:
    return interleave(_block(_prepare(tuple(key), rounds), tuple(counter), rolled=True))


def philox4x64_block(
    counter: Sequence[int], key: Sequence[int], rounds: int = _ROUNDS
) -> tuple[int, ...]:
    """The raw Philox4x64 block function on 64-bit words, in Random123 order (v[0] first)."""
    if len(counter) != 4 or len(key) != 2:
        raise ValueError("philox4x64 takes 4 counter words and 2 key words")
    return block_on_ints(functools.partial(_raw_block, rounds=rounds), counter, key)
