"""Primitives shared by the test modules, one per rule kind, each beside its plain-JAX twin.

Names are process-wide, so the suite defines each primitive once, here.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

import jext

# --- every rule derived from the reference -----------------------------------------------


def softplus_ref(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    return jnp.logaddexp(beta * x, 0.0) / beta


softplus = jext.primitive("tests.softplus")(softplus_ref)


def axpy_ref(a: Any, x: jax.Array, /) -> jax.Array:
    return a * x


axpy = jext.primitive("tests.axpy")(axpy_ref)


# --- a custom JVP ------------------------------------------------------------------------

JVP_CALLS: list[str] = []


@jext.primitive("tests.softplus_jvp")
def softplus_jvp(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    return jnp.logaddexp(beta * x, 0.0) / beta


@softplus_jvp.def_jvp
def _softplus_jvp_rule(
    primals: tuple[jax.Array], tangents: tuple[jax.Array], *, beta: float
) -> tuple[jax.Array, jax.Array]:
    JVP_CALLS.append("softplus_jvp")
    (x,), (t,) = primals, tangents
    return softplus_jvp(x, beta=beta), jax.nn.sigmoid(beta * x) * t


SEEN_TANGENTS: list[object] = []


@jext.primitive("tests.mul_sz")
def mul_sz(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return x * y


@mul_sz.def_jvp(symbolic_zeros=True)
def _mul_sz_jvp(primals: tuple[jax.Array, jax.Array], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
    (x, y), (tx, ty) = primals, tangents
    SEEN_TANGENTS.extend([tx, ty])
    out = mul_sz(x, y)
    terms = []
    if not isinstance(tx, jext.SymbolicZero):
        terms.append(tx * y)
    if not isinstance(ty, jext.SymbolicZero):
        terms.append(x * ty)
    return out, sum(terms[1:], terms[0]) if terms else None


# --- a linear op: JVP through itself, a transpose rule, a batching rule -------------------

BATCH_CALLS: list[tuple[Any, ...]] = []


@jext.primitive("tests.scale")
def scale(x: jax.Array, /, *, factor: float) -> jax.Array:
    return x * factor


@scale.def_jvp
def _scale_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array], *, factor: float) -> Any:
    return scale(primals[0], factor=factor), scale(tangents[0], factor=factor)


@scale.def_transpose
def _scale_transpose(ct: jax.Array, x: jext.LinearOperand, *, factor: float) -> tuple[jax.Array]:
    assert isinstance(x, jext.LinearOperand)
    return (scale(ct, factor=factor),)


@scale.def_batching
def _scale_batch(args: tuple[jax.Array], dims: tuple[int | None], *, factor: float) -> Any:
    BATCH_CALLS.append(dims)
    return scale(args[0], factor=factor), dims[0]


# --- pytree operands and several results --------------------------------------------------


def polar_ref(point: dict[str, jax.Array], /) -> tuple[jax.Array, jax.Array]:
    x, y = point["x"], point["y"]
    return jnp.hypot(x, y), jnp.arctan2(y, x)


polar = jext.primitive("tests.polar")(polar_ref)


def moments_ref(xs: tuple[jax.Array, jax.Array], w: jax.Array, /) -> dict[str, jax.Array]:
    a, b = xs
    return {"mean": (a * w + b * (1 - w)), "spread": (a - b) ** 2 * w}


moments = jext.primitive("tests.moments")(moments_ref)


# --- different lowerings per platform -----------------------------------------------------


@jext.primitive("tests.by_platform")
def by_platform(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@by_platform.def_lowering(platform="tpu")
def _by_platform_tpu(x: jax.Array) -> jax.Array:
    return jnp.cos(x)


@by_platform.def_lowering(platform="gpu")
def _by_platform_gpu(x: jax.Array) -> jax.Array:
    return jnp.tanh(x)


@by_platform.def_lowering(platform="cpu")
def _by_platform_cpu(x: jax.Array) -> jax.Array:
    # The CPU rule differs from the reference, so tests can tell which one ran.
    return jnp.sin(x) + 1.0
