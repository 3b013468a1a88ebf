"""The rules record: frozen at the first call, read by every report."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
from jext._registry import Registry

X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)


def test_a_rule_defined_after_the_first_call_is_refused_by_name() -> None:
    @jext.primitive("rules.late")
    def f(x: jax.Array, /) -> jax.Array:
        return x * 2

    def jvp_rule(p: Any, t: Any) -> Any:
        return f(p[0]), 2 * t[0]

    f.def_jvp(jvp_rule)
    assert not f.frozen
    f(X)
    assert f.frozen
    with pytest.raises(jext.DefinitionError, match=r"'rules\.late'.*def_transpose before the"):
        f.def_transpose(lambda ct, x: (2 * ct,))
    with pytest.raises(jext.DefinitionError, match="def_lowering"):
        f.def_lowering(lambda x: x + x, platform="tpu")
    f.def_jvp(jvp_rule)  # the same rule again changes nothing: allowed
    assert f.rule_sources()["jvp"] == "custom"
    f.def_examples(lambda: [jext.Example(X)])  # examples are not rules
    assert len(f.examples()) == 1


def test_a_vendor_rule_arriving_after_the_first_call_fails_its_plugin() -> None:
    @jext.primitive("rules.vendor_late")
    def f(x: jax.Array, /) -> jax.Array:
        return x + 1

    f(X)  # frozen
    registry = Registry(group="jext-none")
    registry.register(
        SimpleNamespace(jext_register_primitives=jext.hookimpl(lambda registry: registry.add(f))),
        name="rules",  # owns the "rules" namespace
    )
    registry.load()
    with pytest.warns(jext.PluginWarning, match="late-vendor.*before the first call"):
        registry.register(
            SimpleNamespace(
                jext_register_lowerings=jext.hookimpl(
                    lambda registry: registry.add_lowering(
                        "rules.vendor_late", lambda x: x + 1, platform="tpu"
                    )
                )
            ),
            name="late-vendor",
        )
    status = {p.name: p.status for p in registry.plugins()}
    assert (status["rules"], status["late-vendor"]) == ("loaded", "error")
    assert f.lowering_platforms()["tpu"] == "reference"


def test_lowering_rule_reports_each_kind_from_the_record() -> None:
    @jext.primitive("rules.kinds", reference_lowering=["cpu"])
    def f(x: jax.Array, /, *, k: float = 2.0) -> jax.Array:
        return x * k

    def tpu_rule(x: jax.Array, *, k: float) -> jax.Array:
        return x * k + 0.0

    def cuda_raw(ctx: Any, x: Any, *, k: float) -> Any:
        raise AssertionError("never lowered here")

    f.def_lowering(tpu_rule, platform="tpu")
    f.def_lowering(cuda_raw, platform="cuda", raw=True)
    cpu, tpu, cuda = f.lowering_rule("cpu"), f.lowering_rule("tpu"), f.lowering_rule("cuda")
    assert f.lowering_rule("rocm") is None
    assert cpu is not None and tpu is not None and cuda is not None
    assert (cpu.kind, cpu.label, cpu.batching) == ("reference", "reference", "vmap")
    assert (tpu.kind, tpu.label) == ("traceable", tpu_rule.__qualname__)
    assert (cuda.kind, cuda.batching) == ("raw", "loop") and cuda.label.endswith("(raw)")
    np.testing.assert_allclose(tpu.fn(X, k=3.0), 3 * X)  # a tpu rule runs on CPU
    with pytest.raises(jext.RuleError, match="raw MLIR rule"):
        cuda.fn(X, k=3.0)
    assert f.lowering_platforms() == {
        "cpu": "reference",
        "cuda": cuda.label,
        "tpu": tpu.label,
    }
    assert f.rules.lowering_for("tpu") is not None


def test_rule_sources_name_the_linear_jvp() -> None:
    @jext.primitive("rules.linear")
    def f(x: jax.Array, /) -> jax.Array:
        return -x

    f.def_transpose(lambda ct, x: (-ct,))
    assert f.rule_sources()["jvp"] == "linear"
    assert f.rule_sources()["transpose"] == "custom"
    np.testing.assert_allclose(jax.grad(lambda v: f(v).sum())(jnp.asarray(X)), -np.ones(4))
