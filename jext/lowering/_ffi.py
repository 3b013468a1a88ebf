"""XLA FFI lowering rules: a primitive's platform rule that calls a native handler."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from jext import _host, _jax
from jext._errors import DefinitionError, RuleError, StaticParamError
from jext.primitives._rules import FFI_SIDE_EFFECT_ATTR, FFI_TARGET_ATTR
from jext.primitives._signature import RuleArity, rule_arity

__all__ = ["AttrType", "ComputedAttr", "VmapMethod", "ffi_rule", "ffi_targets"]

VmapMethod = Literal["sequential", "sequential_unrolled", "expand_dims", "broadcast_all"]
"""How ``jax.vmap`` runs an FFI call (``jax.ffi.ffi_call``'s ``vmap_method``).

- ``"sequential"``: a loop (``lax.map``) calling the handler once per batch element;
  right for any handler.  ``"sequential_unrolled"``: the same loop, unrolled.
- ``"expand_dims"``: one call; batched operands get the batch axis in front, unbatched
  ones a size-1 axis there.  The handler must broadcast over leading axes.
- ``"broadcast_all"``: one call; every operand is broadcast to the batch size in front.
  The handler must treat leading axes as independent (e.g. rows of a row-wise kernel).
"""

_SCALAR_ATTRS: Final[Mapping[str, type[np.generic]]] = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}

AttrType = Literal[
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "str",
    "bool[]",
    "int8[]",
    "int16[]",
    "int32[]",
    "int64[]",
    "uint8[]",
    "uint16[]",
    "uint32[]",
    "uint64[]",
    "float32[]",
    "float64[]",
]
"""The type of an FFI attribute, as the C++ handler binds it.

``"float32"`` is ``.Attr<float>``, ``"int64"`` is ``.Attr<int64_t>``, ``"bool"`` is
``.Attr<bool>``, ``"str"`` is ``.Attr<std::string_view>``; ``"<type>[]"`` is a 1-D array,
``.Attr<ffi::Span<const T>>``.
"""


@dataclass(frozen=True, slots=True)
class ComputedAttr:
    """An FFI attribute computed from the operands' shapes and dtypes and the static params.

    ``fn(*operands, **params)`` receives each operand as a ``jax.ShapeDtypeStruct`` (in the
    caller's pytree structure) and the static params it declares; it returns the value,
    converted to ``kind`` like a static param, or None to omit the attribute::

        attrs={"n": jext.lowering.ComputedAttr("uint64", lambda a, b: a.size)}
    """

    kind: AttrType
    fn: Callable[..., Any]


_ATTR_TYPES: Final = frozenset(get_args(AttrType))
_VMAP_METHODS: Final = frozenset(get_args(VmapMethod))


def ffi_rule(
    target: str,
    *,
    primitive: Callable[..., Any],
    results: Callable[..., Any] | None = None,
    attrs: Mapping[str, AttrType | ComputedAttr] | None = None,
    ignore: Sequence[str] = (),
    vmap_method: VmapMethod = "sequential",
    input_output_aliases: Mapping[int, int] | None = None,
    has_side_effect: bool = False,
) -> Callable[..., Any]:
    """A traceable lowering rule that calls the XLA FFI handler registered as ``target``.

    Register the rule for the platforms whose handler exists::

        softplus.def_lowering(
            jext.lowering.ffi_rule(
                "mylib_softplus", primitive=softplus, results=lambda x: x,
                attrs={"beta": "float32"}, vmap_method="broadcast_all",
            ),
            platform="cpu",
        )

    **Arguments:**

    - ``target``: the FFI target name the handler is registered under for the platform
      (by a plugin's ``jext_register_ffi_targets`` hook).  Lowering (and so exporting)
      does not need the handler; compiling and running do.
    - ``primitive``: the primitive the rule lowers (or a function with its signature).
      Its abstract evaluation (``jax.eval_shape(primitive, *operands, **params)``) is
      what the jaxpr promised; operands and results that are pytrees reach the handler
      flattened, in ``jax.tree`` order.
    - ``results``: what the handler writes, ``results(*operands, **params) -> pytree``
      of objects with ``shape`` and ``dtype`` (operands as ``jax.ShapeDtypeStruct``, in
      the caller's structure; only the static params the function declares).
      ``lambda x: x`` says "one result shaped like ``x``".  These are the call's declared
      results, and when they differ from the primitive's abstract evaluation lowering
      raises :class:`jext.RuleError` naming both (XLA would otherwise hand the handler
      buffers of the wrong size or type, and the program would read memory the handler
      never wrote).  None: the abstract evaluation's, for a handler that writes whatever
      the reference returns.
    - ``attrs``: the FFI attributes.  A static param maps to the :data:`AttrType` its
      C++ binding expects; its value is converted to exactly that type (a Python
      ``float`` alone would arrive as float64) and checked: an ``int`` out of range, a
      non-integral float for an int, a bool for a number, or a 2-D array raise
      :class:`jext.StaticParamError` naming the param and the target.  A
      :class:`ComputedAttr` computes an attribute from the operands and params.  An
      attribute whose value is None is omitted from the call.
    - ``ignore``: static params the handler does not take (e.g. ones only the reference
      reads).  Every static param of the primitive must be in ``attrs`` or ``ignore``, so
      a param is never dropped silently.
    - ``vmap_method``: how ``jax.vmap`` runs the call, see :data:`VmapMethod`.  The
      primitive stays in the jaxpr under ``vmap``; jext vmaps each platform's rule, so
      this choice decides whether the handler sees the batch natively (``"expand_dims"``,
      ``"broadcast_all"``) or is looped over (``"sequential"``, the default, always
      correct).
    - ``input_output_aliases``: ``{operand index: result index}`` (flat indices), results
      written in place of operands, as ``jax.ffi.ffi_call`` takes them.  An aliased pair
      must have the same shape and dtype (:class:`jext.RuleError` at lowering otherwise).
    - ``has_side_effect``: the handler has effects beyond its results (state, I/O):
      passed to ``jax.ffi.ffi_call``, so XLA neither removes nor merges the call, and set
      as the rule's ``jext_ffi_side_effect`` attribute, which gives the primitive's
      equations the FFI's effect: ``jit`` keeps a call whose results are unused.

    The rule's ``__qualname__`` is ``"ffi:<target>"``, which ``jext list`` and
    :func:`jext.lowering.export` show as the rule of each platform it is registered for.
    Raises :class:`jext.DefinitionError` for an unknown attribute type or vmap method, a
    param in neither ``attrs`` nor ``ignore``, or malformed ``input_output_aliases``.
    """
    if not isinstance(target, str) or not target:
        raise DefinitionError(f"ffi_rule: the target must be a non-empty str, got {target!r}")
    where = f"FFI target {target!r}"
    if not callable(primitive):
        raise DefinitionError(f"ffi_rule({target!r}): primitive= must be callable")
    if results is not None and not callable(results):
        raise DefinitionError(f"ffi_rule for {where}: results= must be callable or None")
    if vmap_method not in _VMAP_METHODS:
        raise DefinitionError(
            f"ffi_rule for {where}: unknown vmap_method {vmap_method!r}; expected one of "
            f"{sorted(_VMAP_METHODS)}"
        )
    attr_types = dict(attrs or {})
    ignored = frozenset(ignore)
    prim_name = getattr(primitive, "name", getattr(primitive, "__qualname__", repr(primitive)))
    param_names = _param_names(primitive)
    _check_attrs(where, prim_name, attr_types, ignored, param_names)
    computed = {n: k for n, k in attr_types.items() if isinstance(k, ComputedAttr)}
    from_params = {n: k for n, k in attr_types.items() if not isinstance(k, ComputedAttr)}
    aliases = _aliases(where, input_output_aliases)
    arities = {
        name: _arity(prim_name, f"ffi_rule {what}", fn, param_names)
        for name, what, fn in (
            ("results=", "results", results),
            *((n, f"attribute {n!r}", c.fn) for n, c in computed.items()),
        )
        if fn is not None
    }

    def rule(*operands: Any, **params: Any) -> Any:
        _ensure_targets_registered()
        unknown = sorted(params.keys() - attr_types.keys() - ignored)
        if unknown:
            raise StaticParamError(
                f"{where} (lowering {prim_name!r}): static param(s) {unknown} are neither FFI "
                "attributes nor ignored; list them in ffi_rule(attrs=...) or ignore=..."
            )
        specs = tree_util.tree_unflatten(
            tree_util.tree_structure(operands),
            [
                _jax.shape_dtype_struct(jnp.shape(x), jnp.result_type(x))
                for x in tree_util.tree_leaves(operands)
            ],
        )

        def call_with(name: str, fn: Callable[..., Any]) -> Any:
            arity = arities[name] or _arity(prim_name, name, fn, frozenset(params))
            return fn(*specs, **(params if arity is None else arity.select(params)))

        ffi_attrs = {
            name: _convert(where, name, kind, params[name])
            for name, kind in from_params.items()
            if params.get(name) is not None
        }
        for name, attr in computed.items():
            value = call_with(name, attr.fn)
            if value is not None:
                ffi_attrs[name] = _convert(where, name, attr.kind, value)
        # Params bound with partial: eval_shape would trace keyword arguments as arrays.
        reference = functools.partial(primitive, **params)
        promised, out_tree = tree_util.tree_flatten(jax.eval_shape(reference, *specs))
        declared = promised
        if results is not None:
            declared = _check_declared(
                where, prim_name, specs, params, call_with("results=", results), promised, out_tree
            )
        out_types = [_jax.shape_dtype_struct(s.shape, s.dtype) for s in declared]
        flat = tree_util.tree_leaves(operands)
        _check_aliases(where, prim_name, aliases, flat, out_types)
        call = jax.ffi.ffi_call(
            target,
            out_types,
            vmap_method=vmap_method,
            input_output_aliases=dict(aliases) or None,
            has_side_effect=has_side_effect,
        )
        outs = call(*flat, **ffi_attrs)
        return tree_util.tree_unflatten(out_tree, list(outs))

    # jext.lowering.export allows the custom calls of every ffi_rule's target, which
    # jax.export refuses by default (they have no compatibility guarantee).
    _host.FFI_RULE_TARGETS.add(target)
    rule.__dict__[FFI_TARGET_ATTR] = target  # how jext's lowering tells an FFI rule apart
    # For the primitive core: an equation whose rule has side effects is not dead code.
    rule.__dict__[FFI_SIDE_EFFECT_ATTR] = bool(has_side_effect)
    rule.__name__ = rule.__qualname__ = f"ffi:{target}"
    rule.__doc__ = f"Lowers {prim_name} with the XLA FFI target {target!r}."
    return rule


def _check_attrs(
    where: str,
    prim_name: str,
    attr_types: Mapping[str, AttrType | ComputedAttr],
    ignored: frozenset[str],
    param_names: frozenset[str] | None,
) -> None:
    """DefinitionError for an unknown attribute type, or a param not accounted for."""
    for name, kind in attr_types.items():
        type_name = kind.kind if isinstance(kind, ComputedAttr) else kind
        if type_name not in _ATTR_TYPES:
            raise DefinitionError(
                f"ffi_rule for {where}: attribute {name!r} has unknown type {type_name!r}; "
                f"expected one of {sorted(_ATTR_TYPES)}"
            )
    both = sorted(ignored & attr_types.keys())
    if both:
        raise DefinitionError(f"ffi_rule for {where}: {both} are both in attrs= and ignore=")
    if param_names is None:
        return
    from_params = {n for n, k in attr_types.items() if not isinstance(k, ComputedAttr)}
    unknown = sorted((from_params | ignored) - param_names)
    if unknown:
        raise DefinitionError(
            f"ffi_rule for {where}: {unknown} are not static params of {prim_name!r} "
            f"(those are {sorted(param_names)}); an attribute computed from the operands "
            "is a ComputedAttr"
        )
    missing = sorted(param_names - attr_types.keys() - ignored)
    if missing:
        raise DefinitionError(
            f"ffi_rule for {where}: static param(s) {missing} of {prim_name!r} would not "
            "reach the handler; pass them with attrs={name: type} or say ignore=[name]"
        )


def _arity(
    prim_name: str, what: str, fn: Callable[..., Any] | None, params: frozenset[str] | None
) -> RuleArity | None:
    """The static params ``fn`` takes (None when the primitive's params are not known)."""
    if fn is None or params is None:
        return None
    return rule_arity(prim_name, what, fn, positional=None, param_names=tuple(sorted(params)))


def _aliases(where: str, aliases: Mapping[int, int] | None) -> tuple[tuple[int, int], ...]:
    pairs = tuple(sorted(dict(aliases or {}).items()))
    for operand, result in pairs:
        if not all(
            isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in (operand, result)
        ):
            raise DefinitionError(
                f"ffi_rule for {where}: input_output_aliases maps operand indices to result "
                f"indices (ints >= 0), got {operand!r}: {result!r}"
            )
    targets = [result for _, result in pairs]
    if len(set(targets)) != len(targets):
        raise DefinitionError(
            f"ffi_rule for {where}: input_output_aliases gives one result several operands: "
            f"{dict(pairs)}"
        )
    return pairs


def _check_aliases(
    where: str,
    prim_name: str,
    aliases: Sequence[tuple[int, int]],
    operands: Sequence[Any],
    results: Sequence[jax.ShapeDtypeStruct],
) -> None:
    for operand, result in aliases:
        if operand >= len(operands) or result >= len(results):
            raise RuleError(
                f"{where} (lowering {prim_name!r}): input_output_aliases {operand}: {result} "
                f"names a missing operand or result (the call has {len(operands)} operand(s) "
                f"and {len(results)} result(s))"
            )
        got = _spec_str(
            _jax.shape_dtype_struct(
                jnp.shape(operands[operand]), jnp.result_type(operands[operand])
            )
        )
        want = _spec_str(results[result])
        if got != want:
            raise RuleError(
                f"{where} (lowering {prim_name!r}): input_output_aliases {operand}: {result} "
                f"writes result {result} ({want}) in place of operand {operand} ({got}); an "
                "aliased pair must have one shape and dtype"
            )


def _check_declared(
    where: str,
    prim_name: str,
    operands: Any,
    params: Mapping[str, Any],
    declared_tree: Any,
    promised: Sequence[Any],
    out_tree: Any,
) -> list[Any]:
    """The kernel's declared results, flat: RuleError unless they are the abstract
    evaluation's ``promised`` ones, in its ``out_tree`` structure."""
    declared, structure = tree_util.tree_flatten(declared_tree)
    same_structure: bool = structure == out_tree
    if not same_structure:
        raise RuleError(
            f"{where} (lowering {prim_name!r}): the kernel's declared results "
            f"(ffi_rule(results=...)) have the structure {structure}, but the primitive's "
            f"abstract evaluation gives {out_tree}"
        )
    got = [_spec_str(d) for d in declared]
    want = [_spec_str(p) for p in promised]
    if got == want:
        return declared
    args = ", ".join(_spec_str(x) for x in tree_util.tree_leaves(operands))
    raise RuleError(
        f"{where} (lowering {prim_name!r}): the kernel declares result(s) {', '.join(got)} "
        f"(ffi_rule(results=...)), but the primitive's abstract evaluation gives "
        f"{', '.join(want)} for operand(s) {args} and params {dict(params)}; the handler would "
        "fill buffers of the wrong type or size. Make the reference (or abstract_eval rule) "
        "give the kernel's result types, or declare what the kernel writes"
    )


def _spec_str(spec: Any) -> str:
    return _jax.aval_str(_jax.shaped_array(tuple(spec.shape), spec.dtype))


def ffi_targets() -> frozenset[str]:
    """The FFI target names of every :func:`ffi_rule` made in this process."""
    return frozenset(_host.FFI_RULE_TARGETS)


def _param_names(primitive: Callable[..., Any]) -> frozenset[str] | None:
    """The static params of a jext.Primitive (None for another callable: not checked)."""
    signature = getattr(primitive, "signature", None)
    names = getattr(signature, "param_names", None)
    return None if names is None else frozenset(names)


def _ensure_targets_registered() -> None:
    # A plugin's handlers are registered with XLA by its jext_register_ffi_targets hook,
    # which runs when plugins load.  Loading here, at trace time, makes a kernel work
    # even when its module was imported directly and nothing read the registry yet.
    _host.host().load_plugins()


def _convert(where: str, name: str, kind: str, value: Any) -> Any:
    """``value`` as the FFI attribute type ``kind``, or StaticParamError saying why not."""

    def refuse(why: str) -> StaticParamError:
        return StaticParamError(
            f"{where}: static param {name!r} = {value!r} cannot be passed as a {kind} FFI "
            f"attribute: {why}"
        )

    if kind == "str":
        if not isinstance(value, str):
            raise refuse(f"expected a str, got {type(value).__name__}")
        return value
    if kind.endswith("[]"):
        dtype = np.dtype(_SCALAR_ATTRS[kind[:-2]])
        if isinstance(value, str | bytes) or np.ndim(value) != 1:
            raise refuse("expected a 1-D sequence or array (e.g. a tuple)")
        items = np.asarray(value)
        if items.size == 0:
            return np.zeros((0,), dtype)
        return np.stack([_scalar(refuse, dtype, v) for v in items.tolist()])
    return _scalar(refuse, np.dtype(_SCALAR_ATTRS[kind]), value)


def _scalar(refuse: Callable[[str], StaticParamError], dtype: np.dtype[Any], value: Any) -> Any:
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
    if dtype == np.bool_:
        if not isinstance(value, bool):
            raise refuse(f"expected a bool, got {type(value).__name__}")
        return np.bool_(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise refuse(f"expected a number, got {type(value).__name__}")
    if np.issubdtype(dtype, np.integer):
        if isinstance(value, float):
            if not value.is_integer():
                raise refuse("it is not an integer")
            value = int(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise refuse(f"out of range [{info.min}, {info.max}]")
        return dtype.type(value)
    if abs(value) != float("inf") and abs(value) > float(np.finfo(dtype).max):
        raise refuse(f"it overflows {dtype.name}")
    return dtype.type(value)
