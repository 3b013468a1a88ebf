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
    from jax.experimental import hijax
except ImportError:  # jax 0.8 has no hijax
    hijax = None
# jax 0.10 and 0.11 call it VJPHiPrimitive, 0.12 HiPrim
VJPHiPrimitive = getattr(hijax, "VJPHiPrimitive", None) or getattr(hijax, "HiPrim", None)

needs_hijax = pytest.mark.skipif(
    VJPHiPrimitive is None, reason="this JAX has no hijax primitive (VJPHiPrimitive, HiPrim)"
)


def _hijax_grad_accum() -> type:
    """hijax's accumulator of a cotangent to be computed (0.12 exports it)."""
    exported = getattr(hijax, "GradAccum", None)
    if exported is not None:
        return exported  # type: ignore[no-any-return]
    from jax._src.interpreters import ad  # jax 0.10 and 0.11 keep it here

    return ad.GradAccum  # type: ignore[no-any-return]


def _elementwise_batch(make: Any, args: Any, dims: Any, size: int) -> Any:
    """A hijax ``batch`` rule for an elementwise primitive: every operand to a leading axis."""
    if all(d is None for d in dims):
        return make(*args), None
    moved = [
        jnp.broadcast_to(a, (size, *jnp.shape(a))) if d is None else jnp.moveaxis(a, d, 0)
        for a, d in zip(args, dims, strict=True)
    ]
    return make(*moved), 0


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


def _x_sin_y_hi() -> type:
    """A hijax primitive computing ``x * sin(y)`` for same-typed operands, its rules left to
    subclasses (a class made on demand: hijax is not in every JAX)."""
    assert VJPHiPrimitive is not None

    class XSinY(VJPHiPrimitive):  # type: ignore[misc, valid-type]
        def __init__(self, x_aval: Any, y_aval: Any) -> None:
            self.in_avals = (x_aval, y_aval)
            self.out_aval = x_aval
            self.params = {}
            super().__init__()

        def expand(self, x: Any, y: Any) -> Any:
            return x * jnp.sin(y)

    return XSinY


