"""jext.lowering: one export for cpu, cuda, rocm and tpu, each platform using its own rule."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.lowering
from tests import prims

X = jnp.linspace(-1.0, 1.0, 4, dtype=jnp.float32)


@pytest.fixture(scope="module")
def exported() -> jext.lowering.PlatformExport:
    return jext.lowering.export(prims.by_platform, X)


def test_every_platform_in_one_module(exported: jext.lowering.PlatformExport) -> None:
    assert exported.platforms == ("cpu", "cuda", "rocm", "tpu")
    assert exported.rules == {
        "cpu": {"tests.by_platform": "_by_platform_cpu"},
        "cuda": {"tests.by_platform": "_by_platform_gpu"},
        "rocm": {"tests.by_platform": "_by_platform_gpu"},
        "tpu": {"tests.by_platform": "_by_platform_tpu"},
    }


def test_each_platform_lowers_its_own_rule() -> None:
    ops = {}
    for platform, op in [("cpu", "sine"), ("cuda", "tanh"), ("rocm", "tanh"), ("tpu", "cosine")]:
        text = jext.lowering.export(
            prims.by_platform, X, platforms=[platform]
        ).exported.mlir_module()
        ops[platform] = {o for o in ("sine", "cosine", "tanh") if f"stablehlo.{o}" in text}
        assert ops[platform] == {op}, platform


@pytest.mark.usefixtures("on_cpu")
def test_cpu_call_runs_the_cpu_rule(exported: jext.lowering.PlatformExport) -> None:
    np.testing.assert_allclose(exported.call(X), np.sin(X) + 1, rtol=1e-6)
    np.testing.assert_allclose(prims.by_platform(X), np.sin(X) + 1, rtol=1e-6)


@pytest.mark.usefixtures("on_cpu")
def test_serialize_round_trip(exported: jext.lowering.PlatformExport) -> None:
    restored = jax.export.deserialize(exported.exported.serialize())
    assert restored.platforms == ("cpu", "cuda", "rocm", "tpu")
    np.testing.assert_allclose(restored.call(X), np.sin(X) + 1, rtol=1e-6)


def test_reference_serves_where_no_rule_is_registered() -> None:
    result = jext.lowering.export(lambda x: prims.softplus(x, beta=2.0), X)
    assert {p: r["tests.softplus"] for p, r in result.rules.items()} == dict.fromkeys(
        ("cpu", "cuda", "rocm", "tpu"), "reference"
    )


@pytest.mark.usefixtures("on_cpu")
def test_missing_platform_raises_lowering_error_naming_it() -> None:
    @jext.primitive("tests.cpu_only", reference_lowering=["cpu"])
    def cpu_only(x: jax.Array, /) -> jax.Array:
        return x * 2

    assert cpu_only.lowering_platforms() == {"cpu": "reference"}
    np.testing.assert_allclose(jax.jit(cpu_only)(X), 2 * X)
    with pytest.raises(
        jext.LoweringError, match=r"'tests\.cpu_only' has no lowering rule for platform 'tpu'"
    ):
        jext.lowering.export(cpu_only, X, platforms=["cpu", "tpu"])

    # Rules freeze at the first call: a late rule is refused, naming what to do.
    with pytest.raises(jext.DefinitionError, match=r"def_lowering before the first call"):
        cpu_only.def_lowering(lambda x: x + x, platform="tpu")

    @jext.primitive("tests.cpu_and_tpu", reference_lowering=["cpu"])
    def cpu_and_tpu(x: jax.Array, /) -> jax.Array:
        return x * 2

    cpu_and_tpu.def_lowering(lambda x: x + x, platform="tpu")
    rules = jext.lowering.export(cpu_and_tpu, X, platforms=["cpu", "tpu"]).rules
    where = "test_missing_platform_raises_lowering_error_naming_it.<locals>.<lambda>"
    assert rules["tpu"] == {"tests.cpu_and_tpu": where}


def test_gpu_rule_covers_cuda_and_rocm_and_specific_wins() -> None:
    @jext.primitive("tests.gpu_precedence")
    def f(x: jax.Array, /) -> jax.Array:
        return x

    def gpu_rule(x: jax.Array) -> jax.Array:
        return x + 1

    def rocm_rule(x: jax.Array) -> jax.Array:
        return x + 2

    f.def_lowering(gpu_rule, platform="gpu")
    f.def_lowering(rocm_rule, platform="rocm")
    assert f.lowering_platforms() == {
        "cpu": "reference",
        "cuda": "test_gpu_rule_covers_cuda_and_rocm_and_specific_wins.<locals>.gpu_rule",
        "rocm": "test_gpu_rule_covers_cuda_and_rocm_and_specific_wins.<locals>.rocm_rule",
        "tpu": "reference",
    }


def _disagreeing(name: str, *, dtype: bool) -> jext.Primitive[..., jax.Array]:
    """A primitive whose abstract eval disagrees with its reference in dtype or shape."""

    @jext.primitive(f"lowering_test.{name}")
    def prim(x: jax.Array, /) -> jax.Array:
        return x * 2

    @prim.def_abstract_eval
    def _(x: jax.ShapeDtypeStruct, /) -> jax.ShapeDtypeStruct:
        if dtype:
            return jax.ShapeDtypeStruct(x.shape, jnp.int32)
        return jax.ShapeDtypeStruct((x.shape[0] + 1,), x.dtype)

    return prim


@pytest.mark.parametrize(
    ("dtype", "want"), [(True, "int32[3]"), (False, "float32[4]")], ids=["dtype", "shape"]
)
def test_abstract_eval_disagreeing_with_the_reference_is_a_rule_error(
    dtype: bool, want: str
) -> None:
    # Was a raw MLIR verifier error ("type of return operand 0 ... doesn't match").
    prim = _disagreeing(f"mismatch_{want[:3]}", dtype=dtype)
    x = jnp.ones(3, jnp.float32)
    for run in (jax.jit(prim), prim):  # under jit, and eagerly (the lowering compiled)
        with pytest.raises(jext.RuleError) as info:
            run(x)
        message = str(info.value)
        assert f"'lowering_test.mismatch_{want[:3]}'" in message and "the reference" in message
        assert "float32[3]" in message and want in message


def test_impl_disagreeing_with_the_abstract_eval_is_a_rule_error() -> None:
    @jext.primitive("lowering_test.impl_mismatch")
    def prim(x: jax.Array, /) -> jax.Array:
        return x * 2

    @prim.def_impl
    def _(x: jax.Array, /) -> jax.Array:
        return (x * 2).astype(jnp.float16)

    with pytest.raises(jext.RuleError, match=r"the impl of .*float16\[3\].*float32\[3\]"):
        prim(jnp.ones(3, jnp.float32))
