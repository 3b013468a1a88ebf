"""jext.primitive: definition, calling, the equation it binds, rule overrides and rule errors."""

from __future__ import annotations

import re
import struct
from typing import Any

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.lowering
from jext.primitives import defined_primitives
from jext.primitives._core import StaticParam, typed_key
from tests import prims

X = jnp.linspace(-1.0, 1.0, 4, dtype=jnp.float32)


def eqns(f: Any, *args: Any) -> list[Any]:
    return list(jax.make_jaxpr(f)(*args).jaxpr.eqns)


# --- definition ----------------------------------------------------------------------------


def test_one_equation_with_static_params_by_name() -> None:
    (eqn,) = eqns(lambda x: prims.softplus(x, beta=2.0), X)
    assert eqn.primitive.name == "tests.softplus"
    assert eqn.primitive is prims.softplus.jax_primitive
    assert dict(eqn.params) == {"beta": 2.0}
    printed = str(jax.make_jaxpr(lambda x: prims.softplus(x, beta=2.0))(X))
    assert "tests.softplus[beta=2.0]" in printed


def test_defaults_fill_static_params() -> None:
    (eqn,) = eqns(prims.softplus, X)
    assert dict(eqn.params) == {"beta": 1.0}


def test_pytree_operands_bind_flat_leaves() -> None:
    (eqn,) = eqns(lambda x: prims.polar({"x": x, "y": x}), X)
    assert len(eqn.invars) == 2 and len(eqn.outvars) == 2
    r, theta = prims.polar({"x": X, "y": X})
    np.testing.assert_allclose(r, np.hypot(X, X), rtol=1e-6)
    np.testing.assert_allclose(theta, np.arctan2(X, X), rtol=1e-6)


def test_facade_metadata_and_reference() -> None:
    assert prims.softplus.name == "tests.softplus"
    assert prims.softplus.reference is prims.softplus_ref
    assert prims.softplus.__doc__ == prims.softplus_ref.__doc__
    assert repr(prims.softplus) == "<jext.Primitive tests.softplus>"


def test_positional_or_keyword_operand_is_rejected_with_hint() -> None:
    with pytest.raises(jext.DefinitionError, match=r"add '/' after the operands"):

        @jext.primitive("tests.bad_signature")
        def bad(x, *, beta=1.0):  # type: ignore[no-untyped-def]
            return x


@pytest.mark.parametrize("name", ["softplus", "mylib.", ".op", "my lib.op", "a.1b"])
def test_name_must_be_namespaced(name: str) -> None:
    with pytest.raises(jext.DefinitionError, match="namespaced"):
        jext.primitive(name)


def test_var_keyword_and_reserved_params_are_rejected() -> None:
    with pytest.raises(jext.DefinitionError, match=r"\*\*kw"):
        jext.primitive("tests.var_kw")(lambda x, /, **kw: x)
    with pytest.raises(jext.DefinitionError, match="reserved"):
        jext.primitive("tests.reserved")(lambda x, /, *, jext_tree=None: x)


def _divide() -> tuple[Any, list[float]]:
    """A fresh ``divide(x, /, *, d)`` and the list of ``d`` its reference was traced with."""
    traced: list[float] = []

    @jext.primitive("tests.divide_by_static")
    def divide(x: jax.Array, /, *, d: float) -> jax.Array:
        traced.append(d)
        return x / d

    return divide, traced


def test_static_float_params_are_told_apart_by_sign_of_zero() -> None:
    """``0.0 == -0.0``, but ``x / -0.0`` is ``-inf``: asked after ``d=0.0``, ``d=-0.0``
    gets its own abstract evaluation, compiled impl and jaxpr param, eagerly and under jit."""
    divide, _ = _divide()
    ones = jnp.ones(2, jnp.float32)
    np.testing.assert_array_equal(divide(ones, d=0.0), [np.inf, np.inf])
    np.testing.assert_array_equal(divide(ones, d=-0.0), [-np.inf, -np.inf])
    np.testing.assert_array_equal(jax.jit(lambda v: divide(v, d=0.0))(ones), [np.inf, np.inf])
    np.testing.assert_array_equal(jax.jit(lambda v: divide(v, d=-0.0))(ones), [-np.inf, -np.inf])
    jaxpr = jax.make_jaxpr(lambda v: divide(v, d=-0.0))(ones)
    (eqn,) = jaxpr.jaxpr.eqns
    assert np.signbit(eqn.params["d"].value)
    np.testing.assert_array_equal(jax.extend.core.jaxpr_as_fun(jaxpr)(ones)[0], [-np.inf, -np.inf])


