"""The state every rule kind shares: the JAX primitive, the frozen rules, forms and caches.

One JAX primitive serves every *form* of a jext primitive, told apart by hidden params
whose names start with ``jext_``:

- ``jext_operand_tree``: the operand pytree, when the operands are not a flat tuple;
- ``jext_vmap``: the batch levels added by ``vmap``, outermost first, each
  ``(size, batched, mesh_axis, axis_name)`` with one flag per flat operand.  A batched
  operand carries one leading axis per level that batches it; every result carries one
  per level (sharded along the level's mesh axis, under explicit sharding).  So under
  ``vmap`` the equation stays this primitive, and each rule kind applies to the batch;
- ``jext_linearize``: the forward half of the default JVP (results, then the residuals
  the linear half needs), with one flag per operand saying whether its tangent is used;
- ``jext_derivative``: a chain of derivatives of the primitive, for a primitive with a
  custom batching rule (see ``_derivatives.py``): each link ``("jvp", active)`` takes the
  previous function's operands and the tangents of its ``active`` ones and gives the
  tangents of its results; each link ``("vjp", linear, avals)`` takes the previous
  function's operands but its ``linear`` ones (of ``avals``) and the cotangents of its
  results, and gives the cotangents of its linear operands.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import struct
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, final

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from jext import _jax
from jext._errors import RuleError, RuleTypeError, StaticParamError
from jext.primitives._rules import Rules
from jext.primitives._signature import RESERVED_PARAM_PREFIX, OperandSignature

__all__ = [
    "CACHE_SIZE",
    "CHAIN_PARAM",
    "LEVELS_PARAM",
    "LINEARIZE_PARAM",
    "NEEDS_CONCRETE_VALUES",
    "TREE_PARAM",
    "Core",
    "Form",
    "Level",
    "Link",
    "LruCache",
    "StaticParam",
    "UnkeyableError",
    "describe",
    "flat_tree",
    "typed_key",
]

TREE_PARAM: Final = RESERVED_PARAM_PREFIX + "operand_tree"
LEVELS_PARAM: Final = RESERVED_PARAM_PREFIX + "vmap"
LINEARIZE_PARAM: Final = RESERVED_PARAM_PREFIX + "linearize"
CHAIN_PARAM: Final = RESERVED_PARAM_PREFIX + "derivative"

CACHE_SIZE: Final = 256
"""Entries each per-primitive cache keeps (least recently used first out)."""

Link = tuple[Any, ...]
"""``("jvp", active flags)`` or ``("vjp", linear flags, avals of the linear operands)``."""

Level = tuple[int, tuple[bool, ...], Any, Any]
"""``(size, batched flags per operand, mesh axis of the batch axis or None, the vmap's axis
name or None)``; under a named ``vmap`` the per-example rules run under a ``vmap`` of the same
name, so collectives over it in the reference apply to the batch."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A thread-safe mapping that keeps the ``maxsize`` most recently used entries."""

    __slots__ = ("_data", "_lock", "maxsize")

    def __init__(self, maxsize: int = CACHE_SIZE) -> None:
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.maxsize = maxsize

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
            return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        value = self.get(key)
        return self.put(key, make()) if value is None else value

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class UnkeyableError(TypeError):
    """A static param holds a value no cache key can stand for (a mutable container)."""


