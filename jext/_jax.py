"""The one typed layer over JAX's internals: every version switch and every ignore comment is here.

JAX's extension API moves between releases (0.10 removed ``batching.not_mapped``,
``ad.Zero.from_primal_value`` and ``jax.core.Primitive``).  The rest of jext imports
JAX internals only through this module, so a new JAX release is absorbed here.
Tested against jax 0.8.x and 0.10.x; the differences are the version switches at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import re
import warnings
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Final, TypeAlias, TypeGuard

import jax
import numpy as np

#: The newest JAX release jext is tested with (CI's py313 run), for the error below.
JAX_TESTED: Final = (0, 12)

# From jax.extend.core where it has them in every supported JAX (0.8 to 0.12); the two
# names it exports only from jax 0.10 on (not in 0.8.3 or 0.9.2) from where they live.
# JAX may remove any of these in a release jext has not met yet (pyproject gives JAX no
# upper bound, docs/stability.md): that is a clear error naming both versions, here.
try:
    from jax._src import api_util as _api_util
    from jax._src import config as _config
    from jax._src import core as _core
    from jax._src import linear_util as _lu
    from jax._src.array import ArrayImpl
    from jax._src.core import jaxprs_in_params, primal_dtype_to_tangent_dtype
    from jax._src.interpreters import ad as _ad_internal
    from jax._src.interpreters import batching as _batching_internal
    from jax._src.interpreters import mlir as _mlir
    from jax._src.interpreters import partial_eval as _pe
    from jax._src.lib import version_str as _jaxlib_version
    from jax._src.lib import xla_client  # type: ignore[attr-defined]
    from jax._src.literals import TypedNdArray as _TypedNdArray

    # jax 0.12 made ClosedJaxpr another name of Jaxpr (which now holds its consts), one
    # jax.extend.core does not list as exported.
    from jax.extend.core import (  # type: ignore[attr-defined, unused-ignore]
        ClosedJaxpr,
        Jaxpr,
        Primitive,
        jaxpr_as_fun,
    )
    from jax.extend.mlir import ir as _mlir_ir
    from jax.interpreters import ad, batching, mlir, xla
except ImportError as error:
    # Read only on this error: a metadata lookup scans every installed distribution.
    from importlib.metadata import version as _version

    _below = f"{JAX_TESTED[0]}.{JAX_TESTED[1] + 1}"
    raise ImportError(
        f"jext cannot use jax {_version('jax')}: {error}.  jext/_jax.py needs this JAX "
        f"internal, which this JAX release no longer has (jext is tested up to jax "
        f"{JAX_TESTED[0]}.{JAX_TESTED[1]}).  Upgrade jext (pip install -U jext), or install "
        f"the JAX it was tested with (pip install 'jax<{_below}' 'jaxlib<{_below}')."
    ) from error

__all__ = [
    "AbstractValue",
    "ArrayImpl",
    "ClosedJaxpr",
    "LoweringContext",
    "LoweringRule",
    "Primitive",
    "Zero",
    "apply_primitive",
    "config_value",
    "instantiate_zeros",
    "is_abstract_value",
    "is_symbolic_zero",
    "is_undefined_primal",
    "iter_equations",
    "jaxpr_as_fun",
    "lower_fun",
    "lowering_for_export",
    "make_primitive",
    "make_zero",
    "module_platforms",
    "register_batching",
    "register_jvp",
    "register_lowering",
    "register_transpose",
    "set_config",
    "shaped_array",
    "tangent_dtype",
    "trace_to_jaxpr",
    "typeof",
    "undefined_aval",
]

AbstractValue: TypeAlias = jax.core.ShapedArray
"""The abstract value (shape, dtype, weak type) of an array operand or result."""

LoweringContext: TypeAlias = mlir.LoweringRuleContext
LoweringRule: TypeAlias = Callable[..., Sequence[Any]]

FLOAT0: Final = np.dtype(jax.dtypes.float0)
"""The dtype of tangents of integer, boolean and key values."""

Zero: Final = ad.Zero
"""JAX's symbolic-zero tangent or cotangent."""

#: The concrete platforms JAX lowers for, in the order jext reports them.
PLATFORMS: Final = ("cpu", "cuda", "rocm", "tpu")


def config_value(name: str) -> Any:
    """JAX's setting ``name`` (``jax.config`` types none of its attributes)."""
    return getattr(jax.config, name)


def set_config(name: str, value: Any) -> None:
    """Change JAX's setting ``name`` (``jax.config.update`` is untyped)."""
    jax.config.update(name, value)  # type: ignore[no-untyped-call]


def make_primitive(name: str) -> Primitive:
    """A JAX primitive named ``name`` with multiple results.

    jext always binds with a flat list of results and rebuilds the user's pytree
    itself, so one JAX primitive serves a single array, a tuple or any pytree.
    """
    prim = Primitive(name)
    prim.multiple_results = True
    return prim


def apply_primitive(prim: Primitive, /, *args: Any, **params: Any) -> list[Any]:
    """Compile ``prim`` alone (cached by JAX per params and avals) and run it eagerly."""
    result: list[Any] = xla.apply_primitive(prim, *args, **params)  # type: ignore[no-untyped-call]
    return result


def eval_context() -> Any:
    """A context in which JAX operations run at once, even while a trace is being built."""
    return _core.eval_context()


def is_eager() -> bool:
    """Whether a bind now would run at once (no transformation or tracing is active)."""
    return type(_core.trace_ctx.trace) is _core.EvalTrace


def is_concrete(x: Any) -> bool:
    """Whether ``x`` is a value, not a tracer (a primal under an eager ``jax.jvp``)."""
    return not isinstance(x, _core.Tracer)


def typeof(x: Any) -> AbstractValue:
    """The abstract value of an operand (array, tracer or Python scalar)."""
    aval = jax.typeof(x)
    if not isinstance(aval, AbstractValue):
        raise TypeError(f"expected an array, got {type(x).__name__} with abstract value {aval}")
    return aval


