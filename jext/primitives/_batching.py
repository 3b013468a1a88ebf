"""Batching: under ``vmap`` the primitive stays one equation, with its batch levels as a param.

Every other rule kind applies to the batched form by running its per-example rule over
the levels (``over_levels``), so a custom JVP, transpose, impl or platform lowering is
never bypassed by ``vmap``.  An author's ``def_batching`` (or the elementwise and
leading-axis shortcuts) replaces this for the primitive itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from jext import _jax
from jext._errors import RuleValueError
from jext.primitives._abstract import base_abstract_eval, linearized, out_tree, trace_reference
from jext.primitives._core import Core, Form, Level, as_value, unbatched_avals
from jext.primitives._derivatives import batch_chain

__all__ = ["JvpOfOne", "batch", "loop_over_levels", "over_levels", "run_over_levels"]

JvpOfOne: TypeAlias = Callable[
    [Core, Sequence[Any], Sequence[Any], Form], tuple[list[Any], list[Any]]
]
"""``(core, primals, tangents, form) -> (outs, tangents_out)``: the JVP of one example."""


def over_levels(
    fn: Callable[..., Sequence[Any]], levels: Sequence[Level], masks: Sequence[Sequence[bool]]
) -> Callable[..., list[Any]]:
    """``fn`` (per-example, flat) vectorized over ``levels`` with ``jax.vmap``.

    ``masks[k][i]`` says whether argument ``i`` carries level ``k``'s axis; every
    result carries every level's axis, outermost first.
    """
    g: Callable[..., Any] = fn
    for (size, _, _, name), mask in reversed(list(zip(levels, masks, strict=True))):
        in_axes = tuple(0 if m else None for m in mask)
        g = jax.vmap(g, in_axes=in_axes, out_axes=0, axis_size=size, axis_name=name)
    return lambda *args: list(g(*args))


def loop_over_levels(
    fn: Callable[..., Sequence[Any]], levels: Sequence[Level], masks: Sequence[Sequence[bool]]
) -> Callable[..., list[Any]]:
    """``fn`` applied once per example with ``lax.map`` (for rules ``vmap`` cannot enter)."""
    if not levels:
        return lambda *args: list(fn(*args))
    mask, inner = masks[0], loop_over_levels(fn, levels[1:], masks[1:])

    def outer(*args: Any) -> list[Any]:
        batched = [a for a, m in zip(args, mask, strict=True) if m]

        def one(xs: Sequence[Any]) -> list[Any]:
            it = iter(xs)
            return inner(*(next(it) if m else a for a, m in zip(args, mask, strict=True)))

        return list(jax.lax.map(one, batched))

    return outer


def run_over_levels(
    fn: Callable[..., Sequence[Any]],
    levels: Sequence[Level],
    args: Sequence[Any],
    out_avals: Sequence[Any],
) -> list[Any]:
    """Eagerly call ``fn`` once per example of concrete ``args`` and stack the results.

    For an author's impl, which may not be traceable.  ``out_avals`` are the batched
    results' (for a batch of size zero).
    """
    if not levels:
        return list(fn(*args))
    (size, mask, _, _), rest = levels[0], levels[1:]
    if size == 0:
        return [jnp.zeros(a.shape, a.dtype) for a in out_avals]
    inner_avals = [_jax.drop_batch_axis(a, size) for a in out_avals]
    examples = [
        run_over_levels(
            fn, rest, [a[i] if m else a for a, m in zip(args, mask, strict=True)], inner_avals
        )
        for i in range(size)
    ]
    return [jnp.stack([ex[j] for ex in examples]) for j in range(len(out_avals))]


def batch(
    core: Core,
    axis_name: Any,
    size: int,
    args: Sequence[Any],
    dims: Sequence[int | None],
    form: Form,
    *,
    jvp_of_one: JvpOfOne,
) -> tuple[list[Any], list[int | None]]:
    """JAX's batching rule: the author's, or one more batch level on the same primitive.

    ``jvp_of_one`` is the JVP of one example (``_ad.jvp_per_example``, which builds on this
    module): the JVP of an author's batching rule given with a JVP rule.
    """
    if all(d is None for d in dims):
        if axis_name is None or axis_name not in _named_axes(core, args, form):
            outs = core.bind(form, *args)
            return outs, [None] * len(outs)
        # No operand is batched, but the reference's collectives reduce over this axis.
        # The results JAX leaves unbatched (psum of an unbatched value) are taken from the
        # first example, all examples being equal there.
        level = (size, (False,) * len(args), None, axis_name)
        outs = core.bind(form.with_level(level), *args)
        per_example = _per_example_jaxpr(core, args, form)
        if per_example is None:
            return outs, [0] * len(outs)
        out_batched = _jax.batched_results(per_example, axis_name, size, [False] * len(args))
        return (
            [o if b else o[0] for o, b in zip(outs, out_batched, strict=True)],
            [0 if b else None for b in out_batched],
        )
    kind = core.rules.batching_kind
    if form.chain:
        plain = form.plain
        rule = functools.partial(_batch_custom, core, size=size, form=plain)
        return batch_chain(core, rule, args, dims, size, form)
    if kind != "default" and not form.levels and form.linearize is None:
        if kind == "elementwise":
            return _batch_elementwise(core, args, dims, size, form)
        if kind == "leading_axis":
            moved = [_to_leading(a, d, size) for a, d in zip(args, dims, strict=True)]
            outs = core.bind(form, *moved)
            return outs, [0] * len(outs)
        if core.rules.jvp is not None:
            return _batch_custom_with_jvp(core, args, dims, size, form, jvp_of_one)
        return _batch_custom(core, args, dims, size, form)
    batched = tuple(d is not None for d in dims)
    moved = [a if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args, dims, strict=True)]
    # Under explicit sharding the batch axis keeps the mesh axis it is sharded along.
    mesh_axis = _jax.leading_axis_sharding(_jax.typeof(moved[batched.index(True)]))
    outs = core.bind(form.with_level((size, batched, mesh_axis, axis_name)), *moved)
    return outs, [0] * len(outs)


def _named_axes(core: Core, args: Sequence[Any], form: Form) -> frozenset[Any]:
    """The named axes the reference's collectives refer to (its per-example trace's)."""
    n = form.in_tree.num_leaves
    per_example = unbatched_avals([_jax.typeof(a) for a in args[:n]], form.levels)
    closed, _ = trace_reference(core, form.plain, per_example)
    return _jax.named_axes(closed)


def _per_example_jaxpr(core: Core, args: Sequence[Any], form: Form) -> Any:
    """What ``form`` computes for one example of ``args``, as a closed jaxpr: the reference,
    or the forward half of its JVP (results and residuals); None for a derivative form."""
    if form.chain:
        return None
    n = form.in_tree.num_leaves
    per_example = unbatched_avals([_jax.typeof(a) for a in args[:n]], form.levels)
    if form.linearize is not None:
        return linearized(core, form.base, per_example).forward
    closed, _ = trace_reference(core, form.plain, per_example)
    return closed


def _batch_custom(
    core: Core, args: Sequence[Any], dims: Sequence[int | None], size: int, form: Form
) -> tuple[list[Any], list[int | None]]:
    rule = core.rules.batching
    assert rule is not None
    avals = [
        _jax.typeof(a) if d is None else _unbatched_aval(a, d)
        for a, d in zip(args, dims, strict=True)
    ]
    tree = out_tree(core, form, avals)
    expected, _ = base_abstract_eval(core, form.plain, avals)
    result = rule(
        tree_util.tree_unflatten(form.in_tree, args),
        tree_util.tree_unflatten(form.in_tree, dims),
        params=form.params,
    )
    core.check_pair("batching", result, "(result, out_dims)")
    outs = [
        as_value(o, a.dtype)
        for o, a in zip(
            core.flatten_results("batching", result[0], tree, error=RuleValueError),
            expected,
            strict=True,
        )
    ]
    spec = result[1]
    if spec is None or isinstance(spec, int):
        out_dims: list[Any] = [spec] * len(outs)
    else:
        out_dims = core.flatten_results(
            "batching", spec, tree, none_ok=True, arrays=False, error=RuleValueError
        )
    for i, (out, d, aval) in enumerate(zip(outs, out_dims, expected, strict=True)):
        if d is not None and not isinstance(d, int | np.integer):
            raise RuleValueError(
                f"batching rule of primitive {core.name!r}: out_dims for result {i} is {d!r}; "
                "each out_dim must be an int or None (one per result leaf, or one for all)"
            )
        shape = list(out.shape)
        if d is not None and not (-len(shape) <= d < len(shape) and shape[d] == size):
            raise RuleValueError(
                f"batching rule of primitive {core.name!r}: out_dims for result {i} is "
                f"{d}, but that result has shape {shape} and the batch size is {size}"
            )
        want = list(aval.shape)
        if d is not None:
            want.insert(int(d) % len(shape), size)
        if shape != want or out.dtype != aval.dtype:
            raise RuleValueError(
                f"batching rule of primitive {core.name!r}: result {i} is "
                f"{out.dtype}{shape} with out_dim {d}, but a batch of {size} of "
                f"{_jax.aval_str(aval)} results with that out_dim is {aval.dtype}{want}"
            )
    return outs, [None if d is None else int(d) % outs[i].ndim for i, d in enumerate(out_dims)]


def _batch_custom_with_jvp(
    core: Core,
    args: Sequence[Any],
    dims: Sequence[int | None],
    size: int,
    form: Form,
    jvp_per_example: JvpOfOne,
) -> tuple[list[Any], list[int | None]]:
    """The batching rule, whose JVP is the author's JVP rule one example at a time.

    ``custom_jvp`` around ``custom_vmap``: a JVP rule given with a batching rule wins
    under ``vmap`` too, its primal coming from the batching rule.
    """
    n = len(args)

    def batched(*xs: Any) -> list[Any]:
        outs, out_dims = _batch_custom(core, xs, dims, size, form)
        return [_to_leading(o, d, size) for o, d in zip(outs, out_dims, strict=True)]

    def tangents_of_one(*xs: Any) -> list[Any]:
        _, touts = jvp_per_example(core, xs[:n], xs[n:], form)
        return [_jax.instantiate_zeros(t) for t in touts]

    def jvp(primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[list[Any], list[Any]]:
        axes = (*dims, *dims)
        per_example = jax.vmap(tangents_of_one, in_axes=axes, axis_size=size)
        return with_rule(*primals), list(per_example(*primals, *tangents))

    with_rule = jax.custom_jvp(batched)
    with_rule.defjvp(jvp)
    outs = with_rule(*args)
    return list(outs), [0] * len(outs)


def _batch_elementwise(
    core: Core, args: Sequence[Any], dims: Sequence[int | None], size: int, form: Form
) -> tuple[list[Any], list[int | None]]:
    first = dims[0]
    if first is not None and all(d == first for d in dims) and len({a.shape for a in args}) == 1:
        outs = core.bind(form, *args)
        return outs, [first] * len(outs)
    example_shape = np.broadcast_shapes(
        *(_unbatched_aval(a, d).shape for a, d in zip(args, dims, strict=True))
    )
    full = [
        jnp.broadcast_to(_to_leading(a, d, size), (size, *example_shape))
        for a, d in zip(args, dims, strict=True)
    ]
    outs = core.bind(form, *full)
    return outs, [0] * len(outs)


def _unbatched_aval(x: Any, dim: int | None) -> Any:
    aval = _jax.typeof(x)
    if dim is None:
        return aval
    shape = tuple(s for i, s in enumerate(aval.shape) if i != dim)
    return _jax.shaped_array(shape, aval.dtype, weak_type=aval.weak_type)


def _to_leading(x: Any, dim: int | None, size: int) -> Any:
    if dim is None:
        return jnp.broadcast_to(x, (size, *np.shape(x)))
    return jnp.moveaxis(x, dim, 0)
