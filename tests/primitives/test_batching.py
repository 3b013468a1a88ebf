"""Under vmap the primitive stays one equation, and its own rules apply per example."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lib.mlir.dialects import hlo

import jext
import jext.lowering

XS = np.arange(12.0, dtype=np.float32).reshape(3, 4) / 12


def _equations(fn: Any, *args: Any) -> list[str]:
    return [str(e.primitive) for e in jax.make_jaxpr(fn)(*args).jaxpr.eqns]


def test_nested_vmap_with_unbatched_operands_keeps_one_equation() -> None:
    @jext.primitive("batch.axpy")
    def axpy(a: jax.Array, x: jax.Array, /) -> jax.Array:
        return a * x

    f = jax.vmap(jax.vmap(axpy, in_axes=(None, 0)), in_axes=(0, 1))
    a, x = jnp.arange(4.0), jnp.ones((3, 4))
    assert [e for e in _equations(f, a, x) if e != "transpose"] == ["batch.axpy"]
    np.testing.assert_allclose(f(a, x), jax.vmap(jax.vmap(jnp.multiply, (None, 0)), (0, 1))(a, x))
    jaxpr = str(jax.make_jaxpr(f)(a, x))
    assert "jext_vmap=((4, (True, True), None, None), (3, (False, True), None, None))" in jaxpr


def test_a_custom_impl_runs_per_example_under_eager_vmap() -> None:
    calls: list[int] = []

    @jext.primitive("batch.impl")
    def f(x: jax.Array, /) -> jax.Array:
        return x + 1

    @f.def_impl
    def _impl(x: Any) -> Any:
        calls.append(np.shape(x)[0])
        return np.asarray(x) + 2  # differs from the reference on purpose

    np.testing.assert_allclose(jax.vmap(f)(XS), XS + 2)
    assert calls == [4, 4, 4]
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(XS), XS + 1)  # compiled: the lowering


def test_a_raw_rule_runs_once_per_example_under_vmap_and_grad() -> None:
    @jext.primitive("batch.raw")
    def f(x: jax.Array, /) -> jax.Array:
        return x * 2

    @f.def_lowering(platform="cpu", raw=True)
    def _raw_cpu(ctx: Any, x: Any) -> list[Any]:
        return [hlo.add(x, x)]

    np.testing.assert_allclose(jax.vmap(f)(XS), 2 * XS)
    np.testing.assert_allclose(jax.vmap(jax.vmap(f), in_axes=1)(XS), 2 * XS.T)
    np.testing.assert_allclose(jax.grad(lambda v: jax.vmap(f)(v).sum())(XS), 2 * np.ones_like(XS))
    hlo_text = jax.jit(jax.vmap(f)).lower(XS).as_text()
    assert "while" in hlo_text  # the per-example loop
    assert f.lowering_rule("cpu") is not None and f.lowering_rule("cpu").batching == "loop"  # type: ignore[union-attr]


def test_every_platform_rule_survives_vmap() -> None:
    @jext.primitive("batch.platforms")
    def f(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    @f.def_lowering(platform="tpu")
    def _tpu(x: jax.Array) -> jax.Array:
        return jnp.cos(x)

    exported = jext.lowering.export(jax.vmap(f), XS)
    assert exported.rules["tpu"] == {"batch.platforms": _tpu.__qualname__}
    text = exported.exported.mlir_module()
    assert "stablehlo.cosine" in text and "stablehlo.sine" in text


def test_batching_rule_returning_a_malformed_out_dims_is_a_rule_error() -> None:
    @jext.primitive("batch.bad_dims")
    def f(x: jax.Array, /) -> jax.Array:
        return x + 1

    f.def_batching(lambda args, dims: (f(args[0]), (dims[0],)))
    with pytest.raises(jext.RuleError, match="out_dims for result 0 is"):
        jax.vmap(f)(XS)


def test_zero_size_batch_with_a_custom_impl() -> None:
    @jext.primitive("batch.empty")
    def f(x: jax.Array, /) -> jax.Array:
        return x.sum(keepdims=True)

    f.def_impl(lambda x: np.asarray(x).sum(keepdims=True))
    out = jax.vmap(f)(np.zeros((0, 4), np.float32))
    assert out.shape == (0, 1)