def _hijax_twin() -> Any:
    assert VJPHiPrimitive is not None

    class Both(_x_sin_y_hi()):  # type: ignore[misc]
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

        def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
            return _elementwise_batch(hijax_both, args, dims, axis_data.size)

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
    the transpose check (one VJP against one JVP, the dot-product test), a correct one
    passes."""

    def make(name: str, factor: float) -> Any:
        prim = jext.primitive(f"hijax_twins.{name}")(lambda x, /: jnp.sin(x))
        prim.def_jvp(lambda p, t: (prim(p[0]), jnp.cos(p[0]) * t[0]))
        prim.def_vjp(lambda x: (prim(x), x), lambda x, g: (factor * jnp.cos(x) * g,))
        prim.def_examples(lambda: [jext.Example(np.linspace(-1.5, 1.5, 5, dtype=np.float32))])
        return prim

    wrong = make("checked_wrong_bwd", 2.0)
    result = run_check(wrong, "transpose", wrong.examples())
    assert result.status == "fail"
    assert "reverse mode is not the transpose of forward mode" in result.message
    assert run_check(wrong, "jvp", wrong.examples()).status == "pass"
    right = make("checked_right_bwd", 1.0)
    assert run_check(right, "transpose", right.examples()).status == "pass"


# --- JAX's error types: jext's RuleError is also the error JAX's construct raises ---------


def _jvp_tangent_shape(f: Any) -> Any:
    return lambda primals, tangents: (f(primals[0]), jnp.reshape(tangents[0], (1, -1)))


def _jvp_primal_tree(f: Any) -> Any:
    return lambda primals, tangents: ((f(primals[0]), f(primals[0])), tangents[0])


def _with_jvp(rule_of: Any, name: str) -> tuple[Any, Any]:
    prim = jext.primitive(f"hijax_twins.err_{name}")(lambda x, /: jnp.sin(x))
    prim.def_jvp(rule_of(prim))
    twin = jax.custom_jvp(jnp.sin)
    twin.defjvp(rule_of(twin))
    return prim, twin


def _with_vjp(fwd_of: Any, bwd: Any, name: str) -> tuple[Any, Any]:
    prim = jext.primitive(f"hijax_twins.err_{name}")(lambda x, /: jnp.sin(x))
    prim.def_vjp(fwd_of(jnp.sin), bwd)
    twin = jax.custom_vjp(jnp.sin)
    twin.defvjp(fwd_of(jnp.sin), bwd)
    return prim, twin


def _closing_over(kind: str) -> Any:
    def f(x: Any) -> Any:
        def g(y: Any) -> Any:
            return x + y

        def g_jvp(primals: Any, tangents: Any) -> Any:
            return g(primals[0]), 2.0 * tangents[0]

        if kind == "jext":
            prim = jext.primitive("hijax_twins.err_closure")(lambda y, /: g(y))
            prim.def_jvp(lambda p, t: (prim(p[0]), 2.0 * t[0]))
            return prim(1.0)
        twin = jax.custom_jvp(g)
        twin.defjvp(g_jvp)
        return twin(1.0)

    return f


def _with_batching(name: str) -> tuple[Any, Any]:
    prim = jext.primitive(f"hijax_twins.err_{name}")(lambda x, /: jnp.sin(x))
    prim.def_batching(lambda args, dims: ((jnp.sin(args[0]), 1.0), (dims[0], None)))
    twin = jax.custom_batching.custom_vmap(jnp.sin)
    twin.def_vmap(lambda size, batched, x: ((jnp.sin(x), 1.0), (batched[0], False)))
    return prim, twin


V = jnp.asarray([0.3, -0.7, 1.1])


def _error_cases() -> dict[str, tuple[Any, Any, Any]]:
    """name -> (jext primitive, JAX twin, how both are run)."""
    jvp = lambda f: jax.jvp(f, (V,), (V,))  # noqa: E731
    grad = lambda f: jax.grad(lambda x: f(x).sum())(V)  # noqa: E731
    return {
        "jvp-not-a-pair": (*_with_jvp(lambda f: lambda p, t: t[0], "pair"), jvp),
        "jvp-tangent-shape": (*_with_jvp(_jvp_tangent_shape, "tshape"), jvp),
        "jvp-primal-tree": (*_with_jvp(_jvp_primal_tree, "ptree"), jvp),
        "fwd-primal-tree": (
            *_with_vjp(lambda f: lambda x: ((f(x), f(x)), x), lambda x, g: (g,), "ftree"),
            # JAX checks fwd's results where it traces them (here in a scan), as jext does
            lambda f: jax.grad(lambda x: lax.scan(lambda c, _: (f(c), None), x, length=1)[0].sum())(
                V
            ),
        ),
        "bwd-not-a-tuple": (
            *_with_vjp(lambda f: lambda x: (f(x), x), lambda x, g: g, "btuple"),
            grad,
        ),
        "bwd-shape": (
            *_with_vjp(lambda f: lambda x: (f(x), x), lambda x, g: (g[:1],), "bshape"),
            grad,
        ),
        "jvp-of-vjp-only": (
            *_with_vjp(lambda f: lambda x: (f(x), x), lambda x, g: (g,), "fwdmode"),
            jvp,
        ),
        "closure": (_closing_over("jext"), _closing_over("twin"), lambda f: jax.grad(f)(3.0)),
        "batching-tree": (*_with_batching("btree"), lambda f: jax.vmap(f)(V)),
    }


ERROR_CASES = _error_cases()


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_a_rule_error_is_also_the_error_jax_raises(case: str) -> None:
    ours, twin, run = ERROR_CASES[case]
    with pytest.raises(Exception) as theirs:  # any type: JAX's is the oracle
        run(twin)
    jax_type = type(theirs.value)
    with pytest.raises(jext.RuleError) as raised:
        run(ours)
    assert isinstance(raised.value, jax_type), (jax_type, raised.value)
    assert "hijax_twins.err_" in str(raised.value)


def test_differentiating_a_nondifferentiable_primitive_is_jaxs_not_implemented() -> None:
    prim = jext.primitive("hijax_twins.err_nondiff")(lambda x, /: jnp.floor(x))
    prim.def_nondifferentiable()
    plain = jax.extend.core.Primitive("hijax_twins_plain_nondiff")
    plain.def_impl(jnp.floor)
    plain.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError):
        jax.jvp(plain.bind, (V,), (V,))
    with pytest.raises(jext.RuleError) as raised:
        jax.jvp(prim, (V,), (V,))
    assert isinstance(raised.value, NotImplementedError)


# --- collectives of unbatched values ------------------------------------------------------


def _psum_of_unbatched(x: Any) -> Any:
    return lax.psum(x * x, "i") * jnp.sin(x), lax.axis_index("i") * x


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: jax.vmap(lambda v: f(X[0]), axis_name="i", out_axes=(None, 0))(X),
        lambda f: jax.jit(jax.vmap(f, in_axes=None, axis_name="i", axis_size=3))(X[0]),
        lambda f: jax.grad(lambda w: jax.vmap(lambda v: f(w)[0], axis_name="i", out_axes=None)(X))(
            X[1]
        ),
        lambda f: jax.vmap(
            jax.grad(lambda w: f(w)[0]), in_axes=None, axis_name="i", axis_size=3, out_axes=None
        )(X[1]),
        # the primitive batched by an inner vmap first, then by the named one
        lambda f: jax.vmap(
            lambda u: jax.vmap(lambda w: f(w)[0], axis_name="j")(X),
            in_axes=None,
            axis_size=3,
            axis_name="i",
            out_axes=None,
        )(X[0]),
    ],
    ids=["out_axes-None", "jit-in_axes-None", "grad", "vmap-grad", "nested"],
)
def test_a_collective_of_an_unbatched_value_is_unbatched_as_in_jax(transform: Any) -> None:
    """``psum`` of an unbatched value is unbatched (``out_axes=None`` works), ``axis_index``
    is batched, as in the plain function."""
    prim = jext.primitive("hijax_twins.psum_unbatched")(lambda x, /: _psum_of_unbatched(x))
    close(transform(prim), transform(_psum_of_unbatched))


# --- batching rules under batched tangents: custom_vmap's in_batched ------------------------


@jext.primitive("hijax_twins.by_flags")
def by_flags(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return jnp.sin(x) * y


@by_flags.def_batching
def _by_flags_batching(args: Any, dims: Any) -> Any:
    """Batched in x: cos x * y; else the reference (so which flags it got shows)."""
    (x, y), (dx, dy) = args, dims
    x = x if dx is None else jnp.moveaxis(x, dx, 0)
    y = y if dy is None else jnp.moveaxis(y, dy, 0)
    out = (jnp.cos(x) if dx is not None else jnp.sin(x)) * y
    return out, 0 if (dx is not None or dy is not None) else None


@jax.custom_batching.custom_vmap
def by_flags_twin(x: Any, y: Any) -> Any:
    return jnp.sin(x) * y


@by_flags_twin.def_vmap
def _by_flags_twin_rule(size: int, in_batched: Any, x: Any, y: Any) -> Any:
    bx, by = in_batched
    out = (jnp.cos(x) if bx else jnp.sin(x)) * y
    return out, bx or by


BATCHED_TANGENTS = {
    "jacfwd": lambda f: jax.jacfwd(f, (0, 1))(X, Y),
    "vmap-jvp-tangents": lambda f: jax.vmap(lambda t: jax.jvp(f, (X, Y), (t, W)), in_axes=0)(
        jnp.stack([X, Y, W])
    ),
    "vmap-jvp-primals": lambda f: jax.vmap(lambda x: jax.jvp(f, (x, Y), (W, Y))[1], in_axes=0)(
        jnp.stack([X, Y, W])
    ),
    "vmap-jvp-both": lambda f: jax.vmap(lambda x, t: jax.jvp(f, (x, Y), (t, W)))(
        jnp.stack([X, Y]), jnp.stack([W, X])
    ),
    "jit-jacfwd": lambda f: jax.jit(jax.jacfwd(f, (0, 1)))(X, Y),
}


@pytest.mark.parametrize("transform", list(BATCHED_TANGENTS.values()), ids=list(BATCHED_TANGENTS))
def test_batched_tangents_call_the_batching_rule_as_custom_vmap_does(transform: Any) -> None:
    close(transform(by_flags), transform(by_flags_twin))


def test_with_only_tangents_batched_the_rule_is_told_nothing_is_batched() -> None:
    seen: list[tuple[Any, ...]] = []

    @jext.primitive("hijax_twins.asserts_flags")
    def asserts_flags(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    @asserts_flags.def_batching
    def _(args: Any, dims: Any) -> Any:
        seen.append(tuple(dims))
        return jnp.sin(args[0]), dims[0]

    close(jax.jacfwd(asserts_flags)(X), jnp.diag(jnp.cos(X)))
    assert seen == [(None,)]


# --- symbolic zeros in VJP rules: custom_vjp(symbolic_zeros=True)'s conventions ------------

SEEN: dict[str, list[Any]] = {"jext": [], "twin": []}


def _sz_fwd(kind: str) -> Any:
    def fwd(x: Any, y: Any) -> Any:
        SEEN[kind].append(("fwd", x.perturbed, y.perturbed))
        # save only the residuals the perturbed operands need
        return (x.value * jnp.sin(y.value), x.value + y.value), (
            jnp.sin(y.value) if x.perturbed else None,
            x.value * jnp.cos(y.value) if y.perturbed else None,
        )

    return fwd


def _sz_bwd(kind: str) -> Any:
    def bwd(res: Any, cts: Any) -> Any:
        g, h = cts
        zero = jax.custom_derivatives.SymbolicZero
        SEEN[kind].append(("bwd", isinstance(g, zero), isinstance(h, zero)))
        sin_y, x_cos_y = res
        gx = None if sin_y is None else (0.0 if isinstance(g, zero) else 3.0 * g * sin_y)
        gy = None if x_cos_y is None else (0.0 if isinstance(g, zero) else g * x_cos_y)
        if not isinstance(h, zero):
            gx = h if gx is None else gx + h
            gy = h if gy is None else gy + h
        # a zero cotangent may be returned as a symbolic zero
        return (zero(jax.typeof(X).to_tangent_aval()) if gx is None else gx, gy)

    return bwd


@jext.primitive("hijax_twins.sz")
def sz(x: jax.Array, y: jax.Array, /) -> tuple[jax.Array, jax.Array]:
    return x * jnp.sin(y), x + y


sz.def_vjp(_sz_fwd("jext"), _sz_bwd("jext"), symbolic_zeros=True)


@jax.custom_vjp
def sz_twin(x: Any, y: Any) -> Any:
    return x * jnp.sin(y), x + y


sz_twin.defvjp(_sz_fwd("twin"), _sz_bwd("twin"), symbolic_zeros=True)

SYMBOLIC_ZEROS = {
    "grad-x": lambda f: jax.grad(lambda x: f(x, Y)[0].sum())(X),
    "grad-y": lambda f: jax.grad(lambda y: f(X, y)[0].sum())(Y),
    "grad-both-second": lambda f: jax.grad(lambda x, y: f(x, y)[1].sum(), (0, 1))(X, Y),
    "grad-both": lambda f: jax.grad(lambda x, y: jnp.sum(f(x, y)[0] * f(x, y)[1]), (0, 1))(X, Y),
    "jit-grad": lambda f: jax.jit(jax.grad(lambda x: f(x, Y)[0].sum()))(X),
    "vjp": lambda f: jax.vjp(f, X, Y)[1]((W, X)),
    "jacrev": lambda f: jax.jacrev(lambda x, y: f(x, y)[0], (0, 1))(X, Y),
    "vmap-grad": lambda f: jax.vmap(jax.grad(lambda x, y: f(x, y)[0].sum()))(
        jnp.stack([X, Y]), jnp.stack([Y, X])
    ),
    "grad-vmap": lambda f: jax.grad(lambda x: jax.vmap(f)(x, Y)[0].sum())(X),
    "checkpoint": lambda f: jax.grad(jax.checkpoint(lambda x: f(x, Y)[0].sum()))(X),
    "scan": lambda f: jax.grad(
        lambda x: lax.scan(lambda c, s: (c + f(x * s, Y)[0].sum(), None), 0.0, W)[0]
    )(X),
}


@pytest.mark.parametrize("transform", list(SYMBOLIC_ZEROS.values()), ids=list(SYMBOLIC_ZEROS))
def test_vjp_rules_with_symbolic_zeros_are_custom_vjps(transform: Any) -> None:
    for seen in SEEN.values():
        seen.clear()
    close(transform(sz), transform(sz_twin))
    # what the rules were told (JAX may trace them more often: scan's body twice)
    assert set(SEEN["jext"]) == set(SEEN["twin"]), SEEN


def test_a_custom_vjp_with_symbolic_zeros_is_adopted() -> None:
    adopted = jext.primitive("hijax_twins.sz_adopted")(sz_twin)
    for seen in SEEN.values():
        seen.clear()
    got = jax.grad(lambda y: adopted(X, y)[0].sum())(Y)
    jext_seen = list(SEEN["twin"])
    SEEN["twin"].clear()
    close(got, jax.grad(lambda y: sz_twin(X, y)[0].sum())(Y))
    assert jext_seen == SEEN["twin"] == [("fwd", False, True), ("bwd", False, True)]


# --- accumulating backward rules (hijax's vjp_bwd(res, g, *accums)) -------------------------

ACCUM_SEEN: list[tuple[str, ...]] = []


def _acc_bwd(res: Any, g: Any, x_acc: Any, y_acc: Any) -> None:
    x, y = res
    ACCUM_SEEN.append((type(x_acc).__name__, type(y_acc).__name__))
    if not isinstance(x_acc, jext.NullAccum):
        x_acc.accum(2.0 * g * jnp.sin(y))  # accumulated in two parts: 3 g sin y
        x_acc.accum(g * jnp.sin(y))
    y_acc.accum(g * x * jnp.cos(y))  # a NullAccum ignores it


@jext.primitive("hijax_twins.accumulating")
def accumulating(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return x * jnp.sin(y)


accumulating.def_vjp(_fwd(lambda x, y: x * jnp.sin(y)), _acc_bwd, accumulate=True)


@pytest.mark.parametrize("transform", list(REVERSE.values()), ids=list(REVERSE))
def test_accumulating_bwd_is_custom_vjps_with_the_summed_cotangents(transform: Any) -> None:
    close(transform(accumulating), transform(vjp_twin))


def test_an_operand_needing_no_cotangent_gets_a_null_accumulator() -> None:
    ACCUM_SEEN.clear()
    jax.grad(lambda y: accumulating(X, y).sum())(Y)
    assert ACCUM_SEEN == [("NullAccum", "GradAccum")]
    ACCUM_SEEN.clear()
    jax.grad(lambda x, y: accumulating(x, y).sum(), (0, 1))(X, Y)
    assert ACCUM_SEEN == [("GradAccum", "GradAccum")]


@needs_hijax
@pytest.mark.skipif(
    jax.__version_info__ < (0, 9),
    reason="jax 0.8's VJPHiPrimitive has no lowering of call_hi_primitive under grad",
)
def test_an_accumulating_bwd_is_a_hijax_vjp_bwd() -> None:
    assert VJPHiPrimitive is not None

    class Acc(_x_sin_y_hi()):  # type: ignore[misc]
        def vjp_fwd(self, *args: Any) -> Any:
            # jax 0.9 and newer pass which operands are differentiated first; 0.8 does not.
            x, y = args[-2:]
            return self(x, y), (x, y)

        def vjp_bwd(self, res: Any, g: Any, x_acc: Any, y_acc: Any) -> None:
            x, y = res
            if isinstance(x_acc, _hijax_grad_accum()):
                x_acc.accum(3.0 * g * jnp.sin(y))
            if isinstance(y_acc, _hijax_grad_accum()):
                y_acc.accum(g * x * jnp.cos(y))

    def hijax_acc(x: Any, y: Any) -> Any:
        return Acc(jax.typeof(x), jax.typeof(y))(x, y)

    for name in ("grad", "jit-grad", "vjp", "grad-jit", "grad-scan"):
        close(REVERSE[name](accumulating), REVERSE[name](hijax_acc), name)


def test_jext_check_fails_a_wrong_accumulating_bwd() -> None:
    def make(name: str, factor: float) -> Any:
        prim = jext.primitive(f"hijax_twins.{name}")(lambda x, /: jnp.sin(x))

        def bwd(x: Any, g: Any, acc: Any) -> None:
            acc.accum(factor * jnp.cos(x) * g)

        prim.def_vjp(lambda x: (prim(x), x), bwd, accumulate=True)
        prim.def_examples(lambda: [jext.Example(np.linspace(-1.5, 1.5, 5, dtype=np.float32))])
        return prim

    wrong = make("checked_wrong_accum", 2.0)
    result = run_check(wrong, "jvp", wrong.examples())
    assert result.status == "fail" and "finite differences" in result.message
    right = make("checked_right_accum", 1.0)
    assert run_check(right, "jvp", right.examples()).status == "pass"


def test_an_accumulating_bwd_that_returns_cotangents_says_so() -> None:
    prim = jext.primitive("hijax_twins.err_accum_returns")(lambda x, /: jnp.sin(x))
    prim.def_vjp(lambda x: (prim(x), x), lambda x, g, acc: (g,), accumulate=True)
    with pytest.raises(jext.RuleError, match="accumulating") as raised:
        jax.grad(lambda x: prim(x).sum())(X)
    assert isinstance(raised.value, TypeError)


# --- custom linearization: def_linearize(lin, linearized) (hijax's lin/linearized) ----------

LIN_CALLS: list[str] = []


def _lin(x: Any, y: Any) -> Any:
    LIN_CALLS.append("lin")
    return x * jnp.sin(y), (jnp.sin(y), 2.0 * x)


def _linearized(res: Any, tx: Any, ty: Any) -> Any:
    sin_y, two_x = res
    return tx * sin_y + two_x * ty  # the JVP rule _jvp_rule's tangent: 2x, not x cos y


@jext.primitive("hijax_twins.lin_only")
def lin_only(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return x * jnp.sin(y)


lin_only.def_linearize(_lin, _linearized)


@jext.primitive("hijax_twins.lin_and_jvp")
def lin_and_jvp(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return x * jnp.sin(y)


lin_and_jvp.def_linearize(_lin, _linearized)


@lin_and_jvp.def_jvp
def _lin_and_jvp_jvp(primals: Any, tangents: Any) -> Any:
    (x, y), (tx, _) = primals, tangents
    return lin_and_jvp(x, y), 5.0 * tx  # forward mode's own rule, deliberately different


@pytest.mark.parametrize(
    "transform", [*FORWARD.values(), *REVERSE.values()], ids=[*FORWARD, *REVERSE]
)
def test_a_linearization_alone_serves_every_mode_as_a_jvp_rule_does(transform: Any) -> None:
    """Without def_jvp, jvp is derived from lin and linearized (hijax's jvp_from_lin): every
    mode is custom_jvp's with the equivalent JVP rule."""
    close(transform(lin_only), transform(jvp_twin))


@needs_mode
def test_linearize_and_reverse_mode_run_the_linearization_jvp_runs_the_jvp_rule() -> None:
    _, lin_fn = jax.linearize(lin_and_jvp, X, Y)
    close(lin_fn(W, Y), jax.linearize(jvp_twin, X, Y)[1](W, Y))
    close(_grad(lin_and_jvp)(X, Y), _grad(jvp_twin)(X, Y))
    close(jax.jvp(lin_and_jvp, (X, Y), (W, Y))[1], 5.0 * W)


@needs_mode
def test_linearize_saves_the_residuals_and_runs_lin_once() -> None:
    LIN_CALLS.clear()
    _, f_lin = jax.linearize(lin_only, X, Y)
    f_lin(W, Y)
    f_lin(Y, W)
    assert LIN_CALLS == ["lin"]
    # the linear part reads the saved sin y; it does not compute it again
    assert "sin" not in str(jax.make_jaxpr(f_lin)(W, Y))


@needs_hijax
@needs_mode
def test_a_linearization_is_a_hijax_lin() -> None:
    hijax_both = _hijax_twin()
    close(jax.linearize(lin_and_jvp, X, Y)[1](W, Y), jax.linearize(hijax_both, X, Y)[1](W, Y))


def test_jext_check_fails_a_wrong_linearized() -> None:
    def make(name: str, factor: float) -> Any:
        prim = jext.primitive(f"hijax_twins.{name}")(lambda x, /: jnp.sin(x))
        prim.def_linearize(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, t: factor * c * t)
        prim.def_examples(lambda: [jext.Example(np.linspace(-1.5, 1.5, 5, dtype=np.float32))])
        return prim

    wrong = make("checked_wrong_linearized", 2.0)
    result = run_check(wrong, "jvp", wrong.examples())
    assert result.status == "fail" and "finite differences" in result.message
    right = make("checked_right_linearized", 1.0)
    assert run_check(right, "jvp", right.examples()).status == "pass"
    assert run_check(right, "transpose", right.examples()).status == "pass"


# --- concrete values in eager calls -------------------------------------------------------


def test_an_eager_call_gives_the_reference_concrete_values_as_custom_jvp_does() -> None:
    prim = jext.primitive("hijax_twins.branchy_call")(lambda x, /: _branchy(x))
    twin = jax.custom_jvp(_branchy)
    twin.defjvp(lambda p, t: (twin(p[0]), t[0]))
    for x in (2.0, -2.0, np.float32(0.5)):
        close(prim(x), twin(x))
    for f in (prim, twin):  # under jit both raise JAX's usual error
        with pytest.raises(jax.errors.TracerBoolConversionError):
            jax.jit(f)(2.0)


def test_rule_sources_name_a_linearization() -> None:
    assert lin_only.rule_sources()["linearize"] == "custom"
    assert lin_only.rule_sources()["jvp"] == "linearize"
    assert lin_and_jvp.rule_sources()["jvp"] == "custom"
    assert "linearize" in lin_only.rules.custom_kinds()
    assert both.rule_sources()["linearize"] == "none"


# --- a reference with Python control flow on values, called eagerly --------------------
# As a custom_jvp/custom_vjp function and a hijax primitive's ``expand``, the reference
# and the rules see concrete values under an eager jvp or grad; under jit, JAX's error.


def _branchy(x: Any) -> Any:
    if x > 0:
        return 2.0 * jnp.sin(x)
    return jnp.cos(x)


def _branchy_jvp(f: Any) -> Any:
    def rule(primals: Any, tangents: Any) -> Any:
        (x,), (t,) = primals, tangents
        return f(x), (3.0 if x > 0 else -1.0) * t  # deliberately not the derivative

    return rule


def _branchy_fwd(f: Any) -> Any:
    return lambda x: (f(x), x)


def _branchy_bwd(x: Any, g: Any) -> Any:
    return ((5.0 if x > 0 else -7.0) * g,)  # deliberately not the derivative, nor the JVP


@jext.primitive("hijax_twins.branchy")
def branchy(x: jax.Array, /) -> jax.Array:
    return _branchy(x)


@jext.primitive("hijax_twins.branchy_jvp")
def branchy_jvp(x: jax.Array, /) -> jax.Array:
    return _branchy(x)


branchy_jvp.def_jvp(_branchy_jvp(branchy_jvp))


@jext.primitive("hijax_twins.branchy_vjp")
def branchy_vjp(x: jax.Array, /) -> jax.Array:
    return _branchy(x)


branchy_vjp.def_vjp(_branchy_fwd(branchy_vjp), _branchy_bwd)


@jext.primitive("hijax_twins.branchy_lin")
def branchy_lin(x: jax.Array, /) -> jax.Array:
    return _branchy(x)


branchy_lin.def_linearize(lambda x: (branchy_lin(x), x), lambda x, t: (3.0 if x > 0 else -1.0) * t)

branchy_jvp_twin = jax.custom_jvp(_branchy)
branchy_jvp_twin.defjvp(_branchy_jvp(branchy_jvp_twin))
branchy_vjp_twin = jax.custom_vjp(_branchy)
branchy_vjp_twin.defvjp(_branchy_fwd(_branchy), _branchy_bwd)

EAGER_FORWARD = {
    "call": lambda f, x: f(x),
    "jvp": lambda f, x: jax.jvp(f, (x,), (jnp.float32(0.5),)),
    "jacfwd": lambda f, x: jax.jacfwd(f)(x),
    "linearize": lambda f, x: jax.linearize(f, x)[1](jnp.float32(0.5)),
}
EAGER_REVERSE = {
    "grad": lambda f, x: jax.grad(f)(x),
    "vjp": lambda f, x: jax.vjp(f, x)[1](jnp.float32(0.5)),
    "jacrev": lambda f, x: jax.jacrev(f)(x),
    "value_and_grad": lambda f, x: jax.value_and_grad(f)(x),
}
EAGER = {**EAGER_FORWARD, **EAGER_REVERSE}
SIGNS = [jnp.float32(0.7), jnp.float32(-0.4)]


@pytest.mark.parametrize("x", SIGNS, ids=["positive", "negative"])
@pytest.mark.parametrize("transform", list(EAGER.values()), ids=list(EAGER))
def test_an_eagerly_differentiated_reference_sees_concrete_values(transform: Any, x: Any) -> None:
    """Derived rules: the same code as plain JAX is the oracle."""
    close(transform(branchy, x), transform(_branchy, x))


@pytest.mark.parametrize("x", SIGNS, ids=["positive", "negative"])
@pytest.mark.parametrize("transform", list(EAGER.values()), ids=list(EAGER))
def test_an_eager_jvp_rule_sees_concrete_values_as_in_custom_jvp(transform: Any, x: Any) -> None:
    close(transform(branchy_jvp, x), transform(branchy_jvp_twin, x))


@pytest.mark.parametrize("x", SIGNS, ids=["positive", "negative"])
@pytest.mark.parametrize("transform", list(EAGER_REVERSE.values()), ids=list(EAGER_REVERSE))
def test_eager_vjp_rules_see_concrete_values_as_in_custom_vjp(transform: Any, x: Any) -> None:
    close(transform(branchy_vjp, x), transform(branchy_vjp_twin, x))


@pytest.mark.parametrize("x", SIGNS, ids=["positive", "negative"])
@pytest.mark.parametrize("transform", list(EAGER.values()), ids=list(EAGER))
def test_an_eager_linearization_sees_concrete_values(transform: Any, x: Any) -> None:
    """``lin``/``linearized`` are the JVP rule's two halves: custom_jvp with that rule."""
    close(transform(branchy_lin, x), transform(branchy_jvp_twin, x))


@pytest.mark.parametrize(
    ("ours", "twin"),
    [
        (branchy, _branchy),
        (branchy_jvp, branchy_jvp_twin),
        (branchy_vjp, branchy_vjp_twin),
        (branchy_lin, branchy_jvp_twin),
    ],
    ids=["derived", "jvp", "vjp", "linearize"],
)
@pytest.mark.parametrize(
    "transform",
    [
        lambda f: jax.jit(f)(SIGNS[0]),
        lambda f: jax.jit(jax.grad(f))(SIGNS[0]),
        lambda f: jax.grad(jax.jit(f))(SIGNS[0]),
        lambda f: jax.vmap(f)(jnp.stack(SIGNS)),
    ],
    ids=["jit", "jit-grad", "grad-jit", "vmap"],
)
def test_traced_control_flow_raises_jaxs_concretization_error(
    ours: Any, twin: Any, transform: Any
) -> None:
    with pytest.raises(jax.errors.ConcretizationTypeError):
        transform(twin)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        transform(ours)


def test_an_eager_grad_of_a_branchy_reference_keeps_its_compiled_calls() -> None:
    """Eager calls of a reference that traces stay compiled: the fallback is only taken by
    references that need concrete values."""
    jax.grad(branchy)(SIGNS[0])
    calls = branchy._calls
    assert len(calls) == 0  # nothing reusable was prepared for a reference that branches
    assert both(X, Y).shape == X.shape and len(both._calls) >= 1


def _hijax_branchy() -> Any:
    assert VJPHiPrimitive is not None

    class Branchy(VJPHiPrimitive):  # type: ignore[misc, valid-type]
        def __init__(self, x_aval: Any) -> None:
            self.in_avals = (x_aval,)
            self.out_aval = x_aval
            self.params = {}
            super().__init__()

        def expand(self, x: Any) -> Any:
            return _branchy(x)

        def jvp(self, primals: Any, tangents: Any) -> Any:
            (t,) = tangents
            t = jnp.zeros_like(primals[0]) if _jax.is_symbolic_zero(t) else t
            return _branchy_jvp(hijax_branchy)(primals, (t,))

        def lin(self, nzs: Any, x: Any) -> Any:  # the JVP rule linearized, by hand
            return hijax_branchy(x), jnp.float32(3.0 if x > 0 else -1.0)

        def linearized(self, slope: Any, t: Any) -> Any:  # traced: no branch on values
            return slope * (jnp.zeros_like(slope) if _jax.is_symbolic_zero(t) else t)

        def vjp_fwd(self, nzs: Any, x: Any) -> Any:
            return hijax_branchy(x), x

        def vjp_bwd_retval(self, res: Any, g: Any) -> Any:
            return _branchy_bwd(res, g)

        def batch(self, axis_data: Any, args: Any, dims: Any) -> Any:
            return _elementwise_batch(hijax_branchy, args, dims, axis_data.size)

    def hijax_branchy(x: Any) -> Any:
        x = jnp.asarray(x, jnp.float32)
        return Branchy(jax.typeof(x))(x)

    return hijax_branchy


@jext.primitive("hijax_twins.branchy_both")
def branchy_both(x: jax.Array, /) -> jax.Array:
    return _branchy(x)


branchy_both.def_jvp(_branchy_jvp(branchy_both))
branchy_both.def_vjp(_branchy_fwd(branchy_both), _branchy_bwd)


@needs_hijax
@needs_mode
@pytest.mark.parametrize("x", SIGNS, ids=["positive", "negative"])
@pytest.mark.parametrize("transform", list(EAGER.values()), ids=list(EAGER))
def test_an_eager_reference_with_both_rules_is_a_hijax_expand(transform: Any, x: Any) -> None:
    close(transform(branchy_both, x), transform(_hijax_branchy(), x))