def shaped_array(shape: Sequence[int], dtype: Any, *, weak_type: bool = False) -> AbstractValue:
    """An abstract value; ``dtype`` may be an extended dtype (a typed PRNG key's)."""
    if not jax.numpy.issubdtype(dtype, jax.dtypes.extended):
        dtype = np.dtype(dtype)
    return jax.core.ShapedArray(tuple(shape), dtype, weak_type=weak_type)


def ffi_pycapsule(fn: Any) -> object:
    """A ctypes function pointer wrapped in the PyCapsule that XLA registers as a handler."""
    import jax.ffi  # noqa: PLC0415 - jax.ffi loads only once a plugin has native handlers

    capsule: object = jax.ffi.pycapsule(fn)  # type: ignore[no-untyped-call]
    return capsule


def shape_dtype_struct(
    shape: Sequence[int], dtype: Any, *, weak_type: bool = False
) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(tuple(shape), dtype, weak_type=weak_type)  # type: ignore[no-untyped-call]


def aval_str(aval: AbstractValue) -> str:
    """``float32[3]``: how JAX prints an abstract value in jaxprs."""
    text: str = aval.str_short()  # type: ignore[no-untyped-call]
    return text


def set_impl(prim: Primitive, impl: Callable[..., Sequence[Any]]) -> None:
    prim.def_impl(impl)  # type: ignore[no-untyped-call]


def set_abstract_eval(prim: Primitive, rule: Callable[..., Sequence[AbstractValue]]) -> None:
    prim.def_abstract_eval(rule)  # type: ignore[no-untyped-call]


def set_effectful_abstract_eval(
    prim: Primitive, rule: Callable[..., tuple[Sequence[AbstractValue], frozenset[Any]]]
) -> None:
    """``rule`` gives the result avals and the equation's effects (JAX keeps an equation
    with effects through dead-code elimination, and threads tokens to ordered ones)."""
    prim.def_effectful_abstract_eval(rule)  # type: ignore[no-untyped-call]


def side_effects(closed: ClosedJaxpr) -> frozenset[Any]:
    """The effects of ``closed`` an equation computing it carries: all but the named-axis
    effects of collectives, which say what must be in scope, not what happens."""
    return frozenset(e for e in closed.effects if not isinstance(e, _core.NamedAxisEffect))


def ffi_side_effect() -> Any:
    """The effect of ``jax.ffi.ffi_call(..., has_side_effect=True)``."""
    from jax._src import ffi as _ffi  # noqa: PLC0415 - jax.ffi loads with the first FFI rule

    return _ffi._FfiEffect


PALLAS_GPU_CUSTOM_CALLS: Final = ("__gpu$xla.gpu.triton", "mosaic_gpu", "mosaic_gpu_v2")
"""The custom calls of Pallas GPU kernels (Triton, Mosaic GPU), which jax.export refuses by
default: their format may change between jax versions.  (Mosaic TPU's is allowed.)"""


def export(
    fn: Callable[..., Any],
    specs: Sequence[jax.ShapeDtypeStruct],
    platforms: Sequence[str],
    *,
    custom_calls: Iterable[str] = (),
) -> jax.export.Exported:
    """``jax.export.export`` of ``fn`` (jitted here unless it already is) at ``specs``.

    ``custom_calls`` are custom-call targets allowed in the module besides JAX's own
    (the FFI targets of jext.lowering.ffi_rule: their plugin must be installed where the
    export runs).
    """
    jitted = fn if isinstance(fn, jax.stages.Wrapped) else jax.jit(fn)
    checks = [jax.export.DisabledSafetyCheck.custom_call(name) for name in custom_calls]
    with gpu_lowering_target(platforms):
        return jax.export.export(jitted, platforms=tuple(platforms), disabled_checks=checks)(*specs)


def define_prng_impl(
    *,
    key_shape: tuple[int, ...],
    seed: Callable[[jax.Array], jax.Array],
    split: Callable[[jax.Array, tuple[int, ...]], jax.Array],
    random_bits: Callable[[jax.Array, int, tuple[int, ...]], jax.Array],
    fold_in: Callable[[jax.Array, jax.Array], jax.Array],
    name: str,
    tag: str,
) -> Hashable:
    """``jax.extend.random.define_prng_impl``; JAX hands ``fold_in`` a uint32 array."""
    from jax.extend.random import define_prng_impl as define  # noqa: PLC0415 - heavy: imported when first used

    return define(
        key_shape=key_shape,
        seed=seed,
        split=split,
        random_bits=random_bits,
        fold_in=fold_in,  # type: ignore[arg-type]
        name=name,
        tag=tag,
    )


def call_exported(exported: jax.export.Exported, *args: Any) -> Any:
    return exported.call(*args)  # type: ignore[no-untyped-call]


def is_abstract_value(x: object) -> TypeGuard[AbstractValue]:
    return isinstance(x, jax.core.ShapedArray)


def tangent_dtype(dtype: Any) -> np.dtype[Any]:
    """The dtype of tangents for primal values of ``dtype`` (float0 for integers and keys)."""
    result: np.dtype[Any] = primal_dtype_to_tangent_dtype(dtype)  # type: ignore[no-untyped-call]
    return result


