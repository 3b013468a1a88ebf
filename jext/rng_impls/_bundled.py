"""jext's own RNG implementations, and the published known answers each reproduces.

The core plugin ``jext-rng`` (``jext/_bundled_rng_plugin.py``, in the plugin layer)
registers them under the namespace ``jext``; ``jext check`` verifies the known answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from jext.rng_impls._chacha20 import CHACHA20_RNG, chacha20_key_data
from jext.rng_impls._common import CounterRng
from jext.rng_impls._impl import KnownAnswer, RngImpl
from jext.rng_impls._philox4x64 import PHILOX4X64_RNG, philox4x64_key_data
from jext.rng_impls._threefry4x64 import THREEFRY4X64_RNG, threefry4x64_key_data

__all__ = ["CHACHA20", "PHILOX4X64", "THREEFRY4X64"]

_RANDOM123 = "Random123 known-answer vectors (kat_vectors)"

# (counter words, key words, expected words), 64-bit words in Random123 order.
_PHILOX4X64_10 = (
    ((0, 0, 0, 0), (0, 0),
     (0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B)),
    ((2**64 - 1,) * 4, (2**64 - 1,) * 2,
     (0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6, 0xA09CAEBF594F0BA0)),
    ((0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89),
     (0x452821E638D01377, 0xBE5466CF34E90C6C),
     (0xA528F45403E61D95, 0x38C72DBD566E9788, 0xA5A1610E72FD18B5, 0x57BD43B5E52B7FE6)),
)  # fmt: skip
_THREEFRY4X64_20 = (
    ((0, 0, 0, 0), (0, 0, 0, 0),
     (0x09218EBDE6C85537, 0x55941F5266D86105, 0x4BD25E16282434DC, 0xEE29EC846BD2E40B)),
    ((2**64 - 1,) * 4, (2**64 - 1,) * 4,
     (0x29C24097942BBA1B, 0x0371BBFB0F6F4E11, 0x3C231FFA33F83A1C, 0xCD29113FDE32D168)),
    ((0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89),
     (0x452821E638D01377, 0xBE5466CF34E90C6C, 0xBE5466CF34E90C6C, 0xC0AC29B7C97C50DD),
     (0xA7E8FDE591651BD9, 0xBAAFD0C30138319B, 0x84A5C1A729E685B9, 0x901D406CCEBC1BA4)),
)  # fmt: skip
# RFC 8439: section 2.3.2 (one block) and 2.4.2 (a 114-byte keystream).
_RFC8439_KEY = bytes(range(32))
_RFC8439 = (
    (bytes.fromhex("000000090000004a00000000"), 1, "section 2.3.2",
     "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
     "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"),
    (bytes.fromhex("000000000000004a00000000"), 1, "section 2.4.2",
     "224f51f3401bd9e12fde276fb8631ded8c131f823d2c06e27e4fcaec9ef3cf78"
     "8a3b0aa372600a92b57974cded2b9334794cba40c63e34cdea212c4cf07d41b7"
     "69a6749f3f630f4122cafe28ec4dc47e26d4346d70b98c73f3e9c53ac40c5945"
     "398b6eda1a832c89c167eacd901d7e2bf363"),
)  # fmt: skip


def _words_to_int(words: tuple[int, ...]) -> int:
    return sum(w << (64 * i) for i, w in enumerate(words))


def _block_answers(
    vectors: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...],
    key_data: Callable[[int, int], np.ndarray[Any, Any]],
    source: str,
) -> Callable[[], Iterator[KnownAnswer]]:
    # A key whose stream starts at the vector's counter: its first 4 uint64 are the block.
    def answers() -> Iterator[KnownAnswer]:
        for counter, key, expected in vectors:
            data = key_data(_words_to_int(key), _words_to_int(counter))
            yield KnownAnswer(
                key_data=tuple(int(w) for w in data),
                bit_width=64,
                shape=(4,),
                expected=expected,
                source=source,
            )

    return answers


def _chacha20_answers() -> Iterator[KnownAnswer]:
    for nonce, counter, section, stream in _RFC8439:
        data = chacha20_key_data(_RFC8439_KEY, nonce, counter)
        expected = bytes.fromhex(stream)
        yield KnownAnswer(
            key_data=tuple(int(w) for w in data),
            bit_width=8,
            shape=(len(expected),),
            expected=tuple(expected),
            source=f"RFC 8439 {section}",
        )


def _impl(
    rng: CounterRng,
    *,
    description: str,
    bit_exact_with: str,
    known_answers: Callable[[], Iterator[KnownAnswer]],
) -> RngImpl:
    # Jitted (and inlined into callers) as JAX's own implementations are.
    return RngImpl(
        name=f"jext.{rng.name}",
        key_shape=(rng.data_words,),
        seed=jax.jit(rng.seed, inline=True),
        split=jax.jit(rng.split, static_argnums=1, inline=True),
        random_bits=jax.jit(rng.random_bits, static_argnums=(1, 2), inline=True),
        fold_in=jax.jit(rng.fold_in, inline=True),
        tag=rng.tag,
        byte_stream=True,
        description=description,
        bit_exact_with=bit_exact_with,
        known_answers=known_answers,
    )


PHILOX4X64 = _impl(
    PHILOX4X64_RNG,
    description="Philox4x64-10 (Salmon et al. 2011), 64-bit words",
    bit_exact_with="numpy.random.Philox",
    known_answers=_block_answers(_PHILOX4X64_10, philox4x64_key_data, _RANDOM123),
)
CHACHA20 = _impl(
    CHACHA20_RNG,
    description="the ChaCha20 block function of RFC 8439 as a counter-based generator",
    bit_exact_with="the RFC 8439 ChaCha20 keystream",
    known_answers=_chacha20_answers,
)
THREEFRY4X64 = _impl(
    THREEFRY4X64_RNG,
    description="Threefry4x64-20 (Salmon et al. 2011)",
    bit_exact_with="Random123 threefry4x64_20",
    known_answers=_block_answers(_THREEFRY4X64_20, threefry4x64_key_data, _RANDOM123),
)