@final
class _Identity:
    """A key equal only to itself: the value it holds (kept alive, so its id is not reused)."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.value is self.value

    def __hash__(self) -> int:
        return id(self.value)


# Types whose ``==`` tells apart every two values that can behave differently.
_EXACT: Final[frozenset[type]] = frozenset(
    {bool, int, str, bytes, type(None), type(Ellipsis), type(NotImplemented)}
    # A bound method is equal to another binding the same function to the same object.
    | {types.MethodType, types.BuiltinMethodType, types.MethodWrapperType}
    # JAX's shape and sharding descriptions compare every field that changes a program.
    | {jax.ShapeDtypeStruct, jax.sharding.PartitionSpec, jax.sharding.NamedSharding}
    | {jax.sharding.Mesh}
)


def typed_key(value: Any) -> Hashable:
    """``value`` as a cache key that is equal only for values that behave the same.

    The key of a value is its type and:

    - a float or complex number (Python's or NumPy's): its bits, so ``-0.0`` and ``0.0``
      differ (``x / -0.0``) and a nan, unequal to itself, is one key per payload;
    - a tuple (a ``NamedTuple`` too), a frozenset, a ``slice``: the keys of its elements
      (a frozenset's in no order);
    - a record (a dataclass, an ``attrs`` class): the keys of its fields, by name;
    - an enum member: its name;
    - a bool, int, str, bytes, None, NumPy dtype or scalar, bound method, and JAX's
      ``ShapeDtypeStruct``, ``PartitionSpec``, ``NamedSharding``, ``Mesh``: its value;
    - anything else (a function, a class, an object): the object itself (its identity),
      so two objects that compare equal by their own ``__eq__`` are two keys.

    So ``2``, ``2.0`` and ``True`` differ at any depth, as do ``Swish(1)`` and ``Gelu(1)``
    of two ``NamedTuple`` types.  Raises :class:`UnkeyableError` for a mutable container
    (a list, dict or set) inside a record: its contents may change after the call.
    """
    kind = type(value)
    if kind in _EXACT or isinstance(value, np.dtype):
        return (kind, value)
    if isinstance(value, enum.Enum):  # before int and str: an IntEnum member is an int
        return (kind, value.name)
    if isinstance(value, float | complex):
        return (kind, struct.pack("<2d", value.real, value.imag))
    if isinstance(value, np.generic):
        return (kind, value.dtype.str, value.tobytes())
    if isinstance(value, tuple):
        return (kind, tuple(typed_key(v) for v in value))
    if isinstance(value, frozenset):
        return (kind, frozenset(typed_key(v) for v in value))
    if isinstance(value, slice):
        return (kind, typed_key(value.start), typed_key(value.stop), typed_key(value.step))
    names = _field_names(value)
    if names is not None:
        # A field never set (``field(init=False)``) is keyed as unset.
        fields = ((name, getattr(value, name, _UNSET)) for name in names)
        return (kind, tuple((name, typed_key(v)) for name, v in fields))
    if isinstance(value, list | dict | set | bytearray):
        raise UnkeyableError(
            f"a {kind.__name__} is mutable: its contents may change after the call; pass a "
            "tuple (or a frozenset) instead"
        )
    if all("__eq__" not in vars(k) for k in kind.__mro__[:-1]):  # equal only to itself
        return (kind, value)
    return (kind, _Identity(value))


_UNSET: Final = object()


def _field_names(value: object) -> tuple[str, ...] | None:
    """The field names of a dataclass or ``attrs`` instance; None for anything else."""
    if isinstance(value, type):
        return None
    if dataclasses.is_dataclass(value):
        return tuple(f.name for f in dataclasses.fields(value))
    attrs = getattr(type(value), "__attrs_attrs__", None)
    if attrs is not None:
        return tuple(str(a.name) for a in attrs)
    return None


@final
class StaticParam:
    """A static param as it sits in an equation: equal only to the same type and value.

    JAX caches abstract evaluation and compilation by equation params, where ``2``,
    ``2.0`` and ``True`` are equal; the wrapper keeps them apart (the result dtype of
    ``x * factor`` depends on which).  It prints as the value, so jaxprs read as usual.
    """

    __slots__ = ("_key", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._key = typed_key(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StaticParam):
            return self._key == other._key
        # Equal to the bare value of the same type, so ``eqn.params["beta"] == 2.0`` holds.
        try:
            return bool(self._key == typed_key(other))
        except UnkeyableError:
            return False

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return repr(self.value)

    __str__ = __repr__


def _wrap(value: Any) -> Any:
    return value if isinstance(value, str) or value is None else StaticParam(value)


def _unwrap(value: Any) -> Any:
    return value.value if type(value) is StaticParam else value


@dataclass(frozen=True, slots=True)
class Form:
    """One equation's hidden params, parsed: which form of the primitive it binds."""

    in_tree: Any
    params: Mapping[str, Any]  # the author's static params
    levels: tuple[Level, ...] = ()
    linearize: tuple[bool, ...] | None = None  # active operands of the forward half
    chain: tuple[Link, ...] = ()  # derivatives of the primitive (custom batching rule)

    @property
    def base(self) -> Form:
        """This form without its batch levels."""
        return Form(self.in_tree, self.params, (), self.linearize, self.chain)

    @property
    def derived(self) -> bool:
        """Whether the equation computes something derived from the primitive (a forward
        half or a derivative) rather than the primitive itself."""
        return self.linearize is not None or bool(self.chain)

    def with_link(self, link: Link) -> Form:
        return Form(self.in_tree, self.params, self.levels, self.linearize, (*self.chain, link))

    @property
    def plain(self) -> Form:
        """The primitive itself: no batch levels, not the forward half."""
        return Form(self.in_tree, self.params)

    def bind_params(self) -> dict[str, Any]:
        out = {k: _wrap(v) for k, v in self.params.items()}
        if self.chain or not _is_flat(self.in_tree):  # a chain's operands outnumber the tree's
            out[TREE_PARAM] = self.in_tree
        if self.levels:
            out[LEVELS_PARAM] = self.levels
        if self.linearize is not None:
            out[LINEARIZE_PARAM] = self.linearize
        if self.chain:
            out[CHAIN_PARAM] = self.chain
        return out

    def with_level(self, level: Level) -> Form:
        return Form(self.in_tree, self.params, (level, *self.levels), self.linearize, self.chain)

    def key(self) -> Hashable:
        return (
            self.in_tree,
            tuple((k, typed_key(v)) for k, v in self.params.items()),
            self.levels,
            self.linearize,
            self.chain,
        )


def parse_form(bind_params: Mapping[str, Any], n_operands: int) -> Form:
    params = {k: _unwrap(v) for k, v in bind_params.items()}
    in_tree = params.pop(TREE_PARAM, None)
    levels = params.pop(LEVELS_PARAM, ())
    linearize = params.pop(LINEARIZE_PARAM, None)
    chain = params.pop(CHAIN_PARAM, ())
    tree = flat_tree(n_operands) if in_tree is None else in_tree
    return Form(tree, params, levels, linearize, chain)


#: What a reference that needs concrete values (Python control flow on them) raises when
#: it is traced.
NEEDS_CONCRETE_VALUES: Final = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
)


