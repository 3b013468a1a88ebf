"""jext primitives against plain-JAX twins built from the same rules (``custom_jvp``,
``custom_vjp``, ``custom_vmap``, collectives), for what the composition matrix in
``tests/test_compositions.py`` does not reach: operands that are Python scalars, NumPy
scalars and 0-d (weak) arrays; closures over traced values; collectives under named axes;
VJP rules; the cases plain JAX refuses.  Every rule differs from the reference's
derivative or vectorization on purpose, so a rule that stops applying changes a number.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental import io_callback

import jext
import jext.testing
from tests.host_devices import run_on_four_cpus

ROOT = Path(__file__).resolve().parent.parent


def close(ours: Any, twin: Any, what: str = "") -> None:
    assert jax.tree.structure(ours) == jax.tree.structure(twin), what
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(twin), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=2e-6, err_msg=what)


# --- rule sets and their twins -------------------------------------------------------------


@jext.primitive("twins.ste")
def ste(x: jax.Array, /) -> jax.Array:
    return jnp.round(x)


@ste.def_jvp
def _ste_jvp(primals: Any, tangents: Any) -> Any:
    return ste(primals[0]), tangents[0]  # the tangent passed through unchanged


@jax.custom_jvp
def ste_twin(x: Any) -> Any:
    return jnp.round(x)


@ste_twin.defjvp
def _ste_twin_jvp(primals: Any, tangents: Any) -> Any:
    return ste_twin(primals[0]), tangents[0]


@jext.primitive("twins.cube")
def cube(x: jax.Array, /) -> jax.Array:
    return x * x * x


@cube.def_jvp
def _cube_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return cube(x), 2.0 * x * t  # not 3 x^2: a rule that differs from the derivative


@jax.custom_jvp
def cube_twin(x: Any) -> Any:
    return x * x * x


@cube_twin.defjvp
def _cube_twin_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return cube_twin(x), 2.0 * x * t


@jext.primitive("twins.scale")
def scale(x: jax.Array, /) -> jax.Array:
    return 2.0 * x


@scale.def_transpose
def _scale_transpose(ct: Any, x: Any) -> Any:
    return (3.0 * ct,)  # a transpose that is not the reference's: 3, not 2


@jext.primitive("twins.neg")
def neg(x: jax.Array, /) -> jax.Array:
    return jnp.negative(x)


@neg.def_jvp
def _neg_jvp(primals: Any, tangents: Any) -> Any:
    return neg(primals[0]), neg(tangents[0])  # linear: reverse mode transposes the reference


@jax.custom_jvp
def neg_twin(x: Any) -> Any:
    return jnp.negative(x)


@neg_twin.defjvp
def _neg_twin_jvp(primals: Any, tangents: Any) -> Any:
    return neg_twin(primals[0]), neg_twin(tangents[0])


@jext.primitive("twins.sin_by_cos")
def sin_by_cos(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@sin_by_cos.def_batching
def _sin_by_cos_batching(args: Any, dims: Any) -> Any:
    return jnp.cos(args[0]), dims[0]


@jax.custom_batching.custom_vmap
def sin_by_cos_twin(x: Any) -> Any:
    return jnp.sin(x)


@sin_by_cos_twin.def_vmap
def _sin_by_cos_twin_rule(axis_size: int, in_batched: Any, x: Any) -> Any:
    return jnp.cos(x), in_batched[0]


@jext.primitive("twins.mul_vjp")
def mul_vjp(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return jnp.sin(x) * y


def _mul_fwd(x: Any, y: Any) -> Any:
    return mul_vjp(x, y), (jnp.cos(x), x, y)


def _mul_bwd(res: Any, ct: Any) -> Any:
    c, x, y = res
    return 3.0 * c * y * ct, jnp.sin(x) * ct  # d/dx tripled on purpose


mul_vjp.def_vjp(_mul_fwd, _mul_bwd)


@jax.custom_vjp
def mul_vjp_twin(x: Any, y: Any) -> Any:
    return jnp.sin(x) * y


mul_vjp_twin.defvjp(lambda x, y: (mul_vjp_twin(x, y), (jnp.cos(x), x, y)), _mul_bwd)


# --- A. Python scalars, NumPy scalars and 0-d arrays, given to and returned by rules ----------

OPERANDS: dict[str, Callable[[], Any]] = {
    "python float": lambda: 0.7,
    "numpy scalar": lambda: np.float32(0.7),
    "0-d array": lambda: jnp.asarray(0.7, jnp.float32),
    "weak 0-d array": lambda: jnp.asarray(0.7),
}
CUSTOM_JVPS = [(ste, ste_twin), (cube, cube_twin), (neg, neg_twin)]


@pytest.mark.parametrize("kind", list(OPERANDS))
@pytest.mark.parametrize(("ours", "twin"), CUSTOM_JVPS, ids=["ste", "cube", "neg"])
def test_custom_jvp_rules_take_and_give_scalars_as_custom_jvp_does(
    kind: str, ours: Any, twin: Any
) -> None:
    x = OPERANDS[kind]()
    for what, t in [
        ("jvp", lambda f: jax.jvp(f, (x,), (x,))),
        ("jvp of a Python scalar tangent", lambda f: jax.jvp(f, (x,), (1.0,))),
        ("grad", lambda f: jax.grad(f)(x)),
        ("jit grad", lambda f: jax.jit(jax.grad(f))(x)),
        ("vmap grad", lambda f: jax.vmap(jax.grad(f))(jnp.asarray([x, 2 * x]))),
        ("linearize", lambda f: jax.linearize(f, x)[1](2.0)),
    ]:
        close(t(ours), t(twin), f"{kind}: {what}")


def test_linear_transpose_of_a_python_scalar_runs_the_rule() -> None:
    assert float(jax.linear_transpose(scale, 0.0)(1.0)[0]) == 3.0
    assert float(jax.grad(scale)(5.0)) == 3.0
    got = jax.linear_transpose(scale, np.float32(0.0))(np.float32(2.0))[0]
    assert float(got) == 6.0


# --- B. closures over traced values ----------------------------------------------------------


def _times_a(a: Any, x: Any) -> Any:
    @jext.primitive("twins.times_a")
    def times_a(v: jax.Array, /) -> jax.Array:
        return jnp.sin(a) * v

    return times_a(x)


@pytest.mark.parametrize(
    "transform",
    [
        jax.jit,
        jax.vmap,
        lambda f: jax.vmap(f, in_axes=(0, None)),
        lambda f: jax.grad(lambda a, x: f(a, x).sum(), argnums=(0, 1)),
        lambda f: jax.jit(jax.vmap(jax.grad(f, argnums=(0, 1)))),
        lambda f: lambda a, x: jax.jvp(f, (a, x), (jnp.ones_like(a), jnp.ones_like(x))),
    ],
    ids=["jit", "vmap", "vmap-a", "grad", "jit-vmap-grad", "jvp"],
)
def test_a_reference_closing_over_a_traced_value_is_its_plain_function(transform: Any) -> None:
    a = jnp.asarray([0.3, -1.2, 2.0])
    x = jnp.asarray([1.5, 0.25, -0.5])
    close(transform(_times_a)(a, x), transform(lambda a, x: jnp.sin(a) * x)(a, x))


def test_a_primitive_defined_per_call_is_one_equation_with_its_closure() -> None:
    jaxpr = jax.make_jaxpr(_times_a)(1.0, 2.0)
    (eqn,) = jaxpr.eqns if len(jaxpr.eqns) == 1 else [e for e in jaxpr.eqns if "times_a" in str(e)]
    assert eqn.primitive.name == "twins.times_a"
    for _ in range(20):  # defined again per call: never "already defined"
        jax.jit(_times_a)(0.5, 1.0)


def _custom_jvp_closing_over(a: Any, x: Any, *, twin: bool) -> Any:
    scale_a = jnp.sign(a) + 2.0  # a value with no tangent, even when a has one
    if twin:

        @jax.custom_jvp
        def f(v: Any) -> Any:
            return jnp.tanh(v) * scale_a

        f.defjvp(lambda p, t: (f(p[0]), 2.0 * scale_a * t[0]))
        return f(x)

    @jext.primitive("twins.custom_closure")
    def g(v: jax.Array, /) -> jax.Array:
        return jnp.tanh(v) * scale_a

    g.def_jvp(lambda p, t: (g(p[0]), 2.0 * scale_a * t[0]))
    return g(x)


@pytest.mark.parametrize(
    ("transform", "batched"),
    [
        (lambda f: jax.grad(f, argnums=1), False),
        (lambda f: jax.jit(jax.grad(f, argnums=(0, 1))), False),
        (lambda f: jax.vmap(jax.grad(f, argnums=1)), True),
    ],
    ids=["grad", "jit-grad", "vmap-grad"],
)
def test_a_custom_jvp_closing_over_a_traced_value_is_custom_jvps(
    transform: Any, batched: bool
) -> None:
    a, x = jnp.asarray([0.3, -1.2]), jnp.asarray([1.5, 0.25])
    if not batched:
        a, x = a[0], x[0]
    ours = transform(lambda a, x: _custom_jvp_closing_over(a, x, twin=False))
    twin = transform(lambda a, x: _custom_jvp_closing_over(a, x, twin=True))
    close(ours(a, x), twin(a, x))


def test_a_custom_jvp_cannot_see_the_tangent_of_a_value_it_closes_over() -> None:
    def f(a: Any) -> Any:
        @jext.primitive("twins.sees_no_tangent")
        def g(v: jax.Array, /) -> jax.Array:
            return a * v

        g.def_jvp(lambda p, t: (g(p[0]), a * t[0]))
        return g(2.0)

    # JAX raises UnexpectedTracerError for the same custom_jvp; jext names the primitive.
    with pytest.raises(jext.RuleError, match=r"'twins\.sees_no_tangent'.*being differentiated"):
        jax.grad(f)(1.5)


def _custom_vjp_closing_over(a: Any, y: Any, *, kind: str) -> Any:
    """``a y`` whose VJP rules close over ``a`` too and give ``cos(y) a`` on purpose (not the
    reference's ``a``): plain ``custom_vjp``, adopted, or written with ``def_vjp``."""

    def fwd(v: Any) -> Any:
        return a * v, jnp.cos(v)

    def bwd(c: Any, g: Any) -> Any:
        return (c * g * a,)

    if kind == "native":

        @jext.primitive("twins.vjp_closure")
        def p(v: jax.Array, /) -> jax.Array:
            return a * v

        p.def_vjp(fwd, bwd)
        return p(y)
    f = jax.custom_vjp(lambda v: a * v)
    f.defvjp(fwd, bwd)
    return (jext.primitive("twins.vjp_closure_adopted")(f) if kind == "adopted" else f)(y)


A3, Y3 = jnp.asarray([0.0, 1.0, 2.0]), jnp.asarray([3.0, -0.5, 1.25])
VJP_CLOSURE_CASES: dict[str, tuple[Callable[[Any], Any], tuple[Any, Any]]] = {
    "grad": (lambda f: jax.grad(f, argnums=1), (A3[2], Y3[1])),
    "vmap-grad": (lambda f: jax.vmap(jax.grad(f, argnums=1)), (A3, Y3)),
    "jit-vmap-grad-shared-y": (
        lambda f: jax.jit(jax.vmap(jax.grad(f, argnums=1), (0, None))),
        (A3, Y3[0]),
    ),
}


@pytest.mark.parametrize("case", list(VJP_CLOSURE_CASES))
@pytest.mark.parametrize("kind", ["native", "adopted"])
def test_a_custom_vjp_closing_over_a_traced_value_is_custom_vjps(case: str, kind: str) -> None:
    transform, args = VJP_CLOSURE_CASES[case]
    ours = transform(lambda a, y: _custom_vjp_closing_over(a, y, kind=kind))
    twin = transform(lambda a, y: _custom_vjp_closing_over(a, y, kind="jax"))
    close(ours(*args), twin(*args))


@pytest.mark.parametrize("kind", ["native", "adopted"])
def test_a_custom_vjp_cannot_differentiate_a_value_it_closes_over(kind: str) -> None:
    # JAX raises UnexpectedTracerError for the same custom_vjp; jext names the primitive.
    with pytest.raises(jext.RuleError, match=r"being differentiated"):
        jax.grad(lambda a: _custom_vjp_closing_over(a, 3.0, kind=kind))(1.5)


def test_a_rule_closing_over_a_vmapped_value_differentiated_outside_says_what_to_do() -> None:
    """``custom_jvp`` batches its rule with the closure and runs; a primitive's rule cannot
    see the batch axis of a value it closes over: a RuleError naming the primitive."""

    def outside(z: Any, adopt: bool) -> Any:
        def inside(x: Any) -> Any:
            g = jax.custom_jvp(lambda y: x * y)
            g.defjvp(lambda p, t: (x * p[0], x * t[0]))
            return (jext.primitive("twins.rule_closure") if adopt else lambda f: f)(g)(z)

        return jax.vmap(inside)(jnp.arange(3.0))

    want = (jnp.asarray([0.0, 1.0, 2.0]), jnp.asarray([0.0, 2.0, 4.0]))
    close(jax.jvp(lambda z: outside(z, False), (1.0,), (2.0,)), want)
    with pytest.raises(jext.RuleError, match=r"'twins\.rule_closure'.*pass that value as an"):
        jax.jvp(lambda z: outside(z, True), (1.0,), (2.0,))


# --- C. a linear reference is transposed when no rule is given -------------------------------


def test_grad_through_a_jvp_that_applies_the_primitive_to_tangents() -> None:
    for x in (3.0, jnp.asarray([1.0, -2.0])):
        close(jax.grad(lambda v: neg(v).sum())(x), jax.grad(lambda v: neg_twin(v).sum())(x))
        close(jax.vjp(neg, x)[1](x), jax.vjp(neg_twin, x)[1](x))


def test_a_nonlinear_reference_without_a_transpose_rule_says_so() -> None:
    @jext.primitive("twins.not_linear")
    def square(x: jax.Array, /) -> jax.Array:
        return x * x

    square.def_jvp(lambda p, t: (square(p[0]), square(t[0])))
    with pytest.raises(jext.TransposeError, match="reference is not linear"):
        jax.grad(square)(3.0)


# --- D. collectives in references --------------------------------------------------------


def _collectives() -> list[tuple[str, Callable[[Any], Any]]]:
    return [
        ("psum", lambda x: lax.psum(x, "i") * jnp.sin(x)),
        ("pmean", lambda x: lax.pmean(x * x, "i")),
        ("all_gather", lambda x: lax.all_gather(x, "i").sum(0) * x),
        ("axis_index", lambda x: x * (lax.axis_index("i") + 1.0)),
        ("ppermute", lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]) * jnp.cos(x)),
    ]


