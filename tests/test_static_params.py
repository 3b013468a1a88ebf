"""Static params: a fixed set of names, and the ways to pass a set of options."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext


def test_var_keyword_params_are_refused_pointing_to_the_alternatives() -> None:
    with pytest.raises(jext.DefinitionError) as info:
        jext.primitive("static_params.var_kw")(lambda x, /, **attrs: x)
    message = str(info.value)
    assert "'**attrs' is not allowed" in message
    assert "one keyword-only param per key" in message
    assert "attrs=tuple(sorted(options.items()))" in message


def test_options_pass_as_a_tuple_of_pairs() -> None:
    @jext.primitive("static_params.affine")
    def affine(x: jax.Array, /, *, options: tuple[tuple[str, Any], ...] = ()) -> jax.Array:
        opts = dict(options)
        scale, shift = float(opts.get("scale", 1.0)), float(opts.get("shift", 0.0))
        return x * scale + shift

    x = np.arange(3.0, dtype=np.float32)
    options = tuple(sorted({"shift": 1.0, "scale": 2.0}.items()))
    np.testing.assert_allclose(jax.jit(lambda v: affine(v, options=options))(x), 2 * x + 1)
    grad = jax.grad(lambda v: affine(v, options=options).sum())(x)
    np.testing.assert_allclose(grad, jnp.full(3, 2.0))


# --- keys: a static param is served only what its own value computes ----------------------


class Scale(NamedTuple):
    by: Any


class Shift(NamedTuple):
    by: Any


@dataclass(frozen=True)
class Factor:
    value: Any


@dataclass(frozen=True)
class Nested:
    inner: Factor


class Op(enum.Enum):
    SCALE = "scale"
    SHIFT = "shift"


class Loose:
    """Hashable, with an ``==`` coarser than its behaviour: every two are equal."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Loose)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"Loose({self.value!r})"


@dataclass(frozen=True)
class _Field:
    name: str


class AttrsLike:
    """An object declaring its fields as ``attrs`` classes do (``__attrs_attrs__``)."""

    __attrs_attrs__ = (_Field("value"),)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AttrsLike) and bool(self.value == other.value)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"AttrsLike({self.value!r})"


def _scale_or_shift(x: jax.Array, how: Any) -> jax.Array:
    return x * how.by if isinstance(how, Scale) else x + how.by


def _op(x: jax.Array, how: tuple[Op, float]) -> jax.Array:
    op, by = how
    return x * by if op is Op.SCALE else x + by


#: name: (operand dtype, a first value, a second value equal to it by ``==`` or in an older
#: key but computing something else, the plain-JAX function of the operand and the value).
KEY_CASES: dict[str, tuple[Any, Any, Any, Callable[[jax.Array, Any], jax.Array]]] = {
    "NamedTuples of two types": (np.float32, Scale(2.0), Shift(2.0), _scale_or_shift),
    "a NamedTuple of 2 and of 2.0": (np.int32, Scale(2), Scale(2.0), _scale_or_shift),
    "a dataclass of 0.0 and of -0.0": (
        np.float32,
        Factor(0.0),
        Factor(-0.0),
        lambda x, how: x * how.value,
    ),
    "a dataclass of 2 and of 2.0": (np.int32, Factor(2), Factor(2.0), lambda x, how: x * how.value),
    "a dataclass of True and of 1": (
        np.float16,
        Factor(True),
        Factor(1),
        lambda x, how: x * how.value,
    ),
    "nested dataclasses": (
        np.float32,
        Nested(Factor(0.0)),
        Nested(Factor(-0.0)),
        lambda x, how: x * how.inner.value,
    ),
    "a tuple of dataclasses": (
        np.int32,
        (Factor(2),),
        (Factor(2.0),),
        lambda x, how: x * how[0].value,
    ),
    "an attrs-like record": (np.int32, AttrsLike(2), AttrsLike(2.0), lambda x, how: x * how.value),
    "enums": (np.float32, (Op.SCALE, 3.0), (Op.SHIFT, 3.0), _op),
    "frozensets": (
        np.int32,
        frozenset({2, 3}),
        frozenset({2.0, 3.0}),
        lambda x, how: x * sum(sorted(how)),
    ),
    "callables": (np.float32, jnp.negative, jnp.abs, lambda x, how: how(x)),
    "objects with a coarse ==": (np.float32, Loose(2.0), Loose(3.0), lambda x, how: x * how.value),
}


