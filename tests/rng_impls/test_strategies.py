"""Forms of each generator per platform: the same bits everywhere, and GPU-shaped GPU modules.

``random_bits`` of every bundled generator is a jext primitive whose rule on each platform
lowers one form (docs/rng.md, "Forms"): on cpu jext-rng-native's kernel or the chunked XLA
path, on cuda and rocm the rolled form, on tpu the unrolled one; ``JEXT_RNG_FORM`` forces
another.  The XLA forms and the Pallas kernel (interpreted) run here on CPU and must give
identical bits (test_native.py holds the kernel to them); the exported cuda module must
make one pass over the output (nothing larger than JAX's own threefry2x32 module holds).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext._errors import LoweringError
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


def form(rng: CounterRng, name: _common.Form) -> Rule:
    """The traceable form ``name`` of ``rng`` (the pallas form interpreted)."""
    return rng.form(name, interpret=True)


def xla_cpu(rng: CounterRng) -> Rule:
    """The XLA path of the cpu rule (its rule calls jext-rng-native's kernel where installed)."""
    return form(rng, "chunked")


def key_data(rng: CounterRng, batch: tuple[int, ...], seed: int = 5) -> jax.Array:
    words = np.random.default_rng(seed).integers(0, 2**32, (*batch, rng.data_words), np.uint32)
    return jnp.asarray(words)


def draw(fn: Rule, keys: jax.Array, bit_width: int, shape: tuple[int, ...]) -> np.ndarray:
    (out,) = draw_many([(fn, bit_width, shape)], keys)
    return out


def draw_many(
    requests: list[tuple[Rule, int, tuple[int, ...]]], keys: jax.Array
) -> list[np.ndarray]:
    """The bits of each ``(fn, bit_width, shape)`` request on ``keys``, from one compiled
    function (compiled fast: integer streams do not depend on XLA's optimizations).  A
    64-bit request needs x64: every request of one call runs with x64 on if one has 64."""
    with jax.enable_x64(any(width == 64 for _, width, _ in requests)):
        outs = run_fast(
            lambda k: [fn(k, bit_width=width, shape=s) for fn, width, s in requests], keys
        )
        return [np.asarray(out) for out in outs]


Case = tuple[int, tuple[int, ...]]  # (bit_width, shape)
EVERY_CASE: list[Case] = [(width, shape) for width in (8, 16, 32, 64) for shape in SHAPES]


def assert_same_bits(a: Rule, others: list[tuple[Rule, list[Case]]], keys: jax.Array) -> None:
    """Each rule of ``others`` gives the bits ``a`` gives on ``keys`` for each of its
    ``(bit_width, shape)`` cases.

    One compiled function per x64 mode holds every rule: 8, 16 and 32 bits without x64 (as
    a user draws them), 64 bits with it."""
    batch = keys.shape[:-1]
    for x64 in (False, True):
        mine = [[c for c in cases if (c[0] == 64) == x64] for _, cases in others]
        union = sorted({c for cases in mine for c in cases})
        if not union:
            continue
        requests = [(a, *c) for c in union]
        requests += [(b, *c) for (b, _), cases in zip(others, mine, strict=True) for c in cases]
        outs = draw_many(requests, keys)
        want = dict(zip(union, outs[: len(union)], strict=True))
        got = outs[len(union) :]
        for (b, _), cases in zip(others, mine, strict=True):
            mine_got, got = got[: len(cases)], got[len(cases) :]
            for (width, shape), g in zip(cases, mine_got, strict=True):
                w = want[width, shape]
                assert g.dtype == w.dtype == np.dtype(f"uint{width}")
                assert g.shape == w.shape == (*batch, *shape)
                np.testing.assert_array_equal(g, w, err_msg=f"{b} uint{width}{list(shape)}")


def words_of(case: Case) -> int:
    width, shape = case
    return -(-math.prod(shape) * width // 32)


# A form's own part is its word stream: every form reads its words through the same
# words_to_bits, and the XLA forms share stream_bits, which asks the form for
# ceil(size * bit_width / 32) words.  So the XLA forms need each word count of EVERY_CASE
# once (the first case giving it); the cpu rule (jext-rng-native's kernel makes each width
# itself) takes every case.
WORD_COUNT_CASES: list[Case] = list({words_of(c): c for c in reversed(EVERY_CASE)}.values())
# The pallas form computes its word count itself: one case per width, rounded up for 8
# and 16 bits, in pairs for 64, and no block.  Every non-empty case up to 4096 words is
# one program per key whose tile is cut to the words asked, so (1,), (3,), (2, 5) and (17,)
# at 32 bits take the path of (4, 33).  Each pallas_call is traced and compiled through
# the Pallas interpreter on its own, about a second.
PALLAS_CASES: list[Case] = [(32, (0,)), (32, (4, 33)), (8, (17,)), (16, (3,)), (64, (2, 5))]


@pytest.mark.usefixtures("small_chunks")
def test_every_form_gives_the_same_bits(rng: CounterRng) -> None:
    # The unrolled, rolled and chunked forms, the cpu rule itself (with jext-rng-native
    # installed, its kernel: test_native.py checks that it is called) and the pallas form.
    # Key arrays too: every form takes leading batch axes of key data.
    others = [(form(rng, name), WORD_COUNT_CASES) for name in ("rolled", "chunked")]
    others += [(rng.bits_primitive, EVERY_CASE), (form(rng, "pallas"), PALLAS_CASES)]
    assert_same_bits(form(rng, "unrolled"), others, key_data(rng, (2, 3)))


def test_rules_lower_the_form_of_their_platform(rng: CounterRng) -> None:
    platforms = rng.bits_primitive.lowering_platforms()
    for platform in _common.PLATFORMS:
        assert platforms[platform].startswith(f"{rng.name}_bits_{platform}")
    assert rng.bits_primitive.reference.__qualname__.endswith("_bits_unrolled")
    assert _common.DEFAULT_FORMS == {
        "cpu": "native",
        "cuda": "pallas",
        "rocm": "rolled",
        "tpu": "unrolled",
    }


def lowered_text(rng: CounterRng, n: int = 4096) -> str:
    """The cpu module of ``jax.random.bits`` on a key of ``rng`` (lowered afresh)."""
    impl = get_impl(f"jext.{rng.name}").jax_impl
    key = jax.random.key(0, impl=impl)
    return jax.jit(lambda k: jax.random.bits(k, (n,), jnp.uint32)).lower(key).as_text()


def test_jext_rng_form_forces_a_form(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = CHACHA20_RNG
    monkeypatch.setenv("JEXT_RNG_FORM", "rolled")
    assert lowered_text(rng).count("stablehlo.while") == 1  # the rounds' loop
    monkeypatch.setenv("JEXT_RNG_FORM", "cuda=pallas,cpu=unrolled")  # a platform's own wins
    text = lowered_text(rng, 2**16)  # unrolled from 4096 blocks on
    assert "stablehlo.while" not in text and "custom_call" not in text
    monkeypatch.setenv("JEXT_RNG_FORM", "pallas")  # interpreted on cpu: a loop over programs
    assert "custom_call" not in lowered_text(rng)


@pytest.mark.parametrize(
    ("value", "platform", "message"),
    [
        ("fast", "cpu", "'fast' is neither FORM nor PLATFORM=FORM"),
        ("gpu=rolled", "cuda", "'gpu=rolled' is neither FORM nor PLATFORM=FORM"),
        ("pallas", "tpu", "the pallas form of jext's RNGs does not run on tpu"),
        ("rocm=native", "rocm", "the native form of jext's RNGs does not run on rocm"),
    ],
)
def test_a_form_that_cannot_run_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str, platform: str, message: str
) -> None:
    monkeypatch.setenv("JEXT_RNG_FORM", value)
    with pytest.raises(LoweringError, match=re.escape(message)):
        _common.form_for(platform, export=False, native=True)


def test_native_form_stands_down_for_exports_and_a_missing_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _common.form_for("cpu", export=False, native=True) == "native"
    assert _common.form_for("cpu", export=True, native=True) == "chunked"
    assert _common.form_for("cpu", export=False, native=False) == "chunked"
    monkeypatch.setenv("JEXT_RNG_FORM", "native")
    assert _common.form_for("cpu", export=True, native=False) == "chunked"
    with pytest.raises(LoweringError, match="needs jext-rng-native's kernels"):
        _common.form_for("cpu", export=False, native=False)


@pytest.mark.usefixtures("small_chunks")
def test_batched_keys_give_each_key_its_own_stream(rng: CounterRng) -> None:
    keys = key_data(rng, (3,), seed=8)
    forms = (xla_cpu(rng), form(rng, "rolled"), form(rng, "pallas"))
    reference = form(rng, "unrolled")
    # One compiled program: each form on the batch, and each key on its own through the
    # reference form (which every form matches on a batch: the test above).
    *batched, each = run_fast(
        lambda k: [
            *(fn(k, bit_width=32, shape=(21,)) for fn in forms),
            [reference(k[i], bit_width=32, shape=(21,)) for i in range(3)],
        ],
        keys,
    )
    for fn, out in zip(forms, batched, strict=True):
        for i in range(3):
            np.testing.assert_array_equal(out[i], each[i], err_msg=f"{fn} key {i}")


def test_public_api_uses_the_same_stream(rng: CounterRng) -> None:
    keys = key_data(rng, (2,), seed=11)
    typed = jax.random.wrap_key_data(keys, impl=get_impl(f"jext.{rng.name}").jax_impl)
    got = np.asarray(jax.jit(jax.vmap(lambda k: jax.random.bits(k, (2, 9), jnp.uint16)))(typed))
    np.testing.assert_array_equal(got, draw(form(rng, "unrolled"), keys, 16, (2, 9)))


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
        cases = [(32, shape) for shape in SHAPES]
        assert_same_bits(wrong, [(xla_cpu(rng), cases)], key_data(rng, ()))


# --- the exported GPU module ---------------------------------------------------------------

N = 2**28  # 1 GiB of uint32


def module_structure(
    fn: Callable[[jax.Array], jax.Array], key_words: int, platform: str
) -> dict[str, int]:
    """Loops, chunk writes, custom calls, the largest tensor and the count of output-sized
    tensors.  Exported from ``jax.ShapeDtypeStruct`` inputs: nothing of size N is
    materialized (the pallas form's Triton call allowed)."""
    triton = jax.export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")
    exported = jax.export.export(jax.jit(fn), platforms=(platform,), disabled_checks=[triton])(
        jax.ShapeDtypeStruct((key_words,), jnp.uint32)
    )
    text = exported.mlir_module()
    sizes = [
        int(np.prod([int(d) for d in dims.rstrip("x").split("x")])) * int(bits) // 8
        for dims, bits in re.findall(r"tensor<((?:\d+x)+)(?:ui|i|f)(\d+)>", text)
    ]
    return {
        "while": text.count("stablehlo.while"),
        "chunk_writes": text.count("dynamic_update_slice"),
        "custom_call": text.count("custom_call"),
        "triton": text.count("xla.gpu.triton"),
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


def assert_one_pass(got: dict[str, int], threefry: dict[str, int]) -> None:
    """One pass over the output: no loop over chunks of it, nothing larger than it."""
    assert got["chunk_writes"] == 0, "a loop over chunks"
    assert got["while"] <= 1, "loops beside the rounds' loop"
    assert got["custom_call"] - got["triton"] <= threefry["custom_call"]
    assert got["largest"] <= threefry["largest"]
    assert got["output_sized"] <= threefry["output_sized"]


@pytest.mark.parametrize(
    ("name", "loops", "triton"), [("rolled", 1, 0), ("unrolled", 0, 0), ("pallas", 0, 1)]
)
def test_cuda_module_of_each_form_is_one_pass(
    rng: CounterRng,
    threefry_cuda: dict[str, int],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    loops: int,
    triton: int,
) -> None:
    monkeypatch.setenv("JEXT_RNG_FORM", f"cuda={name}")
    impl = get_impl(f"jext.{rng.name}").jax_impl
    got = module_structure(bits_of(impl), rng.data_words, "cuda")
    assert_one_pass(got, threefry_cuda)
    # The rolled form's one loop is the rounds'; the pallas form is one Triton kernel.
    assert (got["while"], got["triton"]) == (loops, triton)
    # The largest tensor is the output itself.
    assert got["largest"] == 4 * N


def test_the_structure_check_catches_a_chunk_loop(threefry_cuda: dict[str, int]) -> None:
    # The cpu rule's XLA path (chunked) exported for cuda must fail the check.
    cpu = xla_cpu(PHILOX4X64_RNG)
    chunked = module_structure(
        lambda k: cpu(k, bit_width=32, shape=(N,)), PHILOX4X64_RNG.data_words, "cuda"
    )
    with pytest.raises(AssertionError, match="a loop over chunks"):
        assert_one_pass(chunked, threefry_cuda)