def test_a_nan_static_param_is_one_cache_entry_not_one_per_object() -> None:
    """``nan != nan``: keyed by value, every new nan object would trace and compile again."""
    divide, traced = _divide()
    ones = jnp.ones(2, jnp.float32)

    def call() -> None:
        assert np.isnan(divide(ones, d=float("nan"))).all()
        assert np.isnan(jax.jit(lambda v: divide(v, d=float("nan")))(ones)).all()

    call()
    # The abstract evaluation and the compiled impl trace the reference once each (jax
    # 0.8 to 0.11), or once for both (jax 0.12); a new nan object traces nothing new.
    first = len(traced)
    assert first in (1, 2)
    call()
    call()
    assert len(traced) == first


def test_static_params_are_keyed_by_their_bits() -> None:
    """One key per bit pattern: each nan payload its own, equal for every object of it;
    the two zeros apart, in numpy's float types as in Python's."""
    quiet, payload = (
        struct.unpack("<d", struct.pack("<Q", b))[0] for b in (0x7FF8 << 48, (0x7FF8 << 48) | 1)
    )
    assert typed_key(quiet) == typed_key(float("nan")) != typed_key(payload)
    assert hash(StaticParam(float("nan"))) == hash(StaticParam(float("nan")))
    for zero in (0.0, np.float32(0.0), np.float64(0.0), complex(0.0, 0.0)):
        assert typed_key(zero) != typed_key(-zero)
    assert typed_key(np.float32(1.0)) != typed_key(1.0) != typed_key(1)


def test_unhashable_static_param_names_primitive_and_param() -> None:
    with pytest.raises(TypeError, match=r"tests\.softplus\(\): static parameter 'beta'") as info:
        prims.softplus(X, beta=[1.0])  # type: ignore[arg-type]
    assert isinstance(info.value, jext.StaticParamError)
    assert isinstance(info.value, jext.JextError)


def test_call_errors_read_like_python() -> None:
    with pytest.raises(TypeError, match="takes 1 operand"):
        prims.softplus(X, X)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword parameter"):
        prims.softplus(X, gamma=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"missing keyword parameter 'factor'"):
        prims.scale(X)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="operand leaf 0 is a str"):
        prims.softplus("x")  # type: ignore[arg-type]


def test_variadic_and_optional_operands() -> None:
    @jext.primitive("tests.total")
    def total(*xs: jax.Array) -> jax.Array:
        return sum(xs[1:], xs[0])

    @jext.primitive("tests.shift")
    def shift(x: jax.Array, by: Any = 1.0, /) -> jax.Array:
        return x + by

    np.testing.assert_allclose(total(X, X, X), 3 * X)
    np.testing.assert_allclose(shift(X), X + 1)
    np.testing.assert_allclose(jax.jit(shift)(X, 2.0), X + 2)


def test_same_definition_replaces_a_different_one_is_refused() -> None:
    def make() -> jext.Primitive[[jax.Array], jax.Array]:
        @jext.primitive("tests.redefined")
        def redefined(x: jax.Array, /) -> jax.Array:
            return x

        return redefined

    first, second = make(), make()  # a module reload or a notebook cell run twice
    assert defined_primitives()["tests.redefined"] is second
    assert first is not second
    with pytest.raises(jext.DuplicateNameError, match=r"already defined by .*redefined"):
        jext.primitive("tests.redefined")(lambda x, /: x)


# --- overriding rules ------------------------------------------------------------------------


