"""Primitives keep their signatures; rule decorators accept rules of the right shape."""

from collections.abc import Callable, Iterator, Mapping
from typing import Any, assert_type

import jax
import jax.numpy as jnp
import numpy as np

import jext
import jext.lowering
import jext.testing

x = jnp.ones(3)


@jext.primitive("typing.softplus")
def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    return jnp.logaddexp(beta * x, 0.0) / beta


@jext.primitive("typing.double")
def double(x: jax.Array, /) -> jax.Array:
    return 2 * x


@jext.primitive("typing.pair")
def pair(x: jax.Array, /) -> tuple[jax.Array, jax.Array]:
    return x, -x


@jext.primitive("typing.polar")
def polar(point: dict[str, jax.Array], /) -> dict[str, jax.Array]:
    return {"r": jnp.hypot(point["x"], point["y"])}


assert_type(softplus(x), jax.Array)
assert_type(softplus(x, beta=2.0), jax.Array)
assert_type(pair(x), tuple[jax.Array, jax.Array])
assert_type(polar({"x": x, "y": x}), dict[str, jax.Array])
assert_type(softplus.name, str)
assert_type(double.reference, Callable[[jax.Array], jax.Array])
assert_type(softplus.lowering_platforms(), dict[str, str])


@double.def_jvp
def double_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    return double(primals[0]), double(tangents[0])


assert_type(double_jvp((x,), (x,)), tuple[jax.Array, jax.Array])  # the rule, unchanged


@softplus.def_jvp(symbolic_zeros=True)
def softplus_jvp(
    primals: tuple[jax.Array], tangents: tuple[Any], *, beta: float
) -> tuple[Any, Any]:
    return softplus(primals[0], beta=beta), None


@double.def_transpose
def double_transpose(ct: jax.Array, x: jext.LinearOperand) -> tuple[jax.Array]:
    return (double(ct),)


@double.def_transpose(linear_in=(0,))
def double_transpose_again(ct: jax.Array, x: jext.LinearOperand) -> tuple[jax.Array]:
    return (2 * ct,)


@double.def_batching
def double_batching(
    args: tuple[jax.Array], dims: tuple[int | None]
) -> tuple[jax.Array, int | None]:
    return double(args[0]), dims[0]


@softplus.def_lowering(platform="tpu")
def softplus_tpu(x: jax.Array, *, beta: float) -> jax.Array:
    return jax.nn.softplus(beta * x) / beta


double.def_lowering(jnp.negative, platform="gpu")
double.def_lowering(lambda ctx, v: [v], platform="cpu", raw=True)


@double.def_abstract_eval
def double_aval(x: jax.core.ShapedArray) -> jax.core.ShapedArray:
    return x


@double.def_impl
def double_impl(x: jax.Array) -> jax.Array:
    return x + x


@softplus.def_examples
def softplus_examples() -> Iterator[jext.Example]:
    yield jext.Example(np.linspace(-1, 1, 5, dtype=np.float32), beta=2.0)


double.def_batching_elementwise()
assert_type(softplus.examples(), list[jext.Example])
assert_type(jext.lowering.export(softplus, x).rules, Mapping[str, Mapping[str, str]])
assert_type(jext.lowering.export(softplus, x).custom_calls, tuple[str, ...])
assert_type(jext.testing.check_primitive(softplus), jext.testing.PrimitiveReport)
assert_type(jext.primitives(), Mapping[str, jext.Primitive[..., Any]])
assert_type(jext.plugins(), list[jext.PluginInfo])
assert_type(jext.get_primitive("example.softplus")(x, beta=2.0), jax.Array)

try:
    softplus(x)
except jext.JextError as err:
    assert_type(err, jext.JextError)


@jext.primitive("typing.mul")
def mul(a: jax.Array, b: jax.Array, /) -> jax.Array:
    return a * b


def mul_fwd(a: jax.Array, b: jax.Array) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    return mul(a, b), (a, b)


def mul_bwd(res: tuple[jax.Array, jax.Array], ct: jax.Array) -> tuple[jax.Array, jax.Array]:
    return ct * res[1], ct * res[0]


assert_type(mul.def_vjp(mul_fwd, mul_bwd), None)


@jext.primitive("typing.mul_sz")
def mul_sz(a: jax.Array, b: jax.Array, /) -> jax.Array:
    return a * b


def mul_sz_fwd(
    a: jax.custom_derivatives.CustomVJPPrimal, b: jax.custom_derivatives.CustomVJPPrimal
) -> tuple[jax.Array, tuple[jax.Array | None, jax.Array | None]]:
    return mul_sz(a.value, b.value), (b.value if a.perturbed else None, a.value)


def mul_sz_bwd(
    res: tuple[jax.Array | None, jax.Array | None], ct: jax.Array | jext.SymbolicZero
) -> tuple[jax.Array | None, None]:
    if isinstance(ct, jext.SymbolicZero) or res[0] is None:
        return None, None
    return ct * res[0], None


assert_type(mul_sz.def_vjp(mul_sz_fwd, mul_sz_bwd, symbolic_zeros=True), None)


@jext.primitive("typing.mul_acc")
def mul_acc(a: jax.Array, b: jax.Array, /) -> jax.Array:
    return a * b


def mul_acc_bwd(
    res: tuple[jax.Array, jax.Array],
    ct: jax.Array,
    a_acc: jext.GradAccum | jext.NullAccum,
    b_acc: jext.GradAccum | jext.NullAccum,
) -> None:
    if not isinstance(a_acc, jext.NullAccum):
        a_acc.accum(ct * res[1])
    b_acc.accum(ct * res[0])


assert_type(mul_acc.def_vjp(mul_fwd, mul_acc_bwd, accumulate=True), None)


@jext.primitive("typing.mul_lin")
def mul_lin(a: jax.Array, b: jax.Array, /) -> jax.Array:
    return a * b


def mul_linearized(res: tuple[jax.Array, jax.Array], ta: jax.Array, tb: jax.Array) -> jax.Array:
    return ta * res[1] + res[0] * tb


assert_type(mul_lin.def_linearize(mul_fwd, mul_linearized), None)


@jax.custom_jvp
def clip(v: jax.Array) -> jax.Array:
    return jnp.clip(v, -1.0, 1.0)


adopted = jext.primitive("typing.clip")(clip)
assert_type(adopted, jext.Primitive[..., jax.Array])  # custom_jvp types its call (*args, **kwargs)


@jext.primitive("typing.scaled_by_order")
def scaled_by_order(order: jax.Array, x: jax.Array, /) -> jax.Array:
    return order * x


assert_type(scaled_by_order.def_nondifferentiable("order"), None)
assert_type(scaled_by_order.def_nondifferentiable(0), None)
assert_type(scaled_by_order.nondifferentiable_in, tuple[int, ...])


def refuses_order(
    primals: tuple[jax.Array, jax.Array], tangents: tuple[Any, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    if not isinstance(tangents[0], jext.SymbolicZero):  # JAX's own class
        raise NotImplementedError("no derivative in the order")
    return scaled_by_order(*primals), primals[0] * tangents[1]


scaled_by_order.def_jvp(refuses_order, symbolic_zeros=True)