@pytest.mark.parametrize(("name", "fn"), _collectives(), ids=[n for n, _ in _collectives()])
def test_collectives_in_a_reference_under_a_named_vmap(name: str, fn: Any) -> None:
    prim = jext.primitive(f"twins.collective_{name}")(lambda x, /: fn(x))
    x = jnp.asarray([0.5, -1.25, 2.0])
    for what, t in [
        ("vmap", lambda f: jax.vmap(f, axis_name="i")),
        ("jit vmap", lambda f: jax.jit(jax.vmap(f, axis_name="i"))),
        ("grad vmap", lambda f: jax.grad(lambda v: jax.vmap(f, axis_name="i")(v).sum())),
        ("vmap grad", lambda f: jax.vmap(jax.grad(f), axis_name="i")),
        ("pmap", lambda f: jax.pmap(f, axis_name="i")),
    ]:
        if what == "pmap":  # one CPU device here: a one-example batch
            if name != "ppermute":  # its permutation needs three devices
                close(t(prim)(x[:1]), t(fn)(x[:1]), f"{name}: {what}")
            continue
        close(t(prim)(x), t(fn)(x), f"{name}: {what}")


def test_a_collective_of_an_unbatched_operand_is_batched_by_its_axis() -> None:
    psum = jext.primitive("twins.psum_unbatched")(lambda x, /: lax.psum(x, "i"))
    x = jnp.asarray([1.0, 2.0, 3.0])
    got = jax.vmap(lambda v: psum(x[0]) + v, axis_name="i")(x)
    close(got, jax.vmap(lambda v: lax.psum(x[0], "i") + v, axis_name="i")(x))


