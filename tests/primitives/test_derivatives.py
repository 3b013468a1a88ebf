"""Derivative forms of a primitive with a custom batching rule (``_derivatives.py``)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jext

DIMS: list[tuple[Any, ...]] = []


@jext.primitive("derivatives.sin_rule_cos")
def sin_rule_cos(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@sin_rule_cos.def_batching
def _rule(args: Any, dims: Any) -> Any:
    DIMS.append(tuple(dims))
    return jnp.cos(args[0]), dims[0]


X = jnp.asarray([0.2, 0.9, -1.1])


def test_the_jvp_is_an_equation_of_the_primitive_with_a_jvp_link() -> None:
    jaxpr = jax.make_jaxpr(lambda x, t: jax.jvp(sin_rule_cos, (x,), (t,)))(X, X)
    chains = [e.params.get("jext_derivative") for e in jaxpr.eqns]
    assert chains[0] is None and chains[1] == (("jvp", (True,)),)


def test_the_transpose_of_a_jvp_link_is_a_vjp_link() -> None:
    jaxpr = jax.make_jaxpr(jax.grad(lambda x: sin_rule_cos(x).sum()))(X)
    (chain,) = [e.params["jext_derivative"] for e in jaxpr.eqns if "jext_derivative" in e.params]
    assert [link[0] for link in chain] == ["jvp", "vjp"]


def test_unbatched_derivatives_are_the_references_and_batched_the_rules() -> None:
    np.testing.assert_allclose(jax.vmap(jax.grad(sin_rule_cos))(X), -jnp.sin(X), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(sin_rule_cos)(0.3), jnp.cos(0.3), rtol=1e-6)


def test_with_only_tangents_batched_the_rule_sees_nothing_batched_as_in_custom_vmap() -> None:
    DIMS.clear()
    jax.jacfwd(sin_rule_cos)(X)  # tangents batched, the point not: the rule is differentiated
    assert DIMS == [(None,)], DIMS


def test_an_operand_batched_in_primal_and_tangent_is_batched_for_the_rule() -> None:
    DIMS.clear()
    jax.vmap(lambda x, t: jax.jvp(lambda a, b: sin_rule_cos(a) * b, (x, 1.0), (t, 1.0)))(X, X)
    assert DIMS and all(d == (0,) for d in DIMS), DIMS
