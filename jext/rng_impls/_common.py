"""Shared machinery of the counter-based RNGs: uint32 arithmetic, streams, key derivation."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.mlir.dialects import stablehlo
from jax.typing import ArrayLike

from jext import _host, _jax
from jext._errors import LoweringError
from jext._jax import mlir_ir as ir
from jext.primitives import Primitive, primitive

Array = jax.Array
Words = tuple[Array, ...]
Pair = tuple[Array, Array]
Shape = tuple[int, ...]
# block(prepared_key, counter_words, rolled) -> output words; see run_rounds for ``rolled``.
BlockFn = Callable[[Words, Words, int], Words]
Stage = Callable[[Words, Words], Words]

U32 = np.uint32
MASK32 = 0xFFFFFFFF
_ZERO = U32(0)

# Stream chunk size, in uint32 words.  Long streams are generated chunk by chunk under
# lax.scan so the per-word intermediates stay in cache instead of being written out whole.
_CHUNK_WORDS = 1 << 19
# Requests of fewer blocks than this run their rounds in a rolled loop: compiling the
# unrolled rounds takes seconds, and for small requests their speed does not matter.
_UNROLL_MIN_BLOCKS = 4096
# XLA:CPU's limit on how many differently-indexed uses of one node a fusion may have.
_MAX_FUSED_OUTPUTS = 15
# Up to this many words, interleave ORs zero-padded columns instead of concatenating.
_MAX_PADDED_COLUMNS = 8

# Key-derivation domain tweaks, XORed into the parent key (the SHA-256 initial hash words and
# their complements): the parent's own stream uses the untweaked key, so derived keys never
# reuse its output blocks.
_DIGEST_TWEAK = (
    0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
    0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
)  # fmt: skip
_CHILD_TWEAK = tuple(w ^ MASK32 for w in _DIGEST_TWEAK)


# --- integers <-> uint32 words -----------------------------------------------------------


def int_to_words(value: int, count: int, *, what: str = "value") -> np.ndarray:
    """Little-endian uint32 words of a non-negative ``value`` that must fit in ``count`` words."""
    if value < 0 or value >> (32 * count):
        raise ValueError(f"{what} must be in [0, 2**{32 * count}), got {value}")
    return np.array([(value >> (32 * i)) & MASK32 for i in range(count)], dtype=U32)


def words_to_int(words: ArrayLike) -> int:
    """The non-negative integer whose little-endian uint32 words are ``words``."""
    return sum(int(w) << (32 * i) for i, w in enumerate(np.asarray(words, dtype=U32).ravel()))


def block_on_ints(
    run: Callable[[Array, Array], Array], counter: Sequence[int], key: Sequence[int]
) -> tuple[int, ...]:
    """A block function on uint32 words (``run(key, counter)``) applied to 64-bit ints."""
    ctr = np.concatenate([int_to_words(c, 2, what="counter word") for c in counter])
    k = np.concatenate([int_to_words(w, 2, what="key word") for w in key])
    out = np.asarray(run(jnp.asarray(k), jnp.asarray(ctr)))
    return tuple(words_to_int(out[i : i + 2]) for i in range(0, out.size, 2))


# --- uint32 / uint32-pair arithmetic ---------------------------------------------------------


def carry_of(total: Array, addend: ArrayLike) -> Array:
    """1 where ``total = x + addend`` wrapped around 2**32, else 0."""
    return (total < addend).astype(U32)


def add64(a: Pair, b: tuple[ArrayLike, ArrayLike]) -> Pair:
    """64-bit addition (mod 2**64) of (low, high) uint32 pairs."""
    lo = a[0] + b[0]
    return lo, a[1] + b[1] + carry_of(lo, b[0])


def xor64(a: Pair, b: tuple[ArrayLike, ArrayLike]) -> Pair:
    """64-bit exclusive or of (low, high) uint32 pairs."""
    return a[0] ^ b[0], a[1] ^ b[1]


def rotl64(a: Pair, r: int) -> Pair:
    """64-bit left rotation of a (low, high) pair by a constant ``r``."""
    lo, hi = a
    r %= 64
    if r >= 32:
        lo, hi, r = hi, lo, r - 32
    if r == 0:
        return lo, hi
    return (lo << U32(r)) | (hi >> U32(32 - r)), (hi << U32(r)) | (lo >> U32(32 - r))


def rotl32(x: Array, r: int) -> Array:
    """32-bit left rotation by a constant ``r`` (0 < r < 32)."""
    return (x << U32(r)) | (x >> U32(32 - r))


def _mulhi32_split(a: Array, /, *, m: int) -> Array:
    """The high 32 bits of ``a * m`` from four 16x16->32 products, all exact in uint32."""
    mask16 = U32(0xFFFF)
    a_lo, a_hi = a & mask16, a >> U32(16)
    m_lo, m_hi = U32(m & 0xFFFF), U32(m >> 16)
    lo_lo = a_lo * m_lo
    lo_hi = a_lo * m_hi
    hi_lo = a_hi * m_lo
    # The middle column: at most 3 * (2**16 - 1), so it cannot wrap.
    middle = (lo_lo >> U32(16)) + (lo_hi & mask16) + (hi_lo & mask16)
    return a_hi * m_hi + (lo_hi >> U32(16)) + (hi_lo >> U32(16)) + (middle >> U32(16))


# ``mulhi32(a, m=c)``: the reference splits into 16-bit halves (portable, 4 multiplies);
# every platform lowers it as one widened 32x32->64 multiply and a shift instead.  Not
# ``lax.mulhi``: it lowers through an MHLO-only path that fails to convert to StableHLO when
# the output is sharded (JAX's own philox4x32 fails the same way).
mulhi32 = primitive("jext.rng_impls.mulhi32")(_mulhi32_split)
mulhi32.def_batching_elementwise()


@mulhi32.def_abstract_eval
def _mulhi32_abstract(a: Any, /, *, m: int) -> Any:
    return _jax.shaped_array(a.shape, a.dtype)


@mulhi32.def_lowering(raw=True)
def _mulhi32_widened(ctx: Any, a: Any, /, *, m: int) -> list[Any]:
    # The uint64 product exists only inside the module, whether or not x64 is enabled.
    wide = ir.RankedTensorType.get(
        ir.RankedTensorType(a.type).shape, ir.IntegerType.get_unsigned(64)
    )
    product = stablehlo.multiply(stablehlo.convert(wide, a), _splat(wide, m))
    return [stablehlo.convert(a.type, stablehlo.shift_right_logical(product, _splat(wide, 32)))]


def _splat(tensor_type: Any, value: int) -> Any:
    element = ir.IntegerAttr.get(ir.RankedTensorType(tensor_type).element_type, value)
    return stablehlo.constant(ir.DenseElementsAttr.get_splat(tensor_type, element))


def _mulhi(a: Array, m: int) -> Array:
    # Inside a Pallas kernel only lax ops lower: the split form, plain uint32 arithmetic.
    return _mulhi32_split(a, m=m) if _IN_KERNEL.get() else mulhi32(a, m=m)


def mulhilo64(a: Pair, m: int) -> tuple[Pair, Pair]:
    """The 128-bit product of a (low, high) pair and the 64-bit constant ``m``: (low, high).

    Built from four 32x32->64 products (``*`` for the low halves, :func:`mulhi32` for the
    high halves) and explicit carries, since 64-bit integers may be unavailable.
    """
    a0, a1 = a
    m0, m1 = m & MASK32, m >> 32
    l00, h00 = a0 * U32(m0), _mulhi(a0, m0)
    l01, h01 = a0 * U32(m1), _mulhi(a0, m1)
    l10, h10 = a1 * U32(m0), _mulhi(a1, m0)
    l11, h11 = a1 * U32(m1), _mulhi(a1, m1)
    t = h00 + l01
    c1 = carry_of(t, l01)
    w1 = t + l10
    c2 = carry_of(w1, l10)
    s = h01 + h10
    c3 = carry_of(s, h10)
    s2 = s + l11
    c4 = carry_of(s2, l11)
    w2 = s2 + c1 + c2
    # c1 + c2 <= 2, so adding them to s2 wraps at most once.
    c5 = carry_of(w2, s2)
    return (l00, w1), (w2, h11 + c3 + c4 + c5)


def pairs(words: Sequence[Array]) -> list[Pair]:
    """Group little-endian uint32 words into (low, high) pairs."""
    return [(words[i], words[i + 1]) for i in range(0, len(words), 2)]


def flatten(pair_list: Sequence[Pair]) -> Words:
    """Inverse of :func:`pairs`."""
    return tuple(w for p in pair_list for w in p)


def add_to_counter(counter: Sequence[ArrayLike], index: Array) -> Words:
    """Little-endian multi-word ``counter + index`` (mod 2**(32 * len(counter)))."""
    out = []
    carry = index
    for word in counter:
        total = carry + word
        out.append(total)
        carry = carry_of(total, carry)
    return tuple(out)


# --- computing several words at once ---------------------------------------------------------


def materialize(words: Sequence[Array]) -> Words:
    """The same words, each computed once: in one pass, or one pass per group of 15.

    XLA:CPU fuses each consumer of a shared elementwise chain separately, so stacking the
    words of a block recomputes all rounds once per word.  A variadic reduction over a
    padded length-2 axis is a single multi-output loop that evaluates the chain once.  XLA
    refuses to fuse a node into more than 15 such outputs (its code-duplication limit), so
    wider blocks are split into groups, each of which recomputes the shared chain.
    """
    if _IN_KERNEL.get():
        # In a Pallas kernel every value lives in registers: nothing to materialize.
        return tuple(words)
    # Repeated arrays (the same traced value) are computed and returned once.
    slot: dict[int, int] = {}
    unique: list[Array] = []
    for w in words:
        if id(w) not in slot:
            slot[id(w)] = len(unique)
            unique.append(w)
    if not unique:
        return ()
    ngroups = -(-len(unique) // _MAX_FUSED_OUTPUTS)
    size = -(-len(unique) // ngroups)
    out: list[Array] = []
    for start in range(0, len(unique), size):
        group = unique[start : start + size]
        padded = tuple(
            lax.pad(lax.expand_dims(w, (0,)), _ZERO, [(0, 1, 0)] + [(0, 0, 0)] * w.ndim)
            for w in group
        )

        def combine(acc: Sequence[Array], new: Sequence[Array]) -> tuple[Array, ...]:
            return tuple(x ^ y for x, y in zip(acc, new, strict=True))

        out.extend(lax.reduce(padded, (_ZERO,) * len(padded), combine, (0,)))
    return tuple(out[slot[id(w)]] for w in words)


def interleave(words: Sequence[Array]) -> Array:
    """Stack equally-shaped word arrays along a new last axis, computing each word once."""
    cols = materialize(jnp.broadcast_arrays(*words))
    n = len(cols)
    if n > _MAX_PADDED_COLUMNS:
        return jnp.stack(cols, axis=-1)
    # For a few columns an OR of zero-padded columns vectorises better on XLA:CPU than a
    # concatenate; its cost grows with the square of the column count.
    out = jnp.zeros((*cols[0].shape, n), U32)
    for i, col in enumerate(cols):
        out = out | lax.pad(col[..., None], _ZERO, [(0, 0, 0)] * col.ndim + [(i, n - 1 - i, 0)])
    return out


def run_rounds(
    stages: Sequence[Stage], state: Words, params: Sequence[Words], *, rolled: int
) -> Words:
    """Apply a unit of rounds (``stages`` in order) to ``state`` once per entry of ``params``.

    ``rolled == 0``: unrolled, the whole chain fuses into one loop (fast to run, slow to
    compile).  ``rolled == k > 0``: the units run in a ``lax.scan`` unrolled ``k`` units per
    iteration, whose body materializes the state after each stage, so only ``k`` units are
    compiled (``True`` is 1).
    """
    # The parameters (a key schedule) are computed once, not once per block.
    flat = iter(materialize([w for p in params for w in p]))
    params = [tuple(next(flat) for _ in p) for p in params]
    if _IN_KERNEL.get() and rolled and params and not any(params):
        # In a Pallas kernel a loop must be a fori_loop (Triton's scf.for): units without
        # parameters (ChaCha's double rounds) roll; others stay unrolled, which Triton
        # compiles quickly (the Python loop below).
        # Triton lowers fori_loops of unroll 1 only: the body applies the units itself.
        per_step = int(rolled) if len(params) % int(rolled) == 0 else 1

        def units(_: Array, x: Words) -> Words:
            for _unit in range(per_step):
                for stage in stages:
                    x = tuple(stage(x, ()))
            return x

        return tuple(lax.fori_loop(0, len(params) // per_step, units, tuple(state)))
    if not rolled or not params or _IN_KERNEL.get():
        for p in params:
            for stage in stages:
                state = stage(state, p)
        return state

    width = len(params[0])
    # Every carried word is made to depend on the counter (the last word): JAX's scan
    # batching fails under vmap over sharded keys when constant words (ChaCha's sigma) are
    # carried unbatched next to batched ones.  XLA folds the ``& 0`` away.
    anchor = state[-1] & U32(0)
    state = materialize(jnp.broadcast_arrays(*(w | anchor for w in state)))

    def body(x: Words, p: Array | None) -> tuple[Words, None]:
        unit_params = () if p is None else tuple(p[i] for i in range(width))
        for stage in stages:
            x = materialize(jnp.broadcast_arrays(*stage(x, unit_params)))
        return x, None

    # One (units, width, ...) array of per-unit parameters: a single concatenate to build.
    # Without parameters (ChaCha) the scan has no xs at all: an unbatched empty xs next to
    # a batched carry trips JAX's scan batching under sharded vmap.
    xs = None
    if width:
        xs = jnp.stack(jnp.broadcast_arrays(*(w for p in params for w in p)))
        xs = xs.reshape(len(params), width, *xs.shape[1:])
    state, _ = lax.scan(body, state, xs, length=len(params), unroll=int(rolled))
    return state


# --- streams and bit widths -----------------------------------------------------------------
#
# Key data arrives as uint32[*batch, L] (the random_bits primitive batches on a leading
# axis), so every key word is an array of shape (*batch, 1) and every block word one of
# shape (*batch, nblocks).


def key_words(key: Array, count: int) -> Words:
    """The first ``count`` words of ``uint32[*batch, L]`` key data, each ``(*batch, 1)``."""
    return tuple(key[..., i : i + 1] for i in range(count))


def _blocks(
    block: BlockFn,
    prepared: Words,
    start: Words,
    first: Array,
    count: int,
    *,
    cpu: bool,
    rolled: int | None = None,
) -> Array:
    """Blocks ``first .. first + count - 1`` of the stream, words in order: ``(*batch, n)``.

    ``rolled`` as :func:`run_rounds` takes it; None: unrolled from 4096 blocks on.
    """
    index = first + lax.iota(U32, count)
    if rolled is None:
        rolled = int(count < _UNROLL_MIN_BLOCKS)
    words = jnp.broadcast_arrays(*block(prepared, add_to_counter(start, index), rolled))
    # With cpu=True the block words are computed once (variadic reduce) before
    # interleaving; else a plain stack, one concatenate fusion.
    stacked = interleave(words) if cpu else jnp.stack(words, axis=-1)
    return stacked.reshape(*stacked.shape[:-2], -1)


def _check_blocks(nblocks: int) -> None:
    if nblocks > 1 << 32:
        raise NotImplementedError("random bits array needing more than 2**32 blocks")


def stream_words_chunked(
    block: BlockFn, prepared: Words, start: Words, block_words: int, nwords: int
) -> Array:
    """The first ``nwords`` words from ``start`` on, chunk by chunk (the chunked form).

    Long streams are generated in a ``lax.scan`` over chunks of ``2**19`` words, so the
    per-word intermediates of a chunk stay in cache.
    """
    nblocks = -(-nwords // block_words)
    _check_blocks(nblocks)
    batch = jnp.broadcast_shapes(*(w.shape[:-1] for w in (*prepared, *start)))
    if nblocks == 0:
        return jnp.zeros((*batch, 0), U32)
    chunk = max(1, _CHUNK_WORDS // block_words)
    if nblocks <= chunk:
        flat = _blocks(block, prepared, start, jnp.zeros((), U32), nblocks, cpu=True)
    else:
        nchunks = -(-nblocks // chunk)

        def step(carry: None, i: Array) -> tuple[None, Array]:
            return carry, _blocks(block, prepared, start, i * U32(chunk), chunk, cpu=True)

        _, ys = lax.scan(step, None, jnp.arange(nchunks, dtype=U32))
        flat = jnp.moveaxis(ys, 0, -2).reshape(*batch, -1)
    return flat if flat.shape[-1] == nwords else flat[..., :nwords]


def stream_words_fused(
    block: BlockFn, prepared: Words, start: Words, block_words: int, nwords: int
) -> Array:
    """The first ``nwords`` words from ``start`` on, in one pass (the unrolled form).

    One elementwise computation over every block of the output: no loop over chunks, and
    no intermediate larger than the output.
    """
    nblocks = -(-nwords // block_words)
    _check_blocks(nblocks)
    batch = jnp.broadcast_shapes(*(w.shape[:-1] for w in (*prepared, *start)))
    if nblocks == 0:
        return jnp.zeros((*batch, 0), U32)
    flat = _blocks(block, prepared, start, jnp.zeros((), U32), nblocks, cpu=False)
    return flat if flat.shape[-1] == nwords else flat[..., :nwords]


def stream_words_rolled(
    block: BlockFn,
    prepared: Words,
    start: Words,
    block_words: int,
    nwords: int,
    *,
    unroll: int = 1,
) -> Array:
    """The first ``nwords`` words from ``start`` on, the rounds in a loop (the rolled form).

    One pass over every block of the output, as :func:`stream_words_fused`, with the
    rounds in a ``lax.scan`` of ``unroll`` round units per iteration whatever the size, so
    compiling it takes the same time for every request; the block words are computed once
    each (:func:`interleave`) before they are stacked.
    """
    nblocks = -(-nwords // block_words)
    _check_blocks(nblocks)
    batch = jnp.broadcast_shapes(*(w.shape[:-1] for w in (*prepared, *start)))
    if nblocks == 0:
        return jnp.zeros((*batch, 0), U32)
    zero = jnp.zeros((), U32)
    flat = _blocks(block, prepared, start, zero, nblocks, cpu=True, rolled=unroll)
    return flat if flat.shape[-1] == nwords else flat[..., :nwords]


# Set while a Pallas kernel body is traced: values are registers, and only lax ops lower.
_IN_KERNEL: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jext_rng_in_kernel", default=False
)


@contextlib.contextmanager
def _in_kernel() -> Iterator[None]:
    token = _IN_KERNEL.set(True)
    try:
        yield
    finally:
        _IN_KERNEL.reset(token)


# Words each Pallas program writes: 16 KiB, 256 ChaCha20 blocks or 512 of the others.
_PALLAS_WORDS: Final = 4096


def stream_words_pallas(rng: CounterRng, key: Array, nwords: int, *, interpret: bool) -> Array:
    """The first ``nwords`` words of each key's stream from a Pallas kernel (the pallas form).

    ``key`` is ``uint32[B, L]`` key data.  Each program enciphers ``4096 // block_words``
    consecutive blocks of one key in registers (the rounds unrolled: Triton compiles
    straight-line integer code quickly) and writes them as one ``(blocks, block_words)``
    tile, in stream order: one write of the output and nothing else.  ``interpret=True``
    runs it in the Pallas interpreter (any platform; how the form is checked on CPU);
    otherwise it is compiled by Triton (cuda).
    """
    # Pallas loads only when this form is traced.
    from jax.experimental import pallas as pl  # noqa: PLC0415 - Pallas loads only when this form is traced

    nblocks = -(-nwords // rng.block_words)
    _check_blocks(nblocks)
    nkeys = key.shape[0]
    if nblocks == 0 or nkeys == 0:
        return jnp.zeros((nkeys, nwords), U32)
    width = rng.block_words
    per_program = _PALLAS_WORDS // width
    programs = -(-nblocks // per_program)
    # Triton's blocks have power-of-two sides: the key data is padded to one.
    padded = 1 << (rng.data_words - 1).bit_length()
    data = jnp.pad(key, ((0, 0), (0, padded - rng.data_words)))

    def kernel(key_ref: Any, out_ref: Any) -> None:
        with _in_kernel():
            words = tuple(key_ref[0, i] for i in range(rng.data_words))
            kw, cw = words[: rng.key_words], words[rng.key_words :]
            program = pl.program_id(0) % programs
            index = (program * per_program).astype(U32) + lax.iota(U32, per_program)
            out = rng.block(rng.prepare(kw), add_to_counter(cw, index), rng.unroll)
            # The tile (blocks, words) from its columns: selects, which every compiler
            # lowers (Triton has no concatenate).
            column = lax.broadcasted_iota(jnp.int32, (per_program, width), 1)
            tile = jnp.zeros((per_program, width), U32)
            for i, word in enumerate(jnp.broadcast_arrays(*out)):
                tile = tile | jnp.where(column == i, word[:, None], _ZERO)
            out_ref[0] = tile

    params = None if interpret else _jax.pallas_triton_params(num_warps=4, num_stages=1)
    tiles: Array = pl.pallas_call(
        kernel,
        out_shape=_jax.shape_dtype_struct((nkeys, programs * per_program, width), U32),
        # One grid axis (Triton's second and third are limited to 65535 programs).
        grid=(nkeys * programs,),
        in_specs=[pl.BlockSpec((1, padded), lambda p: (p // programs, 0))],
        out_specs=pl.BlockSpec((1, per_program, width), lambda p: (p // programs, p % programs, 0)),
        interpret=interpret,
        compiler_params=params,
        name=f"jext_{rng.name}_bits",
    )(data)
    flat = tiles.reshape(nkeys, -1)
    return flat if flat.shape[-1] == nwords else flat[..., :nwords]


def words_to_bits(words: Array, bit_width: int, shape: Shape) -> Array:
    """Read ``uint32[*batch, nwords]`` streams as little-endian ``bit_width``-bit integers.

    The result is ``uint{bit_width}[*batch, *shape]``, C order.  Only ``lax`` ops with
    explicit dtypes are used: a ``uint64`` request without x64 (JAX canonicalizes it to
    ``uint32``) must not trip strict dtype promotion.
    """
    batch = words.shape[:-1]
    n = math.prod(shape)
    if bit_width == 32:
        return words.reshape(*batch, *shape)
    if bit_width == 64:
        dtype = bits_dtype(64)
        halves = lax.convert_element_type(words.reshape(*batch, n, 2), dtype)
        lo, hi = halves[..., 0], halves[..., 1]
        if dtype.itemsize == 8:
            lo = lo | lax.shift_left(hi, lax.full_like(hi, 32))
        # Without x64 the low halves alone are the 32-bit values JAX asked for.
        return lo.reshape(*batch, *shape)
    per_word = 32 // bit_width
    shifts = lax.broadcasted_iota(U32, (per_word,), 0) * U32(bit_width)
    parts = lax.shift_right_logical(words[..., None], lax.broadcast(shifts, (*words.shape,)))
    narrow = lax.convert_element_type(parts, bits_dtype(bit_width))  # keeps the low bits
    return narrow.reshape(*batch, -1)[..., :n].reshape(*batch, *shape)


def bits_dtype(bit_width: int) -> np.dtype[np.unsignedinteger]:
    """``uint{bit_width}`` as JAX canonicalizes it (``uint32`` for 64 bits without x64)."""
    dtype: np.dtype[np.unsignedinteger] = jax.dtypes.canonicalize_dtype(
        np.dtype(f"uint{bit_width}")
    )
    return dtype


# --- seeds ----------------------------------------------------------------------------------


def seed_halves(seed: Array) -> tuple[Array, Array]:
    """Low and high uint32 halves of an integer seed's value modulo ``2**64``.

    A seed means its integer value, whatever its dtype: a signed one is sign-extended, an
    unsigned one zero-extended, so ``int32(-1)`` and ``int64(-1)`` are both ``2**64 - 1``
    and ``uint32(2**32 - 1)`` is ``2**32 - 1``.  A traced seed therefore gives the key
    the same value gives outside ``jit``, with x64 on or off.  (Python ints beyond
    ``int32`` without x64 never reach here whole, since JAX truncates them to ``int32``
    first; ``jext.random.key`` takes them as ``int64``, see :func:`jext.random.key`.)
    """
    if seed.shape:
        raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
    if not jnp.issubdtype(seed.dtype, jnp.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    # For a signed seed narrower than 32 bits the conversion sign-extends first.
    lo = lax.convert_element_type(seed, U32)
    if seed.dtype.itemsize == 8:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed, jnp.asarray(32, seed.dtype)), U32
        )
    elif jnp.issubdtype(seed.dtype, jnp.signedinteger):
        hi = jnp.where(seed < 0, U32(MASK32), _ZERO)
    else:
        hi = jnp.zeros((), U32)
    return lo, hi


# --- the JAX PRNG implementation -------------------------------------------------------------


@dataclass(frozen=True)
class CounterRng:
    """A counter-based block function and the key-data layout built around it.

    Key data is ``key_words`` uint32 key words followed by ``counter_words`` little-endian
    uint32 counter words, the counter of the first block of the key's stream: random_bits
    reads the blocks at ``counter, counter + 1, ...``, each block's words in order, as one
    little-endian byte stream.  Derived keys (split / fold_in) have the key-data words listed
    in ``fresh_words`` filled with the output of one block and every other word zero, so the
    stream position (the low counter words) of a child starts at zero.
    """

    name: str
    tag: str
    key_words: int
    counter_words: int
    block_words: int
    fresh_words: tuple[int, ...]
    prepare: Callable[[Words], Words]
    block: BlockFn
    seed_data: Callable[[Array, Array], Words]
    # Round units per iteration of the rolled form's loop (see run_rounds).
    unroll: int = 1

    def __post_init__(self) -> None:
        if len(self.fresh_words) > self.block_words or max(self.fresh_words) >= self.data_words:
            raise ValueError(f"{self.name}: fresh_words must fit one block and the key data")

    @property
    def data_words(self) -> int:
        """Length of the key data."""
        return self.key_words + self.counter_words

    def key_data(self, key: int, counter: int) -> np.ndarray:
        """Key data for the integer ``key`` and the counter of the first block, ``counter``."""
        return np.concatenate(
            [
                int_to_words(key, self.key_words, what="key"),
                int_to_words(counter, self.counter_words, what="counter"),
            ]
        )

    def _split_data(self, key: Array) -> tuple[Words, Words]:
        words = tuple(key[i] for i in range(self.data_words))
        return words[: self.key_words], words[self.key_words :]

    def derive(self, key: Array, index: Array) -> Array:
        """Child key data number ``index`` (any shape) of ``key``: shape ``index.shape + (L,)``.

        The parent counter is enciphered under the parent key XOR one tweak, ``index`` is
        XORed into that digest, and the result is enciphered under the parent key XOR another
        tweak.  split and fold_in both call this, so ``split(key, n)[i] == fold_in(key, i)``.
        Distinct indices encipher distinct counters, so children differ (outright where the
        block function is a permutation and the whole block is kept, as for Philox and
        Threefry); the digest keeps parents with related counters from sharing children.
        """
        kw, cw = self._split_data(key)
        digest = self.block(self.prepare(_tweak(kw, _DIGEST_TWEAK)), cw, True)
        # Materialized so the (scalar) digest chain is not re-run inside each consumer.
        base = materialize(digest[: self.counter_words])
        ctr = jnp.broadcast_arrays(base[0] ^ index, *base[1:])
        out = self.block(
            self.prepare(_tweak(kw, _CHILD_TWEAK)),
            tuple(ctr),
            index.size < _UNROLL_MIN_BLOCKS,
        )
        zero = jnp.zeros(index.shape, U32)
        child = [zero] * self.data_words
        for position, word in zip(self.fresh_words, out, strict=False):
            child[position] = word
        return interleave(child)

    def seed(self, seed: Array) -> Array:
        """Key data for an integer seed (see the implementing module)."""
        return jnp.stack(self.seed_data(*seed_halves(seed)))

    def split(self, key: Array, shape: Shape) -> Array:
        """Children ``0 .. prod(shape) - 1`` of ``key``, in C order."""
        n = math.prod(shape)
        if n > 1 << 32:
            raise NotImplementedError("split into more than 2**32 keys")
        return self.derive(key, lax.iota(U32, n)).reshape((*shape, self.data_words))

    def fold_in(self, key: Array, data: ArrayLike) -> Array:
        """Child number ``data`` of ``key`` (the same key as ``split(key, n)[data]``)."""
        return self.derive(key, jnp.asarray(data).astype(U32))

    @functools.cached_property
    def bits_primitive(self) -> Primitive[..., Array]:
        """``random_bits`` as a jext primitive: one form of the generator per platform.

        ``bits(key_data, bit_width=, shape=)`` takes ``uint32[*batch, L]`` key data.  Each
        platform's rule lowers the form :func:`form_for` chooses (``JEXT_RNG_FORM`` forces
        one); its reference is the unrolled form.  Every form gives the same bits.
        """
        return _bits_primitive(self)

    def stream_bits(self, key: Array, bit_width: int, shape: Shape, *, strategy: Strategy) -> Array:
        """``random_bits`` of ``uint32[*batch, L]`` key data with the given strategy."""
        nwords = -(-math.prod(shape) * bit_width // 32)
        words = key_words(key, self.data_words)
        kw, cw = words[: self.key_words], words[self.key_words :]
        stream = strategy(self.block, self.prepare(kw), cw, self.block_words, nwords)
        return words_to_bits(stream, bit_width, shape)

    def form(self, form: Form, *, interpret: bool = True) -> BitsFn:
        """The traceable ``bits(key_data, bit_width=, shape=)`` of ``form`` (not ``native``).

        ``interpret`` is for the pallas form: the Pallas interpreter (any platform) or
        Triton (cuda).  Tests and benchmarks call a form through this, or force it for
        every lowering with ``JEXT_RNG_FORM``.
        """
        if form == "pallas":
            return functools.partial(self._pallas_bits, interpret=interpret)
        strategies: dict[str, Strategy] = {
            "chunked": stream_words_chunked,
            "unrolled": stream_words_fused,
            "rolled": functools.partial(stream_words_rolled, unroll=self.unroll),
        }
        if form not in strategies:
            raise ValueError(
                f"{form!r} is not a traceable form of {self.name}; expected one of "
                f"{sorted([*strategies, 'pallas'])}"
            )
        strategy = strategies[form]

        def bits(key: Array, /, *, bit_width: int, shape: Shape) -> Array:
            return self.stream_bits(key, bit_width, shape, strategy=strategy)

        bits.__qualname__ = f"{self.name}_bits_{form}"
        return bits

    def _pallas_bits(
        self, key: Array, /, *, bit_width: int, shape: Shape, interpret: bool
    ) -> Array:
        nwords = -(-math.prod(shape) * bit_width // 32)
        batch = key.shape[:-1]
        flat = stream_words_pallas(
            self, key.reshape(-1, key.shape[-1]), nwords, interpret=interpret
        )
        return words_to_bits(flat.reshape(*batch, nwords), bit_width, shape)

    def random_bits(self, key: Array, bit_width: int, shape: Shape) -> Array:
        """``bit_width``-bit integers read from the key's stream, little-endian, in C order."""
        if bit_width not in (8, 16, 32, 64):
            raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
        shape = tuple(int(d) for d in shape)
        return self.bits_primitive(key, bit_width=bit_width, shape=shape)