def _primitive(name: str, fn: Callable[[jax.Array, Any], jax.Array]) -> jext.Primitive[..., Any]:
    return jext.primitive(name)(lambda x, /, *, how: fn(x, how))


KEY_PRIMITIVES = {
    case: _primitive(f"static_params.key_{i}", fn)
    for i, (case, (_, _, _, fn)) in enumerate(KEY_CASES.items())
}


def _assert_same(got: jax.Array, want: jax.Array) -> None:
    """Same dtype and the same bits (a -0.0 is not a 0.0): both are the same JAX operations."""
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", list(KEY_CASES))
def test_a_static_param_is_never_served_another_values_result(case: str) -> None:
    dtype, first, second, fn = KEY_CASES[case]
    prim = KEY_PRIMITIVES[case]
    x = np.arange(-2, 3).astype(dtype)
    for how in (first, second, first):
        want = fn(jnp.asarray(x), how)
        _assert_same(prim(x, how=how), want)
        _assert_same(jax.jit(lambda v, how=how: prim(v, how=how))(x), want)
        _assert_same(jax.jit(lambda v, how=how: fn(v, how))(x), want)
    # The equation shows the value it computes with (a function's address is masked).
    jaxpr = str(jax.make_jaxpr(lambda v: prim(v, how=second))(x))
    assert f"how={second!r}" in jaxpr or "0x" in repr(second), jaxpr


def test_a_swish_after_a_gelu_is_a_swish_eagerly_under_jit_and_in_the_jaxpr() -> None:
    class Swish(NamedTuple):
        beta: float

    class Gelu(NamedTuple):
        beta: float

    @jext.primitive("static_params.act")
    def act(x: jax.Array, /, *, opts: Swish | Gelu) -> jax.Array:
        if isinstance(opts, Swish):
            return x * jax.nn.sigmoid(opts.beta * x)
        return jax.nn.gelu(opts.beta * x)

    x = jnp.linspace(-2.0, 2.0, 5)
    for opts in (Gelu(1.0), Swish(1.0)):
        want = act.reference(x, opts=opts)
        np.testing.assert_allclose(act(x, opts=opts), want, rtol=1e-6)
        np.testing.assert_allclose(jax.jit(lambda v, o=opts: act(v, opts=o))(x), want, rtol=1e-6)
    assert "opts=Swish(beta=1.0)" in str(jax.make_jaxpr(lambda v: act(v, opts=Swish(1.0)))(x))


def test_a_mutable_container_in_a_record_is_refused_naming_the_param() -> None:
    @dataclass(frozen=True, eq=False)  # hashable by identity, its list may change
    class Holder:
        items: list[float]

    @jext.primitive("static_params.holder")
    def holder(x: jax.Array, /, *, h: Holder) -> jax.Array:
        return x * sum(h.items)

    with pytest.raises(jext.StaticParamError) as info:
        holder(jnp.ones(2), h=Holder([1.0]))
    message = str(info.value)
    assert "static_params.holder" in message and "'h'" in message
    assert "list is mutable" in message and "pass a tuple" in message


def test_equal_values_share_one_trace_and_identity_keyed_objects_do_not() -> None:
    traces: list[Any] = []

    @jext.primitive("static_params.traced")
    def traced(x: jax.Array, /, *, how: Any) -> jax.Array:
        traces.append(how)  # runs when the reference is traced
        return x + 1.0

    x = jnp.ones(2)
    makers = {
        "a NamedTuple": lambda: Scale(2.0),
        "a dataclass": lambda: Nested(Factor(-0.0)),
        "a frozenset": lambda: frozenset({1, 2.0}),
        "a PartitionSpec": lambda: jax.sharding.PartitionSpec("x", None),
        "a dtype": lambda: np.dtype("float32"),
    }
    for what, make in makers.items():
        traced(x, how=make())
        first = len(traces)
        traced(x, how=make())  # an equal value, made again: no new trace
        assert len(traces) == first, what
    traced(x, how=Loose(1.0))
    first = len(traces)
    traced(x, how=Loose(1.0))  # equal by its own ==, but another object: traced again
    assert len(traces) > first
