"""``jext.Primitive``: a reference implementation made a JAX primitive with every rule kind.

This module is the facade: the ``def_*`` decorators fill a rules record
(``_rules.py``) that freezes at the first bind, and each rule kind lives in its own
module (``_abstract.py``, ``_ad.py``, ``_batching.py``, ``_lowering.py``) around the
shared state in ``_core.py``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, ParamSpec, TypeVar, cast, final, overload

import jax
import numpy as np
from jax import tree_util
from numpy.typing import DTypeLike

from jext import _host, _jax
from jext._errors import DefinitionError, DuplicateNameError, RuleNotImplementedError
from jext.primitives import _abstract, _ad, _batching, _lowering
from jext.primitives._closure import ClosesOverTracers, Closure, twin_reference, twin_rules
from jext.primitives._core import (
    CACHE_SIZE,
    NEEDS_CONCRETE_VALUES,
    Core,
    Form,
    LruCache,
    flat_tree,
    parse_form,
    typed_key,
)
from jext.primitives._example import CheckOptions, Example
from jext.primitives._rules import (
    NONDIFFERENTIABLE_ATTR,
    LoweringEntry,
    LoweringInfo,
    Rule,
    Rules,
    check_platform,
    reference_platforms,
)
from jext.primitives._sharding import parse_rule
from jext.primitives._signature import OperandSignature, rule_arity
from jext.typing import (
    AbstractEvalRule,
    BatchingRule,
    ImplRule,
    JvpRule,
    LinearizedRule,
    LinFwdRule,
    LoweringRule,
    Platform,
    TransposeRule,
    VjpAccumulatingBwdRule,
    VjpBwdRule,
    VjpFwdRule,
)

__all__ = [
    "CACHE_SIZE",
    "LoweringInfo",
    "Primitive",
    "check_platform",
    "defined_primitives",
    "primitive",
]

P = ParamSpec("P")
R = TypeVar("R")

_SCALAR_TYPES: Final = (
    *(bool, int, float, complex, np.ndarray, np.generic, jax.Array),
    *_jax.literal_array_types(),
)
_EAGER_ARRAY_TYPES: Final = frozenset({np.ndarray, _jax.ArrayImpl})
_SINGLE_LEAF: Final = tree_util.tree_structure(0)

ExamplesFactory = TypeVar("ExamplesFactory", bound=Callable[[], Iterable[Example]])


def defined_primitives() -> Mapping[str, Primitive[..., Any]]:
    """Every primitive defined in this process so far, by name (a snapshot)."""
    with _host.DEFINITIONS_LOCK:
        return dict(_host.DEFINITIONS)


@dataclass(frozen=True, slots=True)
class _PreparedCall:
    out_tree: Any
    bind_params: Mapping[str, Any]
    eager: _EagerCall | None  # None: bind (a custom impl runs as it is)
    single: bool  # the result is one array


class _EagerCall:
    """A jitted bind, made on the first eager call (tracing never needs one)."""

    __slots__ = ("_bind_params", "_jitted", "_prim")

    def __init__(self, prim: _jax.Primitive, bind_params: Mapping[str, Any]) -> None:
        self._prim = prim
        self._bind_params = bind_params
        self._jitted: Callable[..., list[Any]] | None = None

    def __call__(self, *args: Any) -> list[Any]:
        jitted = self._jitted
        if jitted is None:
            bound = functools.partial(_jax.bind, self._prim, **self._bind_params)
            jitted = self._jitted = jax.jit(bound)
        return jitted(*args)


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

    A ``jax.custom_jvp`` or ``jax.custom_vjp`` function may be given as the reference:
    the primitive keeps its JVP rule, or its forward and backward rules
    (``def_jvp``/``def_vjp``), and its positional parameters become the operands.

    A reference with effects (``jax.debug.print``, ``io_callback``) makes equations with
    those effects, as the same code inline would.

    Example:

    >>> import jax, jax.numpy as jnp, jext
    >>> @jext.primitive("mylib.softplus")
    ... def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    ...     return jnp.logaddexp(beta * x, 0.0) / beta
    >>> jax.make_jaxpr(lambda x: softplus(x, beta=2.0))(1.0).eqns[0].primitive.name
    'mylib.softplus'
    """
    _check_name(name)
    platforms = reference_platforms(name, reference_lowering)

    def wrap(reference: Callable[P, R]) -> Primitive[P, R]:
        adopted = _jax.custom_rules(reference)
        if adopted is None:
            return Primitive(name, reference, reference_platforms=platforms)
        return cast("Primitive[P, R]", _adopt(name, adopted, platforms))

    return wrap


