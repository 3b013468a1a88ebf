"""Behaviours a JAX user expects from a primitive JAX itself would ship, one test each.

Each test fails on a core that lacks the behaviour it names.  Primitives are named
``regress.*``; every test that depends on when rules are frozen defines its own primitive.
"""

from __future__ import annotations

import copy
import gc
import inspect
import os
import pickle
import subprocess
import sys
import textwrap
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

import jext
import jext.lowering
from jext.primitives import CACHE_SIZE
from tests import regress_prims
from tests.host_devices import run_on_four_cpus

ROOT = Path(__file__).resolve().parents[1]
X = jnp.array([0.3, -1.2, 2.6, 0.49], jnp.float32)
M = jnp.array([[0.3, -1.2, 2.6], [1.7, 0.4, -0.8]], jnp.float32)


def eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a (closed) jaxpr, recursively through sub-jaxprs in params."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in value if isinstance(value, tuple | list) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    yield from eqns(sub)


def primitive_names(jaxpr: Any) -> list[str]:
    return [str(e.primitive) for e in eqns(jaxpr)]


# --- vmap keeps the primitive, so its rules keep applying -----------------------------------


@jext.primitive("regress.ste")
def ste(x: jax.Array, /) -> jax.Array:
    return jnp.round(x)


@ste.def_jvp
def _ste_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, jax.Array]:
    return ste(primals[0]), tangents[0]


def test_vmap_keeps_the_primitive_in_the_jaxpr() -> None:
    for f, arg in [
        (jax.vmap(ste), X),
        (jax.vmap(jax.vmap(ste), in_axes=1), M),
        (jax.vmap(lambda a, b: ste(a) * b, in_axes=(0, None)), (M, M[0])),
    ]:
        args = arg if isinstance(arg, tuple) else (arg,)
        names = primitive_names(jax.make_jaxpr(f)(*args))
        assert "regress.ste" in names, names
        assert "round" not in names, names


def test_grad_of_vmap_uses_the_custom_jvp() -> None:
    g = jax.grad(lambda v: jax.vmap(ste)(v).sum())(X)
    np.testing.assert_array_equal(g, np.ones(4, np.float32))
    np.testing.assert_array_equal(g, jax.vmap(jax.grad(ste))(X))


IMPL_CALLS: list[tuple[int, ...]] = []