Strategy = Callable[[BlockFn, Words, Words, int, int], Array]
BitsFn = Callable[..., Array]


# --- forms per platform ----------------------------------------------------------------------

Form = Literal["native", "chunked", "unrolled", "rolled", "pallas"]
"""A way of generating a generator's bits (docs/rng.md, "Forms"):

- ``native``: jext-rng-native's multi-threaded C++ kernel, an FFI call (cpu);
- ``chunked``: XLA, a ``lax.scan`` over cache-sized chunks, each one fused loop (cpu);
- ``unrolled``: XLA, one elementwise pass over every block, the rounds unrolled;
- ``rolled``: XLA, one pass over every block, the rounds in a ``lax.scan`` of a few round
  units per iteration (``CounterRng.unroll``): compiles in the same time at every size;
- ``pallas``: a Pallas kernel, each program a tile of blocks in registers; Triton on
  cuda, the Pallas interpreter on cpu (for checking it).
"""
FORMS: Final[tuple[Form, ...]] = get_args(Form)
PLATFORMS: Final = ("cpu", "cuda", "rocm", "tpu")
ENV_RNG_FORM: Final = "JEXT_RNG_FORM"
DEFAULT_FORMS: Final[dict[str, Form]] = {
    "cpu": "native",  # the chunked form where jext-rng-native is not installed
    "cuda": "pallas",
    "rocm": "rolled",
    "tpu": "unrolled",
}
# Where each form runs: the pallas form as Triton on cuda, interpreted on cpu.
FORM_PLATFORMS: Final[dict[Form, tuple[str, ...]]] = {
    "native": ("cpu",),
    "chunked": PLATFORMS,
    "unrolled": PLATFORMS,
    "rolled": PLATFORMS,
    "pallas": ("cpu", "cuda"),
}


