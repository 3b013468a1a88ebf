"""A rule kind is its module and its row in the table: declared, registered, sourced,
listed and placed in the derivative modes' preference from there alone."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
from jext.primitives import _primitive, rules

X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)

# A derivative rule kind, written as a module under jext/primitives/rules/ would be: it
# keeps its rule in the field "toy", lists itself as "toy" in rule_sources(), records the
# primitives it registers on, and is preferred first for forward mode.
TOY_MODULE = """
from typing import Any

from jext.primitives._rules import Derivative, Rules
from jext.primitives.rules._kind import Declaring, RuleKind

REGISTERED: list[str] = []


def declare(d: Declaring, rule: Any) -> dict[str, Any]:
    return {"toy": d.rule("toy", rule, 2)}


def register(core: Any, freeze: Any) -> None:
    REGISTERED.append(core.name)


def jvp(core: Any, primals: Any, tangents: Any, form: Any) -> tuple[list[Any], list[Any]]:
    outs, touts = core.rules.get("toy")(list(primals), list(tangents), params=form.params)
    return list(outs), list(touts)


def source(rules: Rules) -> str:
    return "none" if rules.get("toy") is None else "custom"


KINDS = (
    RuleKind(
        name="toy",
        declaration="def_toy",
        fields=("toy",),
        declare=declare,
        composes="the JVP rule, first in forward mode",
        register=register,
        source=source,
        derived=frozenset({"none"}),
        derivative=Derivative(
            rank={"jvp": -1, "linearize": 9, "vjp": 9},
            declared=lambda rules: rules.get("toy") is not None,
            jvp=jvp,
        ),
    ),
)
"""


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The toy kind's module, and a table with its row after the others in use."""
    path = tmp_path / "_toy.py"
    path.write_text(TOY_MODULE)
    spec = importlib.util.spec_from_file_location("jext_test_toy_rule_kind", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(_primitive, "KINDS", rules.table((*rules.MODULES, module)))
    return module


def test_a_new_rule_kind_needs_only_its_module_and_its_table_row(toy: ModuleType) -> None:
    """``Primitive._declare`` is what a ``def_toy`` method would call: nothing else of
    jext (the rules record, the sources, the JVP rule) is edited for the new kind."""

    @jext.primitive("rule_kinds.toy")
    def f(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    assert toy.REGISTERED == ["rule_kinds.toy"]
    assert f.rule_sources()["toy"] == "none"
    assert "toy" not in f.rules.custom_kinds()

    f.def_jvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
    f._declare("toy", lambda p, t: ([jnp.sin(p[0])], [10.0 * t[0]]))

    assert f.rule_sources()["toy"] == "custom"
    assert f.rules.custom_kinds() == ("jvp", "toy")
    kinds = rules.table((*rules.MODULES, toy))
    assert rules.preference(kinds)["jvp"] == ("toy", "jvp", "linearize", "vjp")
    out, tangent = jax.jvp(f, (X,), (np.ones_like(X),))
    np.testing.assert_allclose(out, np.sin(X), rtol=1e-6)
    np.testing.assert_allclose(tangent, np.full_like(X, 10.0))


def test_the_rules_record_refuses_a_field_no_rule_kind_has() -> None:
    @jext.primitive("rule_kinds.unknown_field")
    def f(x: jax.Array, /) -> jax.Array:
        return x

    with pytest.raises(TypeError, match="no rule kind has the fields \\['toy'\\]"):
        f.rules.replace(toy=None)


def test_each_mode_prefers_its_own_derivative_rule_kind() -> None:
    assert dict(rules.PREFERENCE) == {
        "jvp": ("jvp", "linearize", "vjp"),
        "linearize": ("linearize", "jvp", "vjp"),
        "vjp": ("vjp", "linearize", "jvp"),
    }


def test_rule_sources_list_every_kind_with_a_source_in_table_order() -> None:
    @jext.primitive("rule_kinds.sources")
    def f(x: jax.Array, /) -> jax.Array:
        return x

    listed = [k.name for k in rules.KINDS.values() if k.source is not None]
    assert list(f.rule_sources()) == listed
    assert listed == [
        "abstract_eval",
        "impl",
        "jvp",
        "transpose",
        "vjp",
        "linearize",
        "batching",
        "sharding",
        "lowering",
    ]