@jext.primitive("regress.with_impl")
def with_impl(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@with_impl.def_impl
def _with_impl_impl(x: jax.Array) -> jax.Array:
    IMPL_CALLS.append(tuple(x.shape))
    return jnp.sin(x)


def test_custom_impl_runs_under_eager_vmap() -> None:
    IMPL_CALLS.clear()
    out = jax.vmap(with_impl)(M)
    np.testing.assert_allclose(out, np.sin(M), rtol=1e-6)
    assert IMPL_CALLS, "the custom impl was not called under eager vmap"


@jext.primitive("regress.platformed")
def platformed(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@platformed.def_lowering(platform="cpu")
def _platformed_cpu(x: jax.Array) -> jax.Array:
    return jnp.sin(x) + 1.0


@platformed.def_lowering(platform="tpu")
def _platformed_tpu(x: jax.Array) -> jax.Array:
    return jnp.tanh(x)


EXPECTED_RULES = {
    "cpu": {"regress.platformed": "_platformed_cpu"},
    "cuda": {"regress.platformed": "reference"},
    "rocm": {"regress.platformed": "reference"},
    "tpu": {"regress.platformed": "_platformed_tpu"},
}


def test_export_of_vmap_reports_the_rules_used() -> None:
    result = jext.lowering.export(jax.vmap(platformed), M)
    assert result.rules == EXPECTED_RULES
    np.testing.assert_allclose(result.call(M), np.sin(M) + 1.0, rtol=1e-6)
    tpu = jext.lowering.export(jax.vmap(platformed), M, platforms=["tpu"])
    assert "stablehlo.tanh" in tpu.exported.mlir_module()


def _double_kernel(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] * 2.0


@jext.primitive("regress.pallas_double")
def pallas_double(x: jax.Array, /) -> jax.Array:
    return 2.0 * x


@pallas_double.def_lowering(platform="cpu")
def _pallas_double_cpu(x: jax.Array) -> jax.Array:
    out = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(_double_kernel, out_shape=out, interpret=True)(x)


def test_grad_of_vmap_of_a_pallas_lowering() -> None:
    g = jax.grad(lambda m: jax.vmap(pallas_double)(m).sum())(M)
    np.testing.assert_allclose(g, np.full_like(M, 2.0))
    np.testing.assert_allclose(jax.vmap(pallas_double)(M), 2.0 * M)


# --- a transpose rule without a JVP rule is what reverse mode uses -------------------------

SHIFT_TRANSPOSES: list[str] = []


@jext.primitive("regress.shift")
def shift(x: jax.Array, /) -> jax.Array:
    """Shift right by one along the last axis, filling with zero."""
    return jnp.pad(x[..., :-1], [(0, 0)] * (x.ndim - 1) + [(1, 0)])


@shift.def_transpose
def _shift_transpose(ct: jax.Array, x: jext.LinearOperand) -> tuple[jax.Array]:
    SHIFT_TRANSPOSES.append("called")
    # The adjoint as a matrix product, so the grad jaxpr shows the rule (dot_general)
    # rather than the reference's own transpose (slice/pad).
    n = ct.shape[-1]
    return (ct @ jnp.eye(n, k=-1, dtype=ct.dtype),)


@pytest.mark.parametrize(
    "reverse",
    [
        pytest.param(jax.grad(lambda v: (shift(v) * jnp.cos(v)).sum()), id="grad"),
        pytest.param(lambda x: jax.vjp(shift, x)[1](jnp.cos(x))[0], id="vjp"),
        pytest.param(
            lambda x: jax.linear_transpose(shift, x)(jnp.cos(x))[0], id="linear_transpose"
        ),
        pytest.param(jax.jacrev(shift), id="jacrev"),
        pytest.param(jax.grad(lambda m: jax.vmap(shift)(m).sum()), id="grad_vmap"),
    ],
)
def test_reverse_mode_uses_the_transpose_rule(reverse: Any) -> None:
    SHIFT_TRANSPOSES.clear()
    jaxpr = jax.make_jaxpr(reverse)(M)
    assert SHIFT_TRANSPOSES, "the transpose rule was not called"
    assert "dot_general" in primitive_names(jaxpr)


def test_transpose_rule_gives_the_adjoint() -> None:
    ct = jnp.cos(M)
    (got,) = jax.vjp(shift, M)[1](ct)
    want = jnp.concatenate([ct[:, 1:], jnp.zeros((2, 1), ct.dtype)], axis=1)
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(jax.jacrev(shift)(X), jax.jacfwd(shift)(X))


# --- caches keyed by everything that changes the result -----------------------------------


def test_equal_static_params_of_different_types_are_different_calls() -> None:
    @jext.primitive("regress.scale_types")
    def scale(x: jax.Array, /, *, factor: Any) -> jax.Array:
        return x * factor

    xi = jnp.arange(4, dtype=jnp.int32)
    xb = jnp.array([True, False, True])

    def jitted(x: jax.Array, *, factor: Any) -> jax.Array:
        # One jit per value, the value closed over: jax.jit's own cache of static
        # arguments treats 2, 2.0 and True as one value in jax 0.8.3 (equal, same hash;
        # JAX issue 9273; 0.9.2 tells them apart).  That cache is JAX's; this test is
        # about jext's, on every supported JAX.
        return jax.jit(lambda v: scale(v, factor=factor))(x)

    for call in (scale, jitted):
        assert call(xi, factor=2.0).dtype == (xi * 2.0).dtype == jnp.float32
        assert call(xi, factor=2).dtype == (xi * 2).dtype == jnp.int32
        assert call(xb, factor=1).dtype == (xb * 1).dtype == jnp.int32
        assert call(xb, factor=True).dtype == (xb * True).dtype == jnp.bool_
    # The equation shows the param as the caller wrote it.
    assert "factor=2]" in str(jax.make_jaxpr(lambda v: scale(v, factor=2))(xi))
    assert "factor=2.0]" in str(jax.make_jaxpr(lambda v: scale(v, factor=2.0))(xi))
    assert "factor=True]" in str(jax.make_jaxpr(lambda v: scale(v, factor=True))(xb))


@pytest.mark.numerics
def test_x64_switch_is_seen_by_later_calls() -> None:
    @jext.primitive("regress.third")
    def third(x: jax.Array, /) -> jax.Array:
        return x.astype(float) / 3

    xi = np.arange(3, dtype=np.int32)
    assert third(xi).dtype == jnp.float32
    with jax.enable_x64(True):
        assert (xi.astype(float) / 3).dtype == np.float64
        assert third(xi).dtype == jnp.float64
        assert jax.jit(third)(xi).dtype == jnp.float64
        np.testing.assert_array_equal(third(xi), np.arange(3) / 3)
    assert third(xi).dtype == jnp.float32


# --- rules and reports never go stale --------------------------------------------------------


def test_exporting_twice_reports_the_same_rules() -> None:
    first = jext.lowering.export(platformed, X).rules
    second = jext.lowering.export(platformed, X).rules
    assert first == second == EXPECTED_RULES


def _sin(x: jax.Array) -> jax.Array:
    return jnp.sin(x)


LATE_RULES: dict[str, Any] = {
    "jvp": lambda p: p.def_jvp(lambda primals, tangents: (p(*primals), tangents[0])),
    "impl": lambda p: p.def_impl(_sin),
    "abstract_eval": lambda p: p.def_abstract_eval(lambda x: x),
    "transpose": lambda p: p.def_transpose(lambda ct, x: (ct,)),
    "batching": lambda p: p.def_batching(lambda args, dims: (jnp.sin(args[0]), dims[0])),
    "lowering": lambda p: p.def_lowering(_sin, platform="cpu"),
}


@pytest.mark.parametrize("kind", list(LATE_RULES))
def test_a_rule_defined_after_first_use_is_refused(kind: str) -> None:
    def reference(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    prim = jext.primitive(f"regress.late_{kind}")(reference)
    before = prim(X)
    with pytest.raises(jext.DefinitionError) as err:
        LATE_RULES[kind](prim)
    message = str(err.value)
    assert kind in message and f"regress.late_{kind}" in message, message
    # The refused rule changed nothing.
    np.testing.assert_array_equal(prim(X), before)
    np.testing.assert_array_equal(jax.jit(prim)(X), before)


def test_a_rule_defined_before_first_use_is_reported_and_used() -> None:
    @jext.primitive("regress.early_rule")
    def early(x: jax.Array, /) -> jax.Array:
        return jnp.sin(x)

    @early.def_lowering(platform="cpu")
    def early_cpu(x: jax.Array) -> jax.Array:
        return jnp.cos(x)

    assert early.lowering_platforms()["cpu"] == early_cpu.__qualname__
    rules = jext.lowering.export(early, X, platforms=["cpu"]).rules
    assert rules == {"cpu": {"regress.early_rule": early_cpu.__qualname__}}
    np.testing.assert_allclose(early(X), np.cos(X), rtol=1e-6)


# --- a primitive is a value -------------------------------------------------------------------


def test_copies_are_the_primitive_itself() -> None:
    p = regress_prims.picklable
    assert copy.copy(p) is p
    assert copy.deepcopy(p) is p
    assert copy.deepcopy({"f": [p]})["f"][0] is p
    np.testing.assert_allclose(copy.deepcopy(p)(X, power=3), X**3, rtol=1e-6)


def test_pickle_round_trips_by_name() -> None:
    p = regress_prims.picklable
    assert pickle.loads(pickle.dumps(p)) is p
    code = textwrap.dedent(
        """
        import pickle, sys
        import numpy as np
        p = pickle.loads(bytes.fromhex(sys.argv[1]))
        print(p.name, float(p(np.float32(3.0), power=2)))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", code, pickle.dumps(p).hex()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["regress.picklable", "9.0"]


def test_primitive_is_hashable_and_weakly_referenceable() -> None:
    p = regress_prims.picklable
    assert {p: 1}[p] == 1
    assert hash(p) == hash(copy.deepcopy(p))
    ref = weakref.ref(p)
    assert ref() is p


def test_primitive_carries_the_references_identity() -> None:
    p = regress_prims.picklable
    twin = regress_prims.picklable_twin
    assert p.__name__ == "picklable"
    assert p.__qualname__ == "picklable"
    assert p.__module__ == "tests.regress_prims"
    assert p.__doc__ == "``x ** power``, elementwise."
    assert p.__wrapped__ is p.reference
    assert inspect.signature(p) == inspect.signature(twin)
    assert inspect.signature(p) == inspect.signature(p.reference)


# --- the default JVP computes the forward once ------------------------------------------------


def _mlp3_reference(x: jax.Array, w1: jax.Array, w2: jax.Array, w3: jax.Array, /) -> jax.Array:
    for w in (w1, w2, w3):
        x = jnp.sin(x @ w)
    return x


mlp3 = jext.primitive("regress.mlp3")(_mlp3_reference)


def _work(jaxpr: Any, forward: dict[str, int]) -> dict[str, int]:
    """sin and dot_general equations, a ``regress.mlp3`` equation counting as its forward."""
    counts = {"sin": 0, "dot_general": 0}
    for eqn in eqns(jaxpr):
        name = str(eqn.primitive)
        if name.startswith("regress.mlp3"):
            for k in counts:
                counts[k] += forward[k]
        elif name in counts:
            counts[name] += 1
    return counts


def test_default_jvp_runs_the_forward_once() -> None:
    ws = [jnp.full((3, 3), 0.1 * (i + 1), jnp.float32) for i in range(3)]
    x = jnp.ones((2, 3), jnp.float32)
    forward = _work(jax.make_jaxpr(_mlp3_reference)(x, *ws), {})
    assert forward == {"sin": 3, "dot_general": 3}

    def loss(f: Any) -> Any:
        return jax.grad(lambda *a: f(*a).sum(), argnums=(0, 1, 2, 3))

    plain = _work(jax.make_jaxpr(loss(_mlp3_reference))(x, *ws), forward)
    ours_jaxpr = jax.make_jaxpr(loss(mlp3))(x, *ws)
    ours = _work(ours_jaxpr, forward)
    assert ours["sin"] <= plain["sin"], (ours, plain, ours_jaxpr)
    assert ours["dot_general"] <= plain["dot_general"], (ours, plain, ours_jaxpr)
    for a, b in zip(loss(mlp3)(x, *ws), loss(_mlp3_reference)(x, *ws), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# --- typed keys as operands and results --------------------------------------------------------


@jext.primitive("regress.uniform3")
def uniform3(k: jax.Array, /) -> jax.Array:
    return jax.random.uniform(k, (3,))


@jext.primitive("regress.split2")
def split2(k: jax.Array, /) -> jax.Array:
    return jax.random.split(k, 2)


@split2.def_abstract_eval
def _split2_abstract(k: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((*k.shape, 2), k.dtype)


def test_typed_key_operands() -> None:
    key = jax.random.key(7)
    keys = jax.random.split(key, 4)
    want = jax.random.uniform(key, (3,))
    np.testing.assert_array_equal(uniform3(key), want)
    np.testing.assert_array_equal(jax.jit(uniform3)(key), want)
    np.testing.assert_array_equal(
        jax.vmap(uniform3)(keys), jax.vmap(lambda k: jax.random.uniform(k, (3,)))(keys)
    )


def test_typed_key_results_with_a_custom_abstract_eval() -> None:
    key = jax.random.key(7)
    keys = jax.random.split(key, 4)
    want = jax.random.key_data(jax.random.split(key, 2))
    for out in (split2(key), jax.jit(split2)(key)):
        assert jax.dtypes.issubdtype(out.dtype, jax.dtypes.prng_key)
        assert out.shape == (2,)
        np.testing.assert_array_equal(jax.random.key_data(out), want)
    batched = jax.vmap(split2)(keys)
    assert batched.shape == (4, 2)
    np.testing.assert_array_equal(
        jax.random.key_data(batched),
        jax.random.key_data(jax.vmap(lambda k: jax.random.split(k, 2))(keys)),
    )


# --- explicit sharding --------------------------------------------------------------------------

SHARDING_SCRIPT = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
import jext

@jext.primitive("regress.softplus_sharded")
def softplus(x, /):
    return jnp.logaddexp(x, 0.0)

mesh = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
with jax.set_mesh(mesh):
    v = jax.device_put(np.linspace(-2, 2, 64, dtype=np.float32).reshape(16, 4),
                       NamedSharding(mesh, P("x", None)))
    plain = jax.make_jaxpr(lambda v: jnp.logaddexp(v, 0.0))(v)
    ours = jax.make_jaxpr(softplus)(v)
    print("PLAIN", plain.out_avals[0].str_short())
    print("OURS", ours.out_avals[0].str_short())
    assert "16@x" in str(ours), str(ours)
    g = jax.jit(jax.grad(lambda v: softplus(v).sum()))(v)
    np.testing.assert_allclose(np.asarray(g), 1 / (1 + np.exp(-np.asarray(v))), rtol=1e-6)
    print("GRAD", jax.typeof(g).str_short())
"""


def test_explicit_sharding_is_kept_in_output_avals() -> None:
    done = run_on_four_cpus(SHARDING_SCRIPT)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["OURS"] == lines["PLAIN"], lines
    assert "16@x" in lines["PLAIN"], lines
    assert lines["GRAD"] == lines["PLAIN"], lines


# --- caches are bounded ------------------------------------------------------------------------


def test_distinct_static_params_do_not_grow_memory_without_bound() -> None:
    @jext.primitive("regress.offset")
    def offset(x: jax.Array, /, *, c: float) -> jax.Array:
        return x + c

    def trace(n0: int, n1: int) -> None:
        for i in range(n0, n1):
            jax.make_jaxpr(lambda v, c=i * 0.5: offset(v, c=c))(X)

    # Past the documented bound of every jext cache, and past JAX's own cache of abstract
    # evaluations by equation params (2048 entries, which every primitive with params
    # fills), the live set stops growing.
    warm = 2 * CACHE_SIZE + 2048
    trace(0, warm)
    gc.collect()
    mid = len(gc.get_objects())
    trace(warm, warm + 2000)
    gc.collect()
    grown = len(gc.get_objects()) - mid
    # Unbounded, each distinct param set keeps about four objects (8000 here).
    assert grown < 1000, f"{grown} more live objects after 2000 more distinct static params"
