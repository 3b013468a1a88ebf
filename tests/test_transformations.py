"""Every JAX transformation over jext primitives, compared with the same code in plain JAX."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests import prims
from tests.fast_compile import run_fast

X = jnp.linspace(-1.5, 2.0, 6, dtype=jnp.float32)
M = jnp.linspace(-1.0, 1.0, 12, dtype=jnp.float32).reshape(3, 4)


def close(a: Any, b: Any, tol: float = 1e-5) -> None:
    jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=tol, atol=tol), a, b)


# Each case: (jext function, plain-JAX twin) of one array argument, returning an array.
CASES: dict[str, tuple[Callable[[jax.Array], jax.Array], Callable[[jax.Array], jax.Array]]] = {
    "default_rules": (
        lambda x: prims.softplus(x, beta=2.0),
        lambda x: prims.softplus_ref(x, beta=2.0),
    ),
    "custom_jvp": (
        lambda x: prims.softplus_jvp(x, beta=2.0),
        lambda x: prims.softplus_ref(x, beta=2.0),
    ),
    "linear_transpose_batching": (
        lambda x: prims.scale(x, factor=3.0) * x,
        lambda x: x * 3.0 * x,
    ),
    "pytree_multi_result": (
        lambda x: sum(prims.polar({"x": x, "y": x * x + 1.0})),
        lambda x: sum(prims.polar_ref({"x": x, "y": x * x + 1.0})),
    ),
    "two_pytree_operands": (
        lambda x: prims.moments((x, jnp.sin(x)), x * 0.5)["mean"],
        lambda x: prims.moments_ref((x, jnp.sin(x)), x * 0.5)["mean"],
    ),
}

TRANSFORMS: dict[str, Callable[[Callable[[jax.Array], jax.Array]], Callable[[jax.Array], Any]]] = {
    "eager": lambda f: f,
    "jit": jax.jit,
    "grad": lambda f: jax.grad(lambda x: f(x).sum()),
    "jvp": lambda f: lambda x: jax.jvp(f, (x,), (jnp.cos(x),)),
    "vjp": lambda f: lambda x: jax.vjp(f, x)[1](jnp.cos(x)),
    "jacfwd": jax.jacfwd,
    "jacrev": jax.jacrev,
    "hessian": lambda f: jax.hessian(lambda x: f(x).sum()),
    "vmap": lambda f: lambda x: jax.vmap(f)(jnp.stack([x, 2 * x])),
    "vmap_axis1": lambda f: lambda x: jax.vmap(f, in_axes=1, out_axes=1)(jnp.stack([x, 2 * x], 1)),
    "nested_vmap": lambda f: lambda x: jax.vmap(jax.vmap(f))(jnp.stack([x, x]).reshape(2, 1, -1)),
    "vmap_of_grad": lambda f: (
        lambda x: jax.vmap(jax.grad(lambda v: f(v).sum()))(jnp.stack([x, x + 1]))
    ),
    "grad_of_vmap": lambda f: jax.grad(lambda x: jax.vmap(f)(jnp.stack([x, x - 1])).sum()),
    "scan": lambda f: lambda x: jax.lax.scan(lambda c, _: (f(c) * 0.5, c.sum()), x, None, 3),
    "cond": lambda f: lambda x: jax.lax.cond(x.sum() > 0, f, lambda v: -v, x),
    "while_loop": lambda f: (
        lambda x: jax.lax.while_loop(
            lambda c: c[0] < 2, lambda c: (c[0] + 1, f(c[1]) * 0.5), (0, x)
        )
    ),
    "fori_loop": lambda f: lambda x: jax.lax.fori_loop(0, 2, lambda i, v: f(v) * 0.5, x),
    "checkpoint_grad": lambda f: jax.grad(lambda x: jax.checkpoint(f)(x).sum()),
    "jit_grad_scan": lambda f: jax.jit(
        jax.grad(lambda x: jax.lax.scan(lambda c, _: (f(c) * 0.5, None), x, None, 2)[0].sum())
    ),
}


@functools.cache
def _case_results(case: str) -> tuple[dict[str, Any], dict[str, Exception]]:
    """Every transformation but "eager" of ``case``, jext and plain JAX, in one compiled
    program (tests/fast_compile.py: the two are compared with each other, so the compile
    options do not change the answer; one program per case instead of two per
    transformation).  A transformation that fails to trace is recorded and raised by its
    own test."""
    ours, plain = CASES[case]
    errors: dict[str, Exception] = {}

    def everything(x: jax.Array) -> dict[str, Any]:
        out = {}
        for name, t in TRANSFORMS.items():
            if name == "eager":
                continue
            try:
                out[name] = (t(ours)(x), t(plain)(x))
            except Exception as err:  # reported by that transformation's test
                errors[name] = err
        return out

    return run_fast(everything, X), errors


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("case", list(CASES))
def test_transformation_matches_plain_jax(case: str, transform: str) -> None:
    ours, plain = CASES[case]
    if transform == "eager":  # op by op; eager transformations: test_eager_grad
        close(ours(X), plain(X))
        return
    results, errors = _case_results(case)
    if transform in errors:
        raise errors[transform]
    close(*results[transform])


def test_eager_grad() -> None:
    close(
        jax.grad(lambda x: prims.softplus(x, beta=2.0).sum())(X),
        jax.nn.sigmoid(2.0 * X),
    )


@pytest.mark.parametrize(
    "in_axes",
    [(0, None), (None, 0), (1, -1), (-1, 0), (None, 1)],
)
def test_vmap_mixed_in_axes(in_axes: tuple[int | None, int | None]) -> None:
    a = M[:, :3] + 2.0  # (3, 3) so every axis has the batch size 3
    x = M[:, 1:]
    ours = jax.vmap(prims.axpy, in_axes=in_axes)(a, x)
    plain = jax.vmap(prims.axpy_ref, in_axes=in_axes)(a, x)
    close(ours, plain)


def test_vmap_of_linear_op_uses_its_batching_rule() -> None:
    prims.BATCH_CALLS.clear()
    out = jax.vmap(lambda v: prims.scale(v, factor=2.0), in_axes=1)(M)
    close(out, (M * 2.0).T)
    assert prims.BATCH_CALLS == [(1,)]


def test_linear_transpose_uses_the_transpose_rule() -> None:
    f_t = jax.linear_transpose(lambda v: prims.scale(v, factor=3.0), X)
    (ct,) = f_t(jnp.ones_like(X))
    close(ct, jnp.full_like(X, 3.0))


def test_custom_jvp_rule_is_called() -> None:
    prims.JVP_CALLS.clear()
    jax.jvp(lambda x: prims.softplus_jvp(x, beta=1.0), (X,), (X,))
    assert prims.JVP_CALLS == ["softplus_jvp"]


def test_symbolic_zeros_arrive_only_when_opted_in() -> None:
    prims.SEEN_TANGENTS.clear()
    y = jnp.full_like(X, 2.0)
    _, t = jax.jvp(lambda x: prims.mul_sz(x, y), (X,), (jnp.ones_like(X),))
    close(t, y)
    tx, ty = prims.SEEN_TANGENTS
    assert not isinstance(tx, prims.jext.SymbolicZero)
    assert isinstance(ty, prims.jext.SymbolicZero)
    assert ty.shape == X.shape and ty.dtype == X.dtype
    close(jax.grad(lambda x: prims.mul_sz(x, y).sum())(X), y)


def test_grad_keeps_the_primitive_in_the_jaxpr() -> None:
    jaxpr = jax.make_jaxpr(jax.grad(lambda x: prims.softplus(x, beta=2.0).sum()))(X)
    names = [str(e.primitive) for e in jaxpr.jaxpr.eqns]
    assert "tests.softplus" in names


@pytest.mark.parametrize(
    "dtype", [jnp.float16, jnp.bfloat16, jnp.float32, jnp.complex64, jnp.int32]
)
def test_dtypes(dtype: Any) -> None:
    x = jnp.arange(1, 5).astype(dtype)
    ours = jax.jit(prims.axpy)(x, x)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(x * x))
    assert ours.dtype == dtype
    if jnp.issubdtype(dtype, jnp.floating):
        g = jax.jit(jax.grad(lambda v: prims.softplus(v).astype(jnp.float32).sum()))(x)
        assert g.dtype == dtype
        close(g.astype(jnp.float32), jax.nn.sigmoid(x.astype(jnp.float32)), tol=1e-2)


def test_float64_with_x64() -> None:
    with jax.enable_x64(True):
        x = jnp.linspace(-1, 1, 5, dtype=jnp.float64)
        y = prims.softplus(x)
        assert y.dtype == jnp.float64
        np.testing.assert_allclose(y, np.logaddexp(np.asarray(x), 0.0), rtol=1e-15)
        g = jax.jit(jax.grad(lambda v: prims.softplus(v).sum()))(x)
        np.testing.assert_allclose(g, 1 / (1 + np.exp(-np.asarray(x))), rtol=1e-14)


def test_weak_types_follow_jax_promotion() -> None:
    x_bf16 = jnp.ones(3, jnp.bfloat16)
    assert prims.axpy(2.0, x_bf16).dtype == jnp.bfloat16
    assert jax.jit(prims.axpy)(2.0, x_bf16).dtype == jnp.bfloat16
    both_weak = prims.axpy(2.0, 3.0)
    assert jax.typeof(both_weak).weak_type
    assert jax.eval_shape(prims.axpy, 2, x_bf16).dtype == jnp.bfloat16


def test_integer_operand_gets_no_tangent() -> None:
    n = jnp.arange(6, dtype=jnp.int32)
    g = jax.grad(lambda x: prims.axpy(n, x).sum())(X)
    close(g, n.astype(jnp.float32))