def trace_to_jaxpr(fun: Callable[..., Any], avals: Sequence[AbstractValue]) -> ClosedJaxpr:
    """Trace ``fun`` at ``avals`` (weak types kept) to a closed jaxpr."""
    specs = [shape_dtype_struct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    closed: ClosedJaxpr = jax.make_jaxpr(fun)(*specs)
    return closed


# --- automatic differentiation -------------------------------------------------------


def is_symbolic_zero(x: object) -> bool:
    return type(x) is ad.Zero


#: The zero tangent ``jax.custom_jvp(..., symbolic_zeros=True)`` rules receive (public API,
#: the same class in every supported JAX).
JaxSymbolicZero: TypeAlias = jax.custom_derivatives.SymbolicZero

#: What ``jax.custom_vjp(...).defvjp(fwd, bwd, symbolic_zeros=True)``'s ``fwd`` receives
#: for each operand leaf: ``value`` and ``perturbed`` (public API, every supported JAX).
CustomVJPPrimal: TypeAlias = jax.custom_derivatives.CustomVJPPrimal


def make_zero(aval: AbstractValue) -> Any:
    """A symbolic zero (co)tangent for a primal of abstract value ``aval``."""
    return ad.Zero(aval.to_tangent_aval())  # type: ignore[no-untyped-call]


def instantiate_zeros(x: Any) -> Any:
    """``x`` with a symbolic zero replaced by a concrete array of zeros."""
    return ad.instantiate_zeros(x)  # type: ignore[no-untyped-call]


def is_undefined_primal(x: object) -> bool:
    return isinstance(x, ad.UndefinedPrimal)


def undefined_primal(aval: AbstractValue) -> Any:
    """The placeholder a transpose rule receives for an operand it solves for."""
    return ad.UndefinedPrimal(aval)  # type: ignore[no-untyped-call]


def undefined_aval(x: Any) -> AbstractValue:
    aval: AbstractValue = x.aval
    return aval


def register_jvp(prim: Primitive, rule: Callable[..., tuple[Sequence[Any], Sequence[Any]]]) -> None:
    ad.primitive_jvps[prim] = rule


def register_linearizations(
    prim: Primitive,
    forward: Callable[..., tuple[Sequence[Any], Sequence[Any]]],
    reverse: Callable[..., tuple[Sequence[Any], Sequence[Any]]],
) -> None:
    """Linearize ``prim`` with the JVP ``forward`` for ``jax.linearize`` and ``reverse``
    for ``vjp`` instead of its JVP rule.

    Where JAX says so (:func:`linearization_knows_mode`), each linearization is its JVP
    partially evaluated, as JAX's fallback linearization does with the JVP rule; older
    JAX keeps the JVP rule registered by :func:`register_jvp` for both.
    """
    if not linearization_knows_mode():
        return

    def linearize(is_vjp: bool, nonzeros: Sequence[bool], *primals: Any, **params: Any) -> Any:
        jvp = reverse if is_vjp else forward
        dbg = _api_util.debug_info("linearize_prim_jvp", jvp, primals, params)
        return _ad_internal.linearize_from_jvp(
            _lu.wrap_init(jvp, debug_info=dbg), True, nonzeros, False, False, primals, params
        )

    _ad_internal.primitive_linearizations[prim] = linearize


def register_transpose(prim: Primitive, rule: Callable[..., Sequence[Any]]) -> None:
    ad.primitive_transposes[prim] = rule


def register_batching(
    prim: Primitive, rule: Callable[..., tuple[Sequence[Any], Sequence[int | None]]]
) -> None:
    """Batch ``prim`` with ``rule(axis_name, axis_size, args, dims, **params)``.

    ``axis_name`` is the name ``vmap`` was given (None for an anonymous one), so that
    collectives over it in the primitive's reference apply to the batch.  JAX calls the
    rule even when no operand is batched.  Since jax 0.10 an unbatched operand's dim is
    None (batching.not_mapped, None in 0.8 and 0.9 too, is gone).
    """

    def fancy(axis_data: Any, args: Any, dims: Any, **params: Any) -> Any:
        name = axis_data.name
        name = None if name is _core.no_axis_name else name
        return rule(name, axis_data.size, args, dims, **params)

    batching.fancy_primitive_batchers[prim] = fancy


def named_axes(closed: ClosedJaxpr) -> frozenset[Any]:
    """The named axes the collectives in ``closed`` (psum, axis_index, ...) refer to."""
    return frozenset(e.name for e in closed.effects if isinstance(e, _core.NamedAxisEffect))


def batched_results(
    closed: ClosedJaxpr, axis_name: Any, size: int, in_batched: Sequence[bool]
) -> list[bool]:
    """Which results of ``closed`` JAX's ``vmap`` over ``axis_name`` (of ``size``) batches,
    given which operands it batches: ``psum`` of an unbatched value is unbatched,
    ``axis_index`` is batched.  ``batching.AxisData(name, size, spmd_name, mesh_axis)``
    and ``batch_jaxpr`` are the same in jax 0.8 to 0.11."""
    axis_data = _batching_internal.AxisData(axis_name, size, None, None)
    batch_jaxpr = _batching_internal.batch_jaxpr
    _, out = batch_jaxpr(closed, axis_data, list(in_batched), False)  # type: ignore[no-untyped-call]
    return [bool(b) for b in out]


def axis_sizes() -> dict[Any, int]:
    """The named axes in scope (``vmap(axis_name=)``, ``shard_map``, ``pmap``) and their sizes."""
    return dict(_core.get_axis_env().axis_sizes)  # type: ignore[no-untyped-call]


def extend_axis_env(axes: Sequence[tuple[Any, int]]) -> Any:
    """A context in which the named ``axes`` (name, size) are in scope for tracing."""
    return _core.extend_axis_env_nd(list(axes))


# --- lowering ------------------------------------------------------------------------


def lower_fun(fun: Callable[..., Sequence[Any]]) -> LoweringRule:
    """An MLIR lowering rule that traces the JAX-traceable ``fun`` (flat list in, list out)."""
    rule: LoweringRule = mlir.lower_fun(fun, multiple_results=True)
    return rule


def avals_in(ctx: LoweringContext) -> list[AbstractValue]:
    return [a for a in ctx.avals_in if isinstance(a, AbstractValue)]


def lower_jaxpr(ctx: LoweringContext, closed: ClosedJaxpr, *values: Any) -> Sequence[Any]:
    """Emit ``closed`` into the module being lowered, on ``values``; returns its results."""
    closed = lojax(closed)
    module_ctx = ctx.module_context
    if ctx.platforms is not None:  # inside one branch of a multi-platform lowering
        module_ctx = module_ctx.replace(platforms=ctx.platforms)  # type: ignore[no-untyped-call]
    consts = (
        _mlir.ir_consts(closed.consts, [v.aval for v in closed.jaxpr.constvars])
        if closed.consts
        else []
    )
    outs, tokens = jaxpr_subcomp(
        module_ctx,
        closed.jaxpr,
        ctx.name_stack,
        ctx.tokens_in,
        consts,
        *values,
        dim_var_values=ctx.dim_var_values,
        const_lowering=ctx.const_lowering,
    )
    ctx.set_tokens_out(tokens)
    return list(outs)


def register_lowering(prim: Primitive, rule: LoweringRule, platform: str | None) -> None:
    """Register ``rule`` for ``platform`` (None: the fallback for every other platform)."""
    mlir.register_lowering(prim, rule, platform=platform)


def module_platforms(ctx: LoweringContext) -> tuple[str, ...]:
    """The platforms the module being lowered targets (several for a multi-platform export)."""
    return tuple(ctx.module_context.platforms)


def lowering_for_export(ctx: LoweringContext) -> bool:
    """Whether the module being lowered is for ``jax.export`` (serialized, run elsewhere)."""
    return bool(ctx.module_context.lowering_parameters.for_export)


def iter_equations(jaxpr: Jaxpr | ClosedJaxpr) -> Iterator[Any]:
    """Every equation in ``jaxpr`` and, recursively, in the jaxprs held in its params."""
    inner = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
    for eqn in inner.eqns:
        yield eqn
        for sub in jaxprs_in_params(eqn.params):
            yield from iter_equations(sub)


def bind(prim: Primitive, /, *args: Any, **params: Any) -> list[Any]:
    result: list[Any] = prim.bind(*args, **params)  # type: ignore[no-untyped-call]
    return result


# --- sharding ------------------------------------------------------------------------


def for_export(ctx: LoweringContext) -> bool:
    """Whether ``ctx`` lowers for ``jax.export`` (no backend runs the module here)."""
    return bool(ctx.module_context.lowering_parameters.for_export)


def partitioned_context(ctx: LoweringContext) -> bool:
    """Whether ``ctx`` lowers a module the Shardy partitioner will split over several
    devices (not a single device, not inside ``shard_map``'s per-device code), and not
    for ``jax.export``, which cannot serialize a ``custom_partitioning`` call."""
    from jax._src import sharding_impls  # noqa: PLC0415 - JAX internals, resolved only where sharding is lowered

    axis_context = ctx.module_context.axis_context
    # custom_partitioning needs the devices, which jit gives while lowering only to
    # primitives in require_devices_during_lowering.
    return (
        bool(_config.use_shardy_partitioner.value)
        and isinstance(axis_context, sharding_impls.ShardingContext)
        and axis_context.num_devices > 1
        and axis_context.device_assignment is not None
        and not for_export(ctx)
    )


def custom_partitioned(
    body: Callable[..., Sequence[Any]],
    per_shard: Callable[..., Sequence[Any]],
    rule: str,
    need_replication: tuple[str, ...],
    choose: Callable[[list[tuple[Any, ...]]], tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]],
) -> Callable[..., Any]:
    """``body`` as a ``custom_partitioning`` call carrying the Shardy ``rule``.

    At compile time ``choose(operand_specs)`` (mesh axes per dimension of each operand)
    gives the specs the operands are resharded to and the results' specs, and each
    device runs ``per_shard`` on its shards (same flat operands and results as ``body``).
    """
    from jax._src.sharding_impls import GSPMDSharding  # noqa: PLC0415 - JAX internals, resolved only where sharding is lowered
    from jax.experimental.custom_partitioning import custom_partitioning  # noqa: PLC0415 - JAX internals, resolved only where sharding is lowered

    def flat_body(*args: Any) -> tuple[Any, ...]:
        return tuple(body(*args))

    def flat_per_shard(*args: Any) -> tuple[Any, ...]:
        return tuple(per_shard(*args))

    def partition(mesh: Any, arg_shapes: Any, result_shape: Any) -> Any:
        shardings = [a.sharding for a in arg_shapes]
        if mesh.empty or not all(isinstance(x, jax.sharding.NamedSharding) for x in shardings):
            # Shardings not on a named mesh: run the call whole on every device.
            devices = shardings[0]._device_assignment
            whole = GSPMDSharding.get_replicated(devices)
            return (
                mesh,
                flat_per_shard,
                tuple(whole for _ in result_shape),
                (whole,) * len(shardings),
            )
        specs = [
            tuple(x.spec) + (None,) * (len(a.shape) - len(x.spec))
            for x, a in zip(shardings, arg_shapes, strict=True)
        ]
        args, results = choose(specs)
        return (
            mesh,
            flat_per_shard,
            tuple(named_sharding(mesh, r) for r in results),
            tuple(named_sharding(mesh, a) for a in args),
        )

    wrapped: Any = custom_partitioning(flat_body)  # type: ignore[no-untyped-call]
    wrapped.def_partition(partition, sharding_rule=rule, need_replication_factors=need_replication)
    return wrapped  # type: ignore[no-any-return]


