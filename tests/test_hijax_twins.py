"""jext primitives against hijax primitives (``jax.experimental.hijax.VJPHiPrimitive``)
with the same rules, and against ``custom_jvp``/``custom_vjp`` twins where a mode has one:
both modes on one primitive (a JVP rule for forward mode, a VJP rule for reverse mode).

Every rule differs from the reference's derivative on purpose, and the two rules differ
from each other, so a rule used in the other's mode changes a number.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jext
from jext import _jax
from jext.testing._checks import run_check

try:
    from jax.experimental.hijax import VJPHiPrimitive
except ImportError:  # jax 0.8 has no hijax
    VJPHiPrimitive = None

needs_hijax = pytest.mark.skipif(
    VJPHiPrimitive is None, reason="this JAX has no jax.experimental.hijax.VJPHiPrimitive"
)
needs_mode = pytest.mark.skipif(
    not _jax.linearization_knows_mode(),
    reason="JAX before 0.9.2 does not tell a primitive which mode it is linearized for",
)


def close(ours: Any, twin: Any, what: str = "") -> None:
    assert jax.tree.structure(ours) == jax.tree.structure(twin), what
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(twin), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=2e-6, err_msg=what)


# --- the rules: f(x, y) = x sin y; both rules deliberately wrong, each in its own way ---


def _jvp_rule(f: Any) -> Any:
    def rule(primals: Any, tangents: Any) -> Any:
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), tx * jnp.sin(y) + 2.0 * x * ty  # 2x, not x cos y

    return rule


def _fwd(f: Any) -> Any:
    def fwd(x: Any, y: Any) -> Any:
        return f(x, y), (x, y)

    return fwd


def _bwd(res: Any, g: Any) -> Any:
    x, y = res
    return 3.0 * g * jnp.sin(y), g * x * jnp.cos(y)  # 3 sin y, not sin y


@jext.primitive("hijax_twins.both")
def both(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return x * jnp.sin(y)


both.def_jvp(_jvp_rule(both))
both.def_vjp(_fwd(both), _bwd)


@jax.custom_jvp
def jvp_twin(x: Any, y: Any) -> Any:
    return x * jnp.sin(y)


jvp_twin.defjvp(_jvp_rule(jvp_twin))


@jax.custom_vjp
def vjp_twin(x: Any, y: Any) -> Any:
    return x * jnp.sin(y)


# custom_vjp's fwd cannot call the function itself under forward mode (jvp of grad)
vjp_twin.defvjp(_fwd(lambda x, y: x * jnp.sin(y)), _bwd)


def _hijax_twin() -> Any:
    assert VJPHiPrimitive is not None

    class Both(VJPHiPrimitive):  # type: ignore[misc, valid-type]
        def __init__(self, x_aval: Any, y_aval: Any) -> None:
            self.in_avals = (x_aval, y_aval)
            self.out_aval = x_aval
            self.params = {}
            super().__init__()

        def expand(self, x: Any, y: Any) -> Any:
            return x * jnp.sin(y)

        def jvp(self, primals: Any, tangents: Any) -> Any:
            tangents = tuple(
                jax.numpy.zeros_like(p) if _jax.is_symbolic_zero(t) else t
                for p, t in zip(primals, tangents, strict=True)
            )
            return _jvp_rule(hijax_both)(primals, tangents)

        def lin(self, nzs: Any, x: Any, y: Any) -> Any:  # linearize_from_jvp, by hand
            return hijax_both(x, y), (x, y)

        def linearized(self, res: Any, tx: Any, ty: Any) -> Any:
            zeros = [
                jnp.zeros_like(r) if _jax.is_symbolic_zero(t) else t
                for r, t in zip(res, (tx, ty), strict=True)
            ]
            return _jvp_rule(hijax_both)(res, zeros)[1]

        def vjp_fwd(self, nzs: Any, x: Any, y: Any) -> Any:
            return hijax_both(x, y), (x, y)

        def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
            return _bwd(res, g)

        def batch_dim_rule(self, axis_data: Any, dims: Any) -> Any:
            return next((d for d in dims if d is not None), None)

    def hijax_both(x: Any, y: Any) -> Any:
        x, y = jnp.broadcast_arrays(jnp.asarray(x, jnp.float32), jnp.asarray(y, jnp.float32))
        return Both(jax.typeof(x), jax.typeof(y))(x, y)

    return hijax_both


X = jnp.asarray([0.3, -0.7, 1.1])
Y = jnp.asarray([1.2, 0.4, -0.8])
W = jnp.asarray([1.0, 2.0, -1.0])


def _loss(f: Any) -> Any:
    return lambda x, y: jnp.sum(f(x, y) * W)


def _grad(f: Any) -> Any:
    return jax.grad(_loss(f), (0, 1))


# Forward mode and its compositions: the JVP rule, as custom_jvp with that rule.
FORWARD = {
    "jvp": lambda f: jax.jvp(f, (X, Y), (W, Y)),
    "jit-jvp": lambda f: jax.jit(lambda x, y: jax.jvp(f, (x, y), (W, x)))(X, Y),
    "jacfwd": lambda f: jax.jacfwd(f, (0, 1))(X, Y),
    "linearize": lambda f: jax.linearize(f, X, Y)[1](W, Y),
    "vmap-jvp": lambda f: jax.vmap(lambda x, y: jax.jvp(f, (x, y), (y, x)))(X, Y),
    "jvp-vmap": lambda f: jax.jvp(jax.vmap(f), (X, Y), (W, Y)),
    "jvp-checkpoint": lambda f: jax.jvp(jax.checkpoint(f), (X, Y), (W, Y)),
    "jvp-jvp": lambda f: jax.jvp(lambda x: jax.jvp(f, (x, Y), (W, Y))[1], (X,), (Y,)),
    # reverse over forward: reverse mode of the JVP rule's own operations
    "grad-jvp": lambda f: jax.grad(lambda x: jnp.sum(jax.jvp(f, (x, Y), (W, Y))[1]))(X),
    # JAX derives reverse mode through checkpoint from the JVP: it transposes the JVP rule
    "grad-checkpoint": lambda f: jax.grad(jax.checkpoint(_loss(f)), (0, 1))(X, Y),
}

# Reverse mode and its compositions: fwd and bwd, as custom_vjp with those rules.
REVERSE = {
    "grad": lambda f: _grad(f)(X, Y),
    "jit-grad": lambda f: jax.jit(_grad(f))(X, Y),
    "vjp": lambda f: jax.vjp(f, X, Y)[1](W),
    "jacrev": lambda f: jax.jacrev(f, (0, 1))(X, Y),
    "vmap-grad": lambda f: jax.vmap(_grad(f))(jnp.stack([X, Y]), jnp.stack([Y, X])),
    "grad-vmap": lambda f: jax.grad(lambda x, y: jax.vmap(f)(x, y).sum(), (0, 1))(X, Y),
    "grad-jit": lambda f: jax.grad(jax.jit(_loss(f)), (0, 1))(X, Y),
    "grad-scan": lambda f: jax.grad(
        lambda x, y: lax.scan(lambda c, s: (c + _loss(f)(x * s, y), None), 0.0, W)[0], (0, 1)
    )(X, Y),
    "grad-cond": lambda f: jax.grad(lambda x, y: lax.cond(True, _loss(f), _loss(f), x, y))(X, Y),
    # forward over reverse: the JVP of bwd's own operations
    "jvp-grad": lambda f: jax.jvp(lambda x: _grad(f)(x, Y), (X,), (W,)),
    "hessian": lambda f: jax.hessian(_loss(f), (0, 1))(X, Y),
    "grad-grad": lambda f: jax.grad(lambda x: _grad(f)(x, Y)[1].sum())(X),
}


@needs_mode
@pytest.mark.parametrize("transform", list(FORWARD.values()), ids=list(FORWARD))
def test_forward_mode_runs_the_jvp_rule_of_a_primitive_with_both(transform: Any) -> None:
    close(transform(both), transform(jvp_twin))


@needs_mode
@pytest.mark.parametrize("transform", list(REVERSE.values()), ids=list(REVERSE))
def test_reverse_mode_runs_the_vjp_rule_of_a_primitive_with_both(transform: Any) -> None:
    close(transform(both), transform(vjp_twin))


@needs_hijax
@needs_mode
@pytest.mark.parametrize(
    "transform", [*FORWARD.values(), *REVERSE.values()], ids=[*FORWARD, *REVERSE]
)
def test_a_primitive_with_both_rules_is_a_hijax_primitive_with_them(transform: Any) -> None:
    close(transform(both), transform(_hijax_twin()))


@needs_mode
def test_gradient_clipping_with_a_straight_through_jvp() -> None:
    """The issue's example: grad runs bwd (clipping), jvp the straight-through rule."""

    @jext.primitive("hijax_twins.clip_grad")
    def clip_grad(x: jax.Array, /) -> jax.Array:
        return x

    clip_grad.def_vjp(lambda x: (clip_grad(x), None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))

    @clip_grad.def_jvp
    def _(p: Any, t: Any) -> Any:
        return clip_grad(p[0]), t[0]

    assert jax.grad(lambda x: 3.0 * clip_grad(x))(0.5) == 1.0
    assert jax.jvp(lambda x: 3.0 * clip_grad(x), (0.5,), (1.0,))[1] == 3.0


@needs_mode
def test_jext_check_holds_the_bwd_of_a_primitive_with_both_rules_to_its_jvp() -> None:
    """With both rules, reverse mode runs bwd: a bwd that disagrees with the JVP rule fails
    the transpose check (jacrev against jacfwd), a correct one passes."""

    def make(name: str, factor: float) -> Any:
        prim = jext.primitive(f"hijax_twins.{name}")(lambda x, /: jnp.sin(x))
        prim.def_jvp(lambda p, t: (prim(p[0]), jnp.cos(p[0]) * t[0]))
        prim.def_vjp(lambda x: (prim(x), x), lambda x, g: (factor * jnp.cos(x) * g,))
        prim.def_examples(lambda: [jext.Example(np.linspace(-1.5, 1.5, 5, dtype=np.float32))])
        return prim

    wrong = make("checked_wrong_bwd", 2.0)
    result = run_check(wrong, "transpose", wrong.examples())
    assert result.status == "fail" and "jacrev vs jacfwd" in result.message
    assert run_check(wrong, "jvp", wrong.examples()).status == "pass"
    right = make("checked_right_bwd", 1.0)
    assert run_check(right, "transpose", right.examples()).status == "pass"
