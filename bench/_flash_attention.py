"""A plugin with large examples for ``bench_check_plugin.py`` (a module, not a benchmark).

Flash attention as a kernel author writes it: a forward kernel returning the output and the
per-row log-sum-exp, a backward kernel, and the attention differentiated in reverse mode by
the pair (``def_vjp``).  The kernels are blocked over the keys with an online softmax, in
``jnp``/``lax`` (they run on CPU in seconds; a Pallas kernel in interpret mode would spend
the benchmark in the interpreter); each primitive's reference is plain softmax attention.

The example has the largest shape of JAX's Pallas fused-attention backward test
(``tests/pallas/gpu_ops_test.py``, ``FusedAttentionTest.test_fused_attention_bwd``: batch 1
or 2, 128 or 384 positions, 1 or 2 heads, head size 32, 64 or 128, blocks of 64 or 128),
causal, blocks of 128: ``(batch, positions, heads, head size) = (2, 384, 2, 128)``.
``BENCH_FLASH_SHAPE=b,n,h,d`` replaces it (``--smoke`` runs a tiny one).

Register it in code (``jext.register_plugin(module, NAME)``): ``bench_check_plugin.py``
runs ``jext check --plugin bench-flash`` that way.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np

import jext

NAME: Final = "bench-flash"
"""The plugin's name; it owns the namespace ``bench_flash``."""

SHAPE: Final = (2, 384, 2, 128)
BLOCK: Final = 128


def _shape() -> tuple[int, ...]:
    given = os.environ.get("BENCH_FLASH_SHAPE")
    return tuple(int(n) for n in given.split(",")) if given else SHAPE


# --- the references: plain softmax attention -----------------------------------------------


def _scores(q: jax.Array, k: jax.Array, causal: bool) -> jax.Array:
    """``(batch, heads, queries, keys)`` scaled dot products, -inf above the diagonal if
    ``causal``."""
    s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    if causal:
        n_q, n_k = q.shape[1], k.shape[1]
        allowed = jnp.arange(n_q)[:, None] >= jnp.arange(n_k)[None, :]
        s = jnp.where(allowed, s, -jnp.inf)
    return s


@jext.primitive("bench_flash.attention_fwd")
def attention_fwd(
    q: jax.Array, k: jax.Array, v: jax.Array, /, *, causal: bool = False
) -> tuple[jax.Array, jax.Array]:
    """``(o, lse)``: softmax attention of ``(batch, positions, heads, head size)`` operands,
    and the log-sum-exp of each row of scores ``(batch, heads, positions)``."""
    s = _scores(q, k, causal)
    lse = jax.nn.logsumexp(s, axis=-1)
    p = jnp.exp(s - lse[..., None])
    return jnp.einsum("bhqk,bkhd->bqhd", p, v), lse