SHARD_MAP_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P
import jext

def plain(x):
    return lax.psum(x * x, "i") * jnp.sin(x) + lax.all_gather(x, "i").sum(0)

ours = jext.primitive("twins.shard_mapped")(lambda x, /: plain(x))
mesh = Mesh(np.array(jax.devices()[:4]), ("i",))
def run(f):
    g = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
    x = jnp.linspace(-1.0, 2.0, 8)
    return g(x), jax.grad(lambda v: g(v).sum())(x)
for a, b in zip(run(ours), run(plain)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=2e-6)
print("OK")
"""


def test_collectives_in_a_reference_under_shard_map() -> None:
    done = run_on_four_cpus(SHARD_MAP_SCRIPT, JEXT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stdout + done.stderr


# --- E. a batching rule's derivatives are custom_vmap's ----------------------------------------

XS = jnp.asarray([0.3, 1.1, -0.7])
TS = jnp.asarray([1.0, -2.0, 0.5])


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: jax.vmap(lambda x, t: jax.jvp(f, (x,), (t,)))(XS, TS),
        lambda f: jax.jvp(jax.vmap(f), (XS,), (TS,)),
        lambda f: jax.jacfwd(f)(XS),
        lambda f: jax.vmap(lambda t: jax.jvp(f, (0.4,), (t,))[1])(TS),
        lambda f: jax.vmap(lambda x: jax.jvp(f, (x,), (2.0,)))(XS),
        lambda f: jax.grad(lambda x: jax.vmap(f)(x).sum())(XS),
        lambda f: jax.jvp(f, (0.4,), (2.0,)),
    ],
    ids=["vmap-jvp", "jvp-vmap", "jacfwd", "extra-tangents", "extra-primals", "grad-vmap", "jvp"],
)
def test_batching_rule_derivatives_match_custom_vmap(transform: Any) -> None:
    close(transform(sin_by_cos), transform(sin_by_cos_twin))


def test_reverse_mode_of_a_batched_rule_agrees_with_forward_mode() -> None:
    # custom_vmap refuses reverse mode under vmap; jext differentiates the rule there too,
    # so each reverse-mode composition equals its forward-mode counterpart.
    close(
        jax.vmap(jax.grad(sin_by_cos))(XS),
        jax.vmap(lambda x: jax.jvp(sin_by_cos_twin, (x,), (1.0,))[1])(XS),
    )
    close(jax.jacrev(sin_by_cos)(XS), jax.jacfwd(sin_by_cos_twin)(XS))
    close(jax.vmap(jax.grad(jax.grad(sin_by_cos)))(XS), -jnp.cos(XS))
    close(jax.grad(sin_by_cos)(0.4), jnp.cos(0.4))  # unbatched: the reference's


def test_a_batching_rule_result_of_the_wrong_shape_is_a_rule_error() -> None:
    @jext.primitive("twins.bad_batch_shape")
    def f(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    f.def_batching(lambda args, dims: (jnp.sin(args[0][0]), 0))  # one example, not the batch
    with pytest.raises(
        jext.RuleError, match=r"batching rule of primitive 'twins\.bad_batch_shape'"
    ):
        jax.vmap(f)(jnp.ones((3, 3)))


# --- VJP rules ----------------------------------------------------------------------------

X2 = jnp.asarray([0.3, -0.7, 1.1])
Y2 = jnp.asarray([1.2, 0.4, -0.8])


def _loss(f: Any) -> Any:
    return lambda x, y: jnp.sum(f(x, y) * jnp.asarray([1.0, 2.0, -1.0]))


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: jax.grad(_loss(f), (0, 1))(X2, Y2),
        lambda f: jax.jit(jax.grad(_loss(f), (0, 1)))(X2, Y2),
        lambda f: jax.vjp(f, X2, Y2)[1](Y2),
        lambda f: jax.jacrev(f, (0, 1))(X2, Y2),
        lambda f: jax.vmap(jax.grad(_loss(f), (0, 1)))(jnp.stack([X2, Y2]), jnp.stack([Y2, X2])),
        lambda f: jax.grad(lambda x, y: jax.vmap(f)(x, y).sum(), (0, 1))(X2, Y2),
        lambda f: jax.vmap(jax.grad(_loss(f), (0, 1)), (0, None))(jnp.stack([X2, Y2]), Y2),
        lambda f: jax.grad(jax.checkpoint(_loss(f)), (0, 1))(X2, Y2),
        lambda f: jax.grad(lambda v: jax.grad(_loss(f))(v, Y2).sum())(X2),
        lambda f: jax.grad(
            lambda x, y: lax.scan(lambda c, s: (c + _loss(f)(x * s, y), None), 0.0, XS)[0],
            (0, 1),
        )(X2, Y2),
        lambda f: jax.grad(lambda x: f(x, 2.0))(0.5),
    ],
    ids=[
        "grad",
        "jit-grad",
        "vjp",
        "jacrev",
        "vmap-grad",
        "grad-vmap",
        "vmap-grad-shared",
        "checkpoint",
        "grad-grad",
        "scan",
        "scalars",
    ],
)
def test_vjp_rules_are_custom_vjps(transform: Any) -> None:
    close(transform(mul_vjp), transform(mul_vjp_twin))


def _where_computed(jaxpr: Any, name: str, inside: str = "") -> list[str]:
    """Where each ``name`` equation of ``jaxpr`` is: ``""`` at the top, else the names of
    the equations it is nested in (``"remat2"`` inside a checkpoint)."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == name:
            found.append(inside)
        for param in eqn.params.values():
            for sub in param if isinstance(param, list | tuple) else [param]:
                inner = sub if hasattr(sub, "eqns") else getattr(sub, "jaxpr", None)
                if hasattr(inner, "eqns"):
                    found += _where_computed(inner, name, f"{inside}/{eqn.primitive.name}")
    return found


