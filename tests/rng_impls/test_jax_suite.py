"""JAX's own PRNG test cases, for every registered RNG implementation.

A port (written for jext) of the cases of JAX's ``tests/random_test.py`` and
``tests/random_lax_test.py`` (jax-v0.10.2) that any PRNG implementation should pass: key
arrays under jit/vmap/scan, split/fold_in, every ``random_bits`` width and dtype,
distributions with Kolmogorov-Smirnov and chi-square tests, key_data/wrap_key_data,
printing and pickling, and (in a subprocess on 4 CPU devices) sharded outputs.

Documented JAX limits: ``jax.random.poisson`` supports threefry2x32 only (asserted below as
the error JAX raises).  Cases tied to one impl's bit values (known-answer vectors of
threefry2x32, RBG's batching behaviour) are left out; the jext generators have their own
known answers in ``test_known_answers.py``.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

import jext
from jext import _jax
from tests.host_devices import run_on_four_cpus

IMPLS = jext.random.impls()


@pytest.fixture(params=IMPLS, scope="module")
def name(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def make_key(name: str, seed: Any = 0) -> jax.Array:
    return jext.random.key(seed, impl=name)


def data(keys: jax.Array) -> np.ndarray:
    return np.asarray(jax.random.key_data(keys))


# --- statistics (RandomTestBase) ----------------------------------------------------------


def check_collisions(samples: np.ndarray, nbits: int) -> None:
    # The count of distinct values against the expected count of occupied bins when
    # throwing len(samples) balls into 2**nbits bins (Chebyshev bound, fail prob 0.01).
    nbins = 2.0**nbits
    nexpected = nbins * (1 - ((nbins - 1) / nbins) ** samples.size)
    deviation = ((np.unique(samples).size - nexpected) / nexpected) ** 2
    assert deviation < 1 / np.sqrt(nexpected * 0.01)


def check_ks(samples: np.ndarray, cdf: Callable[..., Any], pval: float = 0.01) -> None:
    assert scipy.stats.kstest(np.asarray(samples, np.float64), cdf).pvalue > pval


def check_chi2(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray]) -> None:
    samples = np.asarray(samples).astype(int)
    actual = np.bincount(samples, minlength=samples.max() + 100)
    expected = pmf(np.arange(actual.size)) * samples.size
    valid = expected > 0
    assert scipy.stats.chisquare(actual[valid], expected[valid]).pvalue > 0.01


def test_statistical_checks_reject_bad_samples() -> None:
    # The checks above can fail: a biased and a repetitive sample are caught.
    biased = np.linspace(0, 1, 10000) ** 2
    with pytest.raises(AssertionError):
        check_ks(biased, scipy.stats.uniform().cdf)
    with pytest.raises(AssertionError):
        check_collisions(np.repeat(np.linspace(0, 1, 100, dtype=np.float32), 100), 23)
    with pytest.raises(AssertionError):
        check_chi2(np.zeros(1000, int) + (np.arange(1000) % 3 == 0), scipy.stats.bernoulli(0.5).pmf)


# --- keys: construction, seeds, dtype, printing, pickling -----------------------------------


_KEY_DATA_OF_SEED: dict[str, Callable[[Any], jax.Array]] = {}


def key_data_of_seed(name: str) -> Callable[[Any], jax.Array]:
    # One jitted function per impl, shared by every seed and seed type.
    if name not in _KEY_DATA_OF_SEED:
        _KEY_DATA_OF_SEED[name] = jax.jit(lambda s: jax.random.key_data(make_key(name, s)))
    return _KEY_DATA_OF_SEED[name]


@pytest.mark.parametrize("seed", [-1, 0, 2**31 - 1, np.uint32(2**32 - 1)])
def test_seed_jit_invariance(name: str, seed: Any) -> None:
    # As in JAX: a Python int above int32 cannot be passed to jit without x64.
    converts = (np.array, jnp.array) if seed > np.iinfo(np.int32).max else (int, np.array)
    for convert in converts:
        s = convert(seed)
        np.testing.assert_array_equal(key_data_of_seed(name)(s), data(make_key(name, s)))


# Seeds around every width JAX converts them through, and beyond int64 (JAX's errors).
SEEDS = (0, -1, 5, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 5, 2**63 - 1, -(2**31), -(2**63))
OUT_OF_RANGE = (2**63, 2**64 - 1, 2**64, -(2**63) - 1)


def halves_of_threefry2x32(seed: int) -> tuple[int, int]:
    """(low, high) uint32 halves of ``seed`` as ``jax.random.key`` reads a Python int with
    x64 on: threefry2x32's key data is (high, low) of the seed as an int64."""
    with jax.enable_x64(True):
        hi, lo = np.asarray(jax.random.key_data(jax.random.key(seed, impl="threefry2x32")))
    return int(lo), int(hi)


