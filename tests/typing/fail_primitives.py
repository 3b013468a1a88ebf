"""Each marked line must produce exactly the error code in its ignore comment."""

from typing import Any

import jax
import jax.numpy as jnp

import jext

x = jnp.ones(3)


@jext.primitive("typing.fail_softplus")
def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    return x


softplus(x, beta="2")  # type: ignore[arg-type]
softplus(x, gamma=1.0)  # type: ignore[call-arg]
softplus()  # type: ignore[call-arg]
softplus(x=x)  # type: ignore[call-arg]
softplus(x, 2.0)  # type: ignore[call-arg]
softplus("x")  # type: ignore[arg-type]
y: int = softplus(x)  # type: ignore[assignment]
softplus.name = "other"  # type: ignore[misc]


@softplus.def_jvp  # type: ignore[type-var]
def one_positional(primals: tuple[jax.Array]) -> tuple[Any, Any]:
    return primals, primals


@softplus.def_jvp  # type: ignore[type-var]
def returns_one_value(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> jax.Array:
    return primals[0]


@softplus.def_batching  # type: ignore[type-var]
def batching_one_positional(args: tuple[jax.Array]) -> tuple[Any, Any]:
    return args, 0


@softplus.def_transpose  # type: ignore[type-var]
def transpose_returns_array(ct: jax.Array, x: jext.LinearOperand) -> jax.Array:
    return ct


softplus.def_lowering(jnp.negative, platform="metal")  # type: ignore[call-overload]
softplus.def_jvp(symbolic_zeros="yes")  # type: ignore[call-overload]
jext.primitive("typing.bad", reference_lowering=["metal"])  # type: ignore[list-item]
jext.Example(x).operands = ()  # type: ignore[misc]


@jext.primitive("typing.fail_vjp")
def fail_vjp(a: jax.Array, /) -> jax.Array:
    return a


fail_vjp.def_vjp(lambda a: (a, a), 3)  # type: ignore[call-overload]
fail_vjp.def_vjp(lambda a: (a, a), lambda r, g: (g,), symbolic_zeros=1.5)  # type: ignore[call-overload]
fail_vjp.def_nondifferentiable(1.5)  # type: ignore[arg-type]
fail_vjp.def_linearize(lambda a: (a, a), 3)  # type: ignore[arg-type]
