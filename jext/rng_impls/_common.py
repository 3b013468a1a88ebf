"""Shared machinery of the counter-based RNGs: uint32 arithmetic, streams, key derivation."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.mlir.dialects import stablehlo
from jax.typing import ArrayLike

from jext import _host, _jax
from jext._jax import mlir_ir as ir
from jext.primitives import Primitive, primitive

Array = jax.Array
Words = tuple[Array, ...]
Pair = tuple[Array, Array]
Shape = tuple[int, ...]
# block(prepared_key, counter_words, rolled) -> output words; see run_rounds for ``rolled``.
BlockFn = Callable[[Words, Words, bool], Words]
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


def mulhilo64(a: Pair, m: int) -> tuple[Pair, Pair]:
    """The 128-bit product of a (low, high) pair and the 64-bit constant ``m``: (low, high).

    Built from four 32x32->64 products (``*`` for the low halves, :func:`mulhi32` for the
    high halves) and explicit carries, since 64-bit integers may be unavailable.
    """
    a0, a1 = a
    m0, m1 = m & MASK32, m >> 32
    l00, h00 = a0 * U32(m0), mulhi32(a0, m=m0)
    l01, h01 = a0 * U32(m1), mulhi32(a0, m=m1)
    l10, h10 = a1 * U32(m0), mulhi32(a1, m=m0)
    l11, h11 = a1 * U32(m1), mulhi32(a1, m=m1)
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
    stages: Sequence[Stage], state: Words, params: Sequence[Words], *, rolled: bool
) -> Words:
    """Apply a unit of rounds (``stages`` in order) to ``state`` once per entry of ``params``.

    Unrolled, the whole chain fuses into one loop (fast to run, slow to compile).  Rolled,
    the units run in a ``lax.scan`` whose body materializes the state after each stage, so
    only one unit is compiled.
    """
    # The parameters (a key schedule) are computed once, not once per block.
    flat = iter(materialize([w for p in params for w in p]))
    params = [tuple(next(flat) for _ in p) for p in params]
    if not rolled or not params:
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
    state, _ = lax.scan(body, state, xs, length=len(params))
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
    block: BlockFn, prepared: Words, start: Words, first: Array, count: int, *, cpu: bool
) -> Array:
    """Blocks ``first .. first + count - 1`` of the stream, words in order: ``(*batch, n)``."""
    index = first + lax.iota(U32, count)
    rolled = count < _UNROLL_MIN_BLOCKS
    words = jnp.broadcast_arrays(*block(prepared, add_to_counter(start, index), rolled))
    # On XLA:CPU the block words are computed once (variadic reduce) before interleaving;
    # elsewhere a plain stack is one concatenate fusion that computes each block once.
    stacked = interleave(words) if cpu else jnp.stack(words, axis=-1)
    return stacked.reshape(*stacked.shape[:-2], -1)


def _check_blocks(nblocks: int) -> None:
    if nblocks > 1 << 32:
        raise NotImplementedError("random bits array needing more than 2**32 blocks")


def stream_words_chunked(
    block: BlockFn, prepared: Words, start: Words, block_words: int, nwords: int
) -> Array:
    """The first ``nwords`` words from ``start`` on, chunk by chunk (the XLA:CPU strategy).

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
    """The first ``nwords`` words from ``start`` on, in one pass (the GPU/TPU strategy).

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
        """``random_bits`` as a jext primitive: one generation strategy per platform.

        ``bits(key_data, bit_width=, shape=)`` takes ``uint32[*batch, L]`` key data.  Its
        reference (used on cuda, rocm and tpu) generates the whole output in one fused
        pass; its cpu rule generates it in cache-sized chunks.  Both give the same bits.
        """
        return _bits_primitive(self)

    def stream_bits(self, key: Array, bit_width: int, shape: Shape, *, strategy: Strategy) -> Array:
        """``random_bits`` of ``uint32[*batch, L]`` key data with the given strategy."""
        nwords = -(-math.prod(shape) * bit_width // 32)
        words = key_words(key, self.data_words)
        kw, cw = words[: self.key_words], words[self.key_words :]
        stream = strategy(self.block, self.prepare(kw), cw, self.block_words, nwords)
        return words_to_bits(stream, bit_width, shape)

    def random_bits(self, key: Array, bit_width: int, shape: Shape) -> Array:
        """``bit_width``-bit integers read from the key's stream, little-endian, in C order."""
        if bit_width not in (8, 16, 32, 64):
            raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
        shape = tuple(int(d) for d in shape)
        return self.bits_primitive(key, bit_width=bit_width, shape=shape)


Strategy = Callable[[BlockFn, Words, Words, int, int], Array]


def _bits_primitive(rng: CounterRng) -> Primitive[..., Array]:
    def fused(key: Array, /, *, bit_width: int, shape: Shape) -> Array:
        return rng.stream_bits(key, bit_width, shape, strategy=stream_words_fused)

    def chunked(key: Array, /, *, bit_width: int, shape: Shape) -> Array:
        return rng.stream_bits(key, bit_width, shape, strategy=stream_words_chunked)

    target = native_target_name(rng.name)

    def cpu(ctx: Any, key: Any, /, *, bit_width: int, shape: Shape) -> Sequence[Any]:
        # Decided at each lowering, not at definition: the primitive is core and frozen
        # before any plugin loads (see native_cpu_target).
        if native_cpu_target(target) is not None and not _jax.lowering_for_export(ctx):
            ffi: Callable[..., Sequence[Any]] = jax.ffi.ffi_lowering(target)
            return ffi(ctx, key, bit_width=np.int64(bit_width))
        xla = functools.partial(chunked, bit_width=bit_width, shape=shape)
        return _jax.lower_jaxpr(ctx, _jax.trace_avals(lambda k: [xla(k)], _jax.avals_in(ctx)), key)

    fused.__qualname__ = f"{rng.name}_bits_fused"
    chunked.__qualname__ = f"{rng.name}_bits_chunked"
    cpu.__qualname__ = f"{rng.name}_bits_cpu"
    prim = primitive(f"jext.rng_impls.{rng.name}_bits")(fused)

    @prim.def_abstract_eval
    def _abstract(key: Any, /, *, bit_width: int, shape: Shape) -> Any:
        return _jax.shaped_array((*key.shape[:-1], *shape), bits_dtype(bit_width))

    prim.def_lowering(cpu, platform="cpu", raw=True)
    # Both strategies take any leading batch axes of key data.
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
