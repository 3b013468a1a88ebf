"""Example jext primitives lowered to native kernels: C++ and CUDA through XLA FFI, and Pallas.

- ``native.softplus``: elementwise; a C++ handler on cpu, a CUDA handler on cuda.
- ``native.rms_norm``: row-wise over the last axis; the handlers treat every leading axis
  as a row, so ``vmap`` hands them the batch in one call, and the cpu target is declared
  batch-partitionable.
- ``native.rms_norm_fwd`` and ``native.rms_norm_bwd``: JAX's FFI example's RMS norm
  (``examples/ffi``), its forward pass returning the residuals and its backward pass;
  C++ handlers on cpu.
- ``native.counter``: JAX's FFI example's stateful handler, a per-index call count kept
  in C++ between calls, called with ``has_side_effect=True``; cpu only.
- ``native.swish``: a Pallas kernel; Triton on cuda, Mosaic on tpu, interpret mode on cpu.
- ``native.layer_norm_fwd`` and ``native.layer_norm_bwd``: a row-wise layer norm's
  forward Pallas kernel (returning the per-row mean and reciprocal standard deviation as
  residuals) and its backward pass, on the same three compilers; ``native.layer_norm``
  is differentiated by the pair (``def_vjp``).  The backward pass is its Pallas kernel,
  ``native.layer_norm_bwd_rows`` (``dx`` and each row's term of ``dw``), and plain sums
  over the rows; both kernels have sharding rules, so rows split across devices stay
  split, forward and backward.

Each has a jnp reference (what its JVP derives from, and what ``jext check`` holds the
kernels to) and examples, except the counter, whose values depend on the calls before it
(its reference gives only its result type).  The handlers are compiled by ``pip install``
(see setup.py) and registered with XLA by :func:`register_ffi_targets` when jext loads
plugins.
"""

from __future__ import annotations

import importlib
import importlib.machinery
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np

import jext
import jext.lowering
from jext_example_native import _pallas

__all__ = [
    "CUDA_LIBRARY",
    "counter",
    "cuda_library",
    "layer_norm",
    "layer_norm_bwd",
    "layer_norm_bwd_rows",
    "layer_norm_fwd",
    "register_ffi_targets",
    "register_primitives",
    "rms_norm",
    "rms_norm_bwd",
    "rms_norm_fwd",
    "rms_normalize",
    "softplus",
    "swish",
]

CUDA_LIBRARY: Final = "_native_cuda"
"""The CUDA handlers' shared library (a plain library named like an extension module)."""


def cuda_library() -> Path | None:
    """The built CUDA handler library, or None where the build found no nvcc."""
    here = Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = here / (CUDA_LIBRARY + suffix)
        if path.exists():
            return path
    return None


# --- native.softplus: C++ and CUDA handlers ------------------------------------------------


def _in_dtype_of(x: jax.Array, param: float) -> jax.Array:
    """``param`` in ``x``'s floating dtype: the kernels compute in the operand's type, so a
    float64 param (with x64 on) does not promote a float32 operand."""
    return jnp.asarray(param, dtype=jnp.result_type(x, float))


@jext.primitive("native.softplus")
def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """``log(1 + exp(beta * x)) / beta``, elementwise, in ``x``'s dtype."""
    b = _in_dtype_of(x, beta)
    return jnp.logaddexp(b * x, 0.0) / b


# Elementwise, so the kernel runs on any shape: vmap hands it the whole batch at once.
# The handler writes its result in x's shape and dtype.
_softplus_ffi = jext.lowering.ffi_rule(
    "native_softplus",
    primitive=softplus,
    results=lambda x: x,
    attrs={"beta": "float32"},
    vmap_method="broadcast_all",
)
softplus.def_lowering(_softplus_ffi, platform="cpu")
softplus.def_lowering(_softplus_ffi, platform="cuda")
# Elementwise: vmap hands the kernel the batch as is, and the partitioner splits any axis.
softplus.def_batching_elementwise()


@softplus.def_examples
def _softplus_examples() -> Iterator[jext.Example]:
    x = np.linspace(-30.0, 30.0, 24, dtype=np.float32).reshape(4, 6)
    yield jext.Example(x)
    yield jext.Example(np.float32(0.75), beta=2.5)


# --- native.rms_norm: a row-wise kernel with a native batch axis ---------------------------


