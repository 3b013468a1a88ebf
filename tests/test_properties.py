"""Property tests for the bundled example primitives (plugins/jext-example-primitives).

Over shapes (rank 0 where the op allows, zero-size axes), dtypes (f16, bf16, f32, f64
under x64, c64, i32, bool where the reference takes them) and ``in_axes``:

- eager == jit == a plain-JAX reference written here (same dtype, close values);
- ``vmap`` == a Python loop over the examples;
- ``grad`` == ``grad`` of the plain-JAX twin of the same rules (``jax.custom_jvp``).

Compiled functions are built once per primitive and reused, with one executable per
shape and dtype.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jext_example_primitives import cumsum, polar, rms_norm, softplus

from tests.fast_compile import compile_options

SETTINGS = settings(
    max_examples=12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

F16, BF16, F32, F64 = jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64
C64, I32, BOOL = jnp.complex64, jnp.int32, jnp.bool_
FLOATS = (F16, BF16, F32, F64)
TOL = {F16: 1e-2, BF16: 5e-2, F32: 2e-5, F64: 1e-12, C64: 2e-5}

# --- plain-JAX twins of each example's rules ------------------------------------------------

BETA = 2.0
EPS = 1e-6


def softplus_plain(x: jax.Array) -> jax.Array:
    return jnp.logaddexp(BETA * x, 0.0) / BETA


@jax.custom_jvp
def softplus_twin(x: jax.Array) -> jax.Array:
    return softplus_plain(x)


@softplus_twin.defjvp
def _softplus_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return softplus_twin(x), jax.nn.sigmoid(BETA * x) * t


def cumsum_plain(x: jax.Array) -> jax.Array:
    return jnp.cumsum(x, axis=-1)


@jax.custom_jvp
def cumsum_twin(x: jax.Array) -> jax.Array:
    return cumsum_plain(x)


@cumsum_twin.defjvp
def _cumsum_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    return cumsum_twin(primals[0]), cumsum_twin(tangents[0])


def polar_plain(p: dict[str, jax.Array]) -> dict[str, jax.Array]:
    return {"r": jnp.hypot(p["x"], p["y"]), "theta": jnp.arctan2(p["y"], p["x"])}


def rms_norm_plain(x: jax.Array) -> jax.Array:
    return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)


@dataclass(frozen=True)
class Case:
    ours: Callable[..., Any]  # the example primitive, static params bound
    plain: Callable[..., Any]  # the reference, in plain JAX
    twin: Callable[..., Any]  # the same rules in plain JAX (for grad)
    dtypes: tuple[Any, ...]
    min_rank: int
    pytree: bool  # the operand is {"x": array, "y": array}


CASES = {
    "softplus": Case(
        lambda x: softplus(x, beta=BETA),
        softplus_plain,
        softplus_twin,
        (*FLOATS, I32, BOOL),
        0,
        False,
    ),
    "cumsum": Case(cumsum, cumsum_plain, cumsum_twin, (*FLOATS, C64, I32, BOOL), 1, False),
    "polar": Case(polar, polar_plain, polar_plain, (*FLOATS, I32, BOOL), 0, True),
    "rms_norm": Case(
        lambda x: rms_norm(x, eps=EPS), rms_norm_plain, rms_norm_plain, FLOATS, 1, False
    ),
}

# Compiled once per case (and in_axes); JAX caches one executable per shape and dtype.
JIT = {name: jax.jit(c.ours) for name, c in CASES.items()}
GRAD: dict[tuple[str, str], Callable[..., Any]] = {}
VMAP: dict[tuple[str, Any], Callable[..., Any]] = {}
LOOP: dict[str, Callable[..., Any]] = {}


def fast_jit(f: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.jit(f)`` compiled with tests/fast_compile.py's options, one executable per
    operand structure, shapes, dtypes and x64 setting: for the properties that compare two
    compiled computations with each other (grad with the twin's grad, vmap with a loop),
    whose answer does not depend on the options.  Eager and ``jit`` against the reference
    keep JAX's default compilation (:data:`JIT`)."""
    jitted = jax.jit(f)
    options = compile_options()
    compiled: dict[Any, Any] = {}

    def call(arg: Any) -> Any:
        leaves, tree = jax.tree.flatten(arg)
        avals = tuple((np.shape(x), x.dtype) for x in leaves)
        key = (tree, avals, jax.config.jax_enable_x64)
        if key not in compiled:
            compiled[key] = jitted.lower(arg).compile(options)
        return compiled[key](arg)

    return call


def _loss(f: Callable[..., Any]) -> Callable[..., Any]:
    # A weighted sum, so that each output element's derivative counts differently.
    def loss(arg: Any) -> jax.Array:
        leaves = jax.tree.leaves(f(arg))
        return sum(
            (jnp.sum(leaf * jnp.cos(jnp.arange(leaf.size)).reshape(leaf.shape)) for leaf in leaves),
            jnp.float32(0.0),
        )

    return loss


def grad_of(name: str, which: str) -> Callable[..., Any]:
    key = (name, which)
    if key not in GRAD:
        c = CASES[name]
        GRAD[key] = fast_jit(jax.grad(_loss(c.ours if which == "ours" else c.twin)))
    return GRAD[key]


