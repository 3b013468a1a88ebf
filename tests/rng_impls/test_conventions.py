"""JAX's typed-key conventions: split/fold_in, distinct keys, jit/vmap/scan, seeds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext.random import RngImpl
from jext.rng_impls import (
    CHACHA20,
    PHILOX4X64,
    THREEFRY4X64,
    chacha20_key_data,
    threefry4x64_key_data,
)
from tests.rng_impls.shipped import IMPLS

KEY_WORDS = {"philox4x64": 12, "chacha20": 12, "threefry4x64": 16}


@pytest.fixture(params=list(IMPLS))
def name(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def impl(name: str) -> object:
    return IMPLS[name]


def data(keys: jax.Array) -> np.ndarray:
    return np.asarray(jax.random.key_data(keys))


def test_key_data_is_uint32(name: str) -> None:
    got = data(jax.random.key(42, impl=impl(name)))
    assert got.dtype == np.uint32
    assert got.shape == (KEY_WORDS[name],)


def test_split_equals_fold_in(name: str) -> None:
    key = jax.random.key(42, impl=impl(name))
    split = data(jax.random.split(key, 4))
    folded = np.stack([data(jax.random.fold_in(key, i)) for i in range(4)])
    np.testing.assert_array_equal(split, folded)
    np.testing.assert_array_equal(data(jax.random.split(key, (2, 2))).reshape(4, -1), split)


def test_unrolled_split_equals_rolled_fold_in() -> None:
    # 4096 children take the unrolled path (the derivation is shared by every impl).
    key = jax.random.key(42, impl=PHILOX4X64.jax_impl)
    large = data(jax.random.split(key, 4096))
    for i in (0, 1, 4095):
        np.testing.assert_array_equal(large[i], data(jax.random.fold_in(key, i)))


def test_derived_keys_and_streams_are_distinct(name: str) -> None:
    key = jax.random.key(3, impl=impl(name))
    children = list(data(jax.random.split(key, 4)))
    children += [data(jax.random.fold_in(key, i)) for i in (4, 5, 2**31, 2**32 - 1)]
    children += [data(key), data(jax.random.fold_in(jax.random.key(4, impl=impl(name)), 0))]
    assert len({c.tobytes() for c in children}) == len(children)
    keys = jax.random.wrap_key_data(jnp.asarray(np.stack(children)), impl=impl(name))
    streams = np.asarray(jax.vmap(lambda k: jax.random.bits(k, (8,)))(keys))
    assert len({s.tobytes() for s in streams}) == len(children)


def test_jit_vmap_and_scan_agree_with_eager(name: str) -> None:
    key = jax.random.key(7, impl=impl(name))
    keys = jax.random.split(key, 4)
    vmapped = np.asarray(jax.vmap(lambda k: jax.random.bits(k, (8,)))(keys))
    np.testing.assert_array_equal(vmapped, np.stack([jax.random.bits(k, (8,)) for k in keys]))

    def step(k: jax.Array, i: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jax.random.fold_in(k, 1), jax.random.bits(jax.random.fold_in(k, i), (8,))

    _, scanned = jax.lax.scan(step, key, jnp.arange(3, dtype=jnp.uint32))
    k, want = key, []
    for i in range(3):
        want.append(np.asarray(jax.random.bits(jax.random.fold_in(k, i), (8,))))
        k = jax.random.fold_in(k, 1)
    np.testing.assert_array_equal(np.asarray(scanned), np.stack(want))


# Normal, bernoulli, permutation, randint and gamma samples of every shipped generator are
# held to Kolmogorov-Smirnov and chi-square tests in test_jax_suite.py; float16 is drawn
# only here.
def test_float16_uniform_with_philox4x64() -> None:
    key = jax.random.key(12, impl=PHILOX4X64.jax_impl)
    u = np.asarray(jax.jit(lambda k: jax.random.uniform(k, (1000,), jnp.float16))(key))
    assert u.dtype == np.float16
    u = u.astype(np.float64)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.05


def test_seeds_follow_the_documented_layout() -> None:
    def seeded(seed: int, rng: RngImpl) -> np.ndarray:
        return data(jax.random.key(seed, impl=rng.jax_impl))

    np.testing.assert_array_equal(seeded(5, THREEFRY4X64), threefry4x64_key_data(5))
    # A negative seed wraps modulo 2**64, with x64 (an int64) or without it (an int32).
    for x64 in (True, False):
        with jax.enable_x64(x64):
            np.testing.assert_array_equal(
                seeded(-2, THREEFRY4X64), threefry4x64_key_data(2**64 - 2)
            )
    np.testing.assert_array_equal(
        seeded(2**31 - 1, CHACHA20),
        chacha20_key_data((2**31 - 1).to_bytes(8, "little") + bytes(24)),
    )
    with jax.enable_x64(True):
        np.testing.assert_array_equal(
            seeded(2**40 + 3, CHACHA20),
            chacha20_key_data((2**40 + 3).to_bytes(8, "little") + bytes(24)),
        )
