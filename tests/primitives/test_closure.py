"""The closure twin: a reference that closes over traced values (``_closure.py``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jext
from jext import _jax


def test_only_traced_constants_are_hoisted() -> None:
    concrete = jnp.arange(3.0)
    aval = jax.typeof(jnp.ones(3))
    assert _jax.hoist_traced_consts(_jax.trace_avals(lambda x: [x + concrete], [aval])) is None

    def traced(a: Any) -> Any:
        closed = _jax.trace_avals(lambda x: [a * x + concrete], [aval])
        hoisted = _jax.hoist_traced_consts(closed)
        assert hoisted is not None
        jaxpr, values = hoisted
        assert values == [a] and len(jaxpr.in_avals) == 2  # the traced value leads
        return _jax.eval_jaxpr(jaxpr, *values, jnp.ones(3))[0]

    assert jnp.allclose(jax.jit(traced)(2.0), 2.0 + jnp.arange(3.0))


def _scaled_by(a: Any, x: Any, *, with_jvp: bool = False) -> Any:
    @jext.primitive("closure.scaled_by")
    def scaled(v: jax.Array, /) -> jax.Array:
        return a * v

    if with_jvp:
        scaled.def_jvp(lambda p, t: (scaled(p[0]), 2.0 * a * t[0]))
    return scaled(x)


def test_the_twin_is_one_equation_with_the_hidden_value_first() -> None:
    jaxpr = jax.make_jaxpr(_scaled_by)(2.0, jnp.ones(3))
    (eqn,) = jaxpr.eqns
    assert eqn.primitive.name == "closure.scaled_by"
    assert "closure" in eqn.params
    assert eqn.invars[0] is jaxpr.jaxpr.invars[0]  # a, the closed-over value


def test_eagerly_nothing_is_hidden() -> None:
    jaxpr = jax.make_jaxpr(lambda x: _scaled_by(2.0, x))(jnp.ones(3))
    assert "closure" not in jaxpr.eqns[0].params


def test_the_author_rule_runs_with_the_declared_operands() -> None:
    a = jnp.asarray(1.5)
    got = jax.jit(jax.grad(lambda x: _scaled_by(a, x, with_jvp=True).sum()))(jnp.ones(2))
    assert jnp.allclose(got, 3.0)  # the rule's 2 a, not the reference's a
    with pytest.raises(jext.RuleError, match="being differentiated"):
        jax.grad(lambda a: _scaled_by(a, 1.0, with_jvp=True))(1.5)