def vmap_of(name: str, in_axes: Any) -> Callable[..., Any]:
    key = (name, repr(in_axes))
    if key not in VMAP:
        VMAP[key] = fast_jit(jax.vmap(CASES[name].ours, in_axes=(in_axes,)))
    return VMAP[key]


def loop_of(name: str) -> Callable[..., Any]:
    """The primitive on one example, compiled as :func:`vmap_of` compiles the batch."""
    if name not in LOOP:
        LOOP[name] = fast_jit(CASES[name].ours)
    return LOOP[name]


# --- strategies -----------------------------------------------------------------------------


def values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == BOOL:
        return rng.random(shape) > 0.5
    if dtype == I32:
        return rng.integers(-5, 6, shape).astype(np.int32)
    x = rng.standard_normal(shape) * 2.0
    if dtype == C64:
        return (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    return np.asarray(jnp.asarray(x, dtype))


def operand(case: Case, dtype: Any, shape: tuple[int, ...], seed: int) -> Any:
    # JAX arrays, so that the plain reference computes with JAX's promotion, not NumPy's.
    if case.pytree:
        return {
            "x": jnp.asarray(values(dtype, shape, seed)),
            "y": jnp.asarray(values(dtype, shape, seed + 1)),
        }
    return jnp.asarray(values(dtype, shape, seed))


@st.composite
def inputs(draw: st.DrawFn, name: str) -> tuple[Any, tuple[int, ...], int]:
    case = CASES[name]
    dtype = draw(st.sampled_from(case.dtypes))
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=case.min_rank, max_size=3)))
    return dtype, shape, draw(st.integers(0, 2**16))


def close(ours: Any, want: Any, dtype: Any, what: str) -> None:
    assert jax.tree.structure(ours) == jax.tree.structure(want), what
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(want), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
        a64 = np.asarray(a).astype(np.complex128 if np.iscomplexobj(a) else np.float64)
        b64 = np.asarray(b).astype(a64.dtype)
        tol = TOL.get(dtype, 0.0)  # integers and bools: exact
        np.testing.assert_allclose(a64, b64, rtol=tol, atol=tol, err_msg=what)


def x64(dtype: Any) -> Any:
    return jax.enable_x64(dtype == F64)


# --- properties -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
@SETTINGS
@given(data=st.data())
def test_eager_equals_jit_equals_reference(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    dtype, shape, seed = data.draw(inputs(name))
    with x64(dtype):
        arg = operand(case, dtype, shape, seed)
        want = case.plain(arg)
        eager = case.ours(arg)
        jitted = JIT[name](arg)
        what = f"{name} {jnp.dtype(dtype).name}{list(shape)}"
        close(eager, want, dtype, what + " eager vs reference")
        close(jitted, want, dtype, what + " jit vs reference")
        close(eager, jitted, dtype, what + " eager vs jit")


@pytest.mark.parametrize("name", list(CASES))
@SETTINGS
@given(data=st.data())
def test_vmap_equals_a_loop(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    dtype, shape, seed = data.draw(inputs(name))
    size = data.draw(st.integers(1, 3))
    rank = len(shape) + 1
    axis = data.draw(st.integers(-rank, rank - 1))
    with x64(dtype):
        if case.pytree:
            # One operand leaf batched, the other batched too or not (None).
            other = data.draw(st.sampled_from([axis, None]))
            in_axes: Any = {"x": axis, "y": other}
            arg = {
                k: np.stack([values(dtype, shape, seed + 7 * i + j) for i in range(size)], axis=a)
                if a is not None
                else values(dtype, shape, seed + j)
                for j, (k, a) in enumerate(in_axes.items())
            }

            def example(i: int) -> Any:
                return {
                    k: np.take(v, i, axis=in_axes[k]) if in_axes[k] is not None else v
                    for k, v in arg.items()
                }
        else:
            in_axes = axis
            arg = np.stack([values(dtype, shape, seed + i) for i in range(size)], axis=axis)

            def example(i: int) -> Any:
                return np.take(arg, i, axis=axis)

        got = vmap_of(name, in_axes)(arg)
        looped = [loop_of(name)(example(i)) for i in range(size)]
        want = jax.tree.map(lambda *xs: jnp.stack(xs), *looped)
        close(got, want, dtype, f"{name} {jnp.dtype(dtype).name}{list(shape)} in_axes={in_axes}")


@pytest.mark.parametrize("name", list(CASES))
@SETTINGS
@given(data=st.data())
def test_grad_equals_plain_jax_twin(name: str, data: st.DataObject) -> None:
    case = CASES[name]
    dtype = data.draw(st.sampled_from([F32, F64]))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), min_size=case.min_rank, max_size=3)))
    seed = data.draw(st.integers(0, 2**16))
    with x64(dtype):
        arg = operand(case, dtype, shape, seed)
        got = grad_of(name, "ours")(arg)
        want = grad_of(name, "twin")(arg)
        tol = {F32: 1e-4, F64: 1e-10}[dtype]
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
            assert a.dtype == b.dtype == dtype
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{name} {shape}")
