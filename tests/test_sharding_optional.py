"""A sharding rule naming an operand that may be None (one CPU device, explicit sharding)."""

from __future__ import annotations

from typing import Any, cast

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jext

X = np.arange(8.0, dtype=np.float32)


def scaled(name: str, rule: str) -> jext.Primitive[Any, Any]:
    @jext.primitive(f"sharding_optional.{name}")
    def scale(x: jax.Array, s: jax.Array | None = None, /) -> jax.Array:
        return x if s is None else x * s

    scale.def_sharding(rule)
    return scale


def explicit(fn: Any, *args: Any) -> Any:
    """``fn`` jitted on ``args`` sharded along mesh axis ``x`` (explicit sharding)."""
    mesh = jax.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,))
    with jax.set_mesh(mesh):
        spec = cast(Any, P)("x")  # PartitionSpec's constructor is untyped in some jax versions
        sharded = [jax.device_put(a, NamedSharding(mesh, spec)) for a in args]
        return jax.typeof(jax.jit(fn)(*sharded))


def test_a_rule_names_an_optional_operand_left_out() -> None:
    scale = scaled("scale", "i, i -> i")
    assert str(explicit(scale, X)) == "float32[8@x]"  # the None operand's entry dropped
    assert str(explicit(scale, X, X)) == "float32[8@x]"


def test_a_rule_with_an_operand_too_many_is_refused() -> None:
    scale = scaled("too_many", "i, i, i -> i")
    with pytest.raises(jext.RuleError, match=r"has 3 operand\(s\), but the primitive has 1"):
        explicit(scale, X)


def test_a_rule_wrong_for_a_given_optional_operand_is_refused() -> None:
    # Operand 1 is declared with two axes: right only when it is None.
    scale = scaled("wrong_rank", "i, i j -> i")
    assert str(explicit(scale, X)) == "float32[8@x]"
    with pytest.raises(jext.RuleError, match="operand 1 has shape"):
        explicit(scale, X, X)