@pytest.mark.parametrize(
    "policy", ["everything_saveable", "nothing_saveable", "dots_saveable"], ids=str
)
def test_checkpoint_policies_save_or_recompute_a_vjp_rules_residuals_as_jax_does(
    policy: str,
) -> None:
    """``cos x``, a residual of the forward rule, is saved or recomputed in the backward
    pass where the policy says, as for ``custom_vjp``; the gradients are the twin's."""
    saving = getattr(jax.checkpoint_policies, policy)

    def grad(f: Any) -> Any:
        return jax.grad(jax.checkpoint(_loss(f), policy=saving), (0, 1))

    close(grad(mul_vjp)(X2, Y2), grad(mul_vjp_twin)(X2, Y2), policy)
    where = {
        name: _where_computed(jax.make_jaxpr(grad(f))(X2, Y2).jaxpr, "cos")
        for name, f in (("ours", mul_vjp), ("twin", mul_vjp_twin))
    }
    assert where["ours"] == where["twin"], where


def test_linear_transpose_of_a_vjp_rule_runs_its_bwd_where_jax_refuses() -> None:
    """``sin(x) y`` is linear in ``y``: ``jax.linear_transpose`` runs the backward rule
    (``custom_vjp`` raises NotImplementedError there)."""
    ct = jnp.asarray([1.0, -2.0, 0.5])
    (got,) = jax.linear_transpose(lambda y: mul_vjp(X2, y), Y2)(ct)
    close(got, jnp.sin(X2) * ct)
    with pytest.raises(NotImplementedError):
        jax.linear_transpose(lambda y: mul_vjp_twin(X2, y), Y2)(ct)