@jext.primitive("native.rms_norm")
def rms_norm(x: jax.Array, w: jax.Array, /, *, eps: float = 1e-6) -> jax.Array:
    """``x / sqrt(mean(x**2, axis=-1) + eps) * w``: each row (last axis) to unit RMS, scaled.

    ``w`` is 1-D, of ``x``'s last axis; the result has ``x``'s dtype when ``w`` has it too.
    """
    if jnp.ndim(w) != 1 or jnp.shape(w)[0] != jnp.shape(x)[-1]:
        raise ValueError(
            f"native.rms_norm: w must be 1-D of x's last axis {jnp.shape(x)[-1:]}, got shape "
            f"{jnp.shape(w)}"
        )
    mean_square = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return x * jax.lax.rsqrt(mean_square + _in_dtype_of(x, eps)) * w


# Leading axes are rows to the kernel, and w's leading axes a prefix of x's: with
# "broadcast_all" a vmapped batch axis comes in front of both, so a batch is one call.
# The handler writes x's shape and dtype (and refuses a w of another dtype).
rms_norm.def_lowering(
    jext.lowering.ffi_rule(
        "native_rms_norm",
        primitive=rms_norm,
        results=lambda x, w: x,
        attrs={"eps": "float32"},
        vmap_method="broadcast_all",
    ),
    platform="cpu",
)


# Rows are independent, so the partitioner may split them; the last axis is a reduction
# inside the kernel and must stay whole on each device.  (docs/sharding.md)
rms_norm.def_sharding("... i, i -> ... i", need_replication=["i"])


@rms_norm.def_examples
def _rms_norm_examples() -> Iterator[jext.Example]:
    rows = np.linspace(-2.0, 3.0, 15, dtype=np.float32).reshape(3, 5)
    w = np.linspace(0.5, 1.5, 5, dtype=np.float32)
    yield jext.Example(rows, w)
    yield jext.Example(rows.reshape(3, 1, 5), w, eps=1e-3)


# --- native.rms_norm_fwd / native.rms_norm_bwd: JAX's FFI example, with residuals -----------


@jext.primitive("native.rms_norm_fwd")
def rms_norm_fwd(x: jax.Array, /, *, eps: float = 1e-5) -> tuple[jax.Array, jax.Array]:
    """JAX's FFI example's forward pass: ``(x * scale, scale)`` with ``scale`` the
    per-row ``1 / sqrt(mean(x**2, axis=-1) + eps)``, of shape ``x.shape[:-1]``."""
    scale = jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1) + _in_dtype_of(x, eps))
    return x * scale[..., None], scale


@jext.primitive("native.rms_norm_bwd")
def rms_norm_bwd(res: jax.Array, x: jax.Array, ct: jax.Array, /) -> jax.Array:
    """JAX's FFI example's backward pass: the cotangent of ``x`` from ``rms_norm_fwd``'s
    residual ``res`` (the scale), ``x`` and the cotangent ``ct`` of ``x * scale``."""
    scale = res[..., None]
    dot = jnp.sum(x * ct, axis=-1, keepdims=True)
    return scale * ct - dot * scale**3 / jnp.shape(x)[-1] * x


def _rms_norm_fwd_results(x: jax.ShapeDtypeStruct) -> tuple[Any, Any]:
    """What the forward handler writes: y like x, and one scale per row in x's dtype."""
    return x, jax.ShapeDtypeStruct(x.shape[:-1], x.dtype)  # type: ignore[no-untyped-call]


# Both handlers treat every leading axis as a row and write in x's dtype.
rms_norm_fwd.def_lowering(
    jext.lowering.ffi_rule(
        "native_rms_norm_fwd",
        primitive=rms_norm_fwd,
        results=_rms_norm_fwd_results,
        attrs={"eps": "float32"},
        vmap_method="broadcast_all",
    ),
    platform="cpu",
)
rms_norm_bwd.def_lowering(
    jext.lowering.ffi_rule(
        "native_rms_norm_bwd",
        primitive=rms_norm_bwd,
        results=lambda res, x, ct: ct,
        vmap_method="broadcast_all",
    ),
    platform="cpu",
)


# Rows split across devices; each row's axis, reduced inside the kernels, stays whole.
rms_norm_fwd.def_sharding("... i -> ... i, ...", need_replication=["i"])
rms_norm_bwd.def_sharding("..., ... i, ... i -> ... i", need_replication=["i"])