def forced_form(platform: str) -> Form | None:
    """The form ``JEXT_RNG_FORM`` forces on ``platform``, or None (read at each lowering).

    The value is a comma-separated list of ``FORM`` (every platform) and ``PLATFORM=FORM``
    entries, a platform's own entry winning: ``JEXT_RNG_FORM=rolled`` or
    ``JEXT_RNG_FORM=cuda=pallas,cpu=rolled``.  :class:`jext.LoweringError` for an unknown
    form or platform.
    """
    value = os.environ.get(ENV_RNG_FORM, "").strip()
    general: Form | None = None
    own: Form | None = None
    for item in filter(None, (part.strip() for part in value.split(","))):
        where, equals, name = item.rpartition("=")
        form = next((f for f in FORMS if f == name), None)
        if form is None or (equals and where not in PLATFORMS):
            raise LoweringError(
                f"{ENV_RNG_FORM}={value!r}: {item!r} is neither FORM nor PLATFORM=FORM, with "
                f"FORM one of {list(FORMS)} and PLATFORM one of {list(PLATFORMS)}"
            )
        if not equals:
            general = form
        elif where == platform:
            own = form
    return own or general


def form_for(platform: str, *, export: bool, native: bool) -> Form:
    """The form the bits primitives lower on ``platform``.

    ``JEXT_RNG_FORM``'s, else :data:`DEFAULT_FORMS`'.  The native form needs the kernel
    (``native``: jext-rng-native registered it and ``JEXT_RNG_NATIVE`` is not 0) and is
    never exported (a serialized module must run where the plugin is not installed): the
    chunked form, with the same bits, stands in by default, and a forced native form
    raises :class:`jext.LoweringError` where the kernel is missing.
    """
    forced = forced_form(platform)
    form = forced or DEFAULT_FORMS.get(platform, "unrolled")
    if platform in PLATFORMS and platform not in FORM_PLATFORMS[form]:
        raise LoweringError(
            f"{ENV_RNG_FORM}: the {form} form of jext's RNGs does not run on {platform} (it "
            f"runs on {', '.join(FORM_PLATFORMS[form])}); force another form for {platform} "
            f"({ENV_RNG_FORM}={platform}=<form>) or unset it"
        )
    if form == "native" and (export or not native):
        if forced == "native" and not export:
            raise LoweringError(
                f"{ENV_RNG_FORM}: the native form of jext's RNGs needs jext-rng-native's "
                "kernels (pip install plugins/jext-rng-native, and JEXT_RNG_NATIVE not 0)"
            )
        return "chunked"
    return form