@pytest.mark.parametrize("x64", [False, True])
def test_a_python_int_seed_means_one_key_with_or_without_x64(name: str, x64: bool) -> None:
    """Every jext generator puts the seed's (low, high) halves first in its key data: a
    Python int is the int64 JAX makes of it with x64 on, in both modes, so ``2**32 + 5``
    is not ``5`` and ``2**32 - 1`` is not ``-1`` without x64, as with it."""
    keys = {}
    for seed in SEEDS:
        with jax.enable_x64(x64):
            keys[seed] = data(make_key(name, seed))
            inside_jit = np.asarray(
                jax.jit(lambda s=seed: jax.random.key_data(make_key(name, s)))()
            )
        np.testing.assert_array_equal(inside_jit, keys[seed])
        assert tuple(int(w) for w in keys[seed][:2]) == halves_of_threefry2x32(seed), seed
        with jax.enable_x64(not x64):
            np.testing.assert_array_equal(data(make_key(name, seed)), keys[seed])
    assert len({k.tobytes() for k in keys.values()}) == len(SEEDS)


@pytest.mark.parametrize("x64", [False, True])
def test_seeds_beyond_int64_raise_what_jax_raises(name: str, x64: bool) -> None:
    for seed in OUT_OF_RANGE:
        with jax.enable_x64(x64):
            with pytest.raises(OverflowError) as theirs:
                jax.random.key(seed, impl="threefry2x32")
            with pytest.raises(theirs.type):
                make_key(name, seed)


def test_a_signed_array_seed_is_its_value(name: str) -> None:
    """An int32 ``-1`` (a traced Python ``-1`` without x64) is the key of ``-1``, and a
    ``uint32`` ``2**32 - 1`` that of ``2**32 - 1``: a seed means its value, whatever its
    dtype, under ``jit`` or not."""
    with jax.enable_x64(False):
        minus_one = data(make_key(name, -1))
        for seed in (np.int32(-1), np.int8(-1), jnp.int16(-1)):
            np.testing.assert_array_equal(data(make_key(name, seed)), minus_one)
            np.testing.assert_array_equal(key_data_of_seed(name)(seed), minus_one)
        np.testing.assert_array_equal(
            data(make_key(name, np.uint32(2**32 - 1))), data(make_key(name, 2**32 - 1))
        )


def test_seed_errors(name: str) -> None:
    with pytest.raises(OverflowError):
        make_key(name, np.iinfo(np.int64).max + 1)
    with pytest.raises(TypeError):
        make_key(name, jnp.arange(2))  # non-scalar
    with pytest.raises(TypeError):
        make_key(name, 1.5)  # non-integer


def test_key_dtype_and_attributes(name: str) -> None:
    key = make_key(name)
    impl = jext.random.get_impl(name)
    assert jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    assert isinstance(key, jax.Array)
    assert key.shape == () and key.ndim == 0 and key.size == 1
    assert key.itemsize == 4 * int(np.prod(impl.key_shape))
    assert key.nbytes == key.itemsize
    assert jax.random.key_impl(key) == jax.random.key_impl(make_key(name, 3))
    assert data(key).dtype == np.uint32 and data(key).shape == impl.key_shape


