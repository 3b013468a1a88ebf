"""Philox4x64: bit-exact with ``numpy.random.Philox`` at every width, across counter carries."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext.random
from jext.rng_impls import PHILOX4X64, numpy_philox_key_data, philox4x64_key_data

# (key, counter): zero, carries out of counter word 0, 1 and 2 within a few blocks, and the
# wrap of the whole 256-bit counter.
CASES = [
    (0, 0),
    (12345, 2**64 - 1),
    (2**64 + 99, 2**128 - 3),
    (2**100 + 7, 2**192 - 2),
    (2**128 - 1, 2**256 - 2),
]
N64 = 11  # not a multiple of the 4 words of a block


def numpy_bytes(key: int, counter: int, n64: int) -> bytes:
    raw = np.random.Philox(key=key, counter=counter).random_raw(n64)
    return raw.astype("<u8").tobytes()


def batched_bits(dtype: type, count: int) -> np.ndarray:
    """bits(count, dtype) for every case, in one compiled call (vmap over the keys)."""
    data = jnp.asarray(np.stack([numpy_philox_key_data(k, c) for k, c in CASES]))
    keys = jax.random.wrap_key_data(data, impl=PHILOX4X64.jax_impl)
    return np.asarray(jax.jit(jax.vmap(lambda k: jax.random.bits(k, (count,), dtype)))(keys))


def test_uint64_equals_random_raw() -> None:
    with jax.enable_x64(True):
        got = batched_bits(jnp.uint64, N64)
    for row, (key, counter) in zip(got, CASES, strict=True):
        want = np.random.Philox(key=key, counter=counter).random_raw(N64)
        np.testing.assert_array_equal(row, want)


@pytest.mark.parametrize("width", [8, 16, 32])
def test_narrow_widths_read_the_same_bytes(width: int) -> None:
    count = N64 * 64 // width - 1  # ends inside a 64-bit word
    got = batched_bits(getattr(jnp, f"uint{width}"), count)
    for row, (key, counter) in zip(got, CASES, strict=True):
        want = np.frombuffer(numpy_bytes(key, counter, N64), f"<u{width // 8}")[:count]
        np.testing.assert_array_equal(row, want)


def test_uint64_works_inside_x64_only_and_uint32_without_it() -> None:
    assert not jax.config.jax_enable_x64
    key = jax.random.wrap_key_data(jnp.asarray(numpy_philox_key_data(5)), impl=PHILOX4X64.jax_impl)
    got = np.asarray(jax.random.bits(key, (6,), jnp.uint32))
    assert got.dtype == np.uint32
    assert got.tobytes() == numpy_bytes(5, 0, 3)


def test_long_stream_through_the_chunked_path() -> None:
    # Over 2**19 words: generated chunk by chunk, then cut to length.
    n64 = 2**18 + 5
    key, counter = 2**70 + 3, 2**64 - 7
    with jax.enable_x64(True):
        data = jnp.asarray(numpy_philox_key_data(key, counter))
        got = np.asarray(
            jax.random.bits(
                jax.random.wrap_key_data(data, impl=PHILOX4X64.jax_impl), (n64,), jnp.uint64
            )
        )
    np.testing.assert_array_equal(got, np.random.Philox(key=key, counter=counter).random_raw(n64))


def test_seed_is_numpy_key_with_counter_zero() -> None:
    for seed in (0, 1, 2**31 - 1):
        data = np.asarray(jax.random.key_data(jax.random.key(seed, impl=PHILOX4X64.jax_impl)))
        np.testing.assert_array_equal(data, numpy_philox_key_data(seed))
    with jax.enable_x64(True):
        big = np.asarray(jax.random.key_data(jax.random.key(2**63 - 5, impl=PHILOX4X64.jax_impl)))
    np.testing.assert_array_equal(big, numpy_philox_key_data(2**63 - 5))
    # -1 is 2**64 - 1 with x64 (an int64) and without it (an int32, sign-extended).
    for x64 in (True, False):
        with jax.enable_x64(x64):
            negative = jax.random.key_data(jax.random.key(-1, impl=PHILOX4X64.jax_impl))
            # jext.random.key reads a Python int as an int64 in both modes.
            top = jax.random.key_data(jext.random.key(2**32 - 1, impl="jext.philox4x64"))
        np.testing.assert_array_equal(np.asarray(negative), numpy_philox_key_data(2**64 - 1))
        np.testing.assert_array_equal(np.asarray(top), numpy_philox_key_data(2**32 - 1))


def test_key_data_constructors() -> None:
    np.testing.assert_array_equal(numpy_philox_key_data(3, 2**256 - 1), philox4x64_key_data(3, 0))
    with pytest.raises(ValueError, match="key"):
        philox4x64_key_data(2**128)
    with pytest.raises(ValueError, match="counter"):
        numpy_philox_key_data(1, -1)
