"""Large batches (chunked and cost-sorted kernels) give the small batch's bits, and the
sampled domains of the core families match SciPy at the declared tolerance in float64
(float32 on the same domains and tolerances is ``jext check``'s ``values`` check, and
batch independence of small batches its ``jit_vmap`` check, both run on every wrapper in
CI's main job: README, Set-up).
"""

from __future__ import annotations

import functools
import zlib
from typing import Any

import jax
import numpy as np
import pytest
from _special_cases import x64
from jext_scipy_special import WRAPPERS
from jext_scipy_special._functions import (
    _bessel,
    _bessel_family,
    _elliptic,
    _elliptic_family,
    _erf,
    _gamma,
    _gamma_family,
    _lambertw,
    _t,
)

from jext.scipy import ScipyWrapper
from jext.testing._scipy_checks import _sample, oracle_of

N = 256  # points per domain of the value check


def _rng(wrapper: ScipyWrapper, purpose: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{wrapper.name}:{purpose}".encode()))


# Batch independence of every wrapper (a few points among themselves and in a batch with
# the sampled values, the domain bounds, +-0, +-inf and nan, bit for bit, in float32 and
# float64) is ``jext check``'s ``jit_vmap`` check, which the README's set-up runs on every
# installed wrapper (CI's main job); ``tests/test_scipy_checks.py`` shows it failing on a
# batch-dependent wrapper, so this module does not repeat it (two compilations of each
# kernel per wrapper); it holds the large batches, which ``jext check`` never reaches.


#: The Bessel, elliptic, error and gamma functions (the other families carry their own
#: value tests).
VALUED = [
    wrapper
    for module in (_elliptic, _erf, _t, _lambertw, _gamma, _bessel)
    for wrapper in module.WRAPPERS
] + [*_bessel_family.WRAPPERS, *_elliptic_family.WRAPPERS, *_gamma_family.WRAPPERS]


@pytest.mark.parametrize("wrapper", VALUED, ids=[w.name for w in VALUED])
def test_domains_match_scipy(wrapper: ScipyWrapper) -> None:
    """Every declared domain, N points each, at the wrapper's declared tolerance."""
    dtype = "float64"
    rtol, atol = wrapper.tolerances[dtype]
    rng = _rng(wrapper, f"values:{dtype}")
    oracle = oracle_of(wrapper)
    for dom in wrapper.domains:
        cols = []
        for low, high in dom.bounds:
            if dom.log and low > 0:
                cols.append(np.exp(rng.uniform(np.log(low), np.log(high), N)))
            else:
                cols.append(rng.uniform(low, high, N))
        args = [c.astype(dtype) for c in cols]
        with x64(dtype == "float64"):
            got = np.asarray(functools.partial(wrapper.function, **dom.kwargs)(*args), np.float64)
        with np.errstate(all="ignore"):
            want = np.asarray(oracle(*(a.astype(np.float64) for a in args), **dom.kwargs))
            # SciPy's float64 answer as the dtype represents it (beyond its range: inf or 0).
            want = want.astype(dtype).astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        fin = np.isfinite(want)
        np.testing.assert_array_equal(got[~fin & ~np.isnan(want)], want[~fin & ~np.isnan(want)])
        np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol)


#: One wrapper per kernel that splits a large batch into chunks (``_common.chunked``) or
#: groups it by cost first (``_common.partitioned``): below ``CHUNK_SIZE`` elements neither
#: runs, so ``jext check``'s small batches never reach them.
#: The incomplete beta (``_beta.beta_pq``) has its own test below (``binom.cdf``).
CHUNKED = ["stdtr", "kv", "jv", "yn", "eval_legendre", "gdtr", "smirnovi"]
CHUNKED += ["voigt_profile", "struve", "betaincinv", "elliprj"]
BIG = 9001  # several chunks of 2048 and of 4096, and a ragged last one
HEAD = N  # the value check's size: its compiled program serves (stdtr, kv) here too


