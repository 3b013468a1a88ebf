"""Conformance checks for registered RNG implementations: JAX's conventions, statistics, vectors."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np

from jext.rng_impls._impl import RngImpl
from jext.testing._cache import run_kept
from jext.testing._checks import structure_options
from jext.testing._report import (
    CheckFailure,
    CheckResult,
    CheckSkipped,
    PrimitiveReport,
    guarded,
)

__all__ = ["RNG_CHECKS", "rng_report", "run_rng_check", "submit_rng_report"]

RNG_CHECKS: Final = (
    "conventions",
    "determinism",
    "distinct_keys",
    "moments",
    "chi_square",
    "known_answers",
    "byte_stream",
)
"""Every check run on an RNG implementation, in the order they run."""

_SAMPLES: Final = 1 << 16
# Statistical tests fail a correct generator with probability about 1e-6 each, and the
# inputs are fixed, so a pass is reproducible.
_Z: Final = 4.9
# One eager request shape for every check, so the eager program compiles once per impl.
_EAGER_SHAPE: Final = (64,)
# One eager split size for every check, for the same reason: a bundled generator's split
# is two enciphered blocks, about a second of CPU to compile at the default options.
_SPLIT: Final = 16


def _key(impl: RngImpl, seed: int = 0) -> jax.Array:
    return jax.random.key(seed, impl=impl.jax_impl)


def _data(keys: jax.Array) -> np.ndarray[Any, Any]:
    return np.asarray(jax.random.key_data(keys))


def _bits(key: jax.Array, shape: tuple[int, ...] = _EAGER_SHAPE) -> jax.Array:
    return jax.random.bits(key, shape)


def _children(key: jax.Array) -> jax.Array:
    return jax.random.split(key, _SPLIT)


def check_conventions(impl: RngImpl) -> None:
    """uint32 key data; split[i] == fold_in(i); jit, vmap over keys, scan; every distribution.

    Each operation compiles once: references are eager calls of one shape (``fold_in`` for
    each index, ``bits`` for each key), and the transformed forms run in one program.  That
    program compiles with the checks' structure options (on CPU, several times faster): its
    bits are integers, exact at any optimisation level, and its distributions are only
    checked for sense; ``check_determinism`` compares ``jit`` at the default compilation.
    """
    key = _key(impl, 42)
    data = _data(key)
    if data.dtype != np.uint32 or data.shape != impl.key_shape:
        raise CheckFailure(
            f"key data is {data.dtype}{list(data.shape)}, expected uint32{list(impl.key_shape)}"
        )
    children = _children(key)
    split = _data(children)
    for i in range(4):
        if not np.array_equal(split[i], _data(jax.random.fold_in(key, i))):
            raise CheckFailure(f"split(key, {_SPLIT})[{i}] differs from fold_in(key, {i})")

    def step(k: jax.Array, _: None) -> tuple[jax.Array, jax.Array]:
        k, sub = _children(k)[:2]
        return k, jax.random.bits(sub, _EAGER_SHAPE)

    def program(key: jax.Array, keys: jax.Array, more: jax.Array) -> dict[str, Any]:
        return {
            "bits": _bits(key),
            "vmapped": jax.vmap(_bits)(keys),
            "scanned": jax.lax.scan(step, key, None, length=3)[1],
            # Keys split outside: a bundled generator's split is most of this program.
            "distributions": _every_distribution(more),
            "widths": {w: _bits_of_width(key, w) for w in (8, 16, 32)},
        }

    keys = children[:3]
    args = (key, keys, children[3:])
    out = jax.tree.map(np.asarray, run_kept(program, args, structure_options()))
    if not np.array_equal(out["bits"], np.asarray(_bits(key))):
        raise CheckFailure("bits under jit differ from eager bits")
    if not np.array_equal(out["vmapped"], np.stack([np.asarray(_bits(k)) for k in keys])):
        raise CheckFailure("bits under vmap over keys differ from a loop over the keys")
    k, looped = key, []
    for _ in range(3):
        k, sub = _children(k)[:2]
        looped.append(np.asarray(_bits(sub)))
    if not np.array_equal(out["scanned"], np.stack(looped)):
        raise CheckFailure("bits under lax.scan differ from a Python loop")
    _check_distributions(out["distributions"])
    for width, bits in out["widths"].items():
        _check_width(bits, width)
    with jax.enable_x64(True):
        _check_width(np.asarray(jax.jit(_bits_of_width, static_argnums=1)(key, 64)), 64)


def _bits_of_width(key: jax.Array, width: int) -> jax.Array:
    return jax.random.bits(key, (3, 5), np.dtype(f"uint{width}"))


def _check_width(out: np.ndarray[Any, Any], width: int) -> None:
    if out.dtype != np.dtype(f"uint{width}") or out.shape != (3, 5):
        raise CheckFailure(f"bits of width {width} gave {out.dtype}{list(out.shape)}")


def _every_distribution(ks: jax.Array) -> dict[str, jax.Array]:
    # A representative set, one key each: each draws bits in its own way.  (gamma alone
    # would take longer to compile than all of these together; choice with replacement is
    # randint.)
    return {
        "uniform": jax.random.uniform(ks[0], (16,)),
        "normal": jax.random.normal(ks[1], (16,)),
        "randint": jax.random.randint(ks[2], (16,), 0, 10),
        "bernoulli": jax.random.bernoulli(ks[3], 0.3, (16,)),
        "permutation": jax.random.permutation(ks[4], 16),
        "gumbel": jax.random.gumbel(ks[5], (16,)),
        "categorical": jax.random.categorical(ks[6], jnp.zeros(5), shape=(16,)),
        "truncated_normal": jax.random.truncated_normal(ks[7], -1.0, 1.0, (16,)),
        "exponential": jax.random.exponential(ks[8], (16,)),
    }


def _check_distributions(outs: dict[str, np.ndarray[Any, Any]]) -> None:
    for name, out in outs.items():
        if not np.all(np.isfinite(np.asarray(out, np.float64))):
            raise CheckFailure(f"jax.random.{name} gave non-finite values")
    if sorted(outs["permutation"].tolist()) != list(range(16)):
        raise CheckFailure("jax.random.permutation is not a permutation")


def check_determinism(impl: RngImpl) -> None:
    """The same key gives the same bits, again and under jit; keys from equal seeds agree."""
    a = np.asarray(_bits(_key(impl, 7)))

    def program(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        # Keys made again from the seeds, inside the program, and the key passed in.
        return _bits(_key(impl, 7)), _bits(key), _bits(_key(impl, 8))

    b, c, d = (np.asarray(x) for x in jax.jit(program)(_key(impl, 7)))
    if not (np.array_equal(a, b) and np.array_equal(a, c)):
        raise CheckFailure("the same key gave different bits")
    if np.array_equal(a, d):
        raise CheckFailure("seeds 7 and 8 gave the same bits")


def check_distinct_keys(impl: RngImpl) -> None:
    """Split and fold_in give distinct keys, distinct from the parent, with distinct streams."""
    key = _key(impl, 3)
    split = _children(key)
    children = [_data(k) for k in split]
    children += [_data(jax.random.fold_in(key, i)) for i in range(_SPLIT, 2 * _SPLIT)]
    children.append(_data(key))
    unique = {c.tobytes() for c in children}
    if len(unique) != len(children):
        raise CheckFailure(f"split/fold_in gave {len(children) - len(unique)} repeated keys")
    streams = {np.asarray(_bits(k)).tobytes() for k in split}
    streams.add(np.asarray(_bits(key)).tobytes())
    if len(streams) != _SPLIT + 1:
        raise CheckFailure("distinct keys gave identical bits")


def check_moments(impl: RngImpl) -> None:
    """Uniform and normal samples have the right mean and variance (5 sigma)."""
    k1, k2 = _children(_key(impl, 11))[:2]
    n = _SAMPLES
    # One long request each: the statistics cover the code a large request runs (the
    # bundled generators unroll their rounds from 4096 blocks on).
    u = np.asarray(jax.random.uniform(k1, (n,)), np.float64)
    z = np.asarray(jax.random.normal(k2, (n,)), np.float64)
    tests = [
        ("uniform mean", u.mean(), 0.5, math.sqrt(1 / 12 / n)),
        ("uniform variance", u.var(), 1 / 12, math.sqrt(1 / 180 / n)),
        ("normal mean", z.mean(), 0.0, math.sqrt(1 / n)),
        ("normal variance", z.var(), 1.0, math.sqrt(2 / n)),
    ]
    for label, got, want, sigma in tests:
        if abs(got - want) > _Z * sigma:
            raise CheckFailure(f"{label} is {got:.6f}, expected {want:.6f} +- {_Z * sigma:.2g}")


def check_chi_square(impl: RngImpl) -> None:
    """The bytes of ``bits`` are uniform: a chi-square test over 256 bins, both tails."""
    data = np.asarray(jax.random.bits(_key(impl, 5), (_SAMPLES,), np.uint32)).view(np.uint8)
    counts = np.bincount(data, minlength=256)
    expected = data.size / 256
    stat = float(((counts - expected) ** 2 / expected).sum())
    low, high = _chi2_bounds(255)
    if not low <= stat <= high:
        raise CheckFailure(
            f"chi-square of {data.size} bytes over 256 bins is {stat:.1f}, outside "
            f"[{low:.1f}, {high:.1f}] (p ~ 1e-6 each side)"
        )


def _chi2_bounds(dof: int) -> tuple[float, float]:
    # Wilson-Hilferty: (X/k)^(1/3) is close to normal with mean 1 - 2/(9k), var 2/(9k).
    mean, sd = 1 - 2 / (9 * dof), math.sqrt(2 / (9 * dof))
    return dof * (mean - _Z * sd) ** 3, dof * (mean + _Z * sd) ** 3


def check_known_answers(impl: RngImpl) -> None:
    """``random_bits`` reproduces the impl's published test vectors."""
    if impl.known_answers is None:
        raise CheckSkipped("the implementation declares no known-answer vectors")
    vectors = list(impl.known_answers())
    if not vectors:
        raise CheckSkipped("the implementation declares no known-answer vectors")
    for n, kat in enumerate(vectors):
        with jax.enable_x64(kat.bit_width == 64):
            data = np.asarray(kat.key_data, np.uint32).reshape(impl.key_shape)
            key = jax.random.wrap_key_data(jnp.asarray(data), impl=impl.jax_impl)
            dtype = np.dtype(f"uint{kat.bit_width}")
            got = np.asarray(jax.random.bits(key, kat.shape, dtype)).ravel()
        want = np.asarray(kat.expected, dtype)
        if not np.array_equal(got, want):
            raise CheckFailure(
                f"vector {n} ({kat.source}): got {[hex(v) for v in got[:4]]}..., expected "
                f"{[hex(v) for v in want[:4]]}..."
            )