def test_a_bwd_may_return_anything_for_an_integer_operand_as_custom_vjp_allows() -> None:
    """``bwd`` gives ``1`` for the integer operand: dropped, its cotangent is float0 zeros."""

    def fwd(x: Any, n: Any) -> Any:
        return x * n, n

    def bwd(n: Any, g: Any) -> Any:
        return g * n, 1

    twin = jax.custom_vjp(lambda x, n: x * n)
    twin.defvjp(fwd, bwd)
    ours = jext.primitive("twins.int_operand_vjp")(twin)
    for run in (
        lambda f: jax.grad(f, argnums=(0, 1), allow_int=True)(2.0, 3),
        lambda f: jax.jit(lambda n: jax.vjp(f, 0.5, n)[1](1.0))(4),
    ):
        want, got = run(twin), run(ours)
        close(got[0], want[0])
        assert got[1].dtype == want[1].dtype == jax.dtypes.float0


def test_a_vjp_rule_gives_no_forward_mode_and_says_so() -> None:
    for forward in (
        lambda f: jax.jvp(f, (X2, Y2), (X2, Y2)),
        lambda f: jax.jacfwd(f)(X2, Y2),
        lambda f: jax.jit(lambda x, y: jax.jvp(f, (x, y), (x, y)))(X2, Y2),
    ):
        with pytest.raises(TypeError):
            forward(mul_vjp_twin)
        with pytest.raises(jext.RuleError, match=r"'twins\.mul_vjp' has a VJP rule"):
            forward(mul_vjp)