_CUSTOM_CALL_PRIMITIVES: Final = frozenset({"ffi_call", "pallas_call", "custom_call"})


def has_custom_call(closed: ClosedJaxpr) -> bool:
    """Whether ``closed`` lowers to a custom call the partitioner cannot see into (an FFI
    call or a Pallas kernel; in interpret mode too, which stands in for the kernel)."""
    return any(eqn.primitive.name in _CUSTOM_CALL_PRIMITIVES for eqn in iter_equations(closed))


def ffi_call_targets(closed: ClosedJaxpr) -> frozenset[str]:
    """The targets of the ``jax.ffi.ffi_call`` equations in ``closed`` (any depth).

    ``ffi_call_p``'s ``target_name`` param, the same in jax 0.8 to 0.11."""
    return frozenset(
        str(eqn.params["target_name"])
        for eqn in iter_equations(closed)
        if eqn.primitive.name == "ffi_call"
    )


def require_devices_during_lowering(prim: Primitive) -> None:
    """Make ``jit`` lower modules binding ``prim`` with their devices known, as
    ``custom_partitioning`` (which jext may lower ``prim`` to) needs."""
    from jax._src import dispatch  # noqa: PLC0415 - JAX internals, resolved only where sharding is lowered

    dispatch.prim_requires_devices_during_lowering.add(prim)