@rms_norm_fwd.def_examples
def _rms_norm_fwd_examples() -> Iterator[jext.Example]:
    yield jext.Example(np.linspace(-2.0, 3.0, 15, dtype=np.float32).reshape(3, 5))
    yield jext.Example(np.linspace(0.5, 1.5, 8, dtype=np.float32).reshape(2, 1, 4), eps=1e-3)


@rms_norm_bwd.def_examples
def _rms_norm_bwd_examples() -> Iterator[jext.Example]:
    x = np.linspace(-2.0, 3.0, 15, dtype=np.float32).reshape(3, 5)
    ct = np.linspace(1.0, -1.0, 15, dtype=np.float32).reshape(3, 5)
    yield jext.Example(np.asarray(rms_norm_fwd.reference(jnp.asarray(x))[1]), x, ct)


# --- native.rms_normalize: JAX's rms_norm example, its two kernels as a VJP rule -------------


@jext.primitive("native.rms_normalize")
def rms_normalize(x: jax.Array, /, *, eps: float = 1e-5) -> jax.Array:
    """JAX's FFI example ``rms_norm``: each row of ``x`` to unit RMS.  Differentiated by the
    forward and backward kernels (``custom_vjp``'s contract: ``def_vjp``)."""
    return rms_norm_fwd.reference(x, eps=eps)[0]


# Undifferentiated calls run the forward kernel too, its residual unused.
rms_normalize.def_lowering(lambda x, *, eps=1e-5: rms_norm_fwd(x, eps=eps)[0], platform="cpu")


def _rms_normalize_fwd(x: jax.Array, *, eps: float) -> tuple[jax.Array, tuple[Any, Any]]:
    y, scale = rms_norm_fwd(x, eps=eps)
    return y, (scale, x)


def _rms_normalize_bwd(residuals: tuple[jax.Array, jax.Array], ct: jax.Array) -> tuple[jax.Array]:
    return (rms_norm_bwd(*residuals, ct),)  # residuals: (scale, x), rms_norm_bwd's order


rms_normalize.def_vjp(_rms_normalize_fwd, _rms_normalize_bwd)


@rms_normalize.def_examples
def _rms_normalize_examples() -> Iterator[jext.Example]:
    yield jext.Example(np.linspace(-2.0, 3.0, 15, dtype=np.float32).reshape(3, 5))


# --- native.counter: a handler with state (JAX's FFI example) ------------------------------


@jext.primitive("native.counter", reference_lowering=False)
def counter(*, index: int) -> jax.Array:
    """How many earlier calls had this ``index`` (0 on the first): a C++ handler keeps
    the counts between calls.  The reference gives only the result type (int32[]): the
    state exists only in the handler, so the primitive lowers on cpu alone."""
    return jnp.zeros((), jnp.int32)


_COUNT: Final = jax.ShapeDtypeStruct((), jnp.int32)  # type: ignore[no-untyped-call]

# has_side_effect: XLA keeps every call, and never merges two calls with one index.
counter.def_lowering(
    jext.lowering.ffi_rule(
        "native_counter",
        primitive=counter,
        results=lambda: _COUNT,
        attrs={"index": "int64"},
        has_side_effect=True,
    ),
    platform="cpu",
)


# --- native.swish: a Pallas kernel ---------------------------------------------------------