def _bits_primitive(rng: CounterRng) -> Primitive[..., Array]:
    unrolled = rng.form("unrolled")
    target = native_target_name(rng.name)

    def platform_rule(platform: str) -> Callable[..., Sequence[Any]]:
        def rule(ctx: Any, key: Any, /, *, bit_width: int, shape: Shape) -> Sequence[Any]:
            # Decided at each lowering, not at definition: the primitive is core and frozen
            # before any plugin loads (see native_cpu_target), and JEXT_RNG_FORM may change.
            native = platform == "cpu" and native_cpu_target(target) is not None
            form = form_for(platform, export=_jax.lowering_for_export(ctx), native=native)
            if form == "native":
                ffi: Callable[..., Sequence[Any]] = jax.ffi.ffi_lowering(target)
                return ffi(ctx, key, bit_width=np.int64(bit_width))
            fn = functools.partial(
                rng.form(form, interpret=platform != "cuda"), bit_width=bit_width, shape=shape
            )
            # The pallas form's Triton kernel needs a GPU to target; exported for cuda from
            # a machine without one (plain jax.export included), that is the abstract one
            # of _jax.gpu_lowering_target.
            target_gpu = form == "pallas" and platform == "cuda"
            with _jax.gpu_lowering_target((platform,)) if target_gpu else contextlib.nullcontext():
                return _jax.lower_jaxpr(
                    ctx, _jax.trace_avals(lambda k: [fn(k)], _jax.avals_in(ctx)), key
                )

        rule.__qualname__ = f"{rng.name}_bits_{platform}"
        return rule

    prim = primitive(f"jext.rng_impls.{rng.name}_bits")(unrolled)

    @prim.def_abstract_eval
    def _abstract(key: Any, /, *, bit_width: int, shape: Shape) -> Any:
        return _jax.shaped_array((*key.shape[:-1], *shape), bits_dtype(bit_width))

    for platform in PLATFORMS:
        prim.def_lowering(platform_rule(platform), platform=platform, raw=True)
    # Every form takes any leading batch axes of key data.
    prim.def_batching_leading_axis()
    return prim


def native_target_name(generator: str) -> str:
    """The cpu FFI target of ``generator``'s native ``random_bits`` (jext-rng-native's)."""
    return f"jext_rng_{generator}_bits"


def native_cpu_target(target: str) -> str | None:
    """``target`` if the cpu lowering of the bits primitives is to call it, else None.

    The cpu rule asks at each lowering: the native kernels come from the optional core
    plugin jext-rng-native, which jext's core loads (no other plugin) where it is
    installed; ``JEXT_RNG_NATIVE=0`` keeps the XLA path.  A target registered by any
    other plugin under the same name is never used.
    """
    if not _host.rng_native_wanted():
        return None
    return target if _host.host().core_ffi_target(target, "cpu") else None


def _tweak(words: Words, tweak: Sequence[int]) -> Words:
    return tuple(w ^ U32(tweak[i % len(tweak)]) for i, w in enumerate(words))
