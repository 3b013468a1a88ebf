"""Shared helpers for the special-function kernels.

Everything here is pure ``jax.numpy`` / ``lax`` and dtype generic: constants
are Python floats (weakly typed), so every helper computes in the dtype of its
array arguments (float32, or float64 under ``jax_enable_x64``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_derivatives import SymbolicZero
from jax.typing import ArrayLike

__all__ = [
    "LANES",
    "BelowNormal",
    "as_float_arrays",
    "chunked",
    "cos_pi",
    "entry_point",
    "eps_of",
    "fast_two_sum",
    "half_below_normal",
    "is_double",
    "iterate",
    "log1pmx",
    "log_from_parts",
    "log_positive",
    "nondiff",
    "partitioned",
    "polyval",
    "polyval1",
    "reciprocal_of_subnormal",
    "rgamma1p_parts",
    "rgamma1p_small",
    "sin_pi",
    "stirling_corr",
    "subnormal_log",
    "subnormal_parts",
    "tangent",
    "tiny_of",
    "twice",
    "two_prod",
    "two_sum",
    "word_split",
]

S = TypeVar("S")
T = TypeVar("T")

#: Taylor coefficients of ``1/Gamma(1+x)`` about 0 (computed with mpmath at
#: 40 digits; the series is entire; cf. Abramowitz & Stegun 6.1.34).
RGAMMA1P_TAYLOR: tuple[float, ...] = (
    1.0,
    5.772156649015328606065e-1,
    -6.55878071520253881077e-1,
    -4.2002635034095235529e-2,
    1.665386113822914895017e-1,
    -4.219773455554433674821e-2,
    -9.621971527876973562115e-3,
    7.218943246663099542395e-3,
    -1.165167591859065112114e-3,
    -2.152416741149509728157e-4,
    1.280502823881161861532e-4,
    -2.013485478078823865569e-5,
    -1.250493482142670657345e-6,
    1.133027231981695882374e-6,
    -2.05633841697760710345e-7,
    6.116095104481415817862e-9,
    5.002007644469222930056e-9,
    -1.181274570487020144588e-9,
    1.043426711691100510492e-10,
    7.78226343990507125405e-12,
    -3.696805618642205708188e-12,
    5.100370287454475979015e-13,
    -2.058326053566506783222e-14,
)

#: Coefficients of the Stirling correction ``S(z) = lgamma(z) - (z - 1/2) log z
#: + z - log(2 pi)/2 = sum_k B_2k / (2k (2k - 1) z^(2k-1))``, as a polynomial
#: in ``1/z**2`` (highest degree first).
_STIRLING: tuple[float, ...] = (
    1.0 / 156.0,
    -691.0 / 360360.0,
    1.0 / 1188.0,
    -1.0 / 1680.0,
    1.0 / 1260.0,
    -1.0 / 360.0,
    1.0 / 12.0,
)


def as_float_arrays(*args: ArrayLike) -> tuple[jax.Array, ...]:
    """Convert the arguments to broadcast arrays of one common real float dtype.

    Integers and Python scalars follow JAX's promotion rules (default float
    dtype, i.e. float64 only under x64); half precision is computed in float32.
    Complex inputs are rejected: these kernels are real-valued only.
    """
    arrays = [jnp.asarray(a) for a in args]
    for arr in arrays:
        if jnp.issubdtype(arr.dtype, jnp.complexfloating):
            raise TypeError("complex inputs are not supported; these kernels are real-valued")
    dtype = np.dtype(jnp.result_type(*arrays, float))
    if dtype.itemsize < 4:
        dtype = np.dtype(np.float32)
    converted = [arr.astype(dtype) for arr in arrays]
    return tuple(jnp.broadcast_arrays(*converted))


#: Elements are computed in blocks of this many lanes (see :func:`entry_point`).
LANES = 64


def entry_point(kernel: Callable[..., T]) -> Callable[..., T]:
    """A ``jax.jit``-compiled ``kernel(*as_float_arrays(*args))`` on inputs flattened and
    padded (with their last element) to a multiple of :data:`LANES` elements.

    Public functions call through this so that eager (un-jitted) calls are
    compiled once per input signature and cached, instead of re-tracing the
    kernels' ``while_loop`` bodies on every call; inside an outer ``jit`` the
    inner one is simply inlined.

    Padding keeps an element's value independent of its batch: XLA's CPU backend
    computes elementwise loops with vector instructions and whatever does not fill a
    vector register (a lone element, a batch of 3, the tail of a batch of 9) with
    scalar code, whose ``exp``/``log`` and fused operations round differently (1 ulp
    in ``chi2.ppf`` through ``gammaincinv``).  Padded, every element is computed by
    the vector loop.  (Padding is a concatenation, not a broadcast: XLA would sink
    the elementwise work below a broadcast and compute it as a scalar again.)
    """

    def run(*args: ArrayLike) -> T:
        arrays = as_float_arrays(*args)
        shape = arrays[0].shape
        size = math.prod(shape)
        if size == 0:
            return kernel(*arrays)
        pad = (-size) % LANES
        flat = [jnp.pad(a.reshape(-1), (0, pad), mode="edge") for a in arrays]
        out = kernel(*flat)
        result: T = jax.tree.map(lambda o: o[:size].reshape(shape), out)
        return result

    compiled: Callable[..., T] = jax.jit(run)
    return compiled


def is_double(x: jax.Array) -> bool:
    """True when ``x`` is float64 (selects the double-precision parameters)."""
    return np.dtype(x.dtype).itemsize >= 8


def eps_of(x: jax.Array) -> float:
    """Machine epsilon of the dtype of ``x`` as a Python float."""
    return float(np.finfo(x.dtype).eps)


def tiny_of(x: jax.Array) -> float:
    """Smallest positive normal number of the dtype of ``x``."""
    return float(np.finfo(x.dtype).tiny)


def word_split(v: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``v = hi + lo`` with both halves short enough that their products are exact.

    By the bits, not Veltkamp's ``c = (2^27 + 1) v; hi = c - (c - v)``: XLA:CPU contracts
    ``c - v`` into a fused multiply-add (FMA) with the exact ``(2^27 + 1) v``, which
    breaks that split.  ``hi`` keeps the leading half of the significand rounded to
    nearest, so ``lo`` is at most half as long."""
    if is_double(v):
        i = lax.bitcast_convert_type(v, jnp.int64)
        hi = lax.bitcast_convert_type((i + (1 << 26)) & ~((1 << 27) - 1), v.dtype)
    else:
        i = lax.bitcast_convert_type(v, jnp.int32)
        hi = lax.bitcast_convert_type((i + (1 << 11)) & ~((1 << 12) - 1), v.dtype)
    return hi, v - hi