def check_byte_stream(impl: RngImpl) -> None:
    """Every width reads the same byte stream as little-endian words, in C order."""
    if not impl.byte_stream:
        raise CheckSkipped("the implementation does not declare a byte stream")

    def program(key: jax.Array) -> dict[str, jax.Array]:
        out = {
            f"uint{w}": jax.random.bits(key, (96 * 8 // w,), np.dtype(f"uint{w}"))
            for w in (8, 16, 32, 64)
        }
        out["grid"] = jax.random.bits(key, (4, 6), np.uint32)
        out["flat"] = jax.random.bits(key, (24,), np.uint32)
        return out

    with jax.enable_x64(True):
        out = {k: np.asarray(v) for k, v in jax.jit(program)(_key(impl, 9)).items()}
    stream = out["uint8"]
    for width in (16, 32, 64):
        words = out[f"uint{width}"]
        if not np.array_equal(words.astype(words.dtype.newbyteorder("<")).view(np.uint8), stream):
            raise CheckFailure(f"width {width} does not read the width-8 byte stream")
    if not np.array_equal(out["grid"].ravel(), out["flat"]):
        raise CheckFailure("a (4, 6) request is not the stream in C order")


_RUNNERS: Final[dict[str, Callable[[RngImpl], None]]] = {
    "conventions": check_conventions,
    "determinism": check_determinism,
    "distinct_keys": check_distinct_keys,
    "moments": check_moments,
    "chi_square": check_chi_square,
    "known_answers": check_known_answers,
    "byte_stream": check_byte_stream,
}


def run_rng_check(impl: RngImpl, check: str) -> CheckResult:
    def run() -> None:
        _RUNNERS[check](impl)

    return guarded(check, run)


def rng_report(
    impl: RngImpl,
    *,
    checks: Sequence[str] = RNG_CHECKS,
    plugin: str | None = None,
    progress: Callable[[str, CheckResult], None] | None = None,
) -> PrimitiveReport:
    """Run ``checks`` on ``impl`` and collect the results (never raises for a failed check)."""
    return submit_rng_report(impl, None, checks=checks, plugin=plugin)(progress)


def submit_rng_report(
    impl: RngImpl,
    pool: Executor | None,
    *,
    checks: Sequence[str] = RNG_CHECKS,
    plugin: str | None = None,
) -> Callable[[Callable[[str, CheckResult], None] | None], PrimitiveReport]:
    """Start ``checks`` on ``pool``, each its own task (inline without a pool), and return
    the function that waits for them and makes the report (call it outside the pool)."""
    pending: list[Future[CheckResult]] = []
    if pool is not None:
        pending = [pool.submit(run_rng_check, impl, check) for check in checks]

    def finish(progress: Callable[[str, CheckResult], None] | None) -> PrimitiveReport:
        results = []
        for n, check in enumerate(checks):
            result = pending[n].result() if pending else run_rng_check(impl, check)
            if progress is not None:
                progress(impl.name, result)
            results.append(result)
        details = {"bit_exact_with": impl.bit_exact_with, "byte_stream": impl.byte_stream}
        return PrimitiveReport(impl.name, "rng", tuple(results), plugin, details)

    return finish
