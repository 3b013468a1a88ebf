"""jext.random: keys by registered name, the bundled impls through the public API, and RNG
checks that fail on deliberately broken implementations."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.random
from jext.testing._rng_checks import run_rng_check

PHILOX = "jext.philox4x64"


def test_bundled_impls_are_registered_by_the_jext_rng_plugin() -> None:
    assert {"jext.philox4x64", "jext.chacha20", "jext.threefry4x64"} <= set(jext.random.impls())
    impl = jext.random.get_impl(PHILOX)
    assert impl.bit_exact_with == "numpy.random.Philox" and impl.byte_stream
    assert {p.name: p.status for p in jext.plugins()}["jext-rng"] == "loaded"


def test_key_by_name_works_with_jax_random() -> None:
    key = jext.random.key(0, impl=PHILOX)
    assert jax.random.key_data(key).dtype == jnp.uint32
    sample = jax.jit(lambda k: jax.random.normal(k, (4,)))(key)
    assert sample.shape == (4,) and bool(jnp.all(jnp.isfinite(sample)))


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(jext.UnknownNameError, match=r"Did you mean 'jext\.philox4x64'"):
        jext.random.key(0, impl="jext.philox4x46")


def test_numpy_philox_key_reproduces_numpy() -> None:
    key, counter = 2**100 + 12345, 2**64 - 2  # the counter carries into its second word
    want = np.random.Philox(key=key, counter=counter).random_raw(7)
    with jax.enable_x64(True):
        got = jax.random.bits(jext.random.numpy_philox_key(key, counter), (7,), jnp.uint64)
    np.testing.assert_array_equal(np.asarray(got), want)


def test_chacha20_key_gives_the_rfc8439_keystream() -> None:
    key = jext.random.chacha20_key(bytes(range(32)), bytes.fromhex("000000000000004a00000000"), 1)
    stream = bytes(np.asarray(jax.random.bits(key, (16,), jnp.uint8)))
    assert stream == bytes.fromhex("224f51f3401bd9e12fde276fb8631ded")


def test_rng_impl_declaration_is_validated() -> None:
    impl = jext.random.get_impl(PHILOX)
    with pytest.raises(jext.DefinitionError, match="namespaced"):
        dataclasses.replace(impl, name="philox")
    with pytest.raises(jext.DefinitionError, match="key_shape"):
        dataclasses.replace(impl, name="tests.empty_key", key_shape=())


# --- each RNG check fails on its fault ------------------------------------------------------


def broken(name: str, **changes: Any) -> jext.random.RngImpl:
    return dataclasses.replace(jext.random.get_impl(PHILOX), name=f"tests.{name}", **changes)


def status(impl: jext.random.RngImpl, check: str) -> tuple[str, str]:
    result = run_rng_check(impl, check)
    return result.status, result.message


def test_split_that_is_not_fold_in_fails_conventions() -> None:
    base = jext.random.get_impl(PHILOX)
    impl = broken("split_not_fold_in", fold_in=lambda key, data: base.fold_in(key, data + 1))
    st, message = status(impl, "conventions")
    assert st == "fail" and "differs from fold_in" in message


def test_seed_that_ignores_its_value_fails_determinism() -> None:
    base = jext.random.get_impl(PHILOX)
    impl = broken("constant_seed", seed=lambda seed: base.seed(jnp.zeros_like(seed)))
    st, message = status(impl, "determinism")
    assert st == "fail" and "seeds 7 and 8 gave the same bits" in message


def test_children_equal_to_the_parent_fail_distinct_keys() -> None:
    impl = broken(
        "no_children",
        split=lambda key, shape: jnp.broadcast_to(key, (*shape, *key.shape)),
        fold_in=lambda key, data: key,
    )
    st, message = status(impl, "distinct_keys")
    assert st == "fail" and "repeated keys" in message


def biased_bits(key: jax.Array, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
    bits = jext.random.get_impl(PHILOX).random_bits(key, bit_width, shape)
    return bits & (bits >> 1)  # each bit is 1 with probability 1/4


@pytest.mark.parametrize("check", ["moments", "chi_square"])
def test_biased_bits_fail_the_statistics(check: str) -> None:
    assert status(broken(f"biased_{check}", random_bits=biased_bits), check)[0] == "fail"


def test_wrong_vector_fails_known_answers() -> None:
    base = jext.random.get_impl(PHILOX)
    assert base.known_answers is not None
    first = next(iter(base.known_answers()))
    wrong = dataclasses.replace(first, expected=(first.expected[0] ^ 1, *first.expected[1:]))
    st, message = status(broken("wrong_vector", known_answers=lambda: [wrong]), "known_answers")
    assert st == "fail" and "Random123" in message


def swapped_64(key: jax.Array, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
    bits = jext.random.get_impl(PHILOX).random_bits(key, bit_width, shape)
    return (bits << 32) | (bits >> 32) if bit_width == 64 else bits


def test_widths_that_read_different_streams_fail_byte_stream() -> None:
    st, message = status(broken("swapped", random_bits=swapped_64), "byte_stream")
    assert st == "fail" and "width 64" in message


def test_bundled_impl_passes_the_fast_checks() -> None:
    impl = jext.random.get_impl("jext.chacha20")
    for check in ["determinism", "distinct_keys", "moments", "chi_square", "known_answers"]:
        assert status(impl, check) == ("pass", ""), check
