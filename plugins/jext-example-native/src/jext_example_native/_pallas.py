"""The Pallas kernels of ``native.swish`` and ``native.layer_norm``, and their platform rules.

One kernel body serves every platform; what differs is the compiler each rule names:
Triton on cuda, Mosaic on tpu, and the Pallas interpreter on cpu (which is how the kernel
is checked against its reference on a machine without an accelerator).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Final

import jax
import jax.numpy as jnp

# Pallas is imported when a rule is traced, not when jext loads the plugin: importing it
# takes longer than the rest of the plugin, and every `jext` command loads every plugin.
__all__ = [
    "layer_norm_bwd_rows_interpret",
    "layer_norm_bwd_rows_mosaic_tpu",
    "layer_norm_bwd_rows_triton",
    "layer_norm_fwd_interpret",
    "layer_norm_fwd_mosaic_tpu",
    "layer_norm_fwd_triton",
    "swish_interpret",
    "swish_mosaic_tpu",
    "swish_triton",
]

LANES: Final = 128
"""The last axis of a block: TPU vector lanes; 128 elements also suit a GPU warp's loads."""


def _swish_kernel(x_ref: Any, o_ref: Any, *, beta: float) -> None:
    # Half-precision inputs compute in float32; float64 stays float64.
    x = x_ref[...]
    x = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    o_ref[...] = (x * jax.nn.sigmoid(beta * x)).astype(o_ref.dtype)