def test_a_bwd_of_the_wrong_shape_is_a_rule_error() -> None:
    @jext.primitive("twins.bad_bwd")
    def f(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    f.def_vjp(lambda x: (f(x), x), lambda x, ct: (ct[0],))
    with pytest.raises(jext.RuleError, match=r"bwd\) of primitive 'twins\.bad_bwd'"):
        jax.grad(lambda v: f(v).sum())(X2)


def test_def_vjp_and_def_transpose_are_exclusive() -> None:
    @jext.primitive("twins.both_reverse")
    def f(x: jax.Array, /) -> jax.Array:
        return 2.0 * x

    f.def_vjp(lambda x: (f(x), None), lambda _, ct: (2.0 * ct,))
    with pytest.raises(jext.DefinitionError, match="def_vjp and def_transpose"):
        f.def_transpose(lambda ct, x: (2.0 * ct,))


def test_the_check_holds_a_vjp_rule_to_finite_differences() -> None:
    def make(name: str, factor: float) -> Any:
        @jext.primitive(name)
        def f(x: jax.Array, /) -> jax.Array:
            return jnp.sin(x)

        f.def_vjp(lambda x: (f(x), jnp.cos(x)), lambda c, ct: (factor * c * ct,))
        f.def_examples(lambda: [jext.Example(np.linspace(-1.0, 1.0, 5, dtype=np.float32))])
        return f

    checks = ["jvp", "transpose", "higher_order"]
    good = jext.testing.check_primitive(make("twins.vjp_checked", 1.0), checks=checks)
    by_check = {r.check: r.status for r in good.results}
    assert by_check == {"jvp": "pass", "transpose": "n/a", "higher_order": "pass"}, by_check
    with pytest.raises(AssertionError, match=r"FAIL +jvp"):
        jext.testing.check_primitive(make("twins.vjp_wrong", 1.5), checks=checks)


# --- adopting an existing custom_jvp / custom_vjp function ---------------------------------


def test_a_custom_jvp_function_becomes_a_primitive_with_its_rule() -> None:
    adopted = jext.primitive("twins.adopted_cube")(cube_twin)
    assert jax.make_jaxpr(adopted)(1.0).eqns[0].primitive.name == "twins.adopted_cube"
    x = jnp.asarray([0.5, -1.5])
    for t in (
        lambda f: jax.grad(lambda v: f(v).sum())(x),
        lambda f: jax.jvp(f, (x,), (x,)),
        lambda f: jax.vmap(jax.grad(f))(x),
        lambda f: jax.jit(jax.jacrev(f))(x),
    ):
        close(t(adopted), t(cube_twin))


def test_a_custom_vjp_function_becomes_a_primitive_with_its_rules() -> None:
    adopted = jext.primitive("twins.adopted_mul")(mul_vjp_twin)
    assert adopted.rule_sources()["vjp"] == "custom"
    for t in (
        lambda f: jax.grad(_loss(f), (0, 1))(X2, Y2),
        lambda f: jax.vmap(jax.grad(_loss(f), (0, 1)))(jnp.stack([X2, Y2]), jnp.stack([Y2, X2])),
    ):
        close(t(adopted), t(mul_vjp_twin))
    with pytest.raises(jext.RuleError, match="has a VJP rule"):
        jax.jvp(adopted, (X2, Y2), (X2, Y2))


def test_a_rule_returning_a_pair_for_one_result_is_a_rule_error_naming_the_primitive() -> None:
    """JAX's flash-attention case: the rule returns ``(x, x)`` where the function returns
    ``x``; JAX raises TypeError naming the rule, jext a RuleError naming the primitive."""
    jvp_f = jax.custom_jvp(lambda x: x)
    jvp_f.defjvp(lambda p, t: ((p[0], p[0]), (t[0], t[0])))
    vjp_f = jax.custom_vjp(lambda x: x)
    vjp_f.defvjp(lambda x: ((x, x), None), lambda _, g: (g,))
    for kind, f in (("jvp", jvp_f), ("fwd", vjp_f)):
        ours = jext.primitive(f"twins.pair_from_{kind}")(f)

        def scanned(x: Any, ours: Any = ours) -> Any:
            return lax.scan(lambda c, _: (ours(c), None), x, None, length=1)[0]

        with pytest.raises(jext.RuleError, match=rf"{kind} rule of primitive .*wrong structure"):
            jax.grad(scanned)(jnp.float32(1.0))


def test_a_custom_vjp_with_symbolic_zeros_is_adopted_with_its_conventions() -> None:
    """Its fwd takes ``CustomVJPPrimal`` values, as the primitive's then does."""
    f = jax.custom_vjp(lambda x: 2.0 * x)
    f.defvjp(lambda x: (2.0 * x.value, None), lambda _, g: (3.0 * g,), symbolic_zeros=True)
    adopted = jext.primitive("twins.adopt_vjp_symbolic_zeros")(f)
    assert adopted.rules.vjp_symbolic_zeros
    close(jax.grad(adopted)(0.5), jax.grad(f)(0.5))


def test_a_custom_function_with_nondiff_argnums_is_refused_with_the_alternative() -> None:
    jvp_nondiff = jax.custom_jvp(lambda n, x: x * n, nondiff_argnums=(0,))
    with pytest.raises(jext.DefinitionError, match="keyword-only static params"):
        jext.primitive("twins.adopt_nondiff")(jvp_nondiff)


def _order_and_x_twin() -> Any:
    """``custom_jvp(symbolic_zeros=True)`` differentiable in ``x`` only, as SciPy wrappers
    such as ``kv(v, x)`` are: its rule refuses any tangent of ``v`` but JAX's symbolic zero,
    and gives a derivative that differs from the reference's (``1.5 v cos x``)."""

    @jax.custom_jvp
    def f(v: Any, x: Any) -> Any:
        return v * jnp.sin(x)

    def rule(primals: Any, tangents: Any) -> Any:
        v, x = primals
        tv, tx = tangents
        if not isinstance(tv, jax.custom_derivatives.SymbolicZero):
            raise NotImplementedError("not differentiable in v")
        if isinstance(tx, jax.custom_derivatives.SymbolicZero):
            return f(v, x), tx  # JAX's own zero, returned as the output tangent
        return f(v, x), 1.5 * v * jnp.cos(x) * tx

    f.defjvp(rule, symbolic_zeros=True)
    return f


SYMBOLIC_TRANSFORMS: dict[str, Callable[[Any], Any]] = {
    "grad": lambda f: jax.grad(lambda x: f(V3, x).sum())(X3),
    "jit(grad)": lambda f: jax.jit(jax.grad(lambda x: f(V3, x).sum()))(X3),
    "jvp": lambda f: jax.jvp(lambda x: f(V3, x), (X3,), (jnp.cos(X3),)),
    "vmap(grad)": lambda f: jax.vmap(jax.grad(lambda x, v: f(v, x)))(X3, V3),
    "jacfwd": lambda f: jax.jacfwd(lambda x: f(V3, x))(X3),
    "hessian": lambda f: jax.hessian(lambda x: f(V3, x).sum())(X3),
    "python scalar v": lambda f: jax.grad(lambda x: f(2.0, x).sum())(X3),
}
V3 = jnp.asarray([2.0, -0.5, 3.0])
X3 = jnp.asarray([0.3, 1.1, -0.7])


@pytest.mark.parametrize("transform", list(SYMBOLIC_TRANSFORMS), ids=str)
def test_symbolic_zeros_are_jaxs_own_to_adopted_and_ported_rules(transform: str) -> None:
    """A rule written for ``custom_jvp(symbolic_zeros=True)`` tests its zero tangents with
    ``jax.custom_derivatives.SymbolicZero`` and may return one: adopted, or registered with
    ``def_jvp(symbolic_zeros=True)``, it runs unchanged and equals its twin."""
    twin = _order_and_x_twin()
    adopted = jext.primitive("twins.sz_adopted")(twin)

    @jext.primitive("twins.sz_ported")
    def ported(v: Any, x: Any, /) -> Any:
        return v * jnp.sin(x)

    ported.def_jvp(
        lambda primals, tangents, **_: twin.jvp(primals, tangents),
        symbolic_zeros=True,
    )
    run = SYMBOLIC_TRANSFORMS[transform]
    want = run(twin)
    close(run(adopted), want, transform)
    close(run(ported), want, transform)


def test_a_tangent_the_rule_refuses_raises_its_error_as_in_jax() -> None:
    twin = _order_and_x_twin()
    adopted = jext.primitive("twins.sz_refused")(twin)
    for f in (twin, adopted):
        with pytest.raises(NotImplementedError, match="not differentiable in v"):
            jax.jvp(lambda v, f=f: f(v, X3), (V3,), (V3,))


def test_jexts_symbolic_zero_is_jaxs_own() -> None:
    """Rules that test ``type(t) is SymbolicZero``, as JAX's own tests do, see it too."""
    assert jext.SymbolicZero is jax.custom_derivatives.SymbolicZero
    zero = jext.SymbolicZero(jax.core.ShapedArray((2, 3), jnp.float32))
    assert (zero.shape, zero.dtype, zero.ndim) == ((2, 3), jnp.float32, 2)

    @jax.custom_jvp
    def f(x: Any, y: Any) -> Any:
        return x * y

    def rule(primals: Any, tangents: Any) -> Any:
        tx, ty = tangents
        exact = jax.custom_derivatives.SymbolicZero
        return f(*primals), ty if type(tx) is exact else tx if type(ty) is exact else tx + ty

    f.defjvp(rule, symbolic_zeros=True)
    adopted = jext.primitive("twins.sz_exact_type")(f)
    for g in (f, adopted):
        assert jax.jacfwd(jax.jit(g))(0.1, 0.2) == 1.0


# --- effects: carried, as the same effect in a plain function is ------------------------------


def _effects_of(f: Callable[..., Any], *args: Any) -> list[Any]:
    """What the callbacks in ``f`` saw when ``f`` ran under ``jit`` with its result unused."""
    seen.clear()
    jax.jit(lambda *a: (f(*a), a[0])[1])(*args)
    jax.effects_barrier()
    return list(seen)


seen: list[Any] = []


def _note(tag: str) -> Callable[[Any], Any]:
    def note(v: Any) -> Any:
        seen.append((tag, np.asarray(v).round(4).tolist()))
        return np.asarray(v)

    return note


def _with_debug_callback(x: Any) -> Any:
    jax.debug.callback(_note("debug"), x)
    return jnp.sin(x)


def _with_ordered_callbacks(x: Any) -> Any:
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)  # type: ignore[no-untyped-call]
    a = io_callback(_note("first"), shape, x, ordered=True)
    return io_callback(_note("second"), shape, a * 2.0, ordered=True)