def _adopt(
    name: str, adopted: _jax.CustomRules, platforms: frozenset[str | None]
) -> Primitive[..., Any]:
    """A ``jax.custom_jvp`` or ``jax.custom_vjp`` function as a primitive with its rules."""
    if adopted.nondiff_argnums:
        raise DefinitionError(
            f"primitive {name!r}: the custom function has nondiff_argnums="
            f"{adopted.nondiff_argnums}; a primitive's non-differentiable arguments are its "
            "keyword-only static params: define it with those as keyword-only parameters"
        )
    if adopted.jvp is None and adopted.fwd is None:
        raise DefinitionError(
            f"primitive {name!r}: the custom function has no rules yet; define them "
            "(defjvp / defvjp) before making it a primitive"
        )
    reference = _jax.positional_operands(adopted.fun)
    prim: Primitive[..., Any] = Primitive(name, reference, reference_platforms=platforms)
    if adopted.jvp is not None:
        prim.def_jvp(adopted.jvp, symbolic_zeros=adopted.symbolic_zeros)
    if adopted.fwd is not None and adopted.bwd is not None:
        prim.def_vjp(adopted.fwd, adopted.bwd, symbolic_zeros=adopted.symbolic_zeros)
    return prim


def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise DefinitionError(f"a primitive name must be a str, got {type(name).__name__}")
    parts = name.split(".")
    if len(parts) < 2 or not name.isascii() or not all(p.isidentifier() for p in parts):
        raise DefinitionError(
            f"primitive name {name!r} must be namespaced as '<lib>.<op>' "
            "(ASCII dot-separated Python identifiers), e.g. 'mylib.softplus'"
        )