def _swish(
    x: jax.Array, beta: float, *, block_rows: int, interpret: bool, compiler_params: Any
) -> jax.Array:
    """Apply the kernel to ``x`` of any shape: flattened, padded to (rows, LANES) blocks.

    Block shapes are powers of two (Triton needs it) and multiples of (8, 128) (Mosaic's
    tile), so the same layout lowers for both.
    """
    from jax.experimental import pallas as pl  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    shape, n = x.shape, x.size
    per_block = block_rows * LANES
    padded = max(1, -(-n // per_block)) * per_block
    flat = jnp.pad(jnp.ravel(x), (0, padded - n)).reshape(padded // LANES, LANES)
    out: jax.Array = pl.pallas_call(
        functools.partial(_swish_kernel, beta=float(beta)),
        out_shape=jax.ShapeDtypeStruct(flat.shape, flat.dtype),  # type: ignore[no-untyped-call]
        grid=(flat.shape[0] // block_rows,),
        in_specs=[pl.BlockSpec((block_rows, LANES), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((block_rows, LANES), lambda i: (i, 0)),
        interpret=interpret,
        compiler_params=compiler_params,
        name="jext_native_swish",
    )(flat)
    return out.reshape(-1)[:n].reshape(shape)


def swish_interpret(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """cpu: the Pallas interpreter runs the kernel body with ordinary JAX ops."""
    return _swish(x, beta, block_rows=8, interpret=True, compiler_params=None)


#: jax 0.11 deprecates Pallas's Triton backend for Mosaic GPU, warning at each lowering.
TRITON_DEPRECATION: Final = "The Pallas Triton backend is deprecated"


def _triton_params(num_warps: int) -> Any:
    from jax.experimental.pallas import triton as pltriton  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    # See swish_triton: the deprecation is this plugin's to carry.
    warnings.filterwarnings("ignore", message=TRITON_DEPRECATION, category=DeprecationWarning)
    return pltriton.CompilerParams(num_warps=num_warps, num_stages=1)


def _mosaic_tpu_params() -> Any:
    from jax.experimental.pallas import tpu as pltpu  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    return pltpu.CompilerParams(dimension_semantics=("parallel",))


def swish_triton(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """cuda: compiled by Triton; 64 x 128 elements per program, 4 warps.

    Triton, not Mosaic GPU: Pallas's Mosaic GPU kernels run on Hopper GPUs (sm_90) and
    newer only, Triton's from sm_80 (A100) on.  JAX's deprecation warning is this plugin's
    to carry, not its users': it is ignored, that message only, from the first time the
    rule is traced (the warning comes when the ``pallas_call`` is lowered, just after).
    """
    from jax.experimental.pallas import triton as pltriton  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    warnings.filterwarnings("ignore", message=TRITON_DEPRECATION, category=DeprecationWarning)

    return _swish(
        x,
        beta,
        block_rows=64,
        interpret=False,
        compiler_params=pltriton.CompilerParams(num_warps=4, num_stages=1),
    )


def swish_mosaic_tpu(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """tpu: compiled by Mosaic; 64 x 128 blocks, a multiple of the (8, 128) tile."""
    from jax.experimental.pallas import tpu as pltpu  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    return _swish(
        x,
        beta,
        block_rows=64,
        interpret=False,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )


# --- native.layer_norm: a forward kernel with residuals and its backward kernel ----------------
#
# Rows (every leading axis of x) go to the kernels in blocks of `block_rows` whole rows; a
# row is padded to a power of two of at least LANES elements (Triton's and Mosaic's block
# constraints), and the padding is masked out of every row reduction.


def _layer_norm_layout(x: jax.Array, block_rows: int) -> tuple[jax.Array, int, int]:
    """``x`` as (rows, columns) padded to whole blocks, with its row and column counts."""
    n = x.shape[-1]
    rows = x.size // n
    cols = max(LANES, 1 << (n - 1).bit_length())
    padded_rows = max(1, -(-rows // block_rows)) * block_rows
    flat = jnp.pad(x.reshape(rows, n), ((0, padded_rows - rows), (0, cols - n)))
    return flat, rows, n


def _pad_row(v: jax.Array, cols: int) -> jax.Array:
    return jnp.pad(v, (0, cols - v.shape[0])).reshape(1, cols)


def _compute_dtype(dtype: Any) -> Any:
    # Half-precision inputs compute in float32; float64 stays float64.
    return jnp.promote_types(dtype, jnp.float32)


def _layer_norm_fwd_kernel(
    x_ref: Any,
    w_ref: Any,
    b_ref: Any,
    y_ref: Any,
    mean_ref: Any,
    rstd_ref: Any,
    *,
    n: int,
    eps: float,
) -> None:
    dtype = _compute_dtype(x_ref.dtype)
    x = x_ref[...].astype(dtype)
    valid = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1) < n
    mean = jnp.sum(x, axis=1, keepdims=True) / n  # the padding is zero
    centred = jnp.where(valid, x - mean, 0.0)
    rstd = jax.lax.rsqrt(jnp.sum(centred * centred, axis=1, keepdims=True) / n + eps)
    y = centred * rstd * w_ref[...].astype(dtype) + b_ref[...].astype(dtype)
    y_ref[...] = y.astype(y_ref.dtype)
    mean_ref[...] = mean.astype(mean_ref.dtype)
    rstd_ref[...] = rstd.astype(rstd_ref.dtype)


def _layer_norm_bwd_kernel(
    x_ref: Any,
    w_ref: Any,
    mean_ref: Any,
    rstd_ref: Any,
    ct_ref: Any,
    dx_ref: Any,
    dw_ref: Any,
    *,
    n: int,
) -> None:
    dtype = _compute_dtype(x_ref.dtype)
    x, ct = x_ref[...].astype(dtype), ct_ref[...].astype(dtype)
    mean, rstd = mean_ref[...].astype(dtype), rstd_ref[...].astype(dtype)
    valid = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1) < n
    x_hat = jnp.where(valid, (x - mean) * rstd, 0.0)
    w_ct = w_ref[...].astype(dtype) * ct  # zero in the padding: ct is padded with zeros
    c1 = jnp.sum(x_hat * w_ct, axis=1, keepdims=True) / n
    c2 = jnp.sum(w_ct, axis=1, keepdims=True) / n
    dx_ref[...] = ((w_ct - (x_hat * c1 + c2)) * rstd).astype(dx_ref.dtype)
    # Each row's term of dw; the caller sums the rows, so that no two programs write one
    # output block (Triton runs programs in parallel) and rows split across devices stay
    # split (the sum over rows is plain JAX, which the partitioner reduces across shards).
    dw_ref[...] = (ct * x_hat).astype(dw_ref.dtype)


def _layer_norm_fwd(
    x: jax.Array,
    w: jax.Array,
    b: jax.Array,
    eps: float,
    *,
    block_rows: int,
    interpret: bool,
    compiler_params: Any,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    from jax.experimental import pallas as pl  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    flat, rows, n = _layer_norm_layout(x, block_rows)
    cols = flat.shape[1]
    row_block = pl.BlockSpec((block_rows, cols), lambda i: (i, 0))
    whole_row = pl.BlockSpec((1, cols), lambda i: (0, 0))
    per_row = pl.BlockSpec((block_rows, 1), lambda i: (i, 0))
    per_row_shape = jax.ShapeDtypeStruct((flat.shape[0], 1), x.dtype)  # type: ignore[no-untyped-call]
    y, mean, rstd = pl.pallas_call(
        functools.partial(_layer_norm_fwd_kernel, n=n, eps=float(eps)),
        out_shape=(
            jax.ShapeDtypeStruct(flat.shape, x.dtype),  # type: ignore[no-untyped-call]
            per_row_shape,
            per_row_shape,
        ),
        grid=(flat.shape[0] // block_rows,),
        in_specs=[row_block, whole_row, whole_row],
        out_specs=(row_block, per_row, per_row),
        interpret=interpret,
        compiler_params=compiler_params,
        name="jext_native_layer_norm_fwd",
    )(flat, _pad_row(w, cols), _pad_row(b, cols))
    lead = x.shape[:-1]
    return y[:rows, :n].reshape(x.shape), mean[:rows, 0].reshape(lead), rstd[:rows, 0].reshape(lead)


def _layer_norm_bwd_rows(
    x: jax.Array,
    w: jax.Array,
    mean: jax.Array,
    rstd: jax.Array,
    ct: jax.Array,
    *,
    block_rows: int,
    interpret: bool,
    compiler_params: Any,
) -> tuple[jax.Array, jax.Array]:
    from jax.experimental import pallas as pl  # noqa: PLC0415 - Pallas loads only when a kernel is traced

    flat, rows, n = _layer_norm_layout(x, block_rows)
    flat_ct, _, _ = _layer_norm_layout(ct, block_rows)
    padded_rows, cols = flat.shape

    def per_row(v: jax.Array) -> jax.Array:
        return jnp.pad(v.reshape(rows, 1), ((0, padded_rows - rows), (0, 0)))

    row_block = pl.BlockSpec((block_rows, cols), lambda i: (i, 0))
    per_row_block = pl.BlockSpec((block_rows, 1), lambda i: (i, 0))
    dx, dw = pl.pallas_call(
        functools.partial(_layer_norm_bwd_kernel, n=n),
        out_shape=(
            jax.ShapeDtypeStruct(flat.shape, x.dtype),  # type: ignore[no-untyped-call]
            jax.ShapeDtypeStruct(flat.shape, x.dtype),  # type: ignore[no-untyped-call]
        ),
        grid=(padded_rows // block_rows,),
        in_specs=[
            row_block,
            pl.BlockSpec((1, cols), lambda i: (0, 0)),
            per_row_block,
            per_row_block,
            row_block,
        ],
        out_specs=(row_block, row_block),
        interpret=interpret,
        compiler_params=compiler_params,
        name="jext_native_layer_norm_bwd",
    )(flat, _pad_row(w, cols), per_row(mean), per_row(rstd), flat_ct)
    return dx[:rows, :n].reshape(x.shape), dw[:rows, :n].reshape(x.shape)


def layer_norm_fwd_interpret(
    x: jax.Array, w: jax.Array, b: jax.Array, /, *, eps: float = 1e-5
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """cpu: the forward kernel in the Pallas interpreter, 8 rows per block."""
    return _layer_norm_fwd(x, w, b, eps, block_rows=8, interpret=True, compiler_params=None)


def layer_norm_fwd_triton(
    x: jax.Array, w: jax.Array, b: jax.Array, /, *, eps: float = 1e-5
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """cuda: the forward kernel compiled by Triton, 16 rows per program."""
    params = _triton_params(num_warps=4)
    return _layer_norm_fwd(x, w, b, eps, block_rows=16, interpret=False, compiler_params=params)


def layer_norm_fwd_mosaic_tpu(
    x: jax.Array, w: jax.Array, b: jax.Array, /, *, eps: float = 1e-5
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """tpu: the forward kernel compiled by Mosaic, 16 rows per block (a multiple of 8)."""
    params = _mosaic_tpu_params()
    return _layer_norm_fwd(x, w, b, eps, block_rows=16, interpret=False, compiler_params=params)


def layer_norm_bwd_rows_interpret(
    x: jax.Array, w: jax.Array, mean: jax.Array, rstd: jax.Array, ct: jax.Array, /
) -> tuple[jax.Array, jax.Array]:
    """cpu: the backward kernel in the Pallas interpreter, 8 rows per block."""
    return _layer_norm_bwd_rows(
        x, w, mean, rstd, ct, block_rows=8, interpret=True, compiler_params=None
    )


def layer_norm_bwd_rows_triton(
    x: jax.Array, w: jax.Array, mean: jax.Array, rstd: jax.Array, ct: jax.Array, /
) -> tuple[jax.Array, jax.Array]:
    """cuda: the backward kernel compiled by Triton, 16 rows per program."""
    params = _triton_params(num_warps=4)
    return _layer_norm_bwd_rows(
        x, w, mean, rstd, ct, block_rows=16, interpret=False, compiler_params=params
    )


def layer_norm_bwd_rows_mosaic_tpu(
    x: jax.Array, w: jax.Array, mean: jax.Array, rstd: jax.Array, ct: jax.Array, /
) -> tuple[jax.Array, jax.Array]:
    """tpu: the backward kernel compiled by Mosaic, 16 rows per block."""
    params = _mosaic_tpu_params()
    return _layer_norm_bwd_rows(
        x, w, mean, rstd, ct, block_rows=16, interpret=False, compiler_params=params
    )