def test_custom_impl_runs_eagerly_and_lowering_under_jit() -> None:
    @jext.primitive("tests.with_impl")
    def with_impl(x: jax.Array, /, *, k: int = 1) -> jax.Array:
        return x * k

    calls: list[int] = []

    @with_impl.def_impl
    def _impl(x: jax.Array, *, k: int) -> jax.Array:
        calls.append(k)
        return np.asarray(x) * k  # type: ignore[return-value]

    np.testing.assert_allclose(with_impl(X, k=3), 3 * X)
    assert calls == [3]
    np.testing.assert_allclose(jax.jit(lambda x: with_impl(x, k=3))(X), 3 * X)
    assert calls == [3]
    assert with_impl.rule_sources()["impl"] == "custom"


def test_custom_abstract_eval_is_used_and_checked() -> None:
    @jext.primitive("tests.with_aval")
    def with_aval(x: jax.Array, /) -> jax.Array:
        return x.sum(keepdims=True)

    @with_aval.def_abstract_eval
    def _aval(x: jax.core.ShapedArray) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct((1,), x.dtype)

    assert jax.eval_shape(with_aval, X).shape == (1,)

    @jext.primitive("tests.bad_aval")
    def bad_aval(x: jax.Array, /) -> jax.Array:
        return x

    bad_aval.def_abstract_eval(lambda x: (3, "f32"))
    with pytest.raises(jext.RuleError, match=r"abstract_eval rule of primitive 'tests\.bad_aval'"):
        jax.eval_shape(bad_aval, X)


def test_jvp_rule_returning_wrong_tangent_shape_is_caught() -> None:
    @jext.primitive("tests.bad_jvp_shape")
    def f(x: jax.Array, /) -> jax.Array:
        return x * 2

    f.def_jvp(lambda primals, tangents: (f(primals[0]), tangents[0][:1]))
    with pytest.raises(
        jext.RuleError, match=r"jvp rule of primitive 'tests\.bad_jvp_shape'.*tangent"
    ):
        jax.jvp(f, (X,), (X,))


def test_jvp_rule_returning_wrong_arity_is_caught() -> None:
    @jext.primitive("tests.bad_jvp_arity")
    def f(x: jax.Array, /) -> jax.Array:
        return x * 2

    f.def_jvp(lambda primals, tangents: f(primals[0]))
    with pytest.raises(jext.RuleError, match="must return a pair"):
        jax.jvp(f, (X,), (X,))


def test_jvp_rule_with_wrong_positional_count_is_refused_at_decoration() -> None:
    with pytest.raises(jext.DefinitionError, match=r"jvp rule .* takes 3 positional"):
        prims.softplus_jvp.def_jvp(lambda primals, tangents, extra: (primals, tangents))


def test_rule_may_not_require_unknown_keyword() -> None:
    with pytest.raises(jext.DefinitionError, match=r"requires keyword parameter\(s\) \['gamma'\]"):
        prims.softplus.def_batching(lambda args, dims, *, gamma: (args, dims))


def test_transpose_without_rule_of_a_nonlinear_reference_is_a_clear_error() -> None:
    @jext.primitive("tests.no_transpose")
    def square(x: jax.Array, /) -> jax.Array:
        return x * x

    # A (wrong) JVP that applies the primitive to tangents: reverse mode must transpose it.
    square.def_jvp(lambda primals, tangents: (square(primals[0]), square(tangents[0])))
    with pytest.raises(
        jext.TransposeError,
        match=r"'tests\.no_transpose' has no transpose rule, and its reference is not linear",
    ):
        jax.grad(lambda x: square(x).sum())(X)
    np.testing.assert_allclose(jax.jvp(square, (X,), (X,))[1], X * X)


