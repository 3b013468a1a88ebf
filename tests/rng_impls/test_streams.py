"""Byte streams: every width reads the same bytes; rolled and unrolled rounds agree."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext.rng_impls import (
    CHACHA20,
    THREEFRY4X64,
    chacha20_key_data,
    threefry4x64_key_data,
)
from tests.rng_impls.shipped import IMPLS

RFC_KEY = bytes(range(32))
RFC_NONCE = bytes.fromhex("000000000000004a00000000")


def widths_of(key: jax.Array, nbytes: int) -> dict[int, bytes]:
    """The first ``nbytes`` (a multiple of 16) of the stream read at each width, in one call."""

    def read(k: jax.Array) -> dict[int, jax.Array]:
        # Two rows: C order over a 2-D shape continues the same stream.
        return {
            w: jax.random.bits(k, (2, nbytes * 4 // w), getattr(jnp, f"uint{w}"))
            for w in (8, 16, 32, 64)
        }

    with jax.enable_x64(True):
        out = jax.jit(read)(key)
        assert all(a.dtype == np.dtype(f"uint{w}") for w, a in out.items())
        return {w: np.asarray(a).astype(f"<u{w // 8}").tobytes() for w, a in out.items()}


def test_chacha20_widths_read_the_rfc_keystream() -> None:
    data = chacha20_key_data(RFC_KEY, RFC_NONCE, 1)
    key = jax.random.wrap_key_data(jnp.asarray(data), impl=CHACHA20.jax_impl)
    streams = widths_of(key, 208)
    assert len(set(streams.values())) == 1
    # RFC 8439 section 2.4.2's keystream begins 224f51f3...
    assert streams[8].startswith(bytes.fromhex("224f51f3401bd9e12fde276fb8631ded"))


def test_chacha20_counter_carries_into_the_nonce() -> None:
    data = chacha20_key_data(RFC_KEY, bytes(12), 2**32 - 1)
    key = jax.random.wrap_key_data(jnp.asarray(data), impl=CHACHA20.jax_impl)
    second = np.asarray(jax.random.bits(key, (32,), jnp.uint32))[16:]
    carried = chacha20_key_data(RFC_KEY, (1).to_bytes(4, "little") + bytes(8), 0)
    first = np.asarray(
        jax.random.bits(
            jax.random.wrap_key_data(jnp.asarray(carried), impl=CHACHA20.jax_impl), (16,)
        )
    )
    np.testing.assert_array_equal(second, first)


def test_threefry4x64_widths_read_one_stream_across_a_carry() -> None:
    data = threefry4x64_key_data(2**200 + 1, 2**64 - 2)
    key = jax.random.wrap_key_data(jnp.asarray(data), impl=THREEFRY4X64.jax_impl)
    assert len(set(widths_of(key, 144).values())) == 1


@pytest.mark.parametrize("name", IMPLS)
def test_unrolled_rounds_extend_the_rolled_stream(name: str) -> None:
    # Small requests run rolled rounds, large ones unrolled: one stream either way.
    key = jax.random.key(9, impl=IMPLS[name])
    small = np.asarray(jax.random.bits(key, (40,)))
    large = np.asarray(jax.random.bits(key, (2**16,)))  # at least 4096 blocks
    np.testing.assert_array_equal(large[:40], small)
    assert len(np.unique(large)) > 2**16 - 10