@jext.primitive("native.swish")
def swish(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """``x * sigmoid(beta * x)``, elementwise, in ``x``'s dtype (the kernel's)."""
    return x * jax.nn.sigmoid(_in_dtype_of(x, beta) * x)


swish.def_lowering(_pallas.swish_interpret, platform="cpu")
swish.def_lowering(_pallas.swish_triton, platform="cuda")
swish.def_lowering(_pallas.swish_mosaic_tpu, platform="tpu")
# Elementwise: the Triton and Mosaic kernels, opaque to the partitioner, run per shard.
swish.def_batching_elementwise()


@swish.def_examples
def _swish_examples() -> Iterator[jext.Example]:
    x = np.linspace(-6.0, 6.0, 40, dtype=np.float32).reshape(5, 8)
    yield jext.Example(x)
    yield jext.Example(x[2, :5], beta=1.702)


# --- native.layer_norm: a Pallas forward and backward kernel as a VJP rule ---------------------


@jext.primitive("native.layer_norm_fwd")
def layer_norm_fwd(
    x: jax.Array, w: jax.Array, b: jax.Array, /, *, eps: float = 1e-5
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(y, mean, rstd)``: each row (last axis) of ``x`` normalized, scaled by ``w`` and
    shifted by ``b`` (1-D, of x's last axis), and the per-row mean and ``1 / sqrt(var +
    eps)`` that the backward pass reuses, of shape ``x.shape[:-1]``; all in x's dtype."""
    mean = jnp.mean(x, axis=-1)
    centred = x - mean[..., None]
    rstd = jax.lax.rsqrt(jnp.mean(jnp.square(centred), axis=-1) + _in_dtype_of(x, eps))
    return centred * rstd[..., None] * w + b, mean, rstd


@jext.primitive("native.layer_norm_bwd")
def layer_norm_bwd(
    x: jax.Array, w: jax.Array, mean: jax.Array, rstd: jax.Array, ct: jax.Array, /
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The cotangents ``(dx, dw, db)`` of ``layer_norm_fwd``'s ``y`` from its operands, its
    residuals and the cotangent ``ct`` of ``y``; ``dw`` and ``db`` sum over every row."""
    x_hat = (x - mean[..., None]) * rstd[..., None]
    w_ct = w * ct
    c1 = jnp.mean(x_hat * w_ct, axis=-1, keepdims=True)
    c2 = jnp.mean(w_ct, axis=-1, keepdims=True)
    rows = tuple(range(jnp.ndim(x) - 1))
    dx = (w_ct - (x_hat * c1 + c2)) * rstd[..., None]
    return dx, jnp.sum(ct * x_hat, axis=rows), jnp.sum(ct, axis=rows)


@jext.primitive("native.layer_norm_bwd_rows")
def layer_norm_bwd_rows(
    x: jax.Array, w: jax.Array, mean: jax.Array, rstd: jax.Array, ct: jax.Array, /
) -> tuple[jax.Array, jax.Array]:
    """The backward kernel: ``layer_norm_bwd``'s ``dx``, and each row's term of its ``dw``
    (``dw`` is their sum over the rows), both of x's shape."""
    x_hat = (x - mean[..., None]) * rstd[..., None]
    return layer_norm_bwd.reference(x, w, mean, rstd, ct)[0], ct * x_hat


layer_norm_fwd.def_lowering(_pallas.layer_norm_fwd_interpret, platform="cpu")
layer_norm_fwd.def_lowering(_pallas.layer_norm_fwd_triton, platform="cuda")
layer_norm_fwd.def_lowering(_pallas.layer_norm_fwd_mosaic_tpu, platform="tpu")
layer_norm_bwd_rows.def_lowering(_pallas.layer_norm_bwd_rows_interpret, platform="cpu")
layer_norm_bwd_rows.def_lowering(_pallas.layer_norm_bwd_rows_triton, platform="cuda")
layer_norm_bwd_rows.def_lowering(_pallas.layer_norm_bwd_rows_mosaic_tpu, platform="tpu")

# Rows (every leading axis) are independent; each kernel reduces over a whole row, which
# must stay whole on each device.  (docs/sharding.md)
layer_norm_fwd.def_sharding("... i, i, i -> ... i, ..., ...", need_replication=["i"])
layer_norm_bwd_rows.def_sharding(
    "... i, i, ..., ..., ... i -> ... i, ... i", need_replication=["i"]
)


# One rule for every platform: the kernel primitive picks its own kernel per platform; the
# sums over the rows are plain JAX, so the partitioner adds up the shards of split rows.
@layer_norm_bwd.def_lowering
def _layer_norm_bwd_by_rows_kernel(
    x: jax.Array, w: jax.Array, mean: jax.Array, rstd: jax.Array, ct: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    dx, dw_rows = layer_norm_bwd_rows(x, w, mean, rstd, ct)
    rows = tuple(range(jnp.ndim(x) - 1))
    acc = jnp.promote_types(x.dtype, jnp.float32)  # half precision adds up in float32
    dw = jnp.sum(dw_rows, axis=rows, dtype=acc).astype(x.dtype)
    return dx, dw, jnp.sum(ct, axis=rows, dtype=acc).astype(x.dtype)


def _layer_norm_example_operands() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.linspace(-2.0, 3.0, 15, dtype=np.float32).reshape(3, 5)
    return (
        x,
        np.linspace(0.5, 1.5, 5, dtype=np.float32),
        np.linspace(-0.2, 0.2, 5, dtype=np.float32),
    )


@layer_norm_fwd.def_examples
def _layer_norm_fwd_examples() -> Iterator[jext.Example]:
    x, w, b = _layer_norm_example_operands()
    yield jext.Example(x, w, b)
    yield jext.Example(np.cos(x).reshape(3, 1, 5), w, b, eps=1e-3)


@layer_norm_bwd.def_examples
def _layer_norm_bwd_examples() -> Iterator[jext.Example]:
    x, w, b = _layer_norm_example_operands()
    _, mean, rstd = layer_norm_fwd.reference(jnp.asarray(x), jnp.asarray(w), jnp.asarray(b))
    ct = np.linspace(1.0, -1.0, 15, dtype=np.float32).reshape(3, 5)
    yield jext.Example(x, w, np.asarray(mean), np.asarray(rstd), ct)


layer_norm_bwd_rows.def_examples(_layer_norm_bwd_examples)


@jext.primitive("native.layer_norm")
def layer_norm(x: jax.Array, w: jax.Array, b: jax.Array, /, *, eps: float = 1e-5) -> jax.Array:
    """A row-wise layer norm: ``layer_norm_fwd``'s ``y``, differentiated in reverse mode by
    the forward and backward kernels (``def_vjp``)."""
    return layer_norm_fwd.reference(x, w, b, eps=eps)[0]


# One rule for every platform: the forward primitive picks its own kernel per platform.
@layer_norm.def_lowering
def _layer_norm_by_fwd_kernel(
    x: jax.Array, w: jax.Array, b: jax.Array, *, eps: float = 1e-5
) -> jax.Array:
    return layer_norm_fwd(x, w, b, eps=eps)[0]


def _layer_norm_vjp_fwd(
    x: jax.Array, w: jax.Array, b: jax.Array, *, eps: float = 1e-5
) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    y, mean, rstd = layer_norm_fwd(x, w, b, eps=eps)
    return y, (x, w, mean, rstd)


def _layer_norm_vjp_bwd(
    residuals: tuple[jax.Array, jax.Array, jax.Array, jax.Array], ct: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    return layer_norm_bwd(*residuals, ct)


layer_norm.def_vjp(_layer_norm_vjp_fwd, _layer_norm_vjp_bwd)


@layer_norm.def_examples
def _layer_norm_examples() -> Iterator[jext.Example]:
    x, w, b = _layer_norm_example_operands()
    yield jext.Example(x, w, b)
    yield jext.Example(np.cos(x).reshape(3, 1, 5), w, b, eps=1e-3)


# --- the plugin ----------------------------------------------------------------------------


@jext.hooks.register_primitives
def register_primitives(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(softplus)
    registry.add(rms_norm)
    registry.add(rms_norm_fwd)
    registry.add(rms_norm_bwd)
    registry.add(rms_normalize)
    registry.add(counter)
    registry.add(swish)
    registry.add(layer_norm_fwd)
    registry.add(layer_norm_bwd)
    registry.add(layer_norm_bwd_rows)
    registry.add(layer_norm)


@jext.hooks.register_ffi_targets
def register_ffi_targets(registry: jext.FfiTargetRegistrar) -> None:
    # The compiled modules load here, when jext loads plugins: never at import.
    native_cpu: Any = importlib.import_module("jext_example_native._native_cpu")
    # Built against a newer XLA FFI API than the installed jaxlib's, XLA would refuse the
    # handlers (and jaxlib 0.8 then cannot start its CPU backend): this plugin fails here,
    # in one line that says to rebuild it (its ops then cannot lower on cpu).
    registry.require_ffi_api(native_cpu.ffi_api_version(), fallback="its ops cannot lower on cpu")
    handlers = native_cpu.handlers()
    registry.add("native_softplus", handlers["jext_native_softplus"], platform="cpu")
    registry.add(
        "native_rms_norm",
        handlers["jext_native_rms_norm"],
        platform="cpu",
        batch_partitionable=True,
    )
    for handler in (
        "jext_native_rms_norm_fwd",
        "jext_native_rms_norm_bwd",
        "jext_native_counter",
        "jext_native_aliasing",
    ):  # the C++ handlers' names; the targets are in this plugin's namespace, native_*
        registry.add(handler.removeprefix("jext_"), handlers[handler], platform="cpu")
    library = cuda_library()
    if library is not None:  # built where nvcc was found; the cuda rule exports without it
        cuda = registry.load_library(library)
        registry.add("native_softplus", cuda.JextNativeSoftplusCuda, platform="cuda")