# The names XLA's backends register their custom-call handlers under.  jax.ffi passes any
# other name through unchanged (only "cpu" and "gpu" are mapped), so a handler registered
# for "cuda" waits forever for a "cuda" backend that never comes, and every call of it on
# a GPU fails with "No FFI handler registered ... on a platform CUDA".
_XLA_FFI_PLATFORM: Final = {"cpu": "cpu", "cuda": "CUDA", "rocm": "ROCM"}


def register_ffi_target(name: str, handler: object, platform: str) -> None:
    """Register ``handler`` (a PyCapsule or a mapping of FFI stages to them) as the FFI
    target ``name`` on jext's ``platform`` (``cpu``, ``cuda`` or ``rocm``)."""
    jax.ffi.register_ffi_target(name, handler, platform=_XLA_FFI_PLATFORM[platform], api_version=1)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    jax.ffi.register_ffi_target_as_batch_partitionable(name)


def compile_ffi_probe(target: str, platform: str) -> None:
    """Compile a call of the FFI ``target`` on ``platform``; raises if XLA has no handler."""
    # One element: XLA folds away a call whose result is empty, handler or not.
    call = jax.ffi.ffi_call(target, shape_dtype_struct((1,), np.float32))
    with eval_context():
        one = jax.device_put(np.zeros((1,), np.float32), jax.devices(platform)[0])
        jax.jit(call).lower(one).compile()


def named_sharding(mesh: jax.sharding.Mesh, spec: Sequence[Any]) -> jax.sharding.NamedSharding:
    """``NamedSharding(mesh, PartitionSpec(*spec))``."""
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))  # type: ignore[no-untyped-call]


def mesh_axes_of(aval: AbstractValue) -> tuple[Any, ...] | None:
    """Per dimension, the explicit mesh axes ``aval`` is sharded along (None: unsharded),
    or None when ``aval`` has no explicit sharding in its type."""
    sharding: Any = getattr(aval, "sharding", None)
    mesh = getattr(sharding, "mesh", None)
    if mesh is None or getattr(mesh, "empty", True):
        return None
    explicit = {
        name
        for name, kind in zip(mesh.axis_names, mesh.axis_types, strict=True)
        if kind == jax.sharding.AxisType.Explicit
    }
    if not explicit:
        return None
    spec = tuple(sharding.spec) + (None,) * (len(aval.shape) - len(sharding.spec))

    def own(entry: Any) -> Any:
        names = (entry,) if isinstance(entry, str) else tuple(entry or ())
        kept = tuple(n for n in names if n in explicit)
        return None if not kept else kept[0] if len(kept) == 1 else kept

    return tuple(own(e) for e in spec)


def with_mesh_axes(
    aval: AbstractValue, axes: Sequence[Any], *, like: AbstractValue
) -> AbstractValue:
    """``aval`` sharded along ``axes`` (per dimension) of the explicit mesh of ``like``."""
    sharding: Any = like.sharding
    spec = jax.sharding.PartitionSpec(*axes)  # type: ignore[no-untyped-call]
    out: AbstractValue = aval.update(sharding=sharding.update(spec=spec))  # type: ignore[no-untyped-call]
    return out


# --- tracing and caching ---------------------------------------------------------------


def trace_context() -> Hashable:
    """Every JAX config value that changes how a function traces (x64, default dtype bits,
    rank and dtype promotion, the current mesh, ...): part of every jext trace-cache key."""
    context: Hashable = _config.trace_context()
    return context


def trace_avals(fun: Callable[..., Sequence[Any]], avals: Sequence[Any]) -> ClosedJaxpr:
    """Trace the flat ``fun`` at ``avals`` exactly as given (weak type, sharding, vma kept)."""
    debug = _api_util.debug_info("jext", fun, tuple(avals), {})
    jaxpr, _, consts = _pe.trace_to_jaxpr_dynamic(_lu.wrap_init(fun, debug_info=debug), list(avals))
    return ClosedJaxpr(jaxpr, consts)


@dataclasses.dataclass(frozen=True)
class CustomRules:
    """The function and rules of a ``jax.custom_jvp`` or ``jax.custom_vjp`` object."""

    fun: Callable[..., Any]
    nondiff_argnums: tuple[int, ...]
    jvp: Callable[..., Any] | None = None
    symbolic_zeros: bool = False
    fwd: Callable[..., Any] | None = None
    bwd: Callable[..., Any] | None = None


def custom_rules(fn: object) -> CustomRules | None:
    """``fn``'s rules if it is a ``jax.custom_jvp`` or ``jax.custom_vjp`` function (with its
    rules defined), else None."""
    if isinstance(fn, jax.custom_jvp):
        return CustomRules(
            fn.fun,
            tuple(fn.nondiff_argnums),
            jvp=fn.jvp,
            symbolic_zeros=bool(fn.symbolic_zeros),
        )
    if isinstance(fn, jax.custom_vjp):
        return CustomRules(
            fn.fun,
            tuple(fn.nondiff_argnums),
            symbolic_zeros=bool(fn.symbolic_zeros),
            fwd=fn.fwd,
            bwd=fn.bwd,
        )
    return None