@pytest.mark.parametrize("name", CHUNKED)
def test_large_batches_give_the_small_batch_bits(name: str) -> None:
    """Elements of a batch large enough to be chunked (and sorted by cost) equal, bit for
    bit, the same elements computed in a small batch, and in the large batch reversed
    (which puts them in other chunks, among other companions)."""
    (wrapper,) = [w for w in WRAPPERS if w.name == name]
    _assert_batch_independent(
        wrapper, _sample(_rng(wrapper, "large batch"), wrapper.domains[0], BIG)
    )


def test_large_batches_of_integer_degrees_give_the_small_batch_bits() -> None:
    """The same for a large batch of integer degrees only (the real-degree polynomials'
    cheap branch of a large call; eval_legendre's programs are compiled above)."""
    (wrapper,) = [w for w in WRAPPERS if w.name == "eval_legendre"]
    cols = _sample(_rng(wrapper, "integer degrees"), wrapper.domains[0], BIG)
    cols[0] = np.round(cols[0])
    _assert_batch_independent(wrapper, cols)


def _assert_batch_independent(wrapper: ScipyWrapper, cols: list[Any]) -> None:
    # Called as users call it (the wrapper's own compiled entry point, per shape).
    fn = functools.partial(wrapper.function, **wrapper.domains[0].kwargs)
    with x64(True):
        big = np.asarray(fn(*cols))
        reverse = np.asarray(fn(*(c[::-1] for c in cols)))[::-1]
        small = np.asarray(fn(*(c[:HEAD] for c in cols)))
    assert np.isfinite(big).mean() > 0.9, "the sample should be mostly inside the domain"
    np.testing.assert_array_equal(big.view(np.uint64), reverse.view(np.uint64))
    np.testing.assert_array_equal(big[:HEAD].view(np.uint64), small.view(np.uint64))


def test_large_batches_skip_only_chunks_of_unused_elements() -> None:
    """``binom.cdf`` outside the support (``k < 0`` or ``k >= n``, values the wrapper sets
    itself) leaves whole chunks of such elements out of the incomplete beta: a large batch
    that is mostly outside gives, element for element, the bits of the large batch
    reversed (the same program, every element among other companions), the values of
    batches of ``HEAD`` to the wrapper's declared tolerance, and the support's edge values.

    Between the large batch's program (sorted, chunked, chunks skipped) and the small
    batches' program only the declared tolerance holds: XLA:CPU contracts products and
    sums into FMAs fusion by fusion, so one expression compiled into two different
    programs may round differently (XLA 0.12: relative differences up to about 1e-13 in
    the incomplete beta's tails; none with ``--xla_cpu_max_isa=SSE4_2``, which has no
    FMA)."""
    (wrapper,) = [w for w in WRAPPERS if w.name == "binom.cdf"]
    rng = _rng(wrapper, "outside the support")
    k = rng.uniform(-60.0, 180.0, BIG)
    n = np.floor(rng.uniform(0.0, 121.0, BIG))
    p = rng.uniform(0.0, 1.0, BIG)
    fn = wrapper.function
    with x64(True):
        big = np.asarray(fn(k, n, p))
        reverse = np.asarray(fn(k[::-1], n[::-1], p[::-1]))[::-1]
        pad = -BIG % HEAD
        cols = [np.concatenate([c, c[:pad]]).reshape(-1, HEAD) for c in (k, n, p)]
        pieces = np.concatenate([np.asarray(fn(*row)) for row in zip(*cols, strict=True)])
    outside = (k < 0.0) | (k >= n)
    assert outside.mean() > 0.6, "most of the batch should be outside the support"
    np.testing.assert_array_equal(big.view(np.uint64), reverse.view(np.uint64))
    rtol, atol = wrapper.tolerances["float64"]
    np.testing.assert_allclose(big, pieces[:BIG], rtol=rtol, atol=atol)
    np.testing.assert_array_equal(big[outside], np.where(k[outside] < 0.0, 0.0, 1.0))