def test_an_unordered_effect_is_kept_when_the_result_is_unused() -> None:
    prim = jext.primitive("twins.debug_callback")(lambda x, /: _with_debug_callback(x))
    x = jnp.asarray([0.5, 1.5])
    assert _effects_of(prim, x) == _effects_of(_with_debug_callback, x) == [("debug", [0.5, 1.5])]
    jaxpr = jax.make_jaxpr(lambda v: (prim(v), v)[1])(x)
    assert [e.primitive.name for e in jaxpr.eqns] == ["twins.debug_callback"]


def test_ordered_effects_run_in_order_under_jit_scan_and_grad() -> None:
    prim = jext.primitive("twins.ordered_callbacks")(lambda x, /: _with_ordered_callbacks(x))
    x = jnp.asarray([0.5, 1.5])
    for what, t in [
        ("jit twice", lambda f: jax.jit(lambda v: f(v) + f(v + 1.0))(x)),
        ("scan", lambda f: jax.lax.scan(lambda c, s: (c + f(x * s).sum(), None), 0.0, XS)[0]),
        ("cond", lambda f: jax.jit(lambda v: lax.cond(v[0] > 0, f, lambda u: u * 3.0, v))(x)),
    ]:
        seen.clear()
        ours = t(prim)
        jax.effects_barrier()
        ours_seen = list(seen)
        seen.clear()
        twin = t(_with_ordered_callbacks)
        jax.effects_barrier()
        close(ours, twin, what)
        assert ours_seen == seen, what
    # io_callback has no JVP: JAX and jext refuse grad alike; with a JVP rule (below) the
    # callbacks run in order in the forward pass.
    for f in (_with_ordered_callbacks, prim):
        with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
            jax.grad(lambda v, f=f: f(v).sum())(x)
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        jax.vmap(_with_ordered_callbacks)(jnp.ones((2, 2)))
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        jax.vmap(prim)(jnp.ones((2, 2)))


def test_ordered_effects_in_the_forward_pass_of_grad_run_in_order() -> None:
    @jext.primitive("twins.ordered_with_jvp")
    def ours(x: jax.Array, /) -> jax.Array:
        return _with_ordered_callbacks(x)

    ours.def_jvp(lambda p, t: (ours(p[0]), 2.0 * t[0]))

    @jax.custom_jvp
    def twin(x: Any) -> Any:
        return _with_ordered_callbacks(x)

    twin.defjvp(lambda p, t: (twin(p[0]), 2.0 * t[0]))
    x = jnp.asarray([0.5, 1.5])
    runs = []
    for f in (ours, twin):
        seen.clear()
        grads = jax.jit(jax.grad(lambda v, f=f: (f(v) * f(2.0 * v)).sum()))(x)
        jax.effects_barrier()
        runs.append((grads, list(seen)))
    close(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1] and len(runs[0][1]) == 4, runs