def positional_operands(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``fun`` with its positional-or-keyword parameters made positional-only (a jext
    primitive's operands), named as ``fun`` so that its definition's origin is ``fun``'s."""

    def reference(*operands: Any, **params: Any) -> Any:
        return fun(*operands, **params)

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(reference, attr, getattr(fun, attr, getattr(reference, attr)))
    parameters = [
        p.replace(kind=p.POSITIONAL_ONLY) if p.kind is p.POSITIONAL_OR_KEYWORD else p
        for p in inspect.signature(fun).parameters.values()
    ]
    reference.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return reference


def hoist_traced_consts(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list[Any]] | None:
    """``closed`` with its traced constants (values of an enclosing trace it closed over)
    made leading inputs, and those values; None when it closed over no traced value.

    What ``jax.closure_convert`` does: the function is then a pure function of its
    inputs, which a primitive's rules can trace, lower and transform on their own.
    """
    traced = [isinstance(c, _core.Tracer) for c in closed.consts]
    if not any(traced):
        return None
    jaxpr = closed.jaxpr
    constvars = [v for v, t in zip(jaxpr.constvars, traced, strict=True) if t]
    kept = [v for v, t in zip(jaxpr.constvars, traced, strict=True) if not t]
    # Untyped in jax 0.12 (Jaxpr.replace also takes ClosedJaxpr's old keywords there).
    hoisted = jaxpr.replace(  # type: ignore[no-untyped-call, unused-ignore]
        constvars=kept, invars=[*constvars, *jaxpr.invars]
    )
    consts = [c for c, t in zip(closed.consts, traced, strict=True) if not t]
    values = [c for c, t in zip(closed.consts, traced, strict=True) if t]
    return ClosedJaxpr(hoisted, consts), values


def drop_unused_effects(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` without the equations none of its results need, effectful ones too.

    For a jaxpr that recomputes what an equation already computed (the primal part of a
    derivative whose primal results come from the primitive's own equation): its
    effects (a ``jax.debug.print``) ran there and must not run again.  Equations whose
    results are used stay, whatever their effects.
    """
    jaxpr = closed.jaxpr
    used = {v for v in jaxpr.outvars if isinstance(v, _core.Var)}
    kept: list[Any] = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in used for v in eqn.outvars):
            kept.append(eqn)
            used.update(v for v in eqn.invars if isinstance(v, _core.Var))
    if len(kept) == len(jaxpr.eqns):
        return closed
    kept.reverse()
    effects = _core.join_effects(*(eqn.effects for eqn in kept))
    # Jaxpr.replace is typed on JAX 0.10 and untyped on 0.12.
    pruned = jaxpr.replace(eqns=kept, effects=effects)  # type: ignore[no-untyped-call, unused-ignore]
    return ClosedJaxpr(pruned, closed.consts)


def split_linearized(
    jvp_jaxpr: ClosedJaxpr, n_primals: int, n_outs: int
) -> tuple[ClosedJaxpr, ClosedJaxpr, int]:
    """Split the JVP jaxpr ``(primals, tangents) -> (outs, tangent outs)`` in two.

    Returns the forward jaxpr ``primals -> (outs, residuals)``, the linear jaxpr
    ``(residuals, tangents) -> tangent outs`` and the number of residuals: JAX's own
    partial evaluation, the same split ``jax.linearize`` makes.
    """
    n_tangents = len(jvp_jaxpr.in_avals) - n_primals
    unknowns = [False] * n_primals + [True] * n_tangents
    instantiate = [False] * n_outs + [True] * n_outs
    known, unknown, _, residuals = _pe.partial_eval_jaxpr_nounits(jvp_jaxpr, unknowns, instantiate)
    return known, unknown, len(residuals)


def run_eagerly(fun: Callable[..., Any], *args: Any) -> Any:
    """Call the jitted ``fun`` even under ``jax.disable_jit()`` (an impl must compile:
    with jit disabled it would bind the primitive again, forever)."""
    previous = _config.disable_jit.swap_local(False)
    try:
        return fun(*args)
    finally:
        _config.disable_jit.set_local(previous)


def add_batch_axis(aval: AbstractValue, size: int, mesh_axis: Any = None) -> AbstractValue:
    """``aval`` with a new leading axis of ``size``, sharded along ``mesh_axis`` (or not)."""
    out: AbstractValue = _core.unmapped_aval(size, 0, aval, mesh_axis)  # type: ignore[assignment]
    return out


def leading_axis_sharding(aval: AbstractValue) -> Any:
    """The mesh axis (or axes) ``aval``'s leading axis is sharded along, or None."""
    spec = getattr(getattr(aval, "sharding", None), "spec", None)
    return spec[0] if spec is not None and len(spec) > 0 else None


def drop_batch_axis(aval: AbstractValue, size: int) -> AbstractValue:
    """``aval`` without its leading axis of ``size``."""
    out: AbstractValue = _core.mapped_aval(size, 0, aval)  # type: ignore[assignment]
    return out


def eval_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    out: list[Any] = jaxpr_as_fun(closed)(*args)
    return out


def _cbrt_probe_points() -> np.ndarray:
    significands = np.random.default_rng(0).uniform(1.0, 8.0, 1000)
    return np.concatenate(
        [10.0 ** np.linspace(-300.0, 300.0, 4001), np.linspace(-9.0, 9.0, 999), significands]
    )


def _is_nearest_cbrt(x: float, y: float) -> bool:
    """Whether ``y`` is the float64 nearest ``cbrt(x)``, decided in exact arithmetic.

    Cubing is monotonic, so it is iff ``x`` lies between the cubes of the midpoints from
    ``y`` to its neighbours (a cube root is never exactly halfway between two floats).
    """
    if x == 0.0 or not math.isfinite(x):
        return y == x
    if (x < 0.0) != (y < 0.0):
        return False
    x, y = abs(x), abs(y)
    lower = (Fraction(math.nextafter(y, 0.0)) + Fraction(y)) / 2
    upper = (Fraction(y) + Fraction(math.nextafter(y, math.inf))) / 2
    return lower**3 < Fraction(x) < upper**3


# What xla_compile_options (a version switch, below) probes with: XLA's message for an option
# it does not have, and the probe, cached per set of options.
_NO_SUCH_OPTION: Final = re.compile(r"No such compile option: '(\w+)'")


@functools.cache
def _accepted_compile_options(items: tuple[tuple[str, Any], ...]) -> frozenset[str]:
    probe = jax.jit(lambda x: x + 1).lower(np.float32(0.0))
    wanted = dict(items)
    while True:
        try:
            probe.compile(wanted)
        except jax.errors.JaxRuntimeError as error:
            found = _NO_SUCH_OPTION.search(str(error))
            if found is None or found.group(1) not in wanted:
                raise
            del wanted[found.group(1)]
        else:
            return frozenset(wanted)


# --- version switches ----------------------------------------------------------------
# Every difference between the JAX releases jext supports (pyproject: jax>=0.8, tested from
# 0.8.3 to 0.12) is one function (or typed name) here, named for what it does; its
# docstring names the release and the change it absorbs (tests/test_jax_versions.py checks
# each against the installed JAX).  CI runs the suite on the oldest (0.8.3), on the newest
# installable on the machine's Python, and on the newest on Python 3.13.

JAX_VERSION: Final[tuple[int, ...]] = tuple(jax.__version_info__)
"""The installed JAX release, e.g. ``(0, 10, 2)``."""

JAX_RELEASE: Final[str] = jax.__version__
"""The installed JAX release as JAX writes it (jax 0.10.2: ``"0.10.2"``), for messages and
keys."""

# From jaxlib itself, not importlib.metadata: a metadata lookup scans every installed
# distribution, which `import jext` must not do.
JAXLIB_RELEASE: Final[str] = _jaxlib_version
"""The installed jaxlib release, e.g. ``"0.10.2"`` (jaxlib 0.8 and later), for messages."""


@functools.cache
def installed_ffi_api() -> tuple[int, int] | None:
    """The XLA FFI API version ``(major, minor)`` of the installed jaxlib; None if unknown.

    Read from the FFI headers jaxlib ships (``jax.ffi.include_dir()``), which are the ones
    it was built with: jaxlib 0.10.2's say 0.3.  XLA accepts handlers built against an
    older minor version, never a newer one, and jaxlib 0.8 then cannot start its CPU
    backend at all, so jext compares a plugin's build against this before registering.
    """
    import jax.ffi  # noqa: PLC0415 - jax.ffi loads only once a plugin has native handlers

    header = Path(jax.ffi.include_dir(), "xla", "ffi", "api", "c_api.h")
    try:
        return parse_ffi_api(header.read_text(encoding="utf-8"))
    except OSError:
        return None


mlir_ir: Final[Any] = _mlir_ir
"""``jax.extend.mlir.ir``, the MLIR builders of raw lowering rules, typed ``Any``.

jaxlib 0.10 ships type stubs for its MLIR bindings; jax 0.8.3's has none, so mypy finds
no ``ir.RankedTensorType`` there.  Typed ``Any``, code using it type-checks the same on
every supported JAX.
"""


def parse_ffi_api(header: str) -> tuple[int, int] | None:
    """``(XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR)`` as defined in the text of ``c_api.h``.

    Every jaxlib from 0.8 on (jaxlib 0.10.2 included) defines both as integer macros.
    """
    found = [
        re.search(rf"^#define XLA_FFI_API_{part}\s+(\d+)", header, re.M)
        for part in ("MAJOR", "MINOR")
    ]
    if found[0] is None or found[1] is None:
        return None
    return int(found[0].group(1)), int(found[1].group(1))


def jaxpr_subcomp(
    module_ctx: Any,
    jaxpr: Jaxpr,
    name_stack: Any,
    tokens: Any,
    consts: Sequence[Any],
    *values: Any,
    dim_var_values: Sequence[Any],
    const_lowering: Any,
) -> tuple[Sequence[Any], Any]:
    """``mlir.jaxpr_subcomp``: emit ``jaxpr`` inline into the module being lowered.

    jax 0.9.1 added the required keyword ``outer_traceback`` (the traceback prefixed to
    the source locations of the inlined equations); jax 0.8 and 0.9.0 do not accept it.
    """
    # Typed loosely: the keyword set differs with the installed JAX.
    subcomp: Callable[..., tuple[Sequence[Any], Any]] = mlir.jaxpr_subcomp
    newer = {"outer_traceback": xla_client.Traceback()} if JAX_VERSION >= (0, 9, 1) else {}
    return subcomp(
        module_ctx,
        jaxpr,
        name_stack,
        tokens,
        consts,
        *values,
        dim_var_values=dim_var_values,
        const_lowering=const_lowering,
        **newer,
    )


def literal_array_types() -> tuple[type, ...]:
    """Array types JAX hands to rules besides numpy's and its own: its tracing literals.

    jax 0.8 to 0.9.1 pass host constants met while tracing (a numpy operand of a JVP rule
    under ``vmap``, say) as ``jax._src.literals.TypedNdArray``, a wrapper around a numpy
    array; jax 0.9.2 made it a ``numpy.ndarray`` subclass, an operand like any other.
    """
    return () if issubclass(_TypedNdArray, np.ndarray) else (_TypedNdArray,)


def linearization_knows_mode() -> bool:
    """Whether JAX tells a primitive's linearization rule if it linearizes for reverse mode.

    jax 0.9.2 added the ``is_vjp`` argument of ``ad.primitive_linearizations`` rules: True
    under ``vjp`` (``grad``, ``jacrev``), False under ``jax.linearize``.  ``jax.jvp``
    (``jacfwd``) uses the JVP rule, and so does reverse mode where JAX derives it from a
    JVP (``jax_use_direct_linearize`` off, a ``checkpoint`` body).  jax 0.8 and 0.9.0 have
    no flag: there a primitive's JVP rule serves every mode.
    """
    return JAX_VERSION >= (0, 9, 2)


# JAX behaviours jext passes through unchanged but its tests (some ported from JAX's own)
# meet; kept here so that every difference between supported releases is in one place.


def typed_keys_pickle() -> bool:
    """Whether typed PRNG key arrays (``jax.random.key``) pickle.

    jax 0.9.1 gave ``PRNGKeyArray`` a ``__getstate__``; in jax 0.8 pickling any typed key,
    JAX's own threefry keys included, raises ``TypeError: cannot pickle 'PRNGKeyArray'``.
    """
    return JAX_VERSION >= (0, 9, 1)


def random_exponential_takes_out_sharding() -> bool:
    """Whether ``jax.random.exponential`` takes ``out_sharding`` (jax 0.10.1 added it)."""
    return JAX_VERSION >= (0, 10, 1)


@functools.cache
def xla_cbrt_is_correctly_rounded() -> bool:
    """Whether XLA:CPU's float64 ``cbrt`` (``jnp.cbrt``) rounds correctly on this machine.

    A probe, not a version test, measured once per process: the answer depends on the
    CPU as well as on JAX.  jax 0.8.3 and 0.9.2 miss by up to 115 ulp near the subnormals;
    jax 0.10.2 rounds correctly on some CPUs and misses by up to 3 ulp on an AVX-512 Xeon
    (``cbrt(7.94e-75)``), where XLA picks another vector implementation.  Each result on
    a sample spanning the float64 range (and the significands of ``[1, 8)``) is checked
    exactly against the midpoints to its neighbours (no library's root is the reference:
    NumPy's ``cbrt`` is not correctly rounded on every CPU either).
    Computed on the CPU backend with x64 on, eagerly even when asked inside a trace.
    """
    x = _cbrt_probe_points()
    cpu = jax.devices("cpu")[0]
    with jax.enable_x64(True), jax.ensure_compile_time_eval():
        got = np.asarray(jax.numpy.cbrt(jax.device_put(x, cpu)))
    return all(_is_nearest_cbrt(v, r) for v, r in zip(x.tolist(), got.tolist(), strict=True))


PALLAS_TRITON_DEPRECATION: Final = "The Pallas Triton backend is deprecated"
"""The start of the warning jax 0.11 and newer give at each lowering of a Pallas Triton
kernel (Triton's backend is deprecated for Mosaic GPU)."""


def pallas_triton_params(*, num_warps: int, num_stages: int) -> Any:
    """Pallas ``compiler_params`` selecting Triton (cuda), with ``num_warps`` and ``num_stages``.

    ``jax.experimental.pallas.triton.CompilerParams`` in every supported JAX.  Triton, not
    Mosaic GPU: Mosaic GPU's kernels run on Hopper (sm_90) and newer only, Triton's from
    sm_80 on.  jax 0.11's deprecation warning of the Triton backend (at each lowering) is
    jext's to carry, not its users': that message alone is ignored from the first call.
    """
    # Pallas takes longer to import than jext: it loads only when a kernel is traced.
    from jax.experimental.pallas import triton as pltriton  # noqa: PLC0415 - see above

    warnings.filterwarnings(
        "ignore", message=PALLAS_TRITON_DEPRECATION, category=DeprecationWarning
    )
    return pltriton.CompilerParams(num_warps=num_warps, num_stages=num_stages)


def xla_compile_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` without those the running XLA does not know, for ``Lowered.compile``.

    A probe, not a version test: XLA rejects a whole compilation over one option it does
    not have (``No such compile option``), and its options come and go with jaxlib
    (jax 0.12 dropped ``xla_cpu_use_fusion_emitters``, XLA:CPU's switch back to its older
    elemental emitter).  Each set of names is probed once per process, on the default
    backend, by compiling a one-operation program with them.
    """
    accepted = _accepted_compile_options(tuple(sorted(options.items())))
    return {name: value for name, value in options.items() if name in accepted}


EXPORT_GPU_KIND: Final = "NVIDIA H100"
"""The GPU jext lowers Pallas's Triton kernels for where the machine has none: compute
capability 9.0, the one jax 0.8 to 0.11 fall back to (jax 0.12 asks for a GPU)."""


def gpu_lowering_target(platforms: Sequence[str]) -> contextlib.AbstractContextManager[Any]:
    """A context in which lowering for ``platforms`` finds a GPU to target on a machine
    without one (exporting a Pallas Triton kernel for cuda from a CPU machine).

    jax 0.8 to 0.11's Pallas Triton lowering falls back to compute capability 9.0 when no
    GPU is present; jax 0.12's raises ``No supported GPU devices found, please specify an
    abstract GPU device`` unless the abstract mesh in context names one.  Where that
    matters (jax 0.12 and later, a GPU platform among ``platforms``, no local GPU) the
    context is an empty abstract mesh on an :data:`EXPORT_GPU_KIND`, the same 9.0; elsewhere
    nothing.
    """
    if JAX_VERSION < (0, 12) or not {"cuda", "rocm"} & set(platforms):
        return contextlib.nullcontext()
    try:
        jax.local_devices(backend="gpu")
    except RuntimeError:  # no GPU backend in this process
        device = jax.sharding.AbstractDevice(  # type: ignore[attr-defined, call-arg, unused-ignore]
            device_kind=EXPORT_GPU_KIND, num_cores=None, platform="gpu"
        )
        mesh = jax.sharding.AbstractMesh((), (), abstract_device=device)  # type: ignore[call-arg, unused-ignore]
        return jax.sharding.use_abstract_mesh(mesh)  # type: ignore[no-any-return, unused-ignore]
    return contextlib.nullcontext()


def lojax(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with its hijax equations expanded into ordinary ones, for lowering.

    jax 0.12's hijax primitives (``jax.experimental.hijax.HiPrim``; ``jnp.ldexp`` and
    ``jnp.frexp`` are ones) have no MLIR lowering: JAX expands them (``to_lojax``) before it
    lowers a jaxpr, and so must jext before it emits a reference's jaxpr into a module.  A
    jaxpr says whether it holds any (``is_high``); jax 0.8 to 0.11's jaxprs never do here.
    """
    if not getattr(closed.jaxpr, "is_high", False):
        return closed
    lowered: ClosedJaxpr = _pe.lower_jaxpr2(closed)  # type: ignore[attr-defined, unused-ignore]
    return lowered