def test_key_data_round_trip(name: str) -> None:
    keys = jax.random.split(make_key(name, 7), (2, 3))
    raw = jax.random.key_data(keys)
    assert raw.shape == (2, 3, *jext.random.get_impl(name).key_shape)
    again = jext.random.wrap_key_data(raw, impl=name)
    assert again.dtype == keys.dtype
    np.testing.assert_array_equal(data(again), np.asarray(raw))
    wrapped = jax.jit(lambda d: jax.random.wrap_key_data(d, impl=jax.random.key_impl(keys)))(raw)
    np.testing.assert_array_equal(data(wrapped), np.asarray(raw))


def test_printing(name: str) -> None:
    keys = jax.random.split(make_key(name), 2)
    tag = jext.random.get_impl(name).tag
    assert f"key<{tag}>" in repr(keys)
    assert f"key<{tag}>" in str(keys.dtype)
    assert str(keys)  # printing the array itself works


def skip_where_jax_pickles_no_key(keys: jax.Array) -> None:
    """Skip where JAX pickles no typed key (jax 0.8), having seen JAX's own error for its
    threefry key and for ``keys`` alike: the limit is JAX's, not the impl's."""
    if _jax.typed_keys_pickle():
        return
    for key in (jax.random.key(0), keys):
        with pytest.raises(TypeError, match="cannot pickle 'PRNGKeyArray'"):
            pickle.dumps(key)
    pytest.skip("typed PRNG keys pickle from jax 0.9.1 on (JAX's own keys do not before it)")


def test_pickling(name: str) -> None:
    keys = jax.random.split(make_key(name, 5), 2)
    skip_where_jax_pickles_no_key(keys)
    for key in (keys[0], keys):
        again = pickle.loads(pickle.dumps(key))
        assert again.dtype == key.dtype
        np.testing.assert_array_equal(data(again), data(key))
    np.testing.assert_array_equal(
        jax.random.bits(pickle.loads(pickle.dumps(keys[1])), (4,)), jax.random.bits(keys[1], (4,))
    )


def test_unpickling_in_a_new_process() -> None:
    skip_where_jax_pickles_no_key(make_key(IMPLS[0]))
    payload = pickle.dumps({n: jax.random.split(make_key(n, 2), 2) for n in IMPLS})
    script = (
        "import pickle, sys, jax, numpy as np\n"
        "keys = pickle.loads(sys.stdin.buffer.read())\n"
        "print({n: np.asarray(jax.random.key_data(k)).tolist() for n, k in keys.items()})\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input=payload, capture_output=True, check=True
    )
    got = eval(out.stdout.decode())  # a dict of lists, printed by the child
    for n in IMPLS:
        assert got[n] == data(jax.random.split(make_key(n, 2), 2)).tolist()


def test_cannot_add_and_no_grad(name: str) -> None:
    key = make_key(name)
    with pytest.raises(TypeError, match=r"add does not accept dtypes key<.*>, int"):
        _ = key + 47
    with pytest.raises(TypeError, match="grad requires real- or complex-valued inputs"):
        jax.grad(lambda k: 1.0)(key)
    out = jax.grad(lambda k: 1.0, allow_int=True)(key)
    assert out.dtype == jax.dtypes.float0 and out.shape == key.shape


# --- split / fold_in ----------------------------------------------------------------------


@pytest.mark.parametrize("num", [None, 6, (6,), (2, 3)])
def test_split_size_shape(name: str, num: Any) -> None:
    key = make_key(name)
    out = jax.random.split(key) if num is None else jax.random.split(key, num)
    expected = (2,) if num is None else (num,) if isinstance(num, int) else num
    assert out.shape == expected
    assert len({tuple(row) for row in data(out).reshape(-1, data(key).size)}) == np.prod(expected)


