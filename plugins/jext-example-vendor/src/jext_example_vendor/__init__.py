"""An example vendor plugin: lowering rules for primitives that other packages define.

It names primitives only by string, so it needs none of their packages to import;
a rule whose primitive no installed plugin defines stays listed as unused.
"""

from __future__ import annotations

import jax
from jax import lax

import jext


def rms_norm_rocm(x: jax.Array, *, eps: float) -> jax.Array:
    """``example.rms_norm`` for ROCm: the mean of squares as a dot product."""
    ms = jax.numpy.einsum("...i,...i->...", x, x)[..., None] / x.shape[-1]
    return x * lax.rsqrt(ms + eps)


def fancy_op_tpu(x: jax.Array) -> jax.Array:
    return x


@jext.hookimpl
def jext_register_lowerings(registry: jext.LoweringRegistrar) -> None:
    registry.add_lowering("example.rms_norm", rms_norm_rocm, platform="rocm")
    # No installed plugin defines this one: `jext list` shows the rule as unused.
    registry.add_lowering("othervendor.fancy_op", fancy_op_tpu, platform="tpu")
