"""jext-rng-native: the multi-threaded C++ kernels give the XLA path's bits, and are used.

The kernels are the cpu rule of every bundled generator's ``random_bits`` where the
optional core plugin jext-rng-native is installed (the README set-up installs it), so the
known-answer and numpy-Philox tests of this folder run through them too; this module
holds them to the fused (cuda) rule run on CPU, which test_strategies.py holds to the
chunked XLA path, and checks when they are used and when not.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.random
from jext._registry import registry
from jext.rng_impls._common import CounterRng, native_cpu_target, native_target_name
from tests.conftest import run_python
from tests.rng_impls.test_strategies import RNGS, Rule, draw, form, key_data

native = pytest.importorskip(
    "jext_rng_native", reason="jext-rng-native is not installed (the README set-up installs it)"
)
# The kernels are the cpu rule's: on a GPU machine the tests still lower for the CPU.
pytestmark = pytest.mark.usefixtures("on_cpu")


@pytest.fixture(params=list(RNGS))
def rng(request: pytest.FixtureRequest) -> CounterRng:
    value: CounterRng = RNGS[request.param]
    return value


def cpu(rng: CounterRng) -> Rule:
    """The primitive itself: lowered for cpu, it calls the kernel."""
    return rng.bits_primitive


def lowered(fn: Rule, keys: jax.Array, bit_width: int, shape: tuple[int, ...]) -> str:
    return jax.jit(lambda k: fn(k, bit_width=bit_width, shape=shape)).lower(keys).as_text()


def test_the_native_plugin_is_core_and_registers_every_generator() -> None:
    info = {p.name: p for p in jext.plugins()}["jext-rng-native"]
    assert (info.status, info.core) == ("loaded", True)
    assert sorted(native.GENERATORS) == sorted(RNGS)
    for name in RNGS:
        target = native_target_name(name)
        assert target == native.target_name(name)
        assert registry().core_ffi_target(target, "cpu")
        assert native_cpu_target(target) == target
    assert native.max_threads() >= 1


def test_the_cpu_rule_calls_the_kernel(rng: CounterRng) -> None:
    # test_strategies.py compares its bits with the fused rule's and the XLA path's.
    keys = key_data(rng, (2, 3))
    text = lowered(cpu(rng), keys, 16, (2, 5))
    assert text.count(f"custom_call @{native_target_name(rng.name)}") == 1
    assert "stablehlo.while" not in text


def test_threads_split_the_stream_exactly(rng: CounterRng, monkeypatch: pytest.MonkeyPatch) -> None:
    # 8 keys of 30001 bytes: enough for 3 threads (64 KiB each at least), whose ranges
    # start in the middle of a key and of a block group.
    keys = key_data(rng, (8,), seed=3)
    want = draw(form(rng, "unrolled"), keys, 8, (30001,))
    monkeypatch.setenv("JEXT_RNG_THREADS", "1")  # read by the kernel at each call
    one = draw(cpu(rng), keys, 8, (30001,))
    monkeypatch.setenv("JEXT_RNG_THREADS", "3")  # capped by the cores there are
    np.testing.assert_array_equal(draw(cpu(rng), keys, 8, (30001,)), one)
    np.testing.assert_array_equal(one, want)


def test_the_baseline_kernels_give_the_avx2_kernels_bits(
    rng: CounterRng, monkeypatch: pytest.MonkeyPatch
) -> None:
    # JEXT_RNG_AVX2=0 (read at each call) runs the kernels a CPU without AVX2 gets.  A key
    # whose counter carries inside the first block group, and over 4 MiB of output: the
    # size from which the kernel asks for huge pages (JEXT_RNG_HUGE_PAGES=0: it does not).
    keys = jnp.stack([key_data(rng, (), seed=7), jnp.asarray(rng.key_data(2**70 + 1, 2**64 - 3))])
    fn = jax.jit(lambda k: [cpu(rng)(k, bit_width=8, shape=s) for s in ((2**21 + 5,), (1001,))])
    fast, small = (np.asarray(x) for x in fn(keys))
    monkeypatch.setenv("JEXT_RNG_AVX2", "0")
    monkeypatch.setenv("JEXT_RNG_HUGE_PAGES", "0")
    base, base_small = (np.asarray(x) for x in fn(keys))
    # The AVX2 kernels' bits are held to the XLA path in test_strategies.py.
    np.testing.assert_array_equal(base, fast)
    np.testing.assert_array_equal(base_small, small)
    np.testing.assert_array_equal(small, fast[:, :1001])


def test_vmap_is_one_call_on_the_key_batch() -> None:
    impl = jext.random.get_impl("jext.chacha20").jax_impl
    keys = jax.random.split(jax.random.key(0, impl=impl), 3)
    fn = jax.jit(jax.vmap(lambda k: jax.random.bits(k, (5,), jnp.uint16)))
    assert fn.lower(keys).as_text().count("custom_call @jext_rng_chacha20_bits") == 1
    got = np.asarray(fn(keys))
    for i in range(3):
        np.testing.assert_array_equal(got[i], jax.random.bits(keys[i], (5,), jnp.uint16))


def test_uint64_without_x64_reads_the_low_halves() -> None:
    # JAX canonicalizes uint64 to uint32 without x64: the kernel writes every other word.
    bits = cpu(RNGS["philox4x64"])
    keys = key_data(RNGS["philox4x64"], (2,), seed=4)
    with jax.enable_x64(False):
        fn = jax.jit(
            lambda k: [bits(k, bit_width=64, shape=(7,)), bits(k, bit_width=32, shape=(14,))]
        )
        got, words = (np.asarray(x) for x in fn(keys))
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, words[:, ::2])


def test_numpy_philox_stream_through_the_kernel() -> None:
    key = jext.random.numpy_philox_key(2**100 + 3, counter=2**64 - 2)  # a carry into c1
    with jax.enable_x64(True):
        fn = jax.jit(lambda k: jax.random.bits(k, (1001,), jnp.uint64))
        assert "custom_call @jext_rng_philox4x64_bits" in fn.lower(key).as_text()
        got = np.asarray(fn(key))
    want = np.random.Philox(key=2**100 + 3, counter=2**64 - 2).random_raw(1001)
    np.testing.assert_array_equal(got, want)


def test_exports_keep_the_portable_xla_path() -> None:
    # A serialized module must run where jext-rng-native is not installed: no custom call.
    key = jext.random.numpy_philox_key(7)
    fn = jax.jit(lambda k: jax.random.bits(k, (9,), jnp.uint32))
    exported = jax.export.export(fn, platforms=["cpu"])(key)
    assert "custom_call" not in exported.mlir_module()
    assert "custom_call @jext_rng_philox4x64_bits" in fn.lower(key).as_text()
    np.testing.assert_array_equal(exported.call(key), fn(key))


def test_switched_off_the_cpu_rule_falls_back_to_xla(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = RNGS["threefry4x64"]
    keys = key_data(rng, (2,), seed=6)
    with_kernel = draw(cpu(rng), keys, 32, (2, 9))
    monkeypatch.setenv("JEXT_RNG_NATIVE", "0")  # read at each lowering (fresh jit below)
    assert native_cpu_target(native_target_name(rng.name)) is None
    assert "custom_call" not in lowered(cpu(rng), keys, 32, (2, 9))
    np.testing.assert_array_equal(draw(cpu(rng), keys, 32, (2, 9)), with_kernel)


def test_built_for_a_newer_ffi_api_it_fails_in_one_line_and_xla_draws(tmp_path: Path) -> None:
    # A build against a newer FFI API than jaxlib's is refused by XLA, after which jaxlib
    # 0.8 cannot start its CPU backend: the plugin must fail before registering anything.
    # Simulated where jext reads the installed version (a second jaxlib build is too slow).
    native_cpu = importlib.import_module("jext_rng_native._native_cpu")
    assert hasattr(native_cpu, "ffi_api_version"), "a build from before the check: reinstall it"
    built = native_cpu.ffi_api_version()
    code = (
        "import warnings, jax, jax.numpy as jnp, numpy as np\n"
        "from jext import _jax\n"
        f"_jax.installed_ffi_api = lambda: ({built[0]}, {built[1] - 1})\n"
        "import jext, jext.random\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    key = jext.random.numpy_philox_key(7)\n"
        "    fn = jax.jit(lambda k: jax.random.bits(k, (4,), jnp.uint32))\n"
        "    raw = np.random.Philox(key=7).random_raw(2).view(np.uint32)\n"
        "    status = {p.name: p.status for p in jext.plugins()}['jext-rng-native']\n"
        "    print(status, np.array_equal(np.asarray(fn(key)), raw))\n"
        "    print('custom_call' in fn.lower(key).as_text())\n"
        "print(*[str(w.message) for w in caught], sep='\\n')\n"
    )
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr
    status, custom_call, *messages = result.stdout.splitlines()
    assert (status, custom_call) == ("error True", "False")
    # example-native (jext-example-native), built against the same FFI headers, fails the
    # same check.
    mine = [m for m in messages if m.startswith("jext plugin 'jext-rng-native' ")]
    assert len(mine) == 1, messages
    others = [m for m in messages if m not in mine]
    assert all(m.startswith("jext plugin 'example-native' ") for m in others), messages
    messages = mine
    assert (
        f"was built against XLA FFI API {built[0]}.{built[1]}, which the installed jaxlib "
        f"{jax.lib.__version__} (FFI API {built[0]}.{built[1] - 1}) cannot load, so none of its "
        "FFI handlers is registered (jext's RNGs use the XLA path); rebuild it against the "
        "installed jaxlib: pip install"
    ) in messages[0]


def test_a_target_of_another_plugin_is_never_used() -> None:
    # Only a core plugin's target counts: a third-party plugin cannot take the name over.
    assert not registry().core_ffi_target("native_softplus", "cpu")
    assert ("native_softplus", "cpu") in registry().ffi_targets()
