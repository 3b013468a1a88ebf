"""Effects run as often as in JAX: a ``jax.debug.callback`` in a reference, counted under
every transformation and every pair of them, against the same code in plain JAX.

The plain-JAX twins: the same function inline and as a ``custom_jvp`` (a primitive with
derived rules), a ``custom_jvp`` / ``custom_vjp`` with the same rules (``def_jvp`` /
``def_vjp``), a ``custom_vmap`` with the same rule (``def_batching``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jext

_calls = [0]


def _count(*_: Any) -> None:
    _calls[0] += 1


def _body(x: jax.Array) -> jax.Array:
    jax.debug.callback(_count, x)
    return jnp.sin(x) * x


def _jvp_rule(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return _body(x), (jnp.cos(x) * x + jnp.sin(x)) * t


def _fwd(x: jax.Array) -> Any:
    return _body(x), x


def _bwd(x: jax.Array, ct: jax.Array) -> Any:
    return ((jnp.cos(x) * x + jnp.sin(x)) * ct,)


@jext.primitive("effect_counts.derived")
def derived(x: jax.Array, /) -> jax.Array:
    return _body(x)


@jext.primitive("effect_counts.with_jvp")
def with_jvp(x: jax.Array, /) -> jax.Array:
    return _body(x)


with_jvp.def_jvp(_jvp_rule)


@jext.primitive("effect_counts.with_vjp")
def with_vjp(x: jax.Array, /) -> jax.Array:
    return _body(x)


with_vjp.def_vjp(_fwd, _bwd)


@jext.primitive("effect_counts.with_batching")
def with_batching(x: jax.Array, /) -> jax.Array:
    return _body(x)


# The rule runs the reference once on the whole batch.
with_batching.def_batching(lambda args, dims: (with_batching(args[0]), dims[0]))


def _custom_jvp_twin() -> Callable[[jax.Array], jax.Array]:
    twin = jax.custom_jvp(_body)
    twin.defjvp(lambda p, t: jax.jvp(_body, p, t))
    return twin


def _jvp_twin() -> Callable[[jax.Array], jax.Array]:
    twin = jax.custom_jvp(_body)
    twin.defjvp(_jvp_rule)
    return twin


def _vjp_twin() -> Callable[[jax.Array], jax.Array]:
    twin = jax.custom_vjp(_body)
    twin.defvjp(_fwd, _bwd)
    return twin


def _vmap_twin() -> Callable[[jax.Array], jax.Array]:
    twin = jax.custom_batching.custom_vmap(_body)
    twin.def_vmap(lambda size, batched, x: (twin(x), batched[0]))
    return twin


# One of each, shared by the tests: a twin holds no state, and JAX's caches of its traces
# and compiled programs then serve every test that transforms it alike.
CUSTOM_JVP_TWIN, JVP_TWIN, VJP_TWIN, VMAP_TWIN = (
    _custom_jvp_twin(),
    _jvp_twin(),
    _vjp_twin(),
    _vmap_twin(),
)

TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "jit": jax.jit,
    "grad": lambda f: jax.grad(lambda x: f(x).sum()),
    "vmap": jax.vmap,
    "jvp": lambda f: lambda x: jax.jvp(f, (x,), (jnp.ones_like(x),))[1],
    "hessian": lambda f: jax.hessian(lambda x: f(x).sum()),
}
PAIRS = [(a,) for a in TRANSFORMS] + list(itertools.product(TRANSFORMS, repeat=2))


def _calls_of(f: Callable[..., Any], pair: tuple[str, ...]) -> int:
    """How often the callback runs in ``f`` under ``pair`` (outermost first)."""
    for name in reversed(pair):
        f = TRANSFORMS[name](f)
    x = jnp.arange(1.0, 4.0)
    for _ in range(pair.count("vmap")):
        x = jnp.stack([x, x + 1.0])
    _calls[0] = 0
    jax.block_until_ready(f(x))
    jax.effects_barrier()
    return _calls[0]


def _name(pair: tuple[str, ...]) -> str:
    return "(".join(pair) + ")" * (len(pair) - 1)


@pytest.mark.parametrize("pair", PAIRS, ids=_name)
def test_derived_rules_run_effects_as_the_same_code_inline(pair: tuple[str, ...]) -> None:
    inline = _calls_of(_body, pair)
    assert _calls_of(CUSTOM_JVP_TWIN, pair) == inline
    assert _calls_of(derived, pair) == inline


@pytest.mark.parametrize("pair", PAIRS, ids=_name)
def test_a_jvp_rule_runs_effects_as_custom_jvp(pair: tuple[str, ...]) -> None:
    assert _calls_of(with_jvp, pair) == _calls_of(JVP_TWIN, pair)


@pytest.mark.parametrize(
    "pair", [p for p in PAIRS if "jvp" not in p and "hessian" not in p], ids=_name
)
def test_a_vjp_rule_runs_effects_as_custom_vjp(pair: tuple[str, ...]) -> None:
    # custom_vjp has no forward mode (jvp, hessian): jext refuses it alike.
    assert _calls_of(with_vjp, pair) == _calls_of(VJP_TWIN, pair)


@pytest.mark.parametrize("pair", PAIRS, ids=_name)
def test_a_batching_rule_runs_effects_as_custom_vmap(pair: tuple[str, ...]) -> None:
    try:
        want = _calls_of(VMAP_TWIN, pair)
    except (ValueError, RecursionError):
        # custom_vmap fails on reverse mode over an effect ("Linearization failed to produce
        # known values") and on vmap of its jvp (it recurses); jext computes the value once
        # and its derivatives without effects.
        want = 1
    assert _calls_of(with_batching, pair) == want


def _scaled(x: jax.Array, s: jax.Array) -> jax.Array:
    jax.debug.callback(_count, s)
    return x * jnp.sin(s)


@jext.primitive("effect_counts.linear")
def linear(x: jax.Array, s: jax.Array, /) -> jax.Array:
    return _scaled(x, s)


linear.def_transpose(lambda ct, x, s: (ct * jnp.sin(s), None), linear_in=[0])

X3 = jnp.arange(1.0, 4.0)
LINEAR_CASES: dict[str, Callable[[Callable[..., Any]], Any]] = {
    "grad in s": lambda f: jax.grad(lambda s: f(X3, s).sum())(0.7),
    "grad in both": lambda f: jax.grad(lambda x, s: f(x, s).sum(), (0, 1))(X3, 0.7),
    "jit(grad in s)": lambda f: jax.jit(jax.grad(lambda s: f(X3, s).sum()))(0.7),
    "vmap(grad in s)": lambda f: jax.vmap(jax.grad(lambda s: f(X3, s).sum()))(X3),
    "grad(grad in s)": lambda f: jax.grad(jax.grad(lambda s: f(X3, s).sum()))(0.7),
}


@pytest.mark.parametrize("case", list(LINEAR_CASES))
def test_a_linear_primitive_differentiated_in_another_operand_runs_effects_as_inline(
    case: str,
) -> None:
    # Its JVP in the operand it is not linear in recomputes no result, so no effect.
    counts = []
    for f in (_scaled, linear):
        _calls[0] = 0
        jax.block_until_ready(LINEAR_CASES[case](f))
        jax.effects_barrier()
        counts.append(_calls[0])
    assert counts[0] == counts[1], counts
