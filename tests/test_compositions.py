"""A composition matrix: seven primitives in six rule sets, under pairs and triples of
transformations, each compared with plain JAX's ``custom_jvp``/``custom_vjp`` twin of the SAME
rules (never with the bare reference, which would hide a rule that stops applying).

Every rule below differs from what JAX would derive from the reference, on purpose, so a
composition that silently falls back to the reference gives a different number:

- ``compose.smooth``: reference only (twin: the reference itself).
- ``compose.ste`` and ``compose.double`` (one case, ``custom_jvp``): straight-through
  rounding, a JVP that passes the tangent unchanged; ``sin`` with a JVP scaled by 2.
- ``compose.cumsum``: linear, ``def_transpose`` only (no JVP); its transpose is written as
  ``total - prefix + ct`` (an adjoint, formulated unlike JAX's reverse cumsum).
- ``compose.shifted``: a ``def_batching`` rule that adds ``x`` to every batched result, so
  that its derivative differs too (twin: ``custom_vmap``'s semantics, the rule itself
  wherever the composition batches the primitive, the reference elsewhere).
- ``compose.jvp_and_batching``: a JVP rule and a batching rule (twin: ``custom_jvp``
  around ``custom_vmap``: the JVP rule wins, under ``vmap`` too).
- ``compose.linear_by_jvp``: linear, a JVP rule applying it to tangents, no transpose rule
  (twin: the same ``custom_jvp``; reverse mode transposes the reference).
- ``compose.closes_over`` and ``compose.closes_over_twice``: primitives defined per call
  whose references close over traced values (twin: plain JAX).  Custom rules that close
  over traced values: ``tests/test_jax_twins.py``.
- ``compose.by_platform``: a cpu lowering ``sin(x) + 1`` (reference ``sin``), a tpu lowering
  ``tanh``; the primal comes from the platform rule, the tangent from the reference.
- ``compose.pytree``: a dict operand, a tuple result, a JVP with one output's tangent tripled.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.lowering
from tests.fast_compile import run_fast

Fn = Callable[[jax.Array, jax.Array], Any]

# --- the primitives and their plain-JAX twins --------------------------------------------


@jext.primitive("compose.smooth")
def smooth(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x) * x + 0.5 * x * x


def smooth_twin(x: jax.Array) -> jax.Array:
    return jnp.sin(x) * x + 0.5 * x * x


@jext.primitive("compose.ste")
def ste(x: jax.Array, /) -> jax.Array:
    return jnp.round(x)


@ste.def_jvp
def _ste_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, jax.Array]:
    return ste(primals[0]), tangents[0]


@jax.custom_jvp
def ste_twin(x: jax.Array) -> jax.Array:
    return jnp.round(x)


@ste_twin.defjvp
def _ste_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    return ste_twin(primals[0]), tangents[0]


@jext.primitive("compose.double")
def double(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@double.def_jvp
def _double_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return double(x), 2.0 * jnp.cos(x) * t


@jax.custom_jvp
def double_twin(x: jax.Array) -> jax.Array:
    return jnp.sin(x)


@double_twin.defjvp
def _double_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return double_twin(x), 2.0 * jnp.cos(x) * t


TRANSPOSE_CALLS: list[tuple[int, ...]] = []


@jext.primitive("compose.cumsum")
def cumsum(x: jax.Array, /) -> jax.Array:
    return jnp.cumsum(x, axis=-1)


def _suffix_sum(ct: jax.Array) -> jax.Array:
    # The adjoint of a prefix sum, written as total - inclusive prefix + ct so that the
    # grad jaxpr shows reduce_sum where JAX's own transpose of cumsum shows a reversed cumsum.
    return jnp.sum(ct, axis=-1, keepdims=True) - jnp.cumsum(ct, axis=-1) + ct


@cumsum.def_transpose
def _cumsum_transpose(ct: jax.Array, x: jext.LinearOperand) -> tuple[jax.Array]:
    TRANSPOSE_CALLS.append(tuple(ct.shape))
    return (_suffix_sum(ct),)


@jax.custom_vjp
def cumsum_twin(x: jax.Array) -> jax.Array:
    return jnp.cumsum(x, axis=-1)


cumsum_twin.defvjp(lambda x: (cumsum_twin(x), None), lambda _, ct: (_suffix_sum(ct),))


def cumsum_forward_twin(x: jax.Array) -> jax.Array:
    # custom_vjp cannot be differentiated in forward mode: where a composition has jvp or
    # jacfwd the twin is the linear map itself (the transpose rule is its true adjoint).
    return jnp.cumsum(x, axis=-1)


BATCH_CALLS: list[tuple[int | None, ...]] = []


@jext.primitive("compose.shifted")
def shifted(x: jax.Array, y: jax.Array, /) -> jax.Array:
    return jnp.sin(x) * y


@shifted.def_batching
def _shifted_batching(
    args: tuple[jax.Array, jax.Array], dims: tuple[int | None, int | None]
) -> tuple[jax.Array, int | None]:
    BATCH_CALLS.append(tuple(dims))
    size = next((a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None), None)
    if size is None:  # only tangents batched (jacfwd): custom_vmap's rule sees no batch
        return _shifted_rule(*args), None
    x, y = (
        jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *a.shape))
        for a, d in zip(args, dims, strict=True)
    )
    out = _shifted_rule(x, y)
    # Hand the batch axis back last, so out_dims other than 0 are exercised too.
    return jnp.moveaxis(out, 0, -1), out.ndim - 1


def _shifted_rule(x: jax.Array, y: jax.Array) -> jax.Array:
    # Differs from vmap of the reference in value and in derivative (d/dx has + 1).
    return jnp.sin(x) * y + x


def shifted_twin(x: jax.Array, y: jax.Array) -> jax.Array:
    # custom_vmap's semantics: wherever the primitive is batched (every vmap of the matrix
    # batches x) it is its batching rule, derivatives included.  JAX's own custom_vmap
    # refuses reverse mode, so the twin is the rule itself, written as plain JAX.
    return _shifted_rule(x, y)


def shifted_plain(x: jax.Array, y: jax.Array) -> jax.Array:
    # Where nothing batches it, the primitive and its derivatives are the reference's.
    return jnp.sin(x) * y


@jax.custom_jvp
def shifted_tangents_batched(x: jax.Array, y: jax.Array) -> jax.Array:
    # jacfwd and jacrev batch tangents and cotangents only: the derivatives are the rule's,
    # the primal (nothing of it batched) the reference's.
    return jnp.sin(x) * y


@shifted_tangents_batched.defjvp
def _shifted_tangents_batched_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    return shifted_tangents_batched(*primals), jax.jvp(_shifted_rule, primals, tangents)[1]


def _shifted_twin_of(names: tuple[str, ...]) -> Fn:
    if any(n.startswith("vmap") for n in names):
        return shifted_twin
    if {"jacfwd", "jacrev"} & set(names):
        return shifted_tangents_batched
    return shifted_plain


@jext.primitive("compose.jvp_and_batching")
def jvp_and_batching(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@jvp_and_batching.def_jvp
def _jvp_and_batching_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return jvp_and_batching(x), 3.0 * jnp.cos(x) * t


@jvp_and_batching.def_batching
def _jvp_and_batching_batching(
    args: tuple[jax.Array], dims: tuple[int | None]
) -> tuple[jax.Array, int | None]:
    return jnp.sin(args[0]) + 0.5, dims[0]


@jax.custom_batching.custom_vmap
def _jvp_and_batching_vmappable(x: jax.Array) -> jax.Array:
    return jnp.sin(x)


@_jvp_and_batching_vmappable.def_vmap
def _jvp_and_batching_vmap_rule(
    axis_size: int, in_batched: list[bool], x: jax.Array
) -> tuple[jax.Array, bool]:
    return jnp.sin(x) + 0.5, in_batched[0]


@jax.custom_jvp
def jvp_and_batching_twin(x: jax.Array) -> jax.Array:
    # A JVP rule given with a batching rule wins: custom_jvp around custom_vmap.
    return _jvp_and_batching_vmappable(x)


@jvp_and_batching_twin.defjvp
def _jvp_and_batching_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return jvp_and_batching_twin(x), 3.0 * jnp.cos(x) * t


@jax.custom_jvp
def jvp_and_batching_plain(x: jax.Array) -> jax.Array:
    # custom_vmap under jacrev of vjp fails in plain JAX: without a vmap of the primal in
    # the composition the batching rule never runs, so the twin needs no custom_vmap.
    return jnp.sin(x)


@jvp_and_batching_plain.defjvp
def _jvp_and_batching_plain_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return jvp_and_batching_plain(x), 3.0 * jnp.cos(x) * t


@jext.primitive("compose.linear_by_jvp")
def linear_by_jvp(x: jax.Array, /) -> jax.Array:
    return 3.0 * x - jnp.flip(x, axis=-1)


@linear_by_jvp.def_jvp
def _linear_by_jvp_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    # No transpose rule: reverse mode transposes the (linear) reference, as JAX transposes
    # the body of a custom_jvp function whose rule applies it to tangents.
    return linear_by_jvp(primals[0]), linear_by_jvp(tangents[0])


@jax.custom_jvp
def linear_by_jvp_twin(x: jax.Array) -> jax.Array:
    return 3.0 * x - jnp.flip(x, axis=-1)


@linear_by_jvp_twin.defjvp
def _linear_by_jvp_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    return linear_by_jvp_twin(primals[0]), linear_by_jvp_twin(tangents[0])


def closes_over(x: jax.Array, y: jax.Array) -> jax.Array:
    # Primitives defined per call whose references close over traced values.
    scale = jnp.cos(y) + 2.0

    @jext.primitive("compose.closes_over")
    def times_y(v: jax.Array, /) -> jax.Array:
        return jnp.sin(v) * y

    @jext.primitive("compose.closes_over_twice")
    def scaled(v: jax.Array, /) -> jax.Array:
        return jnp.tanh(v) * scale + y

    return times_y(x) + scaled(x * y)


def closes_over_twin(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.sin(x) * y + jnp.tanh(x * y) * (jnp.cos(y) + 2.0) + y


@jext.primitive("compose.by_platform")
def by_platform(x: jax.Array, /) -> jax.Array:
    return jnp.sin(x)


@by_platform.def_lowering(platform="cpu")
def _by_platform_cpu(x: jax.Array) -> jax.Array:
    return jnp.sin(x) + 1.0


@by_platform.def_lowering(platform="tpu")
def _by_platform_tpu(x: jax.Array) -> jax.Array:
    return jnp.tanh(x)


@jax.custom_jvp
def by_platform_twin(x: jax.Array) -> jax.Array:
    # What runs on this (cpu) machine: the cpu rule's primal, the reference's tangent.
    return jnp.sin(x) + 1.0


@by_platform_twin.defjvp
def _by_platform_twin_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return by_platform_twin(x), jnp.cos(x) * t


@jext.primitive("compose.pytree")
def pytree(p: dict[str, jax.Array], /) -> tuple[jax.Array, jax.Array]:
    return p["a"] * p["b"], jnp.sin(p["a"]) + p["b"]


@pytree.def_jvp
def _pytree_jvp(primals: tuple[dict[str, jax.Array]], tangents: tuple[dict[str, jax.Array]]) -> Any:
    (p,), (t,) = primals, tangents
    a, b, ta, tb = p["a"], p["b"], t["a"], t["b"]
    # The second output's tangent is tripled in its first term, on purpose.
    return pytree(p), (ta * b + a * tb, 3.0 * jnp.cos(a) * ta + tb)


@jax.custom_jvp
def pytree_twin(p: dict[str, jax.Array]) -> tuple[jax.Array, jax.Array]:
    return p["a"] * p["b"], jnp.sin(p["a"]) + p["b"]


@pytree_twin.defjvp
def _pytree_twin_jvp(primals: Any, tangents: Any) -> Any:
    (p,), (t,) = primals, tangents
    a, b, ta, tb = p["a"], p["b"], t["a"], t["b"]
    return pytree_twin(p), (ta * b + a * tb, 3.0 * jnp.cos(a) * ta + tb)


# Each case: the base function of two (2, 3) arrays using the primitive, and its twin.
# A twin is a function of the composition's transform names (cumsum's depends on them).
CASES: dict[str, tuple[Fn, Callable[[tuple[str, ...]], Fn]]] = {
    "smooth": (lambda x, y: smooth(x) * y, lambda _: lambda x, y: smooth_twin(x) * y),
    # Two custom JVPs that are not the reference's derivative, in one case.
    "custom_jvp": (
        lambda x, y: (ste(3.0 * x) * y, double(x) * y),
        lambda _: lambda x, y: (ste_twin(3.0 * x) * y, double_twin(x) * y),
    ),
    "cumsum": (
        lambda x, y: cumsum(x * y),
        lambda names: (
            (lambda x, y: cumsum_forward_twin(x * y))
            if {"jvp", "jacfwd"} & set(names)
            else (lambda x, y: cumsum_twin(x * y))
        ),
    ),
    "shifted": (shifted, _shifted_twin_of),
    "jvp_and_batching": (
        lambda x, y: jvp_and_batching(x) * y,
        lambda names: (
            (lambda x, y: jvp_and_batching_twin(x) * y)
            if any(n.startswith("vmap") for n in names)
            else (lambda x, y: jvp_and_batching_plain(x) * y)
        ),
    ),
    # Python scalars as operands (constants beside traced values): their rules take them
    # and give them back as custom_jvp's do.
    "python_scalars": (
        lambda x, y: ste(x) * 0.5 + double(0.7) * y + double(x * y) + ste(2.6) * x,
        lambda _: (
            lambda x, y: (
                ste_twin(x) * 0.5 + double_twin(0.7) * y + double_twin(x * y) + ste_twin(2.6) * x
            )
        ),
    ),
    "linear_by_jvp": (
        lambda x, y: linear_by_jvp(x * y),
        lambda _: lambda x, y: linear_by_jvp_twin(x * y),
    ),
    "closes_over": (closes_over, lambda _: closes_over_twin),
    "by_platform": (
        lambda x, y: by_platform(x) * y,
        lambda _: lambda x, y: by_platform_twin(x) * y,
    ),
    "pytree": (
        lambda x, y: pytree({"a": x, "b": y}),
        lambda _: lambda x, y: pytree_twin({"a": x, "b": y}),
    ),
}

# --- the transformations, each a function-to-function wrapper of (x, y) -> pytree -----------


def _total(out: Any) -> jax.Array:
    return sum((jnp.sum(jnp.real(leaf)) for leaf in jax.tree.leaves(out)), jnp.float32(0.0))


def _batch(x: jax.Array, axis: int) -> jax.Array:
    # Two examples stacked along ``axis``; the second is an irregular shift of the first.
    return jnp.stack([x, 1.5 * x + 0.25], axis=axis)


def _vmap(axis: int | None) -> Callable[[Fn], Fn]:
    def wrap(f: Fn) -> Fn:
        def g(x: jax.Array, y: jax.Array) -> Any:
            if axis is None:  # y unbatched
                return jax.vmap(f, in_axes=(0, None))(_batch(x, 0), y)
            return jax.vmap(f, in_axes=(axis, axis))(_batch(x, axis), _batch(y, axis))

        return g

    return wrap


def _grad(f: Fn) -> Fn:
    return jax.grad(lambda x, y: _total(f(x, y)), argnums=(0, 1))


def _jvp(f: Fn) -> Fn:
    return lambda x, y: jax.jvp(f, (x, y), (jnp.cos(x), jnp.sin(y) + 0.5))


def _vjp(f: Fn) -> Fn:
    def g(x: jax.Array, y: jax.Array) -> Any:
        out, pull = jax.vjp(f, x, y)
        return out, pull(jax.tree.map(lambda o: jnp.cos(o).astype(o.dtype), out))

    return g


def _scan(f: Fn) -> Fn:
    def g(x: jax.Array, y: jax.Array) -> Any:
        def body(carry: jax.Array, s: jax.Array) -> tuple[jax.Array, Any]:
            return carry, f(x * s, y + carry * s)

        return jax.lax.scan(body, jnp.float32(0.5), jnp.array([1.0, -0.75], jnp.float32))[1]

    return g


def _cond(f: Fn) -> Fn:
    def other(x: jax.Array, y: jax.Array) -> Any:
        return jax.tree.map(lambda o: 0.5 * o, f(y, x))

    return lambda x, y: jax.lax.cond(jnp.sum(x) > 0, f, other, x, y)


TRANSFORMS: dict[str, Callable[[Fn], Fn]] = {
    "jit": jax.jit,
    "grad": _grad,
    "vmap0": _vmap(0),
    "vmap1": _vmap(1),
    "vmap-1": _vmap(-1),
    "vmapNone": _vmap(None),
    "jvp": _jvp,
    "vjp": _vjp,
    "jacfwd": lambda f: jax.jacfwd(f, argnums=(0, 1)),
    "jacrev": lambda f: jax.jacrev(f, argnums=(0, 1)),
    "checkpoint": jax.checkpoint,
    "scan": _scan,
    "cond": _cond,
}
KINDS = ["jit", "grad", "vmap", "jvp", "vjp", "jacfwd", "jacrev", "checkpoint", "scan", "cond"]
VMAPS = ["vmap0", "vmap1", "vmap-1", "vmapNone"]


def _with_axes(kinds: tuple[str, ...], turn: int) -> tuple[str, ...]:
    # Each vmap in a composition gets an in_axes variant, turning with ``turn`` so that
    # every pair of kinds meets every variant across the cases.
    return tuple(VMAPS[(turn + i) % len(VMAPS)] if k == "vmap" else k for i, k in enumerate(kinds))


def _matrix() -> list[tuple[str, tuple[str, ...]]]:
    """Every (case, ordered pair of kinds), and a seeded sample of (case, triple of kinds)."""
    pairs = list(itertools.product(KINDS, repeat=2))
    out = [
        (case, _with_axes(kinds, c + p))
        for c, case in enumerate(CASES)
        for p, kinds in enumerate(pairs)
    ]
    rng = random.Random(20261122)  # the same sample on every run, so a failure reproduces
    triples = list(itertools.product(KINDS, repeat=3))
    for c, case in enumerate(CASES):
        for t, kinds in enumerate(rng.sample(triples, 10)):
            out.append((case, _with_axes(kinds, c + t)))
    return out


MATRIX = _matrix()

X = jnp.array([[0.31, -0.72, 1.13], [0.58, 0.97, -0.26]], jnp.float32)
Y = jnp.array([[1.21, 0.43, -0.87], [0.66, -1.34, 0.29]], jnp.float32)


def _scan_unrolled(f: Fn) -> Fn:
    """``_scan`` as a Python loop: the same function, for the plain-JAX twins.

    JAX's own ``custom_jvp`` drops its rule from the primal inside a ``scan`` once that is
    differentiated twice (``jacrev(vjp(scan(twin)))`` uses the true derivative of the
    primal, while the same without ``scan`` uses the rule), so a twin under ``scan``
    would not be the same rules.  jext applies the rule at every order, with or without
    ``scan`` (``test_second_order_custom_jvp_is_the_same_under_scan`` below).
    """

    def g(x: jax.Array, y: jax.Array) -> Any:
        outs = [f(x * s, y + 0.5 * s) for s in (1.0, -0.75)]
        return jax.tree.map(lambda *leaves: jnp.stack(leaves), *outs)

    return g


def compose(names: tuple[str, ...], f: Fn, *, twin: bool = False) -> Fn:
    """``names[0](names[1](...(f)))``: the first name is the outermost transformation."""
    for name in reversed(names):
        f = _scan_unrolled(f) if twin and name == "scan" else TRANSFORMS[name](f)
    return f


def close(ours: Any, plain: Any, what: str) -> None:
    assert jax.tree.structure(ours) == jax.tree.structure(plain), what
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(plain), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype, what
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=what)


# Each composition runs as one compiled program, compiled fast (tests/fast_compile.py): the
# numbers, ours and the twins' alike, do not depend on it and compiling is most of the cost
# of the matrix.  Eager calls under transformations are covered by the tests after the
# matrix and by tests/test_core_regressions.py.


def run(f: Fn) -> Any:
    return run_fast(f, X, Y)


@functools.cache
def _case_results(case: str) -> tuple[dict[tuple[str, ...], Any], dict[tuple[str, ...], Exception]]:
    """Every composition of ``case`` in the matrix, jext and twin, in a few compiled programs
    of :data:`CHUNK` compositions each.

    Compiling a few programs per case instead of two per composition is what keeps the
    matrix fast (with XLA:CPU's elemental emitter a program's compile time grows faster
    than its size, so a case's 110 compositions compile faster as four programs than as
    one; jax 0.12's fusion emitters take the same time either way); a composition that
    fails to trace is recorded and raised by its own test.
    """
    ours, twin_of = CASES[case]
    entries = [names for c, names in MATRIX if c == case]
    errors: dict[tuple[str, ...], Exception] = {}

    def everything(chunk: list[tuple[str, ...]]) -> Fn:
        def run(x: jax.Array, y: jax.Array) -> dict[tuple[str, ...], Any]:
            out = {}
            for names in chunk:
                try:
                    out[names] = (
                        compose(names, ours)(x, y),
                        compose(names, twin_of(names), twin=True)(x, y),
                    )
                except Exception as err:  # reported by that composition's test
                    errors[names] = err
            return out

        return run

    results: dict[tuple[str, ...], Any] = {}
    for start in range(0, len(entries), CHUNK):
        results.update(run_fast(everything(entries[start : start + CHUNK]), X, Y))
    return results, errors


CHUNK = 28


def check(case: str, names: tuple[str, ...]) -> None:
    results, errors = _case_results(case)
    if names in errors:
        raise errors[names]
    got, want = results[names]
    close(got, want, f"{case} under {' o '.join(names)}")


@pytest.mark.parametrize(("case", "names"), MATRIX, ids=[f"{c}:{'-'.join(n)}" for c, n in MATRIX])
def test_composition_matches_plain_jax_twin(case: str, names: tuple[str, ...]) -> None:
    check(case, names)


# --- the bugs each rule set is most exposed to, stated on their own ---------------------------


def test_second_order_custom_jvp_is_the_same_under_scan() -> None:
    # A scan and the same loop unrolled are one function: every derivative must agree.
    loss = CASES["pytree"][0]
    for names in [("jacrev", "vjp"), ("jacfwd", "vjp"), ("grad", "vjp")]:
        close(
            run(compose((*names, "scan"), loss)),
            run(compose(names, _scan_unrolled(loss))),
            f"pytree under {' o '.join(names)} o scan vs unrolled",
        )


def test_grad_of_vmap_of_ste_is_ones() -> None:
    # The classic: vmap dropped the primitive, so grad differentiated round (zeros).
    v = jnp.linspace(-2.0, 2.0, 6, dtype=jnp.float32)
    g = jax.grad(lambda v: jax.vmap(ste)(v).sum())(v)
    np.testing.assert_array_equal(g, np.ones(6, np.float32))
    g2 = jax.grad(lambda m: jax.vmap(jax.vmap(ste), in_axes=1)(m).sum())(X)
    np.testing.assert_array_equal(g2, np.ones_like(X))


def test_grad_of_linear_primitive_runs_its_transpose_rule() -> None:
    TRANSPOSE_CALLS.clear()
    jaxpr = jax.make_jaxpr(jax.grad(lambda x: (cumsum(x) * Y).sum()))(X)
    assert TRANSPOSE_CALLS, "the transpose rule was never called by grad"
    text = str(jaxpr)
    assert "reduce_sum" in text, text  # what the rule emits
    TRANSPOSE_CALLS.clear()
    jax.make_jaxpr(jax.grad(lambda m: jax.vmap(cumsum)(m).sum()))(X)
    assert TRANSPOSE_CALLS, "the transpose rule was never called by grad of vmap"


def test_custom_batching_rule_is_called_for_every_in_axes() -> None:
    for axes, args in [
        ((0, 0), (_batch(X, 0), _batch(Y, 0))),
        ((1, None), (_batch(X, 1), Y)),
        ((None, -1), (X, _batch(Y, -1))),
    ]:
        BATCH_CALLS.clear()
        out = jax.vmap(shifted, in_axes=axes)(*args)
        assert BATCH_CALLS, f"batching rule not called for in_axes={axes}"
        want = jax.vmap(shifted_twin, in_axes=axes)(*args)
        close(out, want, f"vmap in_axes={axes}")


TPU_COMPOSITIONS = [
    ("jit",),
    ("vmap0",),
    ("vmapNone",),
    ("grad",),
    ("jvp",),
    ("vmap0", "grad"),
    ("grad", "vmap-1"),
    ("scan", "vmap1"),
]


@pytest.mark.parametrize("names", TPU_COMPOSITIONS, ids=["-".join(n) for n in TPU_COMPOSITIONS])
def test_each_platform_exports_its_own_rule(names: tuple[str, ...]) -> None:
    f = compose(names, CASES["by_platform"][0])
    tpu = jext.lowering.export(f, X, Y, platforms=["tpu"])
    assert "stablehlo.tanh" in tpu.exported.mlir_module(), names
    assert tpu.rules["tpu"] == {"compose.by_platform": "_by_platform_tpu"}, tpu.rules
    cpu = jext.lowering.export(f, X, Y, platforms=["cpu"])
    assert "stablehlo.tanh" not in cpu.exported.mlir_module(), names
    assert cpu.rules["cpu"] == {"compose.by_platform": "_by_platform_cpu"}, cpu.rules
