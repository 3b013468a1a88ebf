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


def _affine_by(a: Any, b: Any, x: Any, *, rule_uses: str = "a") -> Any:
    """A primitive defined per call whose reference closes over ``a`` and whose lowering
    rule closes over ``a`` (plus 1, so that its result tells it ran) or over ``b``."""

    @jext.primitive("closure.affine_by")
    def affine(v: jax.Array, /) -> jax.Array:
        return a * v

    @affine.def_lowering
    def _rule(v: jax.Array) -> jax.Array:
        return (a if rule_uses == "a" else b) * v + 1.0

    return affine(x)


def _rule_inline(a: Any, b: Any, x: Any) -> Any:
    return a * x + 1.0


LOWERING_CASES: dict[str, Any] = {
    "jit": lambda f: jax.jit(f)(2.0, 0.0, jnp.arange(3.0)),
    "vmap over the operand": lambda f: jax.jit(jax.vmap(f, in_axes=(None, None, 0)))(
        2.5, 0.0, jnp.arange(6.0).reshape(2, 3)
    ),
    "jit of the gradient's forward pass": lambda f: jax.jit(
        lambda a, b, x: jax.value_and_grad(lambda y: f(a, b, y).sum())(x)[0]
    )(2.0, 0.0, jnp.arange(3.0)),
}


@pytest.mark.parametrize("case", list(LOWERING_CASES))
def test_a_lowering_rule_sees_the_traced_values_its_reference_closes_over(case: str) -> None:
    # The rule runs (its + 1 shows) with the caller's value of a, as the same code inline.
    run = LOWERING_CASES[case]
    assert jnp.array_equal(run(_affine_by), run(_rule_inline))


def test_a_lowering_rule_closing_over_a_value_its_reference_does_not_use_is_refused() -> None:
    def f(a: Any, b: Any, x: Any) -> Any:
        return _affine_by(a, b, x, rule_uses="b")

    with pytest.raises(jext.RuleError) as info:
        jax.jit(f)(2.0, 3.0, jnp.arange(3.0))
    message = str(info.value)
    assert "'closure.affine_by'" in message and "closes over a traced value" in message
    assert "pass it as an operand" in message


def test_a_lowering_rule_closing_over_a_vmapped_value_says_what_to_do() -> None:
    run = jax.jit(jax.vmap(_affine_by, in_axes=(0, None, None)))
    with pytest.raises(jext.RuleError) as info:
        run(jnp.arange(1.0, 4.0), 0.0, jnp.arange(3.0))
    message = str(info.value)
    assert "'closure.affine_by'" in message and "batched by an enclosing vmap" in message
    assert "pass that value as an operand" in message


def test_a_lowering_rule_closing_over_a_traced_value_of_a_plain_reference_is_refused() -> None:
    def f(b: Any, x: Any) -> Any:
        @jext.primitive("closure.plain_reference")
        def double(v: jax.Array, /) -> jax.Array:
            return 2.0 * v

        double.def_lowering(lambda v: b * v)
        return double(x)

    with pytest.raises(jext.RuleError, match=r"'closure.plain_reference' closes over a traced"):
        jax.jit(f)(3.0, jnp.arange(3.0))