def test_transpose_rule_with_wrong_cotangent_is_caught() -> None:
    @jext.primitive("tests.bad_transpose")
    def neg(x: jax.Array, /) -> jax.Array:
        return -x

    neg.def_jvp(lambda primals, tangents: (neg(primals[0]), neg(tangents[0])))
    neg.def_transpose(lambda ct, x: (ct[:1],))
    with pytest.raises(jext.RuleError, match="cotangent for operand leaf 0"):
        jax.grad(lambda x: neg(x).sum())(X)

    @jext.primitive("tests.bad_transpose_arity")
    def neg2(x: jax.Array, /) -> jax.Array:
        return -x

    neg2.def_transpose(lambda ct, x: (ct, ct))
    with pytest.raises(jext.RuleError, match="one cotangent per operand"):
        jax.grad(lambda x: neg2(x).sum())(X)


def test_batching_rule_with_wrong_out_dim_is_caught() -> None:
    @jext.primitive("tests.bad_batching")
    def f(x: jax.Array, /) -> jax.Array:
        return x + 1

    f.def_batching(lambda args, dims: (f(args[0]), 1))
    with pytest.raises(jext.RuleError, match=r"out_dims for result 0 is 1"):
        jax.vmap(f)(jnp.ones((3, 2)))


@pytest.mark.parametrize("kind", ["elementwise", "leading_axis"])
def test_batching_shortcuts(kind: str) -> None:
    @jext.primitive(f"tests.shortcut_{kind}")
    def mul(a: jax.Array, b: jax.Array, /) -> jax.Array:
        return a * b

    getattr(mul, f"def_batching_{kind}")()
    a, b = jnp.arange(6.0).reshape(2, 3), jnp.arange(2.0)
    np.testing.assert_allclose(jax.vmap(mul, in_axes=(1, None))(a, b), a.T * b)
    np.testing.assert_allclose(jax.vmap(mul, in_axes=(0, 0))(a, a), a * a)
    assert mul.rule_sources()["batching"] == kind
    (eqn,) = [
        e for e in eqns(jax.vmap(mul, in_axes=(1, None)), a, b) if e.primitive.name == mul.name
    ]
    assert eqn.outvars[0].aval.shape == (3, 2)


@pytest.mark.usefixtures("on_cpu")
def test_default_batching_with_custom_lowerings_keeps_platform_rules() -> None:
    x = jnp.stack([X, 2 * X])
    np.testing.assert_allclose(jax.vmap(prims.by_platform)(x), jnp.sin(x) + 1, rtol=1e-6)
    exported = jext.lowering.export(jax.vmap(prims.by_platform), x)
    text = exported.exported.mlir_module()
    assert "stablehlo.cosine" in text and "stablehlo.tanh" in text


@pytest.mark.usefixtures("on_cpu")
def test_raw_lowering_rule() -> None:
    from jax._src.lib.mlir.dialects import hlo

    @jext.primitive("tests.raw_negate")
    def raw_negate(x: jax.Array, /) -> jax.Array:
        return -x

    @raw_negate.def_lowering(platform="cpu", raw=True)
    def _raw(ctx: Any, x: Any) -> list[Any]:
        return [hlo.negate(hlo.negate(hlo.negate(x)))]

    np.testing.assert_allclose(jax.jit(raw_negate)(X), -X)
    assert raw_negate.lowering_platforms()["cpu"].endswith("(raw)")
    # A raw rule cannot be vmapped: the default batching loops over the examples.
    np.testing.assert_allclose(jax.vmap(raw_negate)(jnp.stack([X, X])), -jnp.stack([X, X]))


def test_unknown_platform_is_refused() -> None:
    with pytest.raises(jext.DefinitionError, match="unknown platform 'metal'"):
        prims.softplus.def_lowering(lambda x: x, platform="metal")  # type: ignore[arg-type]


def test_rule_decorators_return_the_rule_unchanged() -> None:
    @jext.primitive("tests.decorators")
    def f(x: jax.Array, /) -> jax.Array:
        return x

    def rule(primals: Any, tangents: Any) -> Any:
        return primals[0], tangents[0]

    assert f.def_jvp(rule) is rule
    assert f.def_jvp(symbolic_zeros=True)(rule) is rule
    assert f.def_lowering(platform="tpu")(jnp.negative) is jnp.negative
    assert re.match(r"custom:tpu", f.rule_sources()["lowering"])
