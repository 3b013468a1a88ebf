"""XLA FFI lowering rules: a primitive's platform rule that calls a native handler."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from jext import _host, _jax
from jext._errors import DefinitionError, StaticParamError
from jext.primitives._rules import FFI_TARGET_ATTR

__all__ = ["AttrType", "VmapMethod", "ffi_rule", "ffi_targets"]

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

_ATTR_TYPES: Final = frozenset(get_args(AttrType))
_VMAP_METHODS: Final = frozenset(get_args(VmapMethod))


def ffi_rule(
    target: str,
    *,
    primitive: Callable[..., Any],
    attrs: Mapping[str, AttrType] | None = None,
    ignore: Sequence[str] = (),
    vmap_method: VmapMethod = "sequential",
    has_side_effect: bool = False,
) -> Callable[..., Any]:
    """A traceable lowering rule that calls the XLA FFI handler registered as ``target``.

    Register the rule for the platforms whose handler exists::

        softplus.def_lowering(
            jext.lowering.ffi_rule(
                "mylib_softplus", primitive=softplus, attrs={"beta": "float32"},
                vmap_method="broadcast_all",
            ),
            platform="cpu",
        )

    **Arguments:**

    - ``target``: the FFI target name the handler is registered under for the platform
      (by a plugin's ``jext_register_ffi_targets`` hook).  Lowering (and so exporting)
      does not need the handler; compiling and running do.
    - ``primitive``: the primitive the rule lowers (or a function with its signature).
      The call's results are declared from its abstract evaluation
      (``jax.eval_shape(primitive, *operands, **params)``), so the handler's declared
      outputs cannot disagree with what the primitive promised the jaxpr.  Operands and
      results that are pytrees reach the handler flattened, in ``jax.tree`` order.
    - ``attrs``: the static params passed to the handler, each with the
      :data:`AttrType` its C++ binding expects.  Values are converted to exactly that
      type (a Python ``float`` alone would arrive as float64) and checked: an ``int``
      out of range, a non-integral float for an int, a bool for a number, or a 2-D
      array raise :class:`jext.StaticParamError` naming the param and the target.
    - ``ignore``: static params the handler does not take (e.g. ones only the reference
      reads).  Every static param of the primitive must be in ``attrs`` or ``ignore``, so
      a param is never dropped silently.
    - ``vmap_method``: how ``jax.vmap`` runs the call, see :data:`VmapMethod`.  The
      primitive stays in the jaxpr under ``vmap``; jext vmaps each platform's rule, so
      this choice decides whether the handler sees the batch natively (``"expand_dims"``,
      ``"broadcast_all"``) or is looped over (``"sequential"``, the default, always
      correct).
    - ``has_side_effect``: keep the call even if its results are unused.

    The rule's ``__qualname__`` is ``"ffi:<target>"``, which ``jext list`` and
    :func:`jext.lowering.export` show as the rule of each platform it is registered for.
    Raises :class:`jext.DefinitionError` for an unknown attribute type or vmap method, or
    a param in neither ``attrs`` nor ``ignore``.
    """
    if not isinstance(target, str) or not target:
        raise DefinitionError(f"ffi_rule: the target must be a non-empty str, got {target!r}")
    where = f"FFI target {target!r}"
    if not callable(primitive):
        raise DefinitionError(f"ffi_rule({target!r}): primitive= must be callable")
    if vmap_method not in _VMAP_METHODS:
        raise DefinitionError(
            f"ffi_rule for {where}: unknown vmap_method {vmap_method!r}; expected one of "
            f"{sorted(_VMAP_METHODS)}"
        )
    attr_types = dict(attrs or {})
    for name, kind in attr_types.items():
        if kind not in _ATTR_TYPES:
            raise DefinitionError(
                f"ffi_rule for {where}: attribute {name!r} has unknown type {kind!r}; expected "
                f"one of {sorted(_ATTR_TYPES)}"
            )
    ignored = frozenset(ignore)
    both = sorted(ignored & attr_types.keys())
    if both:
        raise DefinitionError(f"ffi_rule for {where}: {both} are both in attrs= and ignore=")
    prim_name = getattr(primitive, "name", getattr(primitive, "__qualname__", repr(primitive)))
    param_names = _param_names(primitive)
    if param_names is not None:
        unknown = sorted((attr_types.keys() | ignored) - param_names)
        if unknown:
            raise DefinitionError(
                f"ffi_rule for {where}: {unknown} are not static params of {prim_name!r} "
                f"(those are {sorted(param_names)})"
            )
        missing = sorted(param_names - attr_types.keys() - ignored)
        if missing:
            raise DefinitionError(
                f"ffi_rule for {where}: static param(s) {missing} of {prim_name!r} would not "
                "reach the handler; pass them with attrs={name: type} or say ignore=[name]"
            )

    def rule(*operands: Any, **params: Any) -> Any:
        _ensure_targets_registered()
        unknown = sorted(params.keys() - attr_types.keys() - ignored)
        if unknown:
            raise StaticParamError(
                f"{where} (lowering {prim_name!r}): static param(s) {unknown} are neither FFI "
                "attributes nor ignored; list them in ffi_rule(attrs=...) or ignore=..."
            )
        ffi_attrs = {
            name: _convert(where, name, kind, params[name])
            for name, kind in attr_types.items()
            if name in params
        }
        specs = [
            _jax.shape_dtype_struct(jnp.shape(x), jnp.result_type(x))
            for x in tree_util.tree_leaves(operands)
        ]
        out_specs = jax.eval_shape(
            functools.partial(primitive, **params),
            *tree_util.tree_unflatten(tree_util.tree_structure(operands), specs),
        )
        out_leaves, out_tree = tree_util.tree_flatten(out_specs)
        call = jax.ffi.ffi_call(
            target,
            [_jax.shape_dtype_struct(s.shape, s.dtype) for s in out_leaves],
            vmap_method=vmap_method,
            has_side_effect=has_side_effect,
        )
        results = call(*tree_util.tree_leaves(operands), **ffi_attrs)
        return tree_util.tree_unflatten(out_tree, list(results))

    # jext.lowering.export allows the custom calls of every ffi_rule's target, which
    # jax.export refuses by default (they have no compatibility guarantee).
    _host.FFI_RULE_TARGETS.add(target)
    rule.__dict__[FFI_TARGET_ATTR] = target  # how jext's lowering tells an FFI rule apart
    rule.__name__ = rule.__qualname__ = f"ffi:{target}"
    rule.__doc__ = f"Lowers {prim_name} with the XLA FFI target {target!r}."
    return rule


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