class Core:
    """What the rule kinds share for one primitive: identity, rules, JAX primitive, caches."""

    def __init__(self, name: str, reference: Callable[..., Any], rules: Rules) -> None:
        self.name = name
        self.reference = reference
        self.signature = OperandSignature.of(name, reference)
        self.rules = rules
        self.frozen = False
        # A closure twin's first operand is the tuple of values its reference closed over
        # (see _closure.py): never linear, whatever ``linear_in`` says.
        self.leading_hidden = False
        # Operand names for messages (none for ``*operands``); a twin's start with its hidden one.
        self.operand_names: tuple[str, ...] = (
            () if self.signature.variadic else self.signature.operand_names
        )
        self.jax = _jax.make_primitive(name)
        self.lock = threading.Lock()
        # Reference traces and derived jaxprs, by form, avals and trace context.
        self.traces: LruCache[Hashable, Any] = LruCache()
        # The result tree by operand tree and params: it must not depend on avals.
        self.out_trees: LruCache[Hashable, Any] = LruCache()
        # Compiled eager implementations by bind params.
        self.impls: LruCache[Hashable, Any] = LruCache()

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    def bind(self, form: Form, *args: Any) -> list[Any]:
        return _jax.bind(self.jax, *args, **form.bind_params())

    def form_of(self, bind_params: Mapping[str, Any], n_operands: int) -> Form:
        return parse_form(bind_params, n_operands)

    def check_hashable(self, params: Mapping[str, Any]) -> None:
        """Raise StaticParamError naming the first param that is unhashable or unkeyable."""
        self.signature.check_hashable(params)
        for name, value in params.items():
            try:
                typed_key(value)
            except UnkeyableError as err:
                raise StaticParamError(
                    f"{self.name}(): static parameter {name!r} cannot key a cache: {err}"
                ) from None

    # --- results -----------------------------------------------------------------------

    def run_reference(self, form: Form, *args: Any) -> list[Any]:
        """The reference run on ``args`` (flat operand leaves) as plain JAX code, op by op
        when they are concrete; its results flat, their tree recorded."""
        result = self.reference(*tree_util.tree_unflatten(form.in_tree, args), **form.params)
        leaves, tree = tree_util.tree_flatten(result)
        self.record_out_tree(form, tree)
        return leaves

    def recorded_out_tree(self, form: Form) -> Any:
        """The result tree recorded for ``form``'s operand tree and params, or None."""
        return self.out_trees.get(_tree_key(form))

    def record_out_tree(self, form: Form, out_tree: Any) -> None:
        key = _tree_key(form)
        known = self.out_trees.get(key)
        if known is None:
            self.out_trees.put(key, out_tree)
        elif known != out_tree:
            raise RuleError(
                f"primitive {self.name!r}: the result structure must not depend on operand "
                f"shapes or dtypes; got {out_tree} after {known}"
            )

    def flatten_results(
        self,
        kind: str,
        result: Any,
        out_tree: Any,
        *,
        none_ok: bool = False,
        arrays: bool = True,
        error: type[RuleError] = RuleTypeError,
    ) -> list[Any]:
        """``result`` flattened to ``out_tree``'s leaves; with ``arrays``, a leaf that is a
        container (a pair where the primitive returns one array) is a structure mismatch,
        raised as ``error`` (JAX's construct raises TypeError for a JVP or VJP rule's,
        ValueError for a batching rule's)."""
        try:
            leaves: list[Any] = out_tree.flatten_up_to(result)
            if arrays and any(isinstance(leaf, tuple | list | dict) for leaf in leaves):
                raise ValueError("a container where the primitive returns an array")
        except (ValueError, TypeError) as err:
            raise error(
                f"{kind} rule of primitive {self.name!r} returned a result of the wrong "
                f"structure: expected {out_tree}, got {tree_util.tree_structure(result)}"
            ) from err
        if not none_ok and any(leaf is None for leaf in leaves):
            raise error(f"{kind} rule of primitive {self.name!r} returned None for a result")
        return leaves

    def flatten_cotangents(self, kind: str, result: object, in_tree: Any) -> list[Any]:
        """A rule's cotangents, one per operand (``None`` for a zero one), as one per leaf."""
        subtrees = in_tree.children()
        if not isinstance(result, tuple | list) or len(result) != len(subtrees):
            raise RuleTypeError(
                f"{kind} rule of primitive {self.name!r} must return a tuple with one "
                f"cotangent per operand ({len(subtrees)}), got {describe(result)}"
            )
        flat: list[Any] = []
        for subtree, ct in zip(subtrees, result, strict=True):
            if ct is None:
                flat.extend([None] * subtree.num_leaves)
            else:
                flat.extend(self.flatten_results(kind, ct, subtree, none_ok=True))
        return flat

    def check_pair(self, kind: str, result: object, what: str) -> None:
        if not (isinstance(result, tuple | list) and len(result) == 2):
            raise RuleTypeError(
                f"{kind} rule of primitive {self.name!r} must return a pair {what}, got "
                f"{describe(result)}"
            )

    def check_outputs(self, kind: str, outs: Sequence[Any], out_avals: Sequence[Any]) -> None:
        """Each of a rule's ``outs`` has the shape and dtype abstract evaluation gives."""
        for i, (o, a) in enumerate(zip(outs, out_avals, strict=True)):
            if tuple(o.shape) != tuple(a.shape) or o.dtype != a.dtype:
                raise RuleTypeError(
                    f"{kind} of primitive {self.name!r}: output {i} is "
                    f"{o.dtype}{list(o.shape)}, but abstract evaluation gives {_jax.aval_str(a)}"
                )

    def flat_fn(
        self, fn: Callable[..., Any], form: Form, kind: str, *, params: Mapping[str, Any]
    ) -> tuple[Callable[..., list[Any]], Callable[[], Any]]:
        """``fn`` on flat operands with flat results, and a thunk giving its result tree."""
        store: list[Any] = []

        def flat(*leaves: Any) -> list[Any]:
            result = fn(*tree_util.tree_unflatten(form.in_tree, leaves), **params)
            out, tree = tree_util.tree_flatten(result)
            store[:] = [tree]
            return out

        def out_tree() -> Any:
            if not store:
                raise RuleError(f"{kind} of primitive {self.name!r} was not traced")
            return store[0]

        return flat, out_tree