def test_split_fold_in_symmetry(name: str) -> None:
    key = make_key(name, 72)
    split = data(jax.random.split(key, 2))
    for i in range(2):
        np.testing.assert_array_equal(data(jax.random.fold_in(key, i)), split[i])
    folded = jax.vmap(lambda _: jax.random.fold_in(key, jax.lax.axis_index("b")), axis_name="b")(
        jnp.ones(2)
    )
    np.testing.assert_array_equal(data(folded), split)


def test_vmap_fold_in_shape(name: str) -> None:
    keys = jax.random.split(make_key(name, 73), 2)
    msgs = jnp.arange(3)

    def shape(fn: Callable[..., jax.Array], *args: jax.Array) -> tuple[int, ...]:
        # Shapes come from tracing the batching rule; the nested case below runs it.
        return tuple(jax.eval_shape(jax.vmap(fn), *args).shape)

    assert shape(lambda i: jax.random.fold_in(keys[0], i), msgs) == (3,)
    assert shape(lambda k: jax.random.fold_in(k, msgs[0]), keys) == (2,)
    assert shape(jax.random.fold_in, keys, jnp.arange(2)) == (2,)
    nested = jax.random.split(make_key(name, 73), 6).reshape((2, 3))
    m = jnp.arange(6).reshape((2, 3))
    out = jax.vmap(jax.vmap(jax.random.fold_in), in_axes=(0, 1))(nested, m.T)
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(data(out[1, 2]), data(jax.random.fold_in(nested[1, 2], m[1, 2])))


def test_vmap_split(name: str) -> None:
    key = make_key(name, 73)
    mapped = jax.random.split(key, 2)
    vmapped = jax.vmap(jax.random.split)(mapped)
    assert vmapped.shape == (2, 2)
    for k, v in zip(mapped, vmapped, strict=True):
        np.testing.assert_array_equal(data(jax.random.split(k)), data(v))
    unmapped = jax.vmap(lambda _: jax.random.split(key))(jnp.zeros(3))
    for v in unmapped:
        np.testing.assert_array_equal(data(v), data(jax.random.split(key)))


def test_fold_in_big(name: str) -> None:
    key = make_key(name)
    seeds = [2**32 - 2, 2**32 - 1]
    folded = [data(jax.random.fold_in(key, s)) for s in seeds]
    assert not np.array_equal(*folded)


# --- key arrays under jit, vmap, scan and array ops ----------------------------------------


def test_key_arrays_under_jit_vmap_scan(name: str) -> None:
    keys = jax.random.split(make_key(name, 1), 6)
    np.testing.assert_array_equal(data(jax.jit(lambda k: k)(keys)), data(keys))
    draws = jax.vmap(lambda k: jax.random.bits(k, (3,)))(keys)
    for k, row in zip(keys, draws, strict=True):
        np.testing.assert_array_equal(jax.random.bits(k, (3,)), row)

    def step(k: jax.Array, _: None) -> tuple[jax.Array, jax.Array]:
        k, sub = jax.random.split(k)
        return k, jax.random.bits(sub, (2,))

    final, ys = jax.lax.scan(step, keys[0], None, length=3)
    k = keys[0]
    for i in range(3):
        k, sub = jax.random.split(k)
        np.testing.assert_array_equal(ys[i], jax.random.bits(sub, (2,)))
    np.testing.assert_array_equal(data(final), data(k))
    shape = jax.eval_shape(lambda k: jax.random.split(k, 5), keys[0])
    assert shape.shape == (5,) and shape.dtype == keys.dtype


