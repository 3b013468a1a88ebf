"""``jext.Primitive``: a reference implementation made a JAX primitive with every rule kind."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, ParamSpec, TypeVar, final, overload

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from jext import _jax
from jext._errors import (
    DefinitionError,
    DuplicateNameError,
    LoweringError,
    RuleError,
    TransposeError,
)
from jext.primitives._example import Example
from jext.primitives._markers import LinearOperand, SymbolicZero
from jext.primitives._signature import (
    RESERVED_PARAM_PREFIX,
    OperandSignature,
    RuleArity,
    rule_arity,
)
from jext.typing import (
    AbstractEvalRule,
    BatchingRule,
    ImplRule,
    JvpRule,
    LoweringRule,
    Platform,
    TransposeRule,
)

__all__ = [
    "LoweringInfo",
    "Primitive",
    "defined_primitives",
    "primitive",
    "set_definition_arbiter",
]

P = ParamSpec("P")
R = TypeVar("R")

#: The hidden eqn param holding the operand pytree, present only when operands are not flat.
TREE_PARAM: Final = RESERVED_PARAM_PREFIX + "operand_tree"

_GPU_PLATFORMS: Final = ("cuda", "rocm")
_VALID_PLATFORMS: Final = frozenset({"cpu", "cuda", "rocm", "gpu", "tpu"})
_SCALAR_TYPES: Final = (bool, int, float, complex, np.ndarray, np.generic, jax.Array)
_EAGER_ARRAY_TYPES: Final = frozenset({np.ndarray, _jax.ArrayImpl})
_SINGLE_LEAF: Final = tree_util.tree_structure(0)

ExamplesFactory = TypeVar("ExamplesFactory", bound=Callable[[], Iterable[Example]])

# Every primitive defined in this process, by name (see _claim_name).
_DEFINITIONS: dict[str, Primitive[..., Any]] = {}
_DEFINITIONS_LOCK: Final = threading.Lock()


def defined_primitives() -> Mapping[str, Primitive[..., Any]]:
    """Every primitive defined in this process so far, by name (a snapshot)."""
    with _DEFINITIONS_LOCK:
        return dict(_DEFINITIONS)


@dataclass(frozen=True, slots=True)
class _Rule:
    fn: Callable[..., Any]
    arity: RuleArity

    def __call__(self, *args: Any, params: Mapping[str, Any]) -> Any:
        return self.fn(*args, **self.arity.select(params))


@dataclass(frozen=True, slots=True)
class _PreparedCall:
    out_tree: Any
    bind_params: Mapping[str, Any]
    eager: Callable[..., list[Any]] | None  # None: bind (a custom impl, or tracing)
    single: bool  # the result is one array


@dataclass(frozen=True, slots=True)
class _Lowering:
    """A lowering rule as registered: ``platform`` is the key it was registered under."""

    platform: str | None  # None: every platform
    fn: Callable[..., Any]  # the author's rule, or the reference
    mlir_rule: _jax.LoweringRule
    raw: bool
    is_reference: bool

    @property
    def label(self) -> str:
        if self.is_reference:
            return "reference"
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return f"{name} (raw)" if self.raw else name


@dataclass(frozen=True, slots=True)
class LoweringInfo:
    """Which rule a platform lowers a primitive with (see :meth:`Primitive.lowering_rule`)."""

    platform: str
    label: str  # "reference" or the rule's qualified name ("... (raw)" for MLIR rules)
    kind: Literal["reference", "traceable", "raw"]
    fn: Callable[..., Any]  # "reference"/"traceable": called like the primitive
    batching: Literal["vmap", "loop"]  # how the batched primitive runs this rule


def primitive(
    name: str, /, *, reference_lowering: bool | Collection[Platform] = True
) -> Callable[[Callable[P, R]], Primitive[P, R]]:
    """Turn a reference implementation into a JAX primitive named ``name``.

    **Arguments:**

    - ``name``: ``"<lib>.<op>"``, the name the primitive has in jaxprs and in the jext
      registry.
    - ``reference_lowering``: where the reference implementation serves as the lowering
      when no rule is registered for a platform: everywhere (``True``), nowhere
      (``False``), or on the listed platforms (``"gpu"`` meaning cuda and rocm).  A
      platform left without a rule raises :class:`jext.LoweringError` when lowered.

    The decorated function's positional-only parameters are the operands (arrays or
    pytrees of arrays) and its keyword-only parameters are static params.  Raises
    :class:`jext.DefinitionError` for a malformed name or signature, and
    :class:`jext.DuplicateNameError` when another function already defines ``name``.

    Example::

        @jext.primitive("mylib.softplus")
        def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
            return jnp.logaddexp(beta * x, 0.0) / beta
    """
    _check_name(name)
    platforms = _reference_platforms(name, reference_lowering)

    def wrap(reference: Callable[P, R]) -> Primitive[P, R]:
        return Primitive(name, reference, reference_platforms=platforms)

    return wrap


def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise DefinitionError(f"a primitive name must be a str, got {type(name).__name__}")
    parts = name.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise DefinitionError(
            f"primitive name {name!r} must be namespaced as '<lib>.<op>' "
            "(dot-separated Python identifiers), e.g. 'mylib.softplus'"
        )


def check_platform(primitive_name: str, platform: object) -> None:
    if platform is not None and platform not in _VALID_PLATFORMS:
        raise DefinitionError(
            f"primitive {primitive_name!r}: unknown platform {platform!r}; expected one of "
            f"{sorted(_VALID_PLATFORMS)} or None (every platform)"
        )


def _concrete_platforms(platform: str) -> tuple[str, ...]:
    return _GPU_PLATFORMS if platform == "gpu" else (platform,)


def _reference_platforms(
    name: str, reference_lowering: bool | Collection[Platform]
) -> frozenset[str | None]:
    if reference_lowering is True:
        return frozenset((*_jax.PLATFORMS, None))
    if reference_lowering is False:
        return frozenset()
    out: set[str | None] = set()
    for p in reference_lowering:
        check_platform(name, p)
        out.update(_concrete_platforms(p))
    return frozenset(out)


# The lowering log that jext.lowering reads: which primitives were lowered, per export.
_lowering_log: threading.local = threading.local()


def record_lowerings() -> list[str]:
    """Start recording primitive names lowered on this thread; returns the live list."""
    log: list[str] = []
    _lowering_log.current = log
    return log


def stop_recording() -> None:
    _lowering_log.current = None


def _log_lowering(name: str) -> None:
    log: list[str] | None = getattr(_lowering_log, "current", None)
    if log is not None:
        log.append(name)


@final
class Primitive(Generic[P, R]):
    """A JAX primitive built from a reference implementation; call it like the reference.

    Created by :func:`jext.primitive`.  Each call binds one JAX primitive; its rules
    default to ones derived from the reference and are replaced with the ``def_*``
    decorators.  Each decorator returns the rule unchanged, so it can be stacked.
    """

    def __init__(
        self,
        name: str,
        reference: Callable[P, R],
        *,
        reference_platforms: frozenset[str | None] = frozenset((*_jax.PLATFORMS, None)),
    ) -> None:
        _check_name(name)
        if not callable(reference):
            raise DefinitionError(f"primitive {name!r}: the reference must be callable")
        self._name = name
        self._reference = reference
        self._signature = OperandSignature.of(name, reference)
        self._reference_platforms = reference_platforms
        functools.update_wrapper(self, reference)

        self._abstract_eval_rule: _Rule | None = None
        self._impl_rule: _Rule | None = None
        self._jvp_rule: _Rule | None = None
        self._jvp_symbolic_zeros = False
        self._transpose_rule: _Rule | None = None
        self._linear_in: tuple[int, ...] | None = None
        self._examples: Callable[[], Iterable[Example]] | None = None
        self._batching_rule: _Rule | None = None
        self._batching_kind: Literal["default", "custom", "elementwise", "leading_axis"] = "default"
        self._lowerings: dict[str | None, _Lowering] = {}
        self._reference_lowering = self._make_lowering(
            None, reference, raw=False, is_reference=True
        )

        # Out trees by (operand tree, params): the result structure must not depend on avals.
        self._out_trees: dict[tuple[Any, ...], Any] = {}
        self._calls: dict[tuple[Any, ...], _PreparedCall] = {}
        self._trace_reference = functools.lru_cache(maxsize=256)(self._trace_reference_uncached)

        self._jax = _jax.make_primitive(name)
        _jax.set_impl(self._jax, functools.partial(_jax.apply_primitive, self._jax))
        _jax.set_abstract_eval(self._jax, self._abstract_eval_flat)
        _jax.register_jvp(self._jax, self._jvp_flat)
        _jax.register_transpose(self._jax, self._transpose_flat)
        _jax.register_batching(self._jax, self._batch_flat)
        # One dispatcher for every platform while the reference lowers everywhere; one per
        # platform once platforms differ (registering five per primitive up front would
        # slow down importing plugins that define many).
        self._per_platform = False
        _jax.register_lowering(self._jax, functools.partial(self._lower, None), None)
        if reference_platforms != frozenset((*_jax.PLATFORMS, None)):
            self._register_per_platform()
        _claim_name(self)

    # --- identity ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def reference(self) -> Callable[P, R]:
        """The reference implementation, unchanged."""
        return self._reference

    @property
    def jax_primitive(self) -> _jax.Primitive:
        """The underlying ``jax.extend.core.Primitive`` (multiple results)."""
        return self._jax

    @property
    def signature(self) -> OperandSignature:
        return self._signature

    def __repr__(self) -> str:
        return f"<jext.Primitive {self._name}>"

    # --- calling ---------------------------------------------------------------------------

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        sig = self._signature
        operands = sig.operands(args)
        params = sig.params(kwargs)
        if all(type(x) in _EAGER_ARRAY_TYPES for x in operands):  # the common case: arrays
            flat: Sequence[Any] = operands
            in_tree = _flat_tree(len(operands))
        else:
            flat, in_tree = tree_util.tree_flatten(operands)
            self._check_leaves(flat)
        key = (in_tree, *params.values())
        try:
            call = self._calls.get(key)
        except TypeError:
            sig.check_hashable(params)
            raise
        if call is None:
            call = self._calls[key] = self._prepare_call(in_tree, flat, params)
        if call.eager is not None and _jax.is_eager():
            outs = call.eager(*flat)
        else:
            outs = _jax.bind(self._jax, *flat, **call.bind_params)
        result: R = outs[0] if call.single else tree_util.tree_unflatten(call.out_tree, outs)
        return result

    def _check_leaves(self, flat: Sequence[Any]) -> None:
        for i, leaf in enumerate(flat):
            if not isinstance(leaf, _SCALAR_TYPES):
                raise TypeError(
                    f"{self._name}(): operand leaf {i} is a {type(leaf).__name__}; operands must "
                    "be arrays, Python scalars or pytrees of them (static values go in "
                    "keyword-only params)"
                )

    def _prepare_call(
        self, in_tree: Any, flat: Sequence[Any], params: dict[str, Any]
    ) -> _PreparedCall:
        """What every later call with this operand tree and these params reuses."""
        _, out_tree = self._eval_abstract(in_tree, [_jax.typeof(x) for x in flat], params)
        bind_params = params if _is_flat(in_tree) else {**params, TREE_PARAM: in_tree}
        # Eagerly, a jitted bind skips JAX's per-call dispatch of the primitive; it is
        # compiled once per signature like the default impl.  A custom impl runs as is.
        eager = (
            None
            if self._impl_rule is not None
            else jax.jit(functools.partial(_jax.bind, self._jax, **bind_params))
        )
        return _PreparedCall(out_tree, bind_params, eager, out_tree == _SINGLE_LEAF)

    def _split(self, bind_params: Mapping[str, Any], n: int) -> tuple[Any, dict[str, Any]]:
        params = dict(bind_params)
        in_tree = params.pop(TREE_PARAM, None)
        if in_tree is None:
            in_tree = _flat_tree(n)
        return in_tree, params

    # --- abstract evaluation ------------------------------------------------------------

    def def_abstract_eval(self, rule: AbstractEvalRule) -> AbstractEvalRule:
        """Use ``rule(*avals, **params) -> aval(s)`` for abstract evaluation."""
        self._abstract_eval_rule = self._rule("abstract_eval", rule, self._n_operands())
        self._forget_traces()
        return rule

    def _abstract_eval_flat(self, *avals: Any, **bind_params: Any) -> list[Any]:
        in_tree, params = self._split(bind_params, len(avals))
        out_avals, _ = self._eval_abstract(in_tree, list(avals), params)
        return out_avals

    def _eval_abstract(
        self, in_tree: Any, avals: Sequence[Any], params: Mapping[str, Any]
    ) -> tuple[list[Any], Any]:
        """The flat result avals and result tree; records the tree for ``__call__``."""
        rule = self._abstract_eval_rule
        if rule is None:
            closed, out_tree = self._trace(in_tree, avals, params)
            out_avals = list(closed.out_avals)
        else:
            result = rule(*tree_util.tree_unflatten(in_tree, avals), params=params)
            leaves, out_tree = tree_util.tree_flatten(result)
            out_avals = [self._as_aval(leaf) for leaf in leaves]
        key = (in_tree, *params.values())
        try:
            known = self._out_trees.setdefault(key, out_tree)
        except TypeError:
            self._signature.check_hashable(params)
            raise
        if known != out_tree:
            raise RuleError(
                f"primitive {self._name!r}: the result structure must not depend on operand "
                f"shapes or dtypes; got {out_tree} after {known}"
            )
        return out_avals, out_tree

    def _as_aval(self, x: object) -> _jax.AbstractValue:
        if _jax.is_abstract_value(x):
            return x
        if isinstance(x, jax.ShapeDtypeStruct):
            return _jax.shaped_array(x.shape, x.dtype, weak_type=bool(x.weak_type))
        raise RuleError(
            f"abstract_eval rule of primitive {self._name!r} returned {x!r} "
            f"({type(x).__name__}); it must return jax.core.ShapedArray or "
            "jax.ShapeDtypeStruct values (or a pytree of them)"
        )

    def _trace_reference_uncached(
        self, in_tree: Any, avals: tuple[Any, ...], params_items: tuple[tuple[str, Any], ...]
    ) -> tuple[_jax.ClosedJaxpr, Any]:
        fun, out_tree = self._flat_fun(self._reference, in_tree, dict(params_items), "reference")
        closed = _jax.trace_to_jaxpr(fun, avals)
        return closed, out_tree()

    def _trace(
        self, in_tree: Any, avals: Sequence[Any], params: Mapping[str, Any]
    ) -> tuple[_jax.ClosedJaxpr, Any]:
        """The reference traced at ``avals`` (cached) and its result tree."""
        try:
            return self._trace_reference(in_tree, tuple(avals), tuple(params.items()))
        except TypeError:
            self._signature.check_hashable(params)
            raise

    def _forget_traces(self) -> None:
        self._out_trees.clear()
        self._calls.clear()

    def _flat_fun(
        self, fn: Callable[..., Any], in_tree: Any, params: Mapping[str, Any], kind: str
    ) -> tuple[Callable[..., list[Any]], Callable[[], Any]]:
        """``fn`` on flat operands with flat results, and a thunk giving its result tree."""
        store: list[Any] = []

        def flat_fn(*flat: Any) -> list[Any]:
            result = fn(*tree_util.tree_unflatten(in_tree, flat), **params)
            leaves, tree = tree_util.tree_flatten(result)
            store[:] = [tree]
            return leaves

        def out_tree() -> Any:
            if not store:
                raise RuleError(f"{kind} of primitive {self._name!r} was not traced")
            return store[0]

        return flat_fn, out_tree

    def _out_tree(self, in_tree: Any, avals: Sequence[Any], params: Mapping[str, Any]) -> Any:
        tree = self._out_trees.get((in_tree, *params.values()))
        if tree is None:
            _, tree = self._eval_abstract(in_tree, avals, params)
        return tree

    def _check_pair(self, kind: str, result: object, what: str) -> None:
        if not (isinstance(result, tuple | list) and len(result) == 2):
            raise RuleError(
                f"{kind} rule of primitive {self._name!r} must return a pair {what}, got "
                f"{_describe(result)}"
            )

    def _flatten_results(
        self, kind: str, result: Any, out_tree: Any, *, none_ok: bool = False
    ) -> list[Any]:
        try:
            leaves: list[Any] = out_tree.flatten_up_to(result)
        except (ValueError, TypeError) as err:
            raise RuleError(
                f"{kind} rule of primitive {self._name!r} returned a result of the wrong "
                f"structure: expected {out_tree}, got {tree_util.tree_structure(result)}"
            ) from err
        if not none_ok and any(leaf is None for leaf in leaves):
            raise RuleError(f"{kind} rule of primitive {self._name!r} returned None for a result")
        return leaves

    # --- eager implementation -------------------------------------------------------------

    def def_impl(self, rule: ImplRule) -> ImplRule:
        """Use ``rule(*operands, **params)`` as the eager implementation (concrete arrays)."""
        self._impl_rule = self._rule("impl", rule, self._n_operands())
        self._calls.clear()
        _jax.set_impl(self._jax, self._impl_flat)
        return rule

    def _impl_flat(self, *flat: Any, **bind_params: Any) -> list[Any]:
        assert self._impl_rule is not None
        in_tree, params = self._split(bind_params, len(flat))
        out_tree = self._out_tree(in_tree, [_jax.typeof(x) for x in flat], params)
        result = self._impl_rule(*tree_util.tree_unflatten(in_tree, flat), params=params)
        return self._flatten_results("impl", result, out_tree)

    # --- forward-mode differentiation -----------------------------------------------------

    @overload
    def def_jvp(self, rule: JvpRule, *, symbolic_zeros: bool = False) -> JvpRule: ...
    @overload
    def def_jvp(self, *, symbolic_zeros: bool = False) -> Callable[[JvpRule], JvpRule]: ...
    def def_jvp(
        self, rule: JvpRule | None = None, *, symbolic_zeros: bool = False
    ) -> JvpRule | Callable[[JvpRule], JvpRule]:
        """Use ``rule(primals, tangents, **params) -> (primals_out, tangents_out)`` for JVPs.

        With ``symbolic_zeros=True`` a zero tangent arrives as :class:`jext.SymbolicZero`
        instead of an array of zeros.  Usable bare or as ``@prim.def_jvp(symbolic_zeros=True)``.
        """
        if rule is None:
            return functools.partial(self.def_jvp, symbolic_zeros=symbolic_zeros)
        self._jvp_rule = self._rule("jvp", rule, 2)
        self._jvp_symbolic_zeros = symbolic_zeros
        return rule

    def _jvp_flat(
        self, primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
    ) -> tuple[list[Any], list[Any]]:
        in_tree, params = self._split(bind_params, len(primals))
        if self._jvp_rule is None:
            return self._default_jvp(primals, tangents, in_tree, params, bind_params)
        avals = [_jax.typeof(p) for p in primals]
        if self._jvp_symbolic_zeros:
            tans = [SymbolicZero(t.aval) if _jax.is_symbolic_zero(t) else t for t in tangents]
        else:
            tans = [_jax.instantiate_zeros(t) for t in tangents]
        result = self._jvp_rule(
            tree_util.tree_unflatten(in_tree, primals),
            tree_util.tree_unflatten(in_tree, tans),
            params=params,
        )
        self._check_pair("jvp", result, "(primals_out, tangents_out)")
        out_avals, out_tree = self._eval_abstract(in_tree, avals, params)
        primals_out = self._flatten_results("jvp", result[0], out_tree)
        tangents_out = self._flatten_results("jvp", result[1], out_tree, none_ok=True)
        for i, (p, aval) in enumerate(zip(primals_out, out_avals, strict=True)):
            if tuple(p.shape) != tuple(aval.shape) or p.dtype != aval.dtype:
                raise RuleError(
                    f"jvp rule of primitive {self._name!r}: primal result {i} is "
                    f"{p.dtype}{list(p.shape)}, but abstract evaluation gives "
                    f"{_jax.aval_str(aval)}"
                )
        return primals_out, [
            self._check_tangent(i, t, aval)
            for i, (t, aval) in enumerate(zip(tangents_out, out_avals, strict=True))
        ]

    def _check_tangent(self, i: int, t: Any, aval: _jax.AbstractValue) -> Any:
        if t is None or isinstance(t, SymbolicZero):
            return _jax.make_zero(aval)
        if _jax.is_symbolic_zero(t):
            return t
        want = _jax.tangent_dtype(aval.dtype)
        if tuple(t.shape) != tuple(aval.shape) or t.dtype != want:
            raise RuleError(
                f"jvp rule of primitive {self._name!r}: tangent result {i} is "
                f"{t.dtype}{list(t.shape)}, but the primal result is {_jax.aval_str(aval)} "
                f"(its tangent must be {want}{list(aval.shape)})"
            )
        return t

    def _default_jvp(
        self,
        primals: Sequence[Any],
        tangents: Sequence[Any],
        in_tree: Any,
        params: Mapping[str, Any],
        bind_params: Mapping[str, Any],
    ) -> tuple[list[Any], list[Any]]:
        # The primal result still comes from this primitive (so its own lowerings and
        # impl apply); the tangent is the JVP of the reference, taken only in the
        # operands whose tangents are nonzero.
        primals_out = _jax.bind(self._jax, *primals, **bind_params)
        closed, _ = self._trace(in_tree, [_jax.typeof(p) for p in primals], params)
        fun = _jax.jaxpr_as_fun(closed)
        active = [i for i, t in enumerate(tangents) if not _jax.is_symbolic_zero(t)]

        def in_active(*xs: Any) -> Any:
            full = list(primals)
            for i, x in zip(active, xs, strict=True):
                full[i] = x
            return fun(*full)

        _, tangents_out = jax.jvp(
            in_active,
            tuple(primals[i] for i in active),
            tuple(_jax.instantiate_zeros(tangents[i]) for i in active),
        )
        return primals_out, list(tangents_out)

    # --- transposition --------------------------------------------------------------------

    @overload
    def def_transpose(
        self, rule: TransposeRule, *, linear_in: Sequence[int] | None = None
    ) -> TransposeRule: ...
    @overload
    def def_transpose(
        self, *, linear_in: Sequence[int] | None = None
    ) -> Callable[[TransposeRule], TransposeRule]: ...
    def def_transpose(
        self, rule: TransposeRule | None = None, *, linear_in: Sequence[int] | None = None
    ) -> TransposeRule | Callable[[TransposeRule], TransposeRule]:
        """Use ``rule(cotangents, *operands, **params) -> tuple`` to transpose.

        Operands the primitive is linear in arrive as :class:`jext.LinearOperand`; the rule
        returns one cotangent per operand (``None`` for the others).  ``linear_in`` lists
        the indices of the operands the primitive is linear in (default: every operand);
        ``jext check`` runs its adjoint test for those.
        """
        if rule is None:
            return functools.partial(self.def_transpose, linear_in=linear_in)
        n = self._n_operands()
        if linear_in is not None and n is not None and any(not 0 <= i < n for i in linear_in):
            raise DefinitionError(
                f"transpose rule of primitive {self._name!r}: linear_in={tuple(linear_in)} "
                f"names an operand it does not have (it has {n})"
            )
        self._transpose_rule = self._rule("transpose", rule, None if n is None else n + 1)
        self._linear_in = None if linear_in is None else tuple(linear_in)
        return rule

    @property
    def linear_in(self) -> tuple[int, ...] | None:
        """Indices of the operands the transpose rule solves for; None: all, or no rule."""
        return self._linear_in

    @property
    def has_transpose(self) -> bool:
        return self._transpose_rule is not None

    def _transpose_flat(self, cts: Sequence[Any], *args: Any, **bind_params: Any) -> list[Any]:
        in_tree, params = self._split(bind_params, len(args))
        if self._transpose_rule is None:
            raise TransposeError(
                f"primitive {self._name!r} has no transpose rule, but it was transposed (by "
                "grad, vjp or linear_transpose through a JVP that applies it to tangents); "
                f"define one with @{self._name.rsplit('.', 1)[-1]}.def_transpose"
            )
        if all(_jax.is_symbolic_zero(ct) for ct in cts):
            return [None] * len(args)
        avals = [
            _jax.undefined_aval(a) if _jax.is_undefined_primal(a) else _jax.typeof(a) for a in args
        ]
        out_tree = self._out_tree(in_tree, avals, params)
        cotangents = tree_util.tree_unflatten(out_tree, [_jax.instantiate_zeros(ct) for ct in cts])
        operands = tree_util.tree_unflatten(
            in_tree,
            [
                LinearOperand(aval) if _jax.is_undefined_primal(x) else x
                for x, aval in zip(args, avals, strict=True)
            ],
        )
        result = self._transpose_rule(cotangents, *operands, params=params)
        subtrees = in_tree.children()
        if not isinstance(result, tuple | list) or len(result) != len(subtrees):
            raise RuleError(
                f"transpose rule of primitive {self._name!r} must return a tuple with one "
                f"cotangent per operand ({len(subtrees)}), got {_describe(result)}"
            )
        flat: list[Any] = []
        for subtree, ct in zip(subtrees, result, strict=True):
            if ct is None:
                flat.extend([None] * subtree.num_leaves)
            else:
                flat.extend(self._flatten_results("transpose", ct, subtree, none_ok=True))
        return [
            self._check_cotangent(i, ct, x, aval)
            for i, (ct, x, aval) in enumerate(zip(flat, args, avals, strict=True))
        ]

    def _check_cotangent(self, i: int, ct: Any, x: Any, aval: _jax.AbstractValue) -> Any:
        if ct is None or not _jax.is_undefined_primal(x) or _jax.is_symbolic_zero(ct):
            return None
        want = _jax.tangent_dtype(aval.dtype)
        if tuple(ct.shape) != tuple(aval.shape) or ct.dtype != want:
            raise RuleError(
                f"transpose rule of primitive {self._name!r}: cotangent for operand leaf {i} "
                f"is {ct.dtype}{list(ct.shape)}, but the operand is {_jax.aval_str(aval)}"
            )
        return ct

    # --- batching -------------------------------------------------------------------------

    def def_batching(self, rule: BatchingRule) -> BatchingRule:
        """Use ``rule(args, dims, **params) -> (result, out_dims)`` under ``vmap``."""
        self._batching_rule = self._rule("batching", rule, 2)
        self._batching_kind = "custom"
        return rule

    def def_batching_elementwise(self) -> None:
        """Declare the primitive elementwise: under ``vmap`` it is applied to whole batches.

        Operands are broadcast together (per example) and given a leading batch axis.
        """
        self._batching_rule = None
        self._batching_kind = "elementwise"

    def def_batching_leading_axis(self) -> None:
        """Declare that the reference (and every rule) accepts a leading batch axis on all operands.

        Under ``vmap`` batched operands are moved to axis 0, unbatched ones broadcast.
        """
        self._batching_rule = None
        self._batching_kind = "leading_axis"

    def _batch_flat(
        self, args: Sequence[Any], dims: Sequence[int | None], **bind_params: Any
    ) -> tuple[list[Any], list[int | None]]:
        in_tree, params = self._split(bind_params, len(args))
        size = next(a.shape[d] for a, d in zip(args, dims, strict=True) if d is not None)
        kind = self._batching_kind
        if kind == "elementwise":
            return self._batch_elementwise(args, dims, size, bind_params)
        if kind == "leading_axis":
            moved = [_to_leading(a, d, size) for a, d in zip(args, dims, strict=True)]
            outs = _jax.bind(self._jax, *moved, **bind_params)
            return outs, [0] * len(outs)
        if kind == "default":
            return self._default_batch(args, dims, size, in_tree, params, bind_params)
        assert self._batching_rule is not None
        avals = [_unbatched_aval(a, d) for a, d in zip(args, dims, strict=True)]
        out_tree = self._out_tree(in_tree, avals, params)
        result = self._batching_rule(
            tree_util.tree_unflatten(in_tree, args),
            tree_util.tree_unflatten(in_tree, dims),
            params=params,
        )
        self._check_pair("batching", result, "(result, out_dims)")
        outs = self._flatten_results("batching", result[0], out_tree)
        out_dims_spec = result[1]
        if out_dims_spec is None or isinstance(out_dims_spec, int):
            out_dims: list[int | None] = [out_dims_spec] * len(outs)
        else:
            out_dims = self._flatten_results("batching", out_dims_spec, out_tree, none_ok=True)
        for i, (out, d) in enumerate(zip(outs, out_dims, strict=True)):
            if d is not None and not (-out.ndim <= d < out.ndim and out.shape[d] == size):
                raise RuleError(
                    f"batching rule of primitive {self._name!r}: out_dims for result {i} is "
                    f"{d}, but that result has shape {list(out.shape)} and the batch size is "
                    f"{size}"
                )
        return outs, [d % outs[i].ndim if d is not None else None for i, d in enumerate(out_dims)]

    def _batch_elementwise(
        self,
        args: Sequence[Any],
        dims: Sequence[int | None],
        size: int,
        bind_params: Mapping[str, Any],
    ) -> tuple[list[Any], list[int | None]]:
        first = dims[0]
        if (
            first is not None
            and all(d == first for d in dims)
            and len({a.shape for a in args}) == 1
        ):
            outs = _jax.bind(self._jax, *args, **bind_params)
            return outs, [first] * len(outs)
        example_shape = np.broadcast_shapes(
            *(_unbatched_aval(a, d).shape for a, d in zip(args, dims, strict=True))
        )
        full = [
            jnp.broadcast_to(_to_leading(a, d, size), (size, *example_shape))
            for a, d in zip(args, dims, strict=True)
        ]
        outs = _jax.bind(self._jax, *full, **bind_params)
        return outs, [0] * len(outs)

    def _default_batch(
        self,
        args: Sequence[Any],
        dims: Sequence[int | None],
        size: int,
        in_tree: Any,
        params: Mapping[str, Any],
        bind_params: Mapping[str, Any],
    ) -> tuple[list[Any], list[int | None]]:
        in_axes = tuple(dims)
        custom = [low for low in self._lowerings.values() if not low.is_reference]
        if not custom:
            fun, _ = self._flat_fun(self._reference, in_tree, params, "reference")
            outs = jax.vmap(fun, in_axes=in_axes, out_axes=0)(*args)
            return list(outs), [0] * len(outs)
        if any(low.raw for low in custom):
            # A raw MLIR rule cannot be vmapped: apply the primitive once per example.
            return self._batch_by_loop(args, dims, size, bind_params)
        # Vectorize each platform's own rule, and let the compiled module pick by platform.
        branches: dict[str, Callable[..., Any]] = {}
        for platform in _jax.PLATFORMS:
            low = self._resolve_lowering(platform)
            if low is not None:
                fun, _ = self._flat_fun(low.fn, in_tree, params, "lowering")
                branches[platform] = jax.vmap(fun, in_axes=in_axes, out_axes=0)
        outs = jax.lax.platform_dependent(*args, **branches)
        return list(outs), [0] * len(outs)

    def _batch_by_loop(
        self,
        args: Sequence[Any],
        dims: Sequence[int | None],
        size: int,
        bind_params: Mapping[str, Any],
    ) -> tuple[list[Any], list[int | None]]:
        batched = [i for i, d in enumerate(dims) if d is not None]

        def one(xs: Sequence[Any]) -> list[Any]:
            full = list(args)
            for i, x in zip(batched, xs, strict=True):
                full[i] = x
            return _jax.bind(self._jax, *full, **bind_params)

        stacked = [jnp.moveaxis(args[i], d, 0) for i, d in enumerate(dims) if d is not None]
        outs = jax.lax.map(one, stacked)
        return list(outs), [0] * len(outs)

    # --- lowering -------------------------------------------------------------------------

    @overload
    def def_lowering(
        self, rule: LoweringRule, *, platform: Platform | None = None, raw: bool = False
    ) -> LoweringRule: ...
    @overload
    def def_lowering(
        self, *, platform: Platform | None = None, raw: bool = False
    ) -> Callable[[LoweringRule], LoweringRule]: ...
    def def_lowering(
        self,
        rule: LoweringRule | None = None,
        *,
        platform: Platform | None = None,
        raw: bool = False,
    ) -> LoweringRule | Callable[[LoweringRule], LoweringRule]:
        """Lower with ``rule`` on ``platform`` (``"gpu"``: cuda and rocm; None: every platform).

        ``rule(*operands, **params)`` is JAX-traceable (e.g. a Pallas kernel or a
        different jnp formulation).  With ``raw=True`` it is an MLIR rule
        ``rule(ctx, *values, **params) -> list of values`` on flat operands.
        A rule for a specific platform wins over ``"gpu"``, which wins over ``None``.
        """
        if rule is None:
            return functools.partial(self.def_lowering, platform=platform, raw=raw)
        self.validate_lowering(rule, platform=platform, raw=raw)
        self._calls.clear()  # eager calls compiled with the old rule
        self._register_per_platform()
        self._lowerings[platform] = self._make_lowering(platform, rule, raw=raw, is_reference=False)
        return rule

    def _register_per_platform(self) -> None:
        if not self._per_platform:
            for platform in _jax.PLATFORMS:
                _jax.register_lowering(
                    self._jax, functools.partial(self._lower, platform), platform
                )
            self._per_platform = True

    def validate_lowering(
        self, rule: Callable[..., Any], *, platform: str | None = None, raw: bool = False
    ) -> None:
        """Raise :class:`jext.DefinitionError` where :meth:`def_lowering` would refuse these."""
        check_platform(self._name, platform)
        self._rule("lowering", rule, None if raw else self._n_operands())

    def _make_lowering(
        self, platform: str | None, fn: Callable[..., Any], *, raw: bool, is_reference: bool
    ) -> _Lowering:
        if is_reference:

            def reference_rule(ctx: Any, *values: Any, **bind_params: Any) -> Sequence[Any]:
                # Lower the cached trace directly: no retrace, and the same module a
                # hand-written primitive lowering the reference gives.
                in_tree, params = self._split(bind_params, len(values))
                closed, _ = self._trace(in_tree, _jax.avals_in(ctx), params)
                return _jax.lower_jaxpr(ctx, closed, *values)

            return _Lowering(platform, fn, reference_rule, raw=False, is_reference=True)

        arity = rule_arity(
            self._name, "lowering", fn, positional=None, param_names=self._signature.param_names
        )
        if raw:

            def raw_rule(ctx: Any, *values: Any, **bind_params: Any) -> Sequence[Any]:
                params = dict(bind_params)
                params.pop(TREE_PARAM, None)
                result: Sequence[Any] = fn(ctx, *values, **arity.select(params))
                return result

            return _Lowering(platform, fn, raw_rule, raw=True, is_reference=False)

        def traceable(*flat: Any, **bind_params: Any) -> list[Any]:
            in_tree, params = self._split(bind_params, len(flat))
            avals = [_jax.typeof(x) for x in flat]
            out_tree = self._out_tree(in_tree, avals, params)
            result = fn(*tree_util.tree_unflatten(in_tree, flat), **arity.select(params))
            return self._flatten_results("lowering", result, out_tree)

        return _Lowering(
            platform, fn, _jax.lower_fun(traceable), raw=False, is_reference=is_reference
        )

    def _resolve_lowering(self, platform: str | None) -> _Lowering | None:
        """The rule used on ``platform`` (None: a platform jext does not know by name)."""
        table = self._lowerings
        if platform in table:
            return table[platform]
        if platform in _GPU_PLATFORMS and "gpu" in table:
            return table["gpu"]
        if None in table:
            return table[None]
        if platform in self._reference_platforms:
            return self._reference_lowering
        return None

    def _lower(
        self, platform: str | None, ctx: Any, *values: Any, **bind_params: Any
    ) -> Sequence[Any]:
        _log_lowering(self._name)
        low = self._resolve_lowering(platform)
        if low is None:
            where = platform or "/".join(_jax.module_platforms(ctx))
            have = sorted(self.lowering_platforms())
            raise LoweringError(
                f"primitive {self._name!r} has no lowering rule for platform {where!r} (it has "
                f"rules for {have or 'no platform'}); register one with "
                f"@{self._name.rsplit('.', 1)[-1]}.def_lowering(platform={where!r})"
            )
        return low.mlir_rule(ctx, *values, **bind_params)

    def lowering_rule(self, platform: str) -> LoweringInfo | None:
        """The rule ``platform`` lowers with (None: no rule), for checkers and reports.

        ``kind`` is ``"reference"``, ``"traceable"`` or ``"raw"``; for the first two ``fn``
        is called like the primitive (operands, then static params as keywords) and can
        run on any backend, so a checker can hold a tpu rule to the reference on CPU.
        """
        low = self._resolve_lowering(platform)
        if low is None:
            return None
        kind: Literal["reference", "traceable", "raw"] = (
            "reference" if low.is_reference else "raw" if low.raw else "traceable"
        )
        fn = low.fn
        if kind == "traceable":
            arity = rule_arity(
                self._name, "lowering", fn, positional=None, param_names=self._signature.param_names
            )
            rule_fn = fn

            def call(*operands: Any, **params: Any) -> Any:
                return rule_fn(*operands, **arity.select(params))

            fn = call
        return LoweringInfo(platform, low.label, kind, fn, "loop" if low.raw else "vmap")

    def lowering_platforms(self) -> dict[str, str]:
        """Each platform that has a lowering rule, and which rule (``"reference"`` or its name)."""
        out: dict[str, str] = {}
        for platform in _jax.PLATFORMS:
            low = self._resolve_lowering(platform)
            if low is not None:
                out[platform] = low.label
        return out

    # --- examples ------------------------------------------------------------------------

    def def_examples(self, factory: ExamplesFactory) -> ExamplesFactory:
        """Declare example inputs: ``factory() -> iterable of jext.Example``.

        ``jext check`` and :mod:`jext.testing` run their checks on these.  The factory is
        called only when checks run, so building arrays in it costs nothing at import.
        """
        if not callable(factory):
            raise DefinitionError(
                f"primitive {self._name!r}: def_examples takes a function returning "
                f"jext.Example objects, got {factory!r}"
            )
        self._examples = factory
        return factory

    def examples(self) -> list[Example]:
        """The declared examples (empty when none were declared)."""
        if self._examples is None:
            return []
        examples = list(self._examples())
        for ex in examples:
            if not isinstance(ex, Example):
                raise DefinitionError(
                    f"examples of primitive {self._name!r} must be jext.Example objects, got {ex!r}"
                )
        return examples

    # --- introspection -------------------------------------------------------------------

    def rule_sources(self) -> dict[str, str]:
        """For each rule kind, where it comes from: ``default``, ``custom``, ``none``, ..."""

        def src(rule: _Rule | None) -> str:
            return "default" if rule is None else "custom"

        custom_lowerings = sorted(
            "all" if p is None else p for p, low in self._lowerings.items() if not low.is_reference
        )
        return {
            "abstract_eval": src(self._abstract_eval_rule),
            "impl": src(self._impl_rule),
            "jvp": src(self._jvp_rule),
            "transpose": "none" if self._transpose_rule is None else "custom",
            "batching": self._batching_kind,
            "lowering": ("custom:" + ",".join(custom_lowerings)) if custom_lowerings else "default",
        }

    # --- helpers --------------------------------------------------------------------------

    def _n_operands(self) -> int | None:
        sig = self._signature
        return None if sig.variadic or sig.operand_defaults else len(sig.operand_names)

    def _rule(self, kind: str, fn: Callable[..., Any], positional: int | None) -> _Rule:
        if not callable(fn):
            raise DefinitionError(
                f"{kind} rule of primitive {self._name!r} must be callable, got {fn!r}"
            )
        arity = rule_arity(
            self._name, kind, fn, positional=positional, param_names=self._signature.param_names
        )
        return _Rule(fn, arity)


def _describe(x: object) -> str:
    if isinstance(x, tuple | list):
        return f"a {type(x).__name__} of length {len(x)}"
    return type(x).__name__


@functools.lru_cache(maxsize=64)
def _flat_tree(n: int) -> Any:
    return tree_util.tree_structure((0,) * n)


def _is_flat(tree: Any) -> bool:
    # The operands are a tuple of n array leaves exactly when the tree has n + 1 nodes.
    return bool(tree.num_nodes == tree.num_leaves + 1)


def _unbatched_aval(x: Any, dim: int | None) -> _jax.AbstractValue:
    aval = _jax.typeof(x)
    if dim is None:
        return aval
    shape = tuple(s for i, s in enumerate(aval.shape) if i != dim)
    return _jax.shaped_array(shape, aval.dtype, weak_type=aval.weak_type)


def _to_leading(x: Any, dim: int | None, size: int) -> Any:
    if dim is None:
        return jnp.broadcast_to(x, (size, *np.shape(x)))
    return jnp.moveaxis(x, dim, 0)


# (name, known module, new module) -> whether the new definition replaces the known one.
# jext's registry sets it: the plugin owning a name's namespace may define it even after
# another module did (an impostor imported first), so import order never decides.
_arbiter: list[Callable[[str, str, str], bool]] = [lambda name, known, new: False]


def set_definition_arbiter(arbiter: Callable[[str, str, str], bool]) -> None:
    """Let ``arbiter(name, known_module, new_module)`` allow a contested definition."""
    _arbiter[0] = arbiter


def _claim_name(prim: Primitive[..., Any]) -> None:
    """Record ``prim`` under its name; a different definition of the same name is an error.

    The same definition (same module and qualified name, as on a module reload or a
    re-run notebook cell) replaces the earlier one, and so does the definition of the
    plugin owning the name's namespace (see ``set_definition_arbiter``).
    """

    def origin(p: Primitive[..., Any]) -> tuple[str, str]:
        ref = p.reference
        return (getattr(ref, "__module__", "?"), getattr(ref, "__qualname__", repr(ref)))

    with _DEFINITIONS_LOCK:
        known = _DEFINITIONS.get(prim.name)
        if (
            known is not None
            and origin(known) != origin(prim)
            and not _arbiter[0](prim.name, origin(known)[0], origin(prim)[0])
        ):
            a, b = origin(known), origin(prim)
            raise DuplicateNameError(
                f"primitive name {prim.name!r} is already defined by {a[0]}.{a[1]}; "
                f"{b[0]}.{b[1]} cannot define it again (choose another '<lib>.<op>' name)"
            )
        _DEFINITIONS[prim.name] = prim