def _exp_partial_sums(r: np.ndarray, *, per_group: bool, unroll: int) -> np.ndarray:
    """``sum_n r^n / n!`` stopped as ``iterate`` stops it, one element at a time in Python."""
    out = []
    for rr in r:
        term, total, n = 1.0, 1.0, 1
        while not term <= 1e-3 * total:
            for _ in range(unroll if per_group else 1):
                term = term * rr / n
                total, n = total + term, n + 1
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("per_group", [False, True], ids=["per_step", "per_group"])
def test_iterate_stops_each_element_on_its_own_steps(per_group: bool) -> None:
    """``iterate`` freezes every element at its own step count (after the step at which
    it converged, or with ``freeze_per_group`` at the end of that group of steps): alone
    or among slower and faster elements it gives the same bits, the partial sum a plain
    loop over that element gives."""
    from jext_scipy_special._functions._common import iterate

    unroll = 4

    def run(r: jax.Array) -> jax.Array:
        def step(i: jax.Array, st: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
            term = st[1] * r / i
            return st[0], term, st[2] + term

        def converged(st: tuple[jax.Array, ...]) -> jax.Array:
            return st[1] <= 1e-3 * st[2]

        one = jax.numpy.ones_like(r)
        state = iterate(
            step, (r, one, one), converged, 200, r.dtype, unroll, freeze_per_group=per_group
        )
        return state[2]

    r = np.array([0.1, 3.0, 30.0, 0.5, 12.0, 1.0, 7.0])
    # Batches of 64 like ``entry_point``'s padding (XLA computes a vector's tail with
    # scalar code, which rounds differently): each element among the others, or alone.
    compiled = jax.jit(run)
    with x64(True):
        batch = np.asarray(compiled(np.resize(r, 64)))[: r.size]
        alone = np.array([np.asarray(compiled(np.full(64, v)))[0] for v in r])
    np.testing.assert_array_equal(batch, alone)
    expected = _exp_partial_sums(r, per_group=per_group, unroll=unroll)
    np.testing.assert_allclose(batch, expected, rtol=1e-14)
    # The two stopping rules differ on these elements, so the reference tells them apart.
    other = _exp_partial_sums(r, per_group=not per_group, unroll=unroll)
    assert np.any(np.abs(other - expected) > 1e-6 * expected)


def test_real_degrees_large_batches_and_integer_degrees_among_them() -> None:
    """``eval_genlaguerre``'s real degrees (cost sorted in a large call, unlike a call of
    integer degrees only: ``_poly_family._polynomial``) give a large batch the small
    batch's bits, and an integer degree the same bits in a call of integer degrees and
    among real ones (the two paths)."""
    (wrapper,) = [w for w in WRAPPERS if w.name == "eval_genlaguerre"]
    cols = _sample(_rng(wrapper, "large batch"), wrapper.domains[1], BIG)
    n, a, x = _sample(_rng(wrapper, "mixed batch"), wrapper.domains[0], BIG)
    assert np.all(n == np.round(n)), "the first domain should hold integer degrees"
    mixed = n.copy()
    mixed[::7] += 0.5
    fn = jax.jit(wrapper.function)
    with x64(True):
        big = np.asarray(fn(*cols))
        reverse = np.asarray(fn(*(c[::-1] for c in cols)))[::-1]
        small = np.asarray(fn(*(c[:HEAD] for c in cols)))
        integers = np.asarray(fn(n, a, x))
        among_reals = np.asarray(fn(mixed, a, x))
    assert np.isfinite(big).mean() > 0.9, "the sample should be mostly inside the domain"
    np.testing.assert_array_equal(big.view(np.uint64), reverse.view(np.uint64))
    np.testing.assert_array_equal(big[:HEAD].view(np.uint64), small.view(np.uint64))
    keep = mixed == n
    np.testing.assert_array_equal(integers[keep].view(np.uint64), among_reals[keep].view(np.uint64))