def test_key_array_ops(name: str) -> None:
    keys = jax.random.split(make_key(name, 2), 6)
    raw = data(keys)
    np.testing.assert_array_equal(data(keys[1:3]), raw[1:3])
    np.testing.assert_array_equal(
        data(keys.reshape(2, 3).T), raw.reshape(2, 3, -1).transpose(1, 0, 2)
    )
    np.testing.assert_array_equal(data(jax.lax.dynamic_slice(keys, (2,), (2,))), raw[2:4])
    np.testing.assert_array_equal(data(keys[jnp.array([5, 0])]), raw[[5, 0]])
    np.testing.assert_array_equal(data(jnp.concatenate([keys[:1], keys[4:]])), raw[[0, 4, 5]])
    np.testing.assert_array_equal(
        data(jnp.where(jnp.arange(6) < 3, keys, keys[::-1])), raw[[0, 1, 2, 2, 1, 0]]
    )
    np.testing.assert_array_equal(data(jax.device_put(keys)), raw)
    assert np.asarray(keys == keys.copy()).all() and not np.asarray(keys[0] == keys[1])
    with pytest.raises(TypeError):
        hash(keys)


# --- random_bits: widths, dtypes, errors --------------------------------------------------


def test_random_bits_shape_dtype(name: str) -> None:
    key = make_key(name, 1701)
    for width in (8, 16, 32):
        out = jax.random.bits(key, (3,), jnp.dtype(f"uint{width}"))
        assert out.shape == (3,) and out.dtype == np.dtype(f"uint{width}")
    with pytest.warns(UserWarning, match="Explicitly requested dtype"):
        out = jax.random.bits(key, (3,), jnp.uint64)
    assert out.shape == (3,) and out.dtype == np.uint32
    with jax.enable_x64(True):
        out = jax.random.bits(key, (3,), jnp.uint64)
        assert out.shape == (3,) and out.dtype == np.uint64


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype uint64")
def test_uint64_without_x64_under_strict_promotion(name: str) -> None:
    key = make_key(name)
    with jax.numpy_dtype_promotion("strict"):
        out = jax.random.bits(key, (3,), jnp.uint64)
        jitted = jax.jit(lambda k: jax.random.bits(k, (3,), jnp.uint64))(key)
    np.testing.assert_array_equal(out, jax.random.bits(key, (3,), jnp.uint32))
    np.testing.assert_array_equal(jitted, out)


