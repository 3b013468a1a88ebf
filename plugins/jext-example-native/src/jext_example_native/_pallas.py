"""The Pallas kernel of ``native.swish``, and its rule for each platform.

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
__all__ = ["swish_interpret", "swish_mosaic_tpu", "swish_triton"]

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
