"""VJP rules: ``jext_vjp_lin``, the linear equation reverse mode transposes (``_vjp.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import jext


@jext.primitive("vjp.square")
def square(x: jax.Array, /) -> jax.Array:
    return x * x


square.def_vjp(lambda x: (square(x), x), lambda x, ct: (2.0 * x * ct,))


def test_linearize_shows_the_linear_equation_and_grad_transposes_it() -> None:
    _, linear = jax.linearize(square, jnp.ones(2))
    jaxpr = jax.make_jaxpr(linear)(jnp.ones(2))
    assert [e.primitive.name for e in jaxpr.eqns] == ["jext_vjp_lin"]
    assert "jext_vjp_lin" not in str(
        jax.make_jaxpr(jax.grad(lambda v: square(v).sum()))(jnp.ones(2))
    )


def test_evaluating_the_linear_equation_is_forward_mode_and_raises() -> None:
    _, linear = jax.linearize(square, jnp.ones(2))
    with pytest.raises(
        jext.RuleError, match=r"'vjp\.square' has a VJP rule \(def_vjp\) and no JVP"
    ):
        linear(jnp.ones(2))


def test_a_bwd_with_the_wrong_number_of_cotangents_is_a_rule_error() -> None:
    @jext.primitive("vjp.two_cotangents")
    def f(x: jax.Array, /) -> jax.Array:
        return 2.0 * x

    f.def_vjp(lambda x: (f(x), None), lambda _, ct: (ct, ct))
    with pytest.raises(jext.RuleError, match="one cotangent per operand"):
        jax.grad(lambda v: f(v).sum())(jnp.ones(2))