_PYTHON_SCALARS: Final = (bool, int, float, complex)


def _tree_key(form: Form) -> Hashable:
    return (form.in_tree, tuple((k, typed_key(v)) for k, v in form.params.items()))


def as_value(x: Any, dtype: Any = None) -> Any:
    """A rule's result leaf as an array-like JAX value.

    JAX hands Python scalars to rules unchanged (``jax.jvp(f, (1.0,), (1.0,))``), and
    rules return them as they would from a ``custom_jvp`` rule: Python and NumPy scalars
    and NumPy arrays become JAX arrays.  A Python scalar is weakly typed, so with a
    ``dtype`` it takes that dtype, as JAX's promotion would give it.
    """
    if isinstance(x, _PYTHON_SCALARS):
        return jnp.asarray(x, dtype=dtype)
    if isinstance(x, np.ndarray | np.generic):
        return jnp.asarray(x)
    if dtype is not None and getattr(_jax.typeof(x), "weak_type", False) and x.dtype != dtype:
        return jnp.asarray(x, dtype=dtype)
    return x


def describe(x: object) -> str:
    if isinstance(x, tuple | list):
        return f"a {type(x).__name__} of length {len(x)}"
    return type(x).__name__


@functools.lru_cache(maxsize=64)
def flat_tree(n: int) -> Any:
    return tree_util.tree_structure((0,) * n)


def _is_flat(tree: Any) -> bool:
    # The operands are a tuple of n array leaves exactly when the tree has n + 1 nodes.
    return bool(tree.num_nodes == tree.num_leaves + 1)


def unbatched_avals(avals: Sequence[Any], levels: Sequence[Level]) -> list[Any]:
    """The per-example avals of operands batched by ``levels``."""
    out = list(avals)
    for size, batched, _, _ in levels:
        out = [_jax.drop_batch_axis(a, size) if b else a for a, b in zip(out, batched, strict=True)]
    return out


def batched_avals(avals: Sequence[Any], levels: Sequence[Level]) -> list[Any]:
    """Result avals under ``levels``: one leading axis per level, outermost first."""
    out = list(avals)
    for size, _, mesh_axis, _ in reversed(levels):
        out = [_jax.add_batch_axis(a, size, mesh_axis) for a in out]
    return out