def test_random_bits_view_property(name: str) -> None:
    # Every width reads one stream: the same bytes viewed as uint32.
    key = make_key(name, 1701)
    views = [
        np.asarray(jax.random.bits(key, (640 // w,), jnp.dtype(f"uint{w}"))).view(np.uint32)
        for w in (8, 16, 32)
    ]
    assert all(np.array_equal(v, views[0]) for v in views)


def test_random_bits_error(name: str) -> None:
    for dtype in ("int8", "float16"):
        with pytest.raises(ValueError, match=r"dtype argument .* must be an unsigned int dtype"):
            jax.random.bits(make_key(name), (3, 4), np.dtype(dtype))


def test_eval_shape_big_random_array(name: str) -> None:
    with jax.enable_checks(False):
        out = jax.eval_shape(lambda s: jax.random.normal(make_key(name, s), (10**12,)), 0)
    assert out.shape == (10**12,)


# --- distributions ------------------------------------------------------------------------


def both(fn: Callable[[jax.Array], jax.Array], key: jax.Array) -> list[np.ndarray]:
    """``fn(key)`` eagerly and under jit: the same samples."""
    eager, jitted = np.asarray(fn(key)), np.asarray(jax.jit(fn)(key))
    np.testing.assert_array_equal(eager, jitted)
    return [eager]


def jitted(fn: Callable[[jax.Array], jax.Array], key: jax.Array) -> np.ndarray:
    return np.asarray(jax.jit(fn)(key))


def test_uniform(name: str) -> None:
    for dtype in (jnp.float32, jnp.bfloat16):
        (s,) = both(lambda k, d=dtype: jax.random.uniform(k, (10000,), d), make_key(name))
        assert ((s >= 0) & (s < 1)).all()
        check_collisions(s, jnp.finfo(dtype).nmant)
        if dtype == jnp.float32:
            check_ks(s, scipy.stats.uniform().cdf)


def test_randint(name: str) -> None:
    for dtype in (jnp.int8, jnp.uint32):
        (s,) = both(lambda k, d=dtype: jax.random.randint(k, (10000,), 5, 10, d), make_key(name))
        assert s.dtype == dtype and ((s >= 5) & (s < 10)).all()
    check_chi2(s - 5, scipy.stats.randint(0, 5).pmf)


def test_normal(name: str) -> None:
    s = jitted(lambda k: jax.random.normal(k, (10000,)), make_key(name))
    check_ks(s, scipy.stats.norm().cdf)


def test_bernoulli_and_categorical(name: str) -> None:
    s = jitted(lambda k: jax.random.bernoulli(k, 0.3, (10000,)), make_key(name))
    check_chi2(s, scipy.stats.bernoulli(0.3).pmf)
    p = np.array([0.2, 0.5, 0.3])
    c = jitted(lambda k: jax.random.categorical(k, jnp.log(p), shape=(10000,)), make_key(name))
    check_chi2(c, lambda x: np.where(x < 3, p[np.minimum(x, 2)], 0.0))


def test_exponential_and_gamma(name: str) -> None:
    e = jitted(lambda k: jax.random.exponential(k, (10000,)), make_key(name))
    check_ks(e, scipy.stats.expon().cdf)
    # 1000 samples: gamma splits one key per sample.
    g = jitted(lambda k: jax.random.gamma(k, 2.5, (1000,)), make_key(name))
    check_ks(g, scipy.stats.gamma(2.5).cdf)


def test_permutation_and_choice(name: str) -> None:
    key = make_key(name)
    p = jitted(lambda k: jax.random.permutation(k, 100), key)
    assert sorted(p.tolist()) == list(range(100)) and not (p == np.arange(100)).all()
    c = jitted(lambda k: jax.random.choice(k, 10, (5,), replace=False), key)
    assert len(set(c.tolist())) == 5


def test_vmap_random_bits_distribution(name: str) -> None:
    keys = jax.random.split(make_key(name), 10)
    samples = np.asarray(jax.vmap(lambda k: jax.random.uniform(k, (1000,)))(keys)).ravel()
    check_collisions(samples, jnp.finfo(jnp.float32).nmant)
    check_ks(samples, scipy.stats.uniform().cdf, pval=0.005)


def test_poisson_is_threefry_only(name: str) -> None:
    # A documented JAX limit: poisson samples from threefry2x32 keys only.
    with pytest.raises(NotImplementedError, match="only implemented for the threefry2x32 RNG"):
        jax.random.poisson(make_key(name), 3.0, (10,))


# --- sharded outputs (4 CPU devices, in a subprocess) ---------------------------------------

SHARDED_CASES = [
    "out_sharding_bits",
    "out_sharding_uniform",
    "out_sharding_normal",
    "out_sharding_bernoulli",
    "out_sharding_randint",
    "out_sharding_exponential",
    "jit_out_shardings",
    "vmap_over_sharded_keys",
]


@pytest.fixture(scope="module")
def sharded_results() -> dict[str, dict[str, str]]:
    # Four host devices: the CPU backend only (on a GPU machine JAX would pick the GPU).
    out = run_on_four_cpus(Path(__file__).with_name("sharded_checks.py"))
    assert out.returncode == 0, out.stderr[-3000:]
    results: dict[str, dict[str, str]] = json.loads(out.stdout)
    return results


@pytest.mark.parametrize("case", SHARDED_CASES)
def test_sharded(name: str, case: str, sharded_results: dict[str, dict[str, str]]) -> None:
    if case == "out_sharding_exponential" and not _jax.random_exponential_takes_out_sharding():
        # JAX's own TypeError, for every impl: the argument is missing, not the impl wrong.
        assert "unexpected keyword argument 'out_sharding'" in sharded_results[name][case]
        pytest.skip("jax.random.exponential takes out_sharding from jax 0.10.1 on")
    assert sharded_results[name][case] == "ok"
