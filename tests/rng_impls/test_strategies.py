"""Per-platform generation strategies: the same bits everywhere, and GPU-shaped GPU modules.

``random_bits`` of every bundled generator is a jext primitive whose cpu rule calls
jext-rng-native's kernel or generates the stream chunk by chunk (the XLA path), and whose
cuda/rocm/tpu rule generates it in one fused pass.  The XLA path and the fused pass are
traceable, so both run here on CPU and must give identical bits (test_native.py holds the
kernel to them); the exported cuda module must look like one fused computation (no loop,
nothing larger than JAX's own threefry2x32 module holds).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext.random import get_impl
from jext.rng_impls import _common
from jext.rng_impls._chacha20 import CHACHA20_RNG
from jext.rng_impls._common import CounterRng
from jext.rng_impls._philox4x64 import PHILOX4X64_RNG
from jext.rng_impls._threefry4x64 import THREEFRY4X64_RNG
from tests.fast_compile import run_fast

RNGS = {rng.name: rng for rng in (PHILOX4X64_RNG, CHACHA20_RNG, THREEFRY4X64_RNG)}
Rule = Callable[..., jax.Array]
# Shapes around block and word boundaries; with 8-word chunks (see small_chunks) every
# shape beyond two blocks runs the chunked rule's scan, the last one unevenly.
SHAPES = [(0,), (1,), (3,), (2, 5), (17,), (4, 33)]


@pytest.fixture(params=list(RNGS))
def rng(request: pytest.FixtureRequest) -> CounterRng:
    value: CounterRng = RNGS[request.param]
    return value


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chunks of 8 words make the cpu rule's chunk loop run on small arrays (rules are
    # traced afresh under each new jax.jit below, so they read the patched size).
    monkeypatch.setattr(_common, "_CHUNK_WORDS", 8)


def rule(rng: CounterRng, platform: str) -> Rule:
    info = rng.bits_primitive.lowering_rule(platform)
    assert info is not None and info.kind in ("reference", "traceable")
    fn: Rule = info.fn
    return fn


def xla_cpu(rng: CounterRng) -> Rule:
    """The XLA path of the cpu rule (its rule calls jext-rng-native's kernel where installed)."""

    def chunked(key: jax.Array, /, *, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
        return rng.stream_bits(key, bit_width, shape, strategy=_common.stream_words_chunked)

    return chunked


def key_data(rng: CounterRng, batch: tuple[int, ...], seed: int = 5) -> jax.Array:
    words = np.random.default_rng(seed).integers(0, 2**32, (*batch, rng.data_words), np.uint32)
    return jnp.asarray(words)


def draw(fn: Rule, keys: jax.Array, bit_width: int, shape: tuple[int, ...]) -> np.ndarray:
    return draw_all(fn, keys, bit_width, [shape])[0]


def draw_all(
    fn: Rule, keys: jax.Array, bit_width: int, shapes: list[tuple[int, ...]]
) -> list[np.ndarray]:
    """``fn``'s bits for each shape, from one compiled function (compiled fast: integer
    streams do not depend on XLA's optimizations)."""
    with jax.enable_x64(bit_width == 64):
        outs = run_fast(lambda k: [fn(k, bit_width=bit_width, shape=s) for s in shapes], keys)
        return [np.asarray(out) for out in outs]


def assert_same_bits(
    a: Rule, others: list[Rule], keys: jax.Array, widths: tuple[int, ...] = (8, 16, 32, 64)
) -> None:
    """``a`` and each of ``others`` give identical bits for every shape and width on ``keys``."""
    batch = keys.shape[:-1]
    for width in widths:
        want = draw_all(a, keys, width, SHAPES)
        for b in others:
            got = draw_all(b, keys, width, SHAPES)
            for shape, g, w in zip(SHAPES, got, want, strict=True):
                assert g.dtype == w.dtype == np.dtype(f"uint{width}")
                assert g.shape == w.shape == (*batch, *shape)
                np.testing.assert_array_equal(g, w, err_msg=f"{b} uint{width}{list(shape)}")


@pytest.mark.usefixtures("small_chunks")
def test_every_strategy_gives_the_same_bits(rng: CounterRng) -> None:
    # The fused (cuda) rule, the cpu rule's XLA path, and the cpu rule itself: with
    # jext-rng-native installed, its kernel (test_native.py checks that it is called).
    # Key arrays too: every rule takes leading batch axes of key data.
    assert_same_bits(rule(rng, "cuda"), [xla_cpu(rng), rng.bits_primitive], key_data(rng, (2, 3)))


def test_rules_are_the_strategies_by_platform(rng: CounterRng) -> None:
    platforms = rng.bits_primitive.lowering_platforms()
    assert platforms["cpu"].startswith(f"{rng.name}_bits_cpu")
    assert {platforms[p] for p in ("cuda", "rocm", "tpu")} == {"reference"}
    assert rng.bits_primitive.reference.__qualname__.endswith("_bits_fused")


@pytest.mark.usefixtures("small_chunks")
def test_batched_keys_give_each_key_its_own_stream(rng: CounterRng) -> None:
    keys = key_data(rng, (3,), seed=8)
    for fn in (xla_cpu(rng), rule(rng, "cuda")):
        # One compiled program per rule: the batch and each key on its own.
        batched, *each = run_fast(
            lambda k, fn=fn: [fn(x, bit_width=32, shape=(21,)) for x in (k, k[0], k[1], k[2])],
            keys,
        )
        for i in range(3):
            np.testing.assert_array_equal(batched[i], each[i])


def test_public_api_uses_the_same_stream(rng: CounterRng) -> None:
    keys = key_data(rng, (2,), seed=11)
    typed = jax.random.wrap_key_data(keys, impl=get_impl(f"jext.{rng.name}").jax_impl)
    got = np.asarray(jax.jit(jax.vmap(lambda k: jax.random.bits(k, (2, 9), jnp.uint16)))(typed))
    np.testing.assert_array_equal(got, draw(rule(rng, "cuda"), keys, 16, (2, 9)))


@pytest.mark.usefixtures("small_chunks")
def test_a_wrong_strategy_is_caught() -> None:
    rng = PHILOX4X64_RNG

    def skips_a_block(
        block: _common.BlockFn, prepared: Any, start: Any, block_words: int, nwords: int
    ) -> jax.Array:
        # Starts one block late: a stream that looks random but is not the key's.
        later = _common.add_to_counter(start, jnp.ones((), jnp.uint32))
        return _common.stream_words_fused(block, prepared, later, block_words, nwords)

    def wrong(key: jax.Array, /, *, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
        return rng.stream_bits(key, bit_width, shape, strategy=skips_a_block)

    with pytest.raises(AssertionError):
        assert_same_bits(wrong, [xla_cpu(rng)], key_data(rng, ()), widths=(32,))


# --- the exported GPU module ---------------------------------------------------------------

N = 2**28  # 1 GiB of uint32


def module_structure(
    fn: Callable[[jax.Array], jax.Array], key_words: int, platform: str
) -> dict[str, int]:
    """Loops, custom calls, the largest tensor and the count of output-sized tensors.

    Exported from ``jax.ShapeDtypeStruct`` inputs: nothing of size N is materialized.
    """
    exported = jax.export.export(jax.jit(fn), platforms=(platform,))(
        jax.ShapeDtypeStruct((key_words,), jnp.uint32)
    )
    text = exported.mlir_module()
    sizes = [
        int(np.prod([int(d) for d in dims.rstrip("x").split("x")])) * int(bits) // 8
        for dims, bits in re.findall(r"tensor<((?:\d+x)+)(?:ui|i|f)(\d+)>", text)
    ]
    return {
        "while": text.count("stablehlo.while"),
        "custom_call": text.count("custom_call"),
        "largest": max(sizes),
        "output_sized": sum(s >= 4 * N for s in sizes),
    }


def bits_of(impl: Any) -> Callable[[jax.Array], jax.Array]:
    def fn(data: jax.Array) -> jax.Array:
        return jax.random.bits(jax.random.wrap_key_data(data, impl=impl), (N,), jnp.uint32)

    return fn


@pytest.fixture(scope="module")
def threefry_cuda() -> dict[str, int]:
    return module_structure(bits_of("threefry2x32"), 2, "cuda")


def assert_fused_like(got: dict[str, int], threefry: dict[str, int]) -> None:
    assert got["while"] == 0, "a loop over chunks"
    assert got["custom_call"] <= threefry["custom_call"]
    assert got["largest"] <= threefry["largest"]
    assert got["output_sized"] <= threefry["output_sized"]


def test_cuda_module_is_one_fused_pass(rng: CounterRng, threefry_cuda: dict[str, int]) -> None:
    impl = get_impl(f"jext.{rng.name}").jax_impl
    got = module_structure(bits_of(impl), rng.data_words, "cuda")
    assert_fused_like(got, threefry_cuda)
    # The largest tensor is the output itself.
    assert got["largest"] == 4 * N


def test_the_structure_check_catches_a_chunk_loop(threefry_cuda: dict[str, int]) -> None:
    # The cpu rule's XLA path (chunked) exported for cuda must fail the check.
    cpu = xla_cpu(PHILOX4X64_RNG)
    chunked = module_structure(
        lambda k: cpu(k, bit_width=32, shape=(N,)), PHILOX4X64_RNG.data_words, "cuda"
    )
    with pytest.raises(AssertionError, match="a loop over chunks"):
        assert_fused_like(chunked, threefry_cuda)
