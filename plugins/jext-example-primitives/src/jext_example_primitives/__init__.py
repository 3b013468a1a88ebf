"""Example jext primitives, one per rule kind, registered through the ``jext`` entry point.

- :data:`softplus`: elementwise, with a custom JVP and the elementwise batching shortcut.
- :data:`cumsum`: linear, with a JVP through itself, a transpose rule and a batching rule.
- :data:`polar`: a pytree operand and several results.
- :data:`rms_norm`: different lowerings for cpu and for cuda/tpu (rocm is left to the
  reference, which ``jext-example-vendor`` fills with its own rule).
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jext

__all__ = ["cumsum", "polar", "rms_norm", "softplus"]


# --- an elementwise op with a custom JVP ---------------------------------------------------


@jext.primitive("example.softplus")
def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """``log(1 + exp(beta * x)) / beta``, computed stably."""
    return jnp.logaddexp(beta * x, 0.0) / beta


@softplus.def_jvp
def _softplus_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array], *, beta: float
) -> tuple[jax.Array, jax.Array]:
    # d/dx softplus = sigmoid(beta x): cheaper than differentiating logaddexp.
    (x,), (t,) = primals, tangents
    return softplus(x, beta=beta), jax.nn.sigmoid(beta * x) * t


softplus.def_batching_elementwise()


@softplus.def_examples
def _softplus_examples() -> Iterator[jext.Example]:
    yield jext.Example(np.linspace(-3.0, 3.0, 7, dtype=np.float32), beta=2.0)


# --- a linear op: JVP through itself, transpose, batching -----------------------------------


@jext.primitive("example.cumsum")
def cumsum(x: jax.Array, /) -> jax.Array:
    """Cumulative sum along the last axis."""
    return jnp.cumsum(x, axis=-1)


@cumsum.def_jvp
def _cumsum_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    # Linear: the tangent map is the op itself, so reverse mode needs the transpose rule.
    return cumsum(primals[0]), cumsum(tangents[0])


@cumsum.def_transpose
def _cumsum_transpose(ct: jax.Array, x: jext.LinearOperand) -> tuple[jax.Array]:
    # The adjoint of a prefix sum is a suffix sum.
    return (jnp.flip(cumsum(jnp.flip(ct, -1)), -1),)


@cumsum.def_batching
def _cumsum_batching(args: tuple[jax.Array], dims: tuple[int | None]) -> tuple[jax.Array, int]:
    (x,), (d,) = args, dims
    assert d is not None  # the rule is only called with a batched operand
    # Any axis but the last can carry the batch; move it to the front.
    return cumsum(jnp.moveaxis(x, d, 0)), 0


@cumsum.def_examples
def _cumsum_examples() -> Iterator[jext.Example]:
    yield jext.Example(np.arange(6, dtype=np.float32).reshape(2, 3) / 4)


# --- a pytree operand, several results -------------------------------------------------------


@jext.primitive("example.polar")
def polar(point: dict[str, jax.Array], /) -> dict[str, jax.Array]:
    """Cartesian ``{"x", "y"}`` to polar ``{"r", "theta"}`` coordinates."""
    x, y = point["x"], point["y"]
    return {"r": jnp.hypot(x, y), "theta": jnp.arctan2(y, x)}


@polar.def_examples
def _polar_examples() -> Iterator[jext.Example]:
    yield jext.Example(
        {"x": np.array([1.0, -2.0, 0.5], np.float32), "y": np.array([0.5, 1.0, -3.0], np.float32)}
    )


# --- different lowerings for cpu and for gpu/tpu ----------------------------------------------


@jext.primitive("example.rms_norm")
def rms_norm(x: jax.Array, /, *, eps: float = 1e-6) -> jax.Array:
    """``x / sqrt(mean(x**2, axis=-1) + eps)``."""
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)


@rms_norm.def_lowering(platform="cpu")
def _rms_norm_cpu(x: jax.Array, *, eps: float) -> jax.Array:
    # Accumulate in float32 whatever the input dtype: CPUs have no fast low-precision sums.
    x32 = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    ms = jnp.mean(x32 * x32, axis=-1, keepdims=True)
    return (x32 * lax.rsqrt(ms + eps)).astype(x.dtype)


@rms_norm.def_lowering(platform="cuda")
@rms_norm.def_lowering(platform="tpu")
def _rms_norm_accelerator(x: jax.Array, *, eps: float) -> jax.Array:
    # Stands in for a fused kernel (e.g. Pallas) on accelerators.
    ms = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return x * lax.rsqrt(ms + eps)


rms_norm.def_batching_leading_axis()


@rms_norm.def_examples
def _rms_norm_examples() -> Iterator[jext.Example]:
    yield jext.Example(np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]], np.float32), eps=1e-6)


# The typed hook decorator: mypy checks this function's signature against the hook.
@jext.hooks.register_primitives
def _register(registry: jext.PrimitiveRegistrar) -> None:
    for prim in (softplus, cumsum, polar, rms_norm):
        registry.add(prim)