@final
class Primitive(Generic[P, R]):
    """A JAX primitive built from a reference implementation; call it like the reference.

    Created by :func:`jext.primitive`.  Each call binds one JAX primitive; its rules
    default to ones derived from the reference and are replaced with the ``def_*``
    decorators, each of which returns the rule unchanged.  Rules are frozen when the
    primitive is first called: define them all before that.

    A primitive is a value: copying returns it, pickling stores its name, and it is
    hashable and weak-referenceable, with the reference's ``__name__``, ``__doc__`` and
    signature.
    """

    def __init__(
        self,
        name: str,
        reference: Callable[P, R],
        *,
        reference_platforms: frozenset[str | None] = frozenset((*_jax.PLATFORMS, None)),
        _claim: bool = True,
    ) -> None:
        _check_name(name)
        if not callable(reference):
            raise DefinitionError(f"primitive {name!r}: the reference must be callable")
        self._core = core = Core(name, reference, Rules(reference_platforms=reference_platforms))
        self._calls: LruCache[Any, _PreparedCall] = LruCache()
        self._examples: Callable[[], Iterable[Example]] | None = None
        self._check_options = CheckOptions()
        self._freeze_lock = threading.RLock()
        self._twin: Primitive[..., Any] | None = None
        functools.update_wrapper(self, reference)

        def abstract_eval(*avals: Any, **bind_params: Any) -> tuple[list[Any], frozenset[Any]]:
            self._freeze()
            form = parse_form(bind_params, len(avals))
            return _abstract.abstract_eval_and_effects(core, avals, form)

        def impl(*args: Any, **bind_params: Any) -> list[Any]:
            self._freeze()
            return _lowering.impl(core, args, bind_params)

        def jvp(
            primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
        ) -> tuple[list[Any], list[Any]]:
            return _ad.jvp(core, primals, tangents, parse_form(bind_params, len(primals)))

        def linearize_jvp(
            primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
        ) -> tuple[list[Any], list[Any]]:
            form = parse_form(bind_params, len(primals))
            return _ad.jvp(core, primals, tangents, form, mode="linearize")

        def reverse_jvp(
            primals: Sequence[Any], tangents: Sequence[Any], **bind_params: Any
        ) -> tuple[list[Any], list[Any]]:
            form = parse_form(bind_params, len(primals))
            return _ad.jvp(core, primals, tangents, form, mode="vjp")

        def transpose(cts: Sequence[Any], *args: Any, **bind_params: Any) -> list[Any]:
            return _ad.transpose(core, cts, args, parse_form(bind_params, len(args)))

        def batch(
            axis_name: Any,
            size: int,
            args: Sequence[Any],
            dims: Sequence[int | None],
            **bind_params: Any,
        ) -> tuple[list[Any], list[int | None]]:
            form = parse_form(bind_params, len(args))
            return _batching.batch(
                core, axis_name, size, args, dims, form, jvp_of_one=_ad.jvp_per_example
            )

        _jax.set_effectful_abstract_eval(core.jax, abstract_eval)
        _jax.set_impl(core.jax, impl)
        _jax.register_jvp(core.jax, jvp)
        _jax.register_linearizations(core.jax, linearize_jvp, reverse_jvp)
        _jax.register_transpose(core.jax, transpose)
        _jax.register_batching(core.jax, batch)
        if _claim:
            _claim_name(self)

    # --- identity and value semantics ------------------------------------------------------

    @property
    def name(self) -> str:
        return self._core.name

    @property
    def reference(self) -> Callable[P, R]:
        """The reference implementation, unchanged."""
        return self._core.reference

    @property
    def jax_primitive(self) -> _jax.Primitive:
        """The underlying ``jax.extend.core.Primitive`` (multiple results)."""
        return self._core.jax

    @property
    def signature(self) -> OperandSignature:
        return self._core.signature

    @property
    def rules(self) -> Rules:
        """The rules record (read-only; frozen once the primitive has been called)."""
        return self._core.rules

    @property
    def frozen(self) -> bool:
        """Whether the rules are frozen (the primitive has been called)."""
        return self._core.frozen

    def __repr__(self) -> str:
        return f"<jext.Primitive {self.name}>"

    def __copy__(self) -> Primitive[P, R]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Primitive[P, R]:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        ref = self._core.reference
        module = getattr(ref, "__module__", None)
        return (_restore, (self.name, module))

    # --- calling ---------------------------------------------------------------------------

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        sig = self._core.signature
        operands = sig.operands(args)
        params = sig.params(kwargs)
        if all(type(x) in _EAGER_ARRAY_TYPES for x in operands):  # the common case: arrays
            flat: Sequence[Any] = operands
            in_tree = flat_tree(len(operands))
        else:
            flat, in_tree = tree_util.tree_flatten(operands)
            self._check_leaves(flat)
        try:
            key = (in_tree, tuple(typed_key(v) for v in params.values()))
            call = self._calls.get(key)
        except TypeError:
            self._core.check_hashable(params)
            raise
        if call is None:
            try:
                prepared = self._prepare_call(in_tree, flat, params)
            except NEEDS_CONCRETE_VALUES as err:
                if not _jax.is_eager():
                    return self._bind_unprepared(in_tree, flat, params, err)
                # Called eagerly, a reference that needs concrete values (Python control
                # flow on them) runs op by op on them, as a custom_jvp function does.
                concrete: R = self._core.reference(*operands, **params)
                return concrete
            if isinstance(prepared, ClosesOverTracers):
                closed: R = self._call_closure(prepared, in_tree, flat, params)
                return closed
            call = self._calls.put(key, prepared)
        if call.eager is not None and _jax.is_eager():
            outs = call.eager(*flat)
        else:
            outs = _jax.bind(self._core.jax, *flat, **call.bind_params)
        result: R = outs[0] if call.single else tree_util.tree_unflatten(call.out_tree, outs)
        return result

    def _bind_unprepared(
        self, in_tree: Any, flat: Sequence[Any], params: dict[str, Any], err: Exception
    ) -> Any:
        """A call whose reference needs concrete values, under a transformation: bind it
        unprepared.  Under an eager ``jax.jvp`` or ``grad`` the rules run on the concrete
        primals and record the result tree; under ``jit`` JAX's error is raised again."""
        core = self._core
        form = Form(in_tree, params)
        outs = _jax.bind(core.jax, *flat, **form.bind_params())
        tree = core.recorded_out_tree(form)
        if tree is None:
            raise err
        return tree_util.tree_unflatten(tree, outs)

    def _call_closure(
        self,
        found: ClosesOverTracers,
        in_tree: Any,
        flat: Sequence[Any],
        params: dict[str, Any],
    ) -> Any:
        """A call whose reference closed over traced values: bind the closure twin."""
        closure = Closure(found.jaxpr, found.values, in_tree, found.out_tree, params)
        return self._closure_twin()(tuple(found.values), *flat, closure=closure)

    def _closure_twin(self) -> Primitive[..., Any]:
        twin = self._twin
        if twin is not None:
            return twin
        with self._freeze_lock:
            if self._twin is None:
                rules = self._core.rules
                made: Primitive[..., Any] = Primitive(
                    self.name,
                    twin_reference,
                    reference_platforms=rules.reference_platforms,
                    _claim=False,
                )
                adapted = twin_rules(self.name, rules)
                if "abstract_eval" in adapted:
                    made.def_abstract_eval(adapted["abstract_eval"])
                if "impl" in adapted:
                    made.def_impl(adapted["impl"])
                if "jvp" in adapted:
                    made.def_jvp(adapted["jvp"], symbolic_zeros=True)
                if "transpose" in adapted:
                    shifted = None if rules.linear_in is None else [i + 1 for i in rules.linear_in]
                    made.def_transpose(adapted["transpose"], linear_in=shifted)
                if "vjp" in adapted:
                    made.def_vjp(
                        *adapted["vjp"],
                        symbolic_zeros=rules.vjp_symbolic_zeros,
                        accumulate=rules.vjp_accumulate,
                    )
                if "linearize" in adapted:
                    made.def_linearize(*adapted["linearize"])
                if "batching" in adapted:
                    made.def_batching(adapted["batching"])
                for platform, (fn, raw) in adapted["lowerings"].items():
                    made.def_lowering(fn, platform=platform, raw=raw)
                if rules.nondifferentiable_in:
                    shifted_in = tuple(i + 1 for i in rules.nondifferentiable_in)
                    made._define("nondifferentiable", nondifferentiable_in=shifted_in)
                made._core.leading_hidden = True
                made._core.operand_names = ("", *self._core.operand_names)
                self._twin = made
            return self._twin

    def _check_leaves(self, flat: Sequence[Any]) -> None:
        for i, leaf in enumerate(flat):
            if not isinstance(leaf, _SCALAR_TYPES):
                raise TypeError(
                    f"{self.name}(): operand leaf {i} is a {type(leaf).__name__}; operands must "
                    "be arrays, Python scalars or pytrees of them (static values go in "
                    "keyword-only params)"
                )

    def _prepare_call(
        self, in_tree: Any, flat: Sequence[Any], params: dict[str, Any]
    ) -> _PreparedCall | ClosesOverTracers:
        """What every later call with this operand tree and these params reuses, or, for a
        reference that closed over traced values, those values (nothing to reuse)."""
        self._freeze()
        core = self._core
        form = Form(in_tree, params)
        avals = [_jax.typeof(x) for x in flat]
        _abstract.check_explicit_operands(core, form, avals)
        try:
            _, out_tree = _abstract.base_abstract_eval(core, form, avals)
        except ClosesOverTracers as found:
            return found
        bind_params = form.bind_params()
        # Eagerly, a jitted bind skips JAX's per-call dispatch of the primitive; it is
        # compiled once per signature like the default impl.  A custom impl runs as is.
        eager = None if core.rules.impl is not None else _EagerCall(core.jax, bind_params)
        return _PreparedCall(out_tree, bind_params, eager, out_tree == _SINGLE_LEAF)

    def _freeze(self) -> None:
        """Freeze the rules (first bind): later definitions raise ``DefinitionError``."""
        core = self._core
        if core.frozen:
            return
        # Plugins' lowering rules for this primitive must be in before JAX caches a
        # lowering of it: wait for the one load of plugins (a no-op afterwards), outside
        # the freeze lock, which a vendor's rule takes on the loading thread.  jext's own
        # primitives ("jext.*") are core: using them never waits for a plugin, so a vendor
        # rule for one must be loaded before it is first called.
        if not self.name.startswith("jext."):
            _load_plugins()
        with self._freeze_lock:
            if core.frozen:  # another thread, or a plugin calling it while loading
                return
            core.frozen = True
            _lowering.register_lowerings(core)

    def _define(self, kind: str, **changes: Any) -> None:
        core = self._core
        with self._freeze_lock:
            rules = core.rules.replace(**changes)
            if core.frozen and rules != core.rules:
                raise DefinitionError(
                    f"primitive {self.name!r}: cannot define its {kind} rule now: it has "
                    "already been called, which froze its rules (JAX caches what it "
                    f"compiled with them). Define @{core.short_name}.def_{kind} before the "
                    "first call."
                )
            core.rules = rules  # unchanged when frozen: defining the same rule again is fine

    # --- rule definitions --------------------------------------------------------------------

    def def_abstract_eval(self, rule: AbstractEvalRule) -> AbstractEvalRule:
        """Use ``rule(*avals, **params) -> aval(s)`` for abstract evaluation."""
        self._define("abstract_eval", abstract_eval=self._rule("abstract_eval", rule, self._n()))
        return rule

    def def_impl(self, rule: ImplRule) -> ImplRule:
        """Use ``rule(*operands, **params)`` as the eager implementation (concrete arrays).

        Under eager ``vmap`` it is called once per example.
        """
        self._define("impl", impl=self._rule("impl", rule, self._n()))
        return rule

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
        The rule also applies under ``vmap`` (vectorized per example).
        """
        if rule is None:
            return functools.partial(self.def_jvp, symbolic_zeros=symbolic_zeros)
        self._define("jvp", jvp=self._rule("jvp", rule, 2), jvp_symbolic_zeros=symbolic_zeros)
        return rule

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
        the operands the primitive is (jointly) linear in (default: every operand).
        Without a ``def_jvp``, the JVP is then the primitive applied to the tangents of
        those operands, so ``grad``, ``vjp`` and ``linear_transpose`` run this rule.
        """
        if rule is None:
            return functools.partial(self.def_transpose, linear_in=linear_in)
        if self.rules.vjp_fwd is not None:
            raise DefinitionError(
                f"primitive {self.name!r}: def_vjp and def_transpose both say how to "
                "differentiate it in reverse mode; declare one"
            )
        n = self._n()
        if linear_in is not None and n is not None and any(not 0 <= i < n for i in linear_in):
            raise DefinitionError(
                f"transpose rule of primitive {self.name!r}: linear_in={tuple(linear_in)} "
                f"names an operand it does not have (it has {n})"
            )
        self._define(
            "transpose",
            transpose=self._rule("transpose", rule, None if n is None else n + 1),
            linear_in=None if linear_in is None else tuple(linear_in),
        )
        return rule

    @overload
    def def_vjp(
        self,
        fwd: VjpFwdRule,
        bwd: VjpBwdRule,
        *,
        symbolic_zeros: bool = False,
        accumulate: Literal[False] = False,
    ) -> None: ...

    @overload
    def def_vjp(
        self,
        fwd: VjpFwdRule,
        bwd: VjpAccumulatingBwdRule,
        *,
        symbolic_zeros: bool = False,
        accumulate: Literal[True],
    ) -> None: ...

    @overload
    def def_vjp(
        self,
        fwd: VjpFwdRule,
        bwd: VjpBwdRule | VjpAccumulatingBwdRule,
        *,
        symbolic_zeros: bool = False,
        accumulate: bool,
    ) -> None: ...

    def def_vjp(
        self,
        fwd: VjpFwdRule,
        bwd: VjpBwdRule | VjpAccumulatingBwdRule,
        *,
        symbolic_zeros: bool = False,
        accumulate: bool = False,
    ) -> None:
        """Differentiate in reverse mode with a forward and a backward rule, as ``custom_vjp``.

        ``fwd(*operands, **params) -> (outputs, residuals)``: the outputs shaped like the
        primitive's results, the residuals any pytree of arrays.
        ``bwd(residuals, cotangents, **params) -> tuple``: one cotangent per operand
        (``None`` for a zero one).  With ``symbolic_zeros=True``, ``custom_vjp``'s
        conventions: ``fwd`` gets each operand leaf as
        ``jax.custom_derivatives.CustomVJPPrimal(value, perturbed)`` (``perturbed``: whether
        it is being differentiated), ``bwd`` gets a :class:`jext.SymbolicZero` for a zero
        output cotangent and may return one.  With ``accumulate=True``, hijax's
        accumulating form: ``bwd(residuals, cotangents, *accumulators, **params)`` gets one
        accumulator per operand (a pytree of them for a pytree operand), calls
        ``acc.accum(value)`` for each cotangent it computes and returns None; an operand
        leaf that needs no cotangent gets a :class:`jext.NullAccum`, so ``bwd`` may skip
        its work.  Either may declare only the static params it needs,
        and either may call jext primitives (a forward and a backward kernel, each with its
        own platform rules and batching).

        ``grad``, ``vjp``, ``jacrev``, ``checkpoint`` and ``scan`` run ``fwd`` and
        ``bwd``; under ``vmap`` they run vectorized.  Forward mode (``jax.jvp``,
        ``jacfwd``, ``jax.linearize``) raises :class:`jext.RuleError` naming the
        primitive, as ``custom_vjp`` raises, unless a ``def_jvp`` is given too.  With both,
        each mode runs its own rule, as in a hijax ``VJPHiPrimitive``: forward mode the JVP
        rule, reverse mode (``grad``, ``vjp``, ``jacrev``) ``fwd`` and ``bwd``; reverse mode
        through ``checkpoint``, which JAX derives from the JVP, transposes the JVP rule.

        Example::

            @attention.def_vjp
            ...

        is written ``attention.def_vjp(attention_fwd, attention_bwd)``.
        """
        if self.rules.transpose is not None:
            raise DefinitionError(
                f"primitive {self.name!r}: def_vjp and def_transpose both say how to "
                "differentiate it in reverse mode; declare one"
            )
        n = self._n()
        self._define(
            "vjp",
            vjp_fwd=self._rule("vjp fwd", fwd, n),
            vjp_bwd=self._rule(
                "vjp bwd", bwd, 2 if not accumulate else None if n is None else 2 + n
            ),
            vjp_symbolic_zeros=symbolic_zeros,
            vjp_accumulate=accumulate,
        )

    def def_linearize(self, lin: LinFwdRule, linearized: LinearizedRule) -> None:
        """Linearize with two rules, as a hijax ``VJPHiPrimitive``'s ``lin``/``linearized``.

        ``lin(*operands, **params) -> (outputs, residuals)`` runs once on the primals;
        ``linearized(residuals, *tangents, **params) -> output tangents`` is linear in the
        tangents (one per operand, zeros instantiated).  ``jax.linearize`` and reverse mode
        (``grad``, ``vjp``, ``jacrev``: by transposing ``linearized``) run them, saving the
        residuals rather than recomputing them; ``jax.jvp`` runs them unless a
        ``def_jvp`` is given, and reverse mode runs ``def_vjp``'s rules where given.
        """
        n = self._n()
        self._define(
            "linearize",
            lin=self._rule("linearize (lin)", lin, n),
            linearized=self._rule(
                "linearize (linearized)", linearized, None if n is None else 1 + n
            ),
        )

    def def_batching(self, rule: BatchingRule) -> BatchingRule:
        """Use ``rule(args, dims, **params) -> (result, out_dims)`` under ``vmap``.

        As ``custom_vmap``'s rule, it is differentiated where a batch is differentiated, and
        with only tangents batched (``jacfwd``) it is called with every ``dims`` entry None.
        """
        self._define("batching", batching=self._rule("batching", rule, 2), batching_kind="custom")
        return rule

    def def_batching_elementwise(self) -> None:
        """Declare the primitive elementwise: under ``vmap`` it is applied to whole batches.

        Operands are broadcast together (per example) and given a leading batch axis.
        """
        self._define("batching_elementwise", batching=None, batching_kind="elementwise")

    def def_batching_leading_axis(self) -> None:
        """Declare that the reference (and every rule) accepts a leading batch axis on all operands.

        Under ``vmap`` batched operands are moved to axis 0, unbatched ones broadcast.
        """
        self._define("batching_leading_axis", batching=None, batching_kind="leading_axis")

    def def_sharding(self, rule: str, *, need_replication: Sequence[str] = ()) -> None:
        """Declare how the partitioner may split the primitive across devices.

        ``rule`` reads like an einsum over the flat operands and results, one factor name
        per dimension: ``"... i, i -> ... i"`` says the result has operand 0's shape, that
        ``i`` is the last axis of operand 0, of operand 1 and of the result, and that the
        leading axes (``...``, aligned from the right) are shared by operand 0 and the
        result.  A factor may be split when each shard can compute its part alone; list
        the others (a reduction axis, an axis the kernel scans) in ``need_replication``.
        A factor missing from the operands or from the results is never split.  Where an
        operand may be None (``def f(x, s=None, /)``), the rule may name each declared
        operand instead: a None operand's entry is dropped with its factors.

        Traceable rules and the reference need no sharding rule (the partitioner sees
        their operations); for FFI and raw MLIR rules, which it cannot see into, jext
        lowers the call with ``custom_partitioning`` carrying this rule, so the kernel
        runs on each device's shard.  Elementwise primitives get a rule derived from the
        broadcast, and every primitive lets ``vmap``'s batch axes be split.  Under
        explicit sharding, operands sharded against the rule raise :class:`jext.RuleError`.

        Example:

        >>> import jax, jax.numpy as jnp, jext
        >>> @jext.primitive("mylib.rms_norm")
        ... def rms_norm(x: jax.Array, w: jax.Array, /) -> jax.Array:
        ...     return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True)) * w
        >>> rms_norm.def_sharding("... i, i -> ... i", need_replication=["i"])
        >>> rms_norm.rule_sources()["sharding"]
        'custom'
        """
        parsed = parse_rule(self.name, rule, need_replication)
        self._define("sharding", sharding=parsed)

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
        different jnp formulation); under ``vmap`` it is vectorized.  With ``raw=True`` it
        is an MLIR rule ``rule(ctx, *values, **params) -> list of values`` on flat
        operands, run once per example under ``vmap``.  A rule for a specific platform
        wins over ``"gpu"``, which wins over ``None``.
        """
        if rule is None:
            return functools.partial(self.def_lowering, platform=platform, raw=raw)
        entry = self._lowering_entry(rule, platform=platform, raw=raw)
        with self._freeze_lock:
            lowerings = self._core.rules.with_lowering(platform, entry).lowerings
            self._define("lowering", lowerings=lowerings)
        return rule

    def validate_lowering(
        self, rule: Callable[..., Any], *, platform: str | None = None, raw: bool = False
    ) -> None:
        """Raise :class:`jext.DefinitionError` where :meth:`def_lowering` would refuse these."""
        entry = self._lowering_entry(rule, platform=platform, raw=raw)
        if self._core.frozen:  # raises unless it is the rule already there
            self._define(
                "lowering", lowerings=self._core.rules.with_lowering(platform, entry).lowerings
            )

    def _lowering_entry(
        self, rule: Callable[..., Any], *, platform: str | None, raw: bool
    ) -> LoweringEntry:
        check_platform(self.name, platform)
        return LoweringEntry(self._rule("lowering", rule, None if raw else self._n()), raw=raw)

    # --- examples ------------------------------------------------------------------------

    def def_examples(self, factory: ExamplesFactory) -> ExamplesFactory:
        """Declare example inputs: ``factory() -> iterable of jext.Example``.

        ``jext check`` and :mod:`jext.testing` run their checks on these.  The factory is
        called only when checks run, so building arrays in it costs nothing at import.
        Examples are not rules: they may be declared at any time.
        """
        if not callable(factory):
            raise DefinitionError(
                f"primitive {self.name!r}: def_examples takes a function returning "
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
                    f"examples of primitive {self.name!r} must be jext.Example objects, got {ex!r}"
                )
        return examples

    def def_check_options(
        self,
        *,
        dtypes: Iterable[DTypeLike] | None = None,
        tolerances: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        """Tell the checks what the primitive supports (an example's own
        ``Example.with_options`` replaces these for that example):

        - ``dtypes``: the floating-point dtypes its kernels support; the ``jvp`` and
          ``higher_order`` checks skip the others (float32, float64) and say so;
        - ``tolerances``: ``(rtol, atol)`` per check name (``"jit"``, ``"jvp"``,
          ``"transpose"``, ``"batching"``, ``"lowering"``, ``"higher_order"``), in place
          of the check's own, in every dtype it runs in.

        Like examples, these are not rules: they may be declared at any time.  Raises
        :class:`jext.DefinitionError` for a dtype that is not floating-point, an unknown
        check, or a tolerance that is not two numbers >= 0.

        Example::

            rms_norm.def_check_options(dtypes=[np.float32], tolerances={"jvp": (1e-3, 1e-5)})
        """
        where = f"check options of primitive {self.name!r}"
        self._check_options = CheckOptions.make(where, dtypes=dtypes, tolerances=tolerances)

    @property
    def check_options(self) -> CheckOptions:
        """What :meth:`def_check_options` declared (nothing: every dtype, the checks' own
        tolerances)."""
        return self._check_options

    def def_nondifferentiable(self, *operands: int | str) -> None:
        """Declare where the primitive has no derivative.

        With no argument, nowhere (an integer-valued kernel, a kernel JAX cannot
        differentiate): differentiating it raises :class:`jext.RuleError` naming it, and
        the ``jvp``, ``transpose`` and ``higher_order`` checks report it not applicable;
        any JVP rule is replaced.  With operands (indices or names), in those only (the
        order of a Bessel function, a count): a tangent for one of them that is not a
        symbolic zero raises :class:`jext.RuleError` naming it, before any rule runs, and
        the checks differentiate in the other operands.  The rules are kept.
        """
        name = self.name
        if operands:
            self._define("nondifferentiable", nondifferentiable_in=self._operand_indices(operands))
            return

        def not_differentiable(primals: Any, tangents: Any) -> Any:
            raise RuleNotImplementedError(
                f"primitive {name!r} is declared not differentiable (def_nondifferentiable); "
                "stop the gradient before it (jax.lax.stop_gradient) or define a JVP rule"
            )

        not_differentiable.__dict__[NONDIFFERENTIABLE_ATTR] = True  # read by the rules record
        self._define("nondifferentiable", jvp=self._rule("jvp", not_differentiable, 2))

    def _operand_indices(self, operands: tuple[int | str, ...]) -> tuple[int, ...]:
        names = self._core.signature.operand_names
        variadic = self._core.signature.variadic
        indices = []
        for operand in operands:
            if isinstance(operand, str) and operand in names and not variadic:
                indices.append(names.index(operand))
            elif (
                isinstance(operand, int)
                and not isinstance(operand, bool)
                and operand >= 0
                and (variadic or operand < len(names))
            ):
                indices.append(operand)
            else:
                raise DefinitionError(
                    f"primitive {self.name!r}: def_nondifferentiable takes operands by index "
                    f"or name; {operand!r} is neither (operands: {', '.join(names) or 'none'}"
                    f"{', variadic' if variadic else ''})"
                )
        return tuple(sorted(set(indices)))

    @property
    def differentiable(self) -> bool:
        """False after :meth:`def_nondifferentiable` with no operand."""
        return self._core.rules.sources()["jvp"] != "nondifferentiable"

    @property
    def nondifferentiable_in(self) -> tuple[int, ...]:
        """The operands :meth:`def_nondifferentiable` named: no derivative in them."""
        return self._core.rules.nondifferentiable_in

    # --- introspection (read from the rules record) ---------------------------------------

    @property
    def linear_in(self) -> tuple[int, ...] | None:
        """Indices of the operands the transpose rule solves for; None: all, or no rule."""
        return self._core.rules.linear_in

    @property
    def has_transpose(self) -> bool:
        return self._core.rules.transpose is not None

    def rule_sources(self) -> dict[str, str]:
        """For each rule kind, where it comes from: ``default``, ``custom``, ``none``, ..."""
        return self._core.rules.sources()

    def lowering_platforms(self) -> dict[str, str]:
        """Each platform that has a lowering rule, and which rule (``"reference"`` or its name)."""
        out: dict[str, str] = {}
        for platform in _jax.PLATFORMS:
            entry = self._core.rules.lowering_for(platform)
            if entry is not None:
                out[platform] = entry.label
        return out

    def lowering_rule(self, platform: str) -> LoweringInfo | None:
        """The rule ``platform`` lowers with (None: no rule), for checkers and reports.

        ``kind`` is ``"reference"``, ``"traceable"`` or ``"raw"``; for the first two ``fn``
        is called like the primitive (operands, then static params as keywords) and can
        run on any backend, so a checker can hold a tpu rule to the reference on CPU.
        """
        rules = self._core.rules
        entry = rules.lowering_for(platform)
        if entry is None:
            return None
        fn = _lowering.rule_as_function(self._core, entry)
        return LoweringInfo(platform, entry.label, entry.kind, fn, rules.batching_label(entry))

    # --- helpers --------------------------------------------------------------------------

    def _n(self) -> int | None:
        sig = self._core.signature
        return None if sig.variadic or sig.operand_defaults else len(sig.operand_names)

    def _rule(self, kind: str, fn: Callable[..., Any], positional: int | None) -> Rule:
        if not callable(fn):
            raise DefinitionError(
                f"{kind} rule of primitive {self.name!r} must be callable, got {fn!r}"
            )
        arity = rule_arity(
            self.name, kind, fn, positional=positional, param_names=self.signature.param_names
        )
        return Rule(fn, arity)


def _load_plugins() -> None:
    # Plugin code runs outside any trace being built; failures are reported (warned, or
    # raised in strict mode) by the registry calls that read what failed, not by a bind.
    with _jax.eval_context():
        _host.host().load_plugins()


def _restore(name: str, module: str | None) -> Primitive[..., Any]:
    """Unpickle a primitive: the one defined under ``name`` in this process."""
    known = defined_primitives().get(name)
    if known is None and module:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
        known = defined_primitives().get(name)
    return _host.host().primitive(name) if known is None else known


def _claim_name(prim: Primitive[..., Any]) -> None:
    """Record ``prim`` under its name; a different definition of the same name is an error.

    The same definition (same module and qualified name, as on a module reload or a
    re-run notebook cell) replaces the earlier one, and so does the definition of the
    plugin owning the name's namespace (the host decides: an impostor imported first
    never keeps an owner from defining its own names).
    """

    def origin(p: Primitive[..., Any]) -> tuple[str, str]:
        ref = p.reference
        return (getattr(ref, "__module__", "?"), getattr(ref, "__qualname__", repr(ref)))

    with _host.DEFINITIONS_LOCK:
        known = _host.DEFINITIONS.get(prim.name)
        if (
            known is not None
            and origin(known) != origin(prim)
            and not _host.host().may_replace(prim.name, origin(known)[0], origin(prim)[0])
        ):
            a, b = origin(known), origin(prim)
            raise DuplicateNameError(
                f"primitive name {prim.name!r} is already defined by {a[0]}.{a[1]}; "
                f"{b[0]}.{b[1]} cannot define it again (choose another '<lib>.<op>' name)"
            )
        _host.DEFINITIONS[prim.name] = prim