@jext.primitive("bench_flash.attention_bwd")
def attention_bwd(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    o: jax.Array,
    lse: jax.Array,
    do: jax.Array,
    /,
    *,
    causal: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(dq, dk, dv)``: the cotangents of ``attention_fwd``'s ``o`` from its operands, its
    residuals ``o`` and ``lse``, and the cotangent ``do`` of ``o``."""
    scale = 1 / math.sqrt(q.shape[-1])
    p = jnp.exp(_scores(q, k, causal) - lse[..., None])
    dv = jnp.einsum("bhqk,bqhd->bkhd", p, do)
    dp = jnp.einsum("bqhd,bkhd->bhqk", do, v)
    delta = jnp.einsum("bqhd,bqhd->bhq", do, o)
    ds = p * (dp - delta[..., None])
    dq = jnp.einsum("bhqk,bkhd->bqhd", ds, k) * scale
    dk = jnp.einsum("bhqk,bqhd->bkhd", ds, q) * scale
    return dq, dk, dv


# --- the kernels: blocked over the keys --------------------------------------------------


def _key_blocks(*xs: jax.Array) -> list[jax.Array]:
    """``(batch, keys, ...)`` arrays as ``(blocks, batch, BLOCK, ...)``."""
    n = xs[0].shape[1]
    size = min(BLOCK, n)
    return [jnp.moveaxis(x.reshape(x.shape[0], n // size, size, *x.shape[2:]), 1, 0) for x in xs]


def _block_scores(q: jax.Array, kj: jax.Array, start: jax.Array, causal: bool) -> jax.Array:
    s = jnp.einsum("bqhd,bkhd->bhqk", q, kj) / math.sqrt(q.shape[-1])
    if causal:
        keys = start + jnp.arange(kj.shape[1])
        s = jnp.where(jnp.arange(q.shape[1])[:, None] >= keys[None, :], s, -jnp.inf)
    return s


def _fwd_kernel(
    q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool = False
) -> tuple[jax.Array, jax.Array]:
    kb, vb = _key_blocks(k, v)
    starts = jnp.arange(kb.shape[0]) * kb.shape[2]
    b, n, h, _ = q.shape

    def step(carry: Any, block: Any) -> tuple[Any, None]:
        m, total, acc = carry
        kj, vj, start = block
        s = _block_scores(q, kj, start, causal)
        m_new = jnp.maximum(m, jnp.max(s, axis=-1))
        p = jnp.exp(s - m_new[..., None])
        fix = jnp.exp(m - m_new)
        total = total * fix + jnp.sum(p, axis=-1)
        acc = acc * jnp.einsum("bhq->bqh", fix)[..., None] + jnp.einsum("bhqk,bkhd->bqhd", p, vj)
        return (m_new, total, acc), None

    init = (
        jnp.full((b, h, n), -jnp.inf, q.dtype),
        jnp.zeros((b, h, n), q.dtype),
        jnp.zeros_like(q),
    )
    (m, total, acc), _ = jax.lax.scan(step, init, (kb, vb, starts))
    return acc / jnp.einsum("bhq->bqh", total)[..., None], m + jnp.log(total)


def _bwd_kernel(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    o: jax.Array,
    lse: jax.Array,
    do: jax.Array,
    *,
    causal: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    kb, vb = _key_blocks(k, v)
    starts = jnp.arange(kb.shape[0]) * kb.shape[2]
    scale = 1 / math.sqrt(q.shape[-1])
    delta = jnp.einsum("bqhd,bqhd->bhq", do, o)

    def step(dq: jax.Array, block: Any) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        kj, vj, start = block
        p = jnp.exp(_block_scores(q, kj, start, causal) - lse[..., None])
        dv = jnp.einsum("bhqk,bqhd->bkhd", p, do)
        ds = p * (jnp.einsum("bqhd,bkhd->bhqk", do, vj) - delta[..., None])
        dq = dq + jnp.einsum("bhqk,bkhd->bqhd", ds, kj) * scale
        return dq, (jnp.einsum("bhqk,bqhd->bkhd", ds, q) * scale, dv)

    dq, (dk, dv) = jax.lax.scan(step, jnp.zeros_like(q), (kb, vb, starts))

    def keys_back(x: jax.Array) -> jax.Array:  # (blocks, batch, BLOCK, ...) to (batch, keys, ...)
        x = jnp.moveaxis(x, 0, 1)
        return x.reshape(x.shape[0], -1, *x.shape[3:])

    return dq, keys_back(dk), keys_back(dv)


attention_fwd.def_lowering(_fwd_kernel, platform="cpu")
attention_bwd.def_lowering(_bwd_kernel, platform="cpu")


# --- the attention, differentiated by the pair ---------------------------------------------


@jext.primitive("bench_flash.attention")
def attention(q: jax.Array, k: jax.Array, v: jax.Array, /, *, causal: bool = False) -> jax.Array:
    """Softmax attention: ``attention_fwd``'s ``o``, differentiated in reverse mode by the
    forward and backward kernels (``def_vjp``)."""
    return attention_fwd.reference(q, k, v, causal=causal)[0]


@attention.def_lowering
def _attention_by_fwd_kernel(
    q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool = False
) -> jax.Array:
    return attention_fwd(q, k, v, causal=causal)[0]


def _attention_vjp_fwd(
    q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool = False
) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    o, lse = attention_fwd(q, k, v, causal=causal)
    return o, (q, k, v, o, lse)


def _attention_vjp_bwd(
    residuals: tuple[jax.Array, ...], do: jax.Array, *, causal: bool = False
) -> tuple[jax.Array, jax.Array, jax.Array]:
    q, k, v, o, lse = residuals
    return attention_bwd(q, k, v, o, lse, do, causal=causal)


attention.def_vjp(_attention_vjp_fwd, _attention_vjp_bwd)


# --- examples and the plugin -----------------------------------------------------------------


def _qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    shape = _shape()
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    return q, k, v


@attention_fwd.def_examples
def _fwd_examples() -> Iterator[jext.Example]:
    yield jext.Example(*_qkv(), causal=True)


@attention.def_examples
def _attention_examples() -> Iterator[jext.Example]:
    yield jext.Example(*_qkv(), causal=True)


@attention_bwd.def_examples
def _bwd_examples() -> Iterator[jext.Example]:
    q, k, v = _qkv()
    # The residuals as the forward kernel gives them.
    o, lse = attention_fwd(jnp.asarray(q), jnp.asarray(k), jnp.asarray(v), causal=True)
    do = np.random.default_rng(1).standard_normal(q.shape).astype(np.float32)
    yield jext.Example(q, k, v, np.asarray(o), np.asarray(lse), do, causal=True)


@jext.hooks.register_primitives
def register_primitives(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(attention_fwd)
    registry.add(attention_bwd)
    registry.add(attention)
