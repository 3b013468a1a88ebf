"""Philox4x64-10 as a JAX PRNG implementation, bit-exact with ``numpy.random.Philox``.

Key data is 12 uint32 words::

    [k0_lo, k0_hi, k1_lo, k1_hi,  c0_lo, c0_hi, c1_lo, c1_hi, c2_lo, c2_hi, c3_lo, c3_hi]

the 128-bit Philox key ``k0 + 2**64 k1`` and the 256-bit counter ``C = c0 + 2**64 c1 + ...``
of the *next* block.  Stream position: ``random_bits`` enciphers the counters ``C, C + 1,
C + 2, ...`` (mod 2**256, carrying across the 64-bit words) and reads each block's 64-bit
outputs ``v0, v1, v2, v3`` in order as a little-endian byte stream; narrower widths read the
same bytes.  numpy's ``Philox(key, counter)`` increments its counter *before* each block, so
:func:`numpy_philox_key_data` stores ``counter + 1``.  Keys are immutable: each
``random_bits`` call on a key starts at ``C`` again; split/fold_in children get a fresh key
and ``c1..c3`` and position ``c0 = 0``.

``seed(s)`` is ``numpy_philox_key_data(s mod 2**64)``, so ``jax.random.key(s, impl=PHILOX4X64)``
reproduces ``numpy.random.Philox(key=s)`` for ``0 <= s < 2**63`` (``2**31`` without x64).
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
    Words,
    add64,
    flatten,
    int_to_words,
    mulhilo64,
    pairs,
    words_to_int,
    xor64,
)

__all__ = [
    "PHILOX4X64",
    "numpy_philox_key_data",
    "philox4x64_block",
    "philox4x64_key_data",
]

# Random123 Philox4x64 multipliers and Weyl key increments.
_M0 = 0xD2E7470EE14C6C93
_M1 = 0xCA5A826395121157
_W0 = (U32(0x7F4A7C15), U32(0x9E3779B9))
_W1 = (U32(0x84CAA73B), U32(0xBB67AE85))
_ROUNDS = 10


def _prepare(key: Words, rounds: int = _ROUNDS) -> Words:
    """The round keys: the key bumped by the Weyl increments before every round but the first."""
    k0, k1 = pairs(key)
    out: list[Array] = []
    for r in range(rounds):
        if r:
            k0, k1 = add64(k0, _W0), add64(k1, _W1)
        out.extend((*k0, *k1))
    return tuple(out)


def _block(round_keys: Words, counter: Words) -> Words:
    """Philox4x64 on counters given as 8 little-endian uint32 word arrays."""
    x = pairs(jnp.broadcast_arrays(*counter))
    for r in range(len(round_keys) // 4):
        k0, k1 = pairs(round_keys[4 * r : 4 * r + 4])
        lo0, hi0 = mulhilo64(x[0], _M0)
        lo1, hi1 = mulhilo64(x[2], _M1)
        x = [xor64(xor64(hi1, x[1]), k0), lo1, xor64(xor64(hi0, x[3]), k1), lo0]
    return flatten(x)


def _seed_data(lo: Array, hi: Array) -> Words:
    zero = jnp.zeros((), U32)
    # numpy's Philox(key=s) starts at counter 0 + 1.
    return (lo, hi, zero, zero, jnp.ones((), U32), *(zero,) * 7)


_RNG = CounterRng(
    name="philox4x64",
    tag="jext_phx64",
    key_words=4,
    counter_words=8,
    position_words=2,
    block_words=8,
    prepare=_prepare,
    block=_block,
    seed_data=_seed_data,
)

PHILOX4X64: Hashable = _RNG.define()
"""The Philox4x64-10 PRNG implementation, for ``jax.random.key(..., impl=PHILOX4X64)``."""


def philox4x64_key_data(key: int, counter: int = 0) -> np.ndarray:
    """Key data for the 128-bit ``key`` whose stream starts with the block at ``counter``."""
    return np.concatenate(
        [int_to_words(key, 4, what="key"), int_to_words(counter, 8, what="counter")]
    )


def numpy_philox_key_data(key: int, counter: int = 0) -> np.ndarray:
    """Key data whose stream equals ``numpy.random.Philox(key=key, counter=counter)``'s.

    ``bits(wrap_key_data(data, impl=PHILOX4X64), (n,), uint64)`` is ``random_raw(n)``.
    """
    int_to_words(counter, 8, what="counter")
    return philox4x64_key_data(key, (counter + 1) % (1 << 256))


@jax.jit(static_argnums=2)
def _raw_block(key: Array, counter: Array, rounds: int) -> Array:
    words = _block(_prepare(tuple(key), rounds), tuple(counter))
    return jnp.stack(words)


def philox4x64_block(
    counter: Sequence[int], key: Sequence[int], rounds: int = _ROUNDS
) -> tuple[int, int, int, int]:
    """The raw Philox4x64 block function on 64-bit words, in Random123 order (v[0] first)."""
    if len(counter) != 4 or len(key) != 2:
        raise ValueError("philox4x64 takes 4 counter words and 2 key words")
    ctr = np.concatenate([int_to_words(c, 2, what="counter word") for c in counter])
    k = np.concatenate([int_to_words(w, 2, what="key word") for w in key])
    out = np.asarray(_raw_block(jnp.asarray(k), jnp.asarray(ctr), rounds))
    v0, v1, v2, v3 = (words_to_int(out[i : i + 2]) for i in range(0, 8, 2))
    return v0, v1, v2, v3