def fast_two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a + b = s + e`` exactly (Dekker), for ``|a| >= |b|`` (or ``a`` zero)."""
    s = a + b
    return s, b - (s - a)


def two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a + b = s + e`` exactly (Knuth), for any order of magnitudes.

    A constant operand must pass an optimisation barrier first (with a traced value: one
    of a constant alone is dropped): XLA's simplifier reassociates ``(x + 1) - 1`` into
    ``x``, which erases the very rounding error this recovers."""
    s = a + b
    bv = s - a
    return s, (a - (s - bv)) + (b - bv)


def two_prod(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a * b`` as a double word ``hi + lo``, within a few units of ``u^2`` (``u`` the unit
    roundoff) of the exact product, for ``|a|, |b|`` well inside the range, whatever XLA
    fuses around it.

    Not Dekker's ``p = fl(a b)``, ``e = ((ah bh - p) + ah bl + al bh) + al bl``: XLA:CPU
    copies a cheap product into each fusion that uses it and contracts it there with the
    next addition into a fused multiply-add (FMA), so a later ``x - p`` subtracts the
    exact ``a b`` instead of ``p`` and the error term is counted twice (an optimisation
    barrier on ``p`` does not survive to the fusion passes).  Here the four partial
    products of :func:`word_split`'s halves are exact and are summed by error-free sums:
    no rounded product is left whose contraction could change the result, and only the
    sum of the last, smallest terms rounds."""
    ah, al = word_split(a)
    bh, bl = word_split(b)
    s, e1 = two_sum(ah * bh, ah * bl)
    s, e2 = two_sum(s, al * bh)
    return fast_two_sum(s, (e1 + e2) + al * bl)


#: ``(mask, m, log_scale)``: where ``mask``, a positive number ``m 2^-k`` with ``log_scale =
#: k log 2`` (``m`` an integer held exactly; 1 elsewhere), for numbers XLA cannot hold.
BelowNormal = tuple[jax.Array, jax.Array, float]


def subnormal_parts(x: jax.Array) -> BelowNormal:
    """``|x|`` as ``m 2^-k`` for subnormal ``x`` (``mask`` false elsewhere).

    XLA on CPU treats subnormal operands of arithmetic and comparisons as zero (and
    flushes subnormal results to zero), but moves their bits untouched: the value is
    read here from the bits, ``|x| = m 2^-(bias + mantissa bits - 1)`` with the integer
    ``m`` below ``2^52`` (``2^23``) converted exactly.
    """
    double = is_double(x)
    itype = jnp.int64 if double else jnp.int32
    mantissa_bits = 52 if double else 23
    bits = lax.bitcast_convert_type(x, itype) & ((1 << (63 if double else 31)) - 1)
    mask = (bits > 0) & (bits < (1 << mantissa_bits))
    m = jnp.where(mask, bits, 1).astype(x.dtype)
    return mask, m, (1074 if double else 149) * math.log(2.0)


def subnormal_log(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(mask, log|x|)`` for subnormal ``x`` (``mask`` false, log 0 elsewhere); see
    :func:`subnormal_parts`."""
    mask, m, log_scale = subnormal_parts(x)
    return mask, jnp.where(mask, jnp.log(m) - log_scale, 0.0)


def log_positive(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(mask, log x)`` for ``x >= 0``, a positive subnormal ``x`` included (``mask``
    true there: XLA on CPU reads it as 0, whose log is ``-inf``); one ``log`` serves both
    (see :func:`subnormal_parts`).  Negative ``x`` give nan as ``jnp.log``."""
    mask, m, log_scale = subnormal_parts(x)
    parts: BelowNormal = (mask & ~jnp.signbit(x), m, log_scale)
    return parts[0], log_from_parts(x, parts)


def log_from_parts(x: jax.Array, parts: BelowNormal) -> jax.Array:
    """``log x`` for ``x > 0``, from ``parts`` (:func:`subnormal_parts`, masked to the
    positive subnormals) where they say ``x`` is subnormal: one ``log`` serves both."""
    sub, m, log_scale = parts
    return jnp.log(jnp.where(sub, m, x)) - jnp.where(sub, log_scale, 0.0)


def half_below_normal(y: jax.Array) -> BelowNormal:
    """``y/2`` as ``m 2^-k`` where ``0 < y/2`` is below the normal range (XLA on CPU flushes
    the product ``0.5 y`` there, and reads a subnormal ``y`` as 0).

    Below twice the smallest normal number ``y`` is ``b 2^-1074`` (``2^-149``) with ``b``
    its bit pattern as an integer.  SciPy halves in float64: ``b / 2`` rounded to even
    there (``y = 5e-324`` halves to 0, ``erfcinv = inf``: ``mask`` is false); float32
    inputs are halved exactly (SciPy computes them in float64).
    """
    double = is_double(y)
    bits = lax.bitcast_convert_type(y, jnp.int64 if double else jnp.int32)
    below = (bits > 0) & (bits < (2 << (52 if double else 23)))  # bits > 0: y positive
    if double:
        half = (bits >> 1) + (bits & (bits >> 1) & 1)
        scale = 1074
    else:
        half = bits
        scale = 150
    mask = below & (half > 0)
    return mask, jnp.where(mask, half, 1).astype(y.dtype), scale * math.log(2.0)


def twice(x: jax.Array) -> jax.Array:
    """``2 x``, exact also for a positive subnormal ``x`` (XLA on CPU flushes the product
    there): below the normal range doubling the value doubles its bit pattern as an
    integer, into the first normal binade included."""
    double = is_double(x)
    bits = lax.bitcast_convert_type(x, jnp.int64 if double else jnp.int32)
    sub = (bits > 0) & (bits < (1 << (52 if double else 23)))
    return jnp.where(sub, lax.bitcast_convert_type(bits * 2, x.dtype), 2.0 * x)


def reciprocal_of_subnormal(x: jax.Array) -> jax.Array:
    """``1/x`` for positive subnormal ``x``, correctly rounded (``inf`` where it overflows).

    ``x = b 2^-1074`` (``2^-149``) with ``b`` its bits as an integer; ``1/x = (2^60/b)
    2^1014`` (``(2^40/b) 2^109``): one rounding, then an exact power of two.  Elsewhere
    the result is meaningless (the caller masks it).
    """
    double = is_double(x)
    bits = lax.bitcast_convert_type(x, jnp.int64 if double else jnp.int32)
    b = jnp.maximum(bits, 1).astype(x.dtype)
    lead, rest = (2.0**60, 2.0**1014) if double else (2.0**40, 2.0**109)
    return (lead / b) * rest


def sin_pi(v: jax.Array) -> jax.Array:
    """``sin(pi v)`` reduced to ``|r| <= 1/2``: exact zeros at integers."""
    n = jnp.round(v)
    r = v - n  # exact
    sign = jnp.where(jnp.mod(n, 2.0) == 0.0, 1.0, -1.0)
    return sign * jnp.sin(math.pi * r)


def cos_pi(v: jax.Array) -> jax.Array:
    """``cos(pi v)`` as ``sin(pi (1/2 - |r|))``: exact zeros at half-integers."""
    n = jnp.round(v)
    r = v - n
    sign = jnp.where(jnp.mod(n, 2.0) == 0.0, 1.0, -1.0)
    return sign * jnp.sin(math.pi * (0.5 - jnp.abs(r)))


def polyval(x: jax.Array, coeffs: Sequence[float]) -> jax.Array:
    """Horner evaluation of ``sum c_i x**(n-i)`` (coefficients highest degree first)."""
    acc = jnp.full_like(x, coeffs[0])
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def polyval1(x: jax.Array, coeffs: Sequence[float]) -> jax.Array:
    """Like :func:`polyval` for a monic polynomial whose leading 1 is omitted."""
    acc = x + coeffs[0]
    for c in coeffs[1:]:
        acc = acc * x + c
    return acc


def log1pmx(u: jax.Array) -> jax.Array:
    """``log(1 + u) - u`` without cancellation for small ``|u|`` (``u > -1``).

    For ``|u| <= 1/2`` uses ``log1p(u) = 2 atanh(s)``, ``s = u / (2 + u)``, so
    ``log1p(u) - u = -u s + 2 s**3 (1/3 + s**2/5 + s**4/7 + ...)`` with
    ``|s| <= 1/3``; otherwise the direct difference is accurate.
    """
    nterms = 17 if is_double(u) else 8
    small = jnp.abs(u) <= 0.5
    us = jnp.where(small, u, 0.0)
    s = us / (2.0 + us)
    s2 = s * s
    series = polyval(s2, [1.0 / (2 * k + 3) for k in reversed(range(nterms))])
    near = -us * s + 2.0 * s * s2 * series
    return jnp.where(small, near, jnp.log1p(u) - u)


def stirling_corr(z: jax.Array) -> jax.Array:
    """Stirling-series remainder ``lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2)``.

    Accurate to about 3e-17 absolute for ``z >= 10`` (seven terms); callers
    shift smaller arguments up with the recurrence.
    """
    w = 1.0 / z
    return w * polyval(w * w, _STIRLING)


def rgamma1p_small(x: jax.Array) -> jax.Array:
    """``1 / Gamma(1 + x)`` for ``|x| <= 1/2`` from its Taylor series."""
    nterms = len(RGAMMA1P_TAYLOR) if is_double(x) else 13
    return polyval(x, RGAMMA1P_TAYLOR[:nterms][::-1])


def rgamma1p_parts(mu: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Temme's ``(Gamma1(mu), Gamma2(mu))`` for ``|mu| <= 1/2``.

    ``Gamma1 = (1/Gamma(1-mu) - 1/Gamma(1+mu)) / (2 mu)`` and
    ``Gamma2 = (1/Gamma(1-mu) + 1/Gamma(1+mu)) / 2``: the odd and even parts
    of the Taylor series of ``1/Gamma(1+x)``, so there is no cancellation at 0.
    """
    nterms = len(RGAMMA1P_TAYLOR) if is_double(mu) else 13
    coeffs = RGAMMA1P_TAYLOR[:nterms]
    mu2 = mu * mu
    odd = [coeffs[k] for k in range(1, nterms, 2)]
    even = [coeffs[k] for k in range(0, nterms, 2)]
    gam1 = -polyval(mu2, odd[::-1])
    gam2 = polyval(mu2, even[::-1])
    return gam1, gam2


def nondiff(t: object, func: str, arg: str) -> None:
    """Raise if a tangent for a non-differentiable argument is not a symbolic zero."""
    if not isinstance(t, SymbolicZero):
        raise NotImplementedError(
            f"{func} is not differentiable with respect to {arg!r}; "
            "only the documented arguments carry derivatives"
        )


def tangent(t: object, like: jax.Array) -> jax.Array:
    """Materialise a (possibly symbolic-zero) tangent as an array shaped like ``like``."""
    if isinstance(t, SymbolicZero):
        return jnp.zeros_like(like)
    return jnp.asarray(t)


#: Elements per chunk for the iterative kernels (see :func:`chunked`).
CHUNK_SIZE = 2048


def chunked(
    fn: Callable[..., tuple[jax.Array, ...]], *arrays: jax.Array, chunk: int = CHUNK_SIZE
) -> tuple[jax.Array, ...]:
    """Apply an elementwise kernel ``fn`` to same-shape ``arrays`` in chunks.

    Large inputs are flattened, padded (edge values) to a multiple of
    ``chunk`` and processed by ``lax.map`` one chunk at a time.  The kernels'
    ``while_loop`` states then stay cache resident and each chunk stops
    iterating as soon as its own elements have converged, instead of the
    whole array waiting for the slowest element.  Inputs of at most ``chunk``
    elements are passed through unchanged.
    """
    return _chunked_from(fn, None, *arrays, chunk=chunk)


def _chunked_from(
    fn: Callable[..., tuple[jax.Array, ...]],
    skip: jax.Array | None,
    *arrays: jax.Array,
    chunk: int = CHUNK_SIZE,
) -> tuple[jax.Array, ...]:
    """:func:`chunked`, leaving out the first ``skip // chunk`` chunks (their outputs are
    0): ``skip`` (a traced count, or ``None``) leading elements whose values the caller
    does not use."""
    shape = arrays[0].shape
    size = int(np.prod(shape, dtype=np.int64))
    if size <= chunk:
        return fn(*arrays)
    nchunks = -(-size // chunk)
    pad = nchunks * chunk - size
    blocks = tuple(
        jnp.pad(a.reshape(-1), (0, pad), mode="edge").reshape(nchunks, chunk) for a in arrays
    )
    if skip is None:
        out = lax.map(lambda args: fn(*args), blocks)
    else:
        # The same per-chunk program as lax.map's, over the chunks from the first one
        # that holds a used element.
        shapes = jax.eval_shape(fn, *(b[0] for b in blocks))
        init = tuple(jnp.zeros((nchunks, *s.shape), s.dtype) for s in shapes)

        def body(i: jax.Array, outs: tuple[jax.Array, ...]) -> tuple[jax.Array, ...]:
            res = fn(*(lax.dynamic_index_in_dim(b, i, keepdims=False) for b in blocks))
            return tuple(
                lax.dynamic_update_index_in_dim(o, r, i, 0) for o, r in zip(outs, res, strict=True)
            )

        out = lax.fori_loop(skip // chunk, nchunks, body, init)
    return tuple(o.reshape(-1)[:size].reshape(shape) for o in out)


def _keep_if(done: jax.Array, old: jax.Array, new: jax.Array) -> jax.Array:
    return jnp.where(done, old, new)


def iterate(
    step: Callable[[jax.Array, S], S],
    state: S,
    converged: Callable[[S], jax.Array],
    max_iter: int | jax.Array,
    dtype: jnp.dtype,
    unroll: int = 4,
    *,
    freeze_per_group: bool = False,
) -> S:
    """Apply ``state = step(i, state)`` for ``i = 1, 2, ...`` until ``converged(state)``.

    ``converged`` returns a boolean array shaped like every leaf of the state;
    the ``lax.while_loop`` stops once it is all true or after ``max_iter``
    (rounded up to a multiple of ``unroll``) steps.  Steps are taken ``unroll``
    at a time with one loop test per group.  An element's state is frozen from
    the step at which its own ``converged`` first holds: without that, a
    converged element would go on iterating while the slowest element of its
    batch has not converged, and the last bits of its value would depend on
    which other elements it was computed with.

    ``freeze_per_group=True`` tests ``converged`` once per group of ``unroll`` steps
    instead of after every step: an element then stops at the end of the first group
    after which it has converged (up to ``unroll - 1`` extra steps, which only refine
    it).  That is still the element's own sequence of steps, so its value does not
    depend on the batch either, and a step costs no selects: for the short, cheap
    steps of a continued fraction they are a large part of the work.
    """

    def body(carry: tuple[jax.Array, S]) -> tuple[jax.Array, S]:
        i, st = carry
        if freeze_per_group:
            new = st
            for k in range(unroll):
                new = step(i + float(k), new)
            st = jax.tree.map(functools.partial(_keep_if, converged(st)), st, new)
            return i + float(unroll), st
        for k in range(unroll):
            st = jax.tree.map(
                functools.partial(_keep_if, converged(st)), st, step(i + float(k), st)
            )
        return i + float(unroll), st

    def cond(carry: tuple[jax.Array, S]) -> jax.Array:
        i, st = carry
        return (i <= max_iter) & ~jnp.all(converged(st))

    return lax.while_loop(cond, body, (jnp.asarray(1.0, dtype), state))[1]


def _bucket_ranks(key: jax.Array, nbuckets: int) -> jax.Array:
    """Destination of each element in a stable counting sort by ``key`` (flat int32).

    The per-bucket running counts come from cumulative sums; under x64 up to
    three 21-bit counters are packed into one int64 word so that one
    prefix sum serves three buckets.  Bucket sizes are read off the last
    running count.
    """
    size = key.shape[0]
    bits = max(1, int(size).bit_length())
    x64 = jax.dtypes.canonicalize_dtype(np.int64) == np.dtype(np.int64)
    per_word = max(1, min(63 // bits, 3)) if x64 else 1
    word_dtype = jnp.int64 if per_word > 1 else jnp.int32
    mask = (1 << bits) - 1
    ranks: list[jax.Array] = []
    counts: list[jax.Array] = []
    for start in range(0, nbuckets, per_word):
        members = range(start, min(start + per_word, nbuckets))
        packed = jnp.zeros(key.shape, word_dtype)
        for j, k in enumerate(members):
            packed = packed | jnp.where(key == k, 1 << (bits * j), 0).astype(word_dtype)
        running = lax.cumsum(packed)
        for j, _ in enumerate(members):
            field = ((running >> (bits * j)) & mask).astype(jnp.int32)
            ranks.append(field)
            counts.append(field[-1])
    dest = jnp.zeros(key.shape, jnp.int32)
    offset = jnp.zeros((), jnp.int32)
    for k in range(nbuckets):
        dest = jnp.where(key == k, offset + ranks[k] - 1, dest)
        offset = offset + counts[k]
    return dest


def partitioned(
    fn: Callable[..., tuple[jax.Array, ...]],
    key: jax.Array,
    nbuckets: int,
    *arrays: jax.Array,
    chunk: int = CHUNK_SIZE,
    skip_first: bool = False,
) -> tuple[jax.Array, ...]:
    """Like :func:`chunked`, but first groups elements by an integer cost class.

    ``key`` (int values, all in ``[0, nbuckets)``, same shape as ``arrays``) should
    predict how much work an element needs (e.g. which method or how many
    iterations).  Elements are permuted with a stable counting sort so that
    each chunk holds elements of similar cost, the chunks are processed by
    :func:`chunked`, and the results are permuted back.  Because vectorised
    iterations run in lock-step until the slowest element of a chunk is done,
    this turns "max cost per chunk" into roughly "average cost".  Inputs of at
    most ``chunk`` elements are passed straight to ``fn``.  ``skip_first``: the values
    of class 0 are not used (the caller sets them), so chunks of class 0 only are not
    evaluated (their outputs are 0).
    """
    shape = arrays[0].shape
    size = int(np.prod(shape, dtype=np.int64))
    if size <= chunk:
        return fn(*arrays)
    flat_key = key.reshape(-1).astype(jnp.int32)
    index_bits = max(1, int(size - 1).bit_length())
    x64 = jax.dtypes.canonicalize_dtype(np.int64) == np.dtype(np.int64)
    word = jnp.int32 if index_bits + int(nbuckets).bit_length() <= 31 else jnp.int64
    if word == jnp.int32 or x64:
        # One sort of ``key * 2^bits + index`` (unique words, so it is stable): about
        # two thirds of the time of the counting sort's prefix sums on XLA's CPU backend.
        idx = jnp.arange(size, dtype=word)
        words = lax.sort((flat_key.astype(word) << index_bits) | idx)
        order = (words & ((1 << index_bits) - 1)).astype(jnp.int32)
    else:
        dest = _bucket_ranks(flat_key, nbuckets)
        order = (
            jnp.zeros((size,), jnp.int32)
            .at[dest]
            .set(jnp.arange(size, dtype=jnp.int32), unique_indices=True, mode="promise_in_bounds")
        )
    # ``order`` is a permutation of ``range(size)``: every index is in bounds and unique,
    # which spares XLA's gathers and scatters their bounds handling (half their time).
    sorted_arrays = tuple(
        a.reshape(-1).at[order].get(mode="promise_in_bounds", unique_indices=True) for a in arrays
    )
    skip = jnp.sum(flat_key == 0) if skip_first else None
    out = _chunked_from(fn, skip, *sorted_arrays, chunk=chunk)
    return tuple(
        jnp.zeros_like(o)
        .at[order]
        .set(o, unique_indices=True, mode="promise_in_bounds")
        .reshape(shape)
        for o in out
    )
