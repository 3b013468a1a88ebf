"""``jext.Primitive``: a reference implementation made a JAX primitive with every rule kind.

This module is the facade: each ``def_*`` method hands its arguments to its row of the
rule-kind table (``rules/``), which validates them into the rules record (``_rules.py``)
that freezes at the first bind; each kind's module says how it composes into the JAX
rules, which live around the shared state in ``_core.py`` (``_abstract.py``, ``_ad.py``,
``_batching.py``, ``_lowering.py``); calling is ``_calling.py``.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, ParamSpec, TypeVar, cast, final, overload

from jax import tree_util
from numpy.typing import DTypeLike

from jext import _host, _jax
from jext._errors import DefinitionError, DuplicateNameError
from jext.primitives import _lowering
from jext.primitives._calling import (
    EAGER_ARRAY_TYPES,
    PreparedCall,
    bind_unprepared,
    call_closure,
    check_leaves,
    define_twin,
    prepare_call,
)
from jext.primitives._closure import ClosesOverTracers, twin_reference
from jext.primitives._core import (
    CACHE_SIZE,
    NEEDS_CONCRETE_VALUES,
    Core,
    LruCache,
    flat_tree,
    typed_key,
)
from jext.primitives._example import CheckOptions, Example, checked_factory, examples_of
from jext.primitives._rules import (
    LoweringInfo,
    Rules,
    check_platform,
    reference_platforms,
)
from jext.primitives._signature import OperandSignature
from jext.primitives.rules import KINDS, Declaring
from jext.primitives.rules._lowering import entry as lowering_entry
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

ExamplesFactory = TypeVar("ExamplesFactory", bound=Callable[[], Iterable[Example]])


def defined_primitives() -> Mapping[str, Primitive[..., Any]]:
    """Every primitive defined in this process so far, by name (a snapshot)."""
    with _host.DEFINITIONS_LOCK:
        return dict(_host.DEFINITIONS)


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
        self._core = core = Core(name, reference, _new_rules(reference_platforms))
        self._calls: LruCache[Any, PreparedCall] = LruCache()
        self._examples: Callable[[], Iterable[Example]] | None = None
        self._check_options = CheckOptions()
        self._freeze_lock = threading.RLock()
        self._twin: Primitive[..., Any] | None = None
        functools.update_wrapper(self, reference)

        for kind in KINDS.values():  # each kind installs the JAX rule it backs
            if kind.register is not None:
                kind.register(core, functools.partial(_freeze, self))
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
        core = self._core
        sig = core.signature
        operands = sig.operands(args)
        params = sig.params(kwargs)
        if all(type(x) in EAGER_ARRAY_TYPES for x in operands):  # the common case: arrays
            flat: Sequence[Any] = operands
            in_tree = flat_tree(len(operands))
        else:
            flat, in_tree = tree_util.tree_flatten(operands)
            check_leaves(self.name, flat)
        try:
            key = (in_tree, tuple(typed_key(v) for v in params.values()))
            call = self._calls.get(key)
        except TypeError:
            core.check_hashable(params)
            raise
        if call is None:
            prepared = _first_call(self, key, operands, in_tree, flat, params)
            if not isinstance(prepared, PreparedCall):
                return cast("R", prepared.value)
            call = prepared
        if call.eager is not None and _jax.is_eager():
            outs = call.eager(*flat)
        else:
            outs = _jax.bind(core.jax, *flat, **call.bind_params)
        result: R = outs[0] if call.single else tree_util.tree_unflatten(call.out_tree, outs)
        return result

    def _declare(self, kind: str, *args: Any, **kwargs: Any) -> None:
        """Declare a rule of ``kind``: its row of the table validates and records it."""
        with self._freeze_lock:
            _define(self._core, kind, KINDS[kind].declare(_declaring(self._core), *args, **kwargs))

    # --- rule definitions --------------------------------------------------------------------

    def def_abstract_eval(self, rule: AbstractEvalRule) -> AbstractEvalRule:
        """Use ``rule(*avals, **params) -> aval(s)`` for abstract evaluation."""
        self._declare("abstract_eval", rule)
        return rule

    def def_impl(self, rule: ImplRule) -> ImplRule:
        """Use ``rule(*operands, **params)`` as the eager implementation (concrete arrays).

        Under eager ``vmap`` it is called once per example.
        """
        self._declare("impl", rule)
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
        self._declare("jvp", rule, symbolic_zeros=symbolic_zeros)
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
        self._declare("transpose", rule, linear_in=linear_in)
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
        self._declare("vjp", fwd, bwd, symbolic_zeros=symbolic_zeros, accumulate=accumulate)

    def def_linearize(self, lin: LinFwdRule, linearized: LinearizedRule) -> None:
        """Linearize with two rules, as a hijax ``VJPHiPrimitive``'s ``lin``/``linearized``.

        ``lin(*operands, **params) -> (outputs, residuals)`` runs once on the primals;
        ``linearized(residuals, *tangents, **params) -> output tangents`` is linear in the
        tangents (one per operand, zeros instantiated).  ``jax.linearize`` and reverse mode
        (``grad``, ``vjp``, ``jacrev``: by transposing ``linearized``) run them, saving the
        residuals rather than recomputing them; ``jax.jvp`` runs them unless a
        ``def_jvp`` is given, and reverse mode runs ``def_vjp``'s rules where given.
        """
        self._declare("linearize", lin, linearized)

    def def_batching(self, rule: BatchingRule) -> BatchingRule:
        """Use ``rule(args, dims, **params) -> (result, out_dims)`` under ``vmap``.

        As ``custom_vmap``'s rule, it is differentiated where a batch is differentiated, and
        with only tangents batched (``jacfwd``) it is called with every ``dims`` entry None.
        """
        self._declare("batching", rule)
        return rule

    def def_batching_elementwise(self) -> None:
        """Declare the primitive elementwise: under ``vmap`` it is applied to whole batches.

        Operands are broadcast together (per example) and given a leading batch axis.
        """
        self._declare("batching_elementwise")

    def def_batching_leading_axis(self) -> None:
        """Declare that the reference (and every rule) accepts a leading batch axis on all operands.

        Under ``vmap`` batched operands are moved to axis 0, unbatched ones broadcast.
        """
        self._declare("batching_leading_axis")

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
        self._declare("sharding", rule, need_replication=need_replication)

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
        self._declare("lowering", rule, platform=platform, raw=raw)
        return rule

    def validate_lowering(
        self, rule: Callable[..., Any], *, platform: str | None = None, raw: bool = False
    ) -> None:
        """Raise :class:`jext.DefinitionError` where :meth:`def_lowering` would refuse these."""
        if self._core.frozen:  # raises unless it is the rule already there
            self._declare("lowering", rule, platform=platform, raw=raw)
        else:
            lowering_entry(_declaring(self._core), rule, platform=platform, raw=raw)

    # --- examples ------------------------------------------------------------------------

    def def_examples(self, factory: ExamplesFactory) -> ExamplesFactory:
        """Declare example inputs: ``factory() -> iterable of jext.Example``.

        ``jext check`` and :mod:`jext.testing` run their checks on these.  The factory is
        called only when checks run, so building arrays in it costs nothing at import.
        Examples are not rules: they may be declared at any time.
        """
        self._examples = checked_factory(self.name, factory)
        return factory

    def examples(self) -> list[Example]:
        """The declared examples (empty when none were declared)."""
        return [] if self._examples is None else examples_of(self.name, self._examples)

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
        self._declare("nondifferentiable", *operands)

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
        return _lowering.platform_labels(self._core)

    def lowering_rule(self, platform: str) -> LoweringInfo | None:
        """The rule ``platform`` lowers with (None: no rule), for checkers and reports.

        ``kind`` is ``"reference"``, ``"traceable"`` or ``"raw"``; for the first two ``fn``
        is called like the primitive (operands, then static params as keywords) and can
        run on any backend, so a checker can hold a tpu rule to the reference on CPU.
        """
        return _lowering.lowering_info(self._core, platform)


@dataclass(frozen=True, slots=True)
class _Result:
    """The result of a call that prepared nothing to reuse."""

    value: Any


def _first_call(
    prim: Primitive[..., Any],
    key: Any,
    operands: tuple[Any, ...],
    in_tree: Any,
    flat: Sequence[Any],
    params: dict[str, Any],
) -> PreparedCall | _Result:
    """The first call with this operand tree and params: what later calls reuse (cached),
    or, where nothing can be reused, the result."""
    _freeze(prim)
    core = prim._core
    try:
        prepared = prepare_call(core, in_tree, flat, params)
    except NEEDS_CONCRETE_VALUES as err:
        if not _jax.is_eager():
            return _Result(bind_unprepared(core, in_tree, flat, params, err))
        # Called eagerly, a reference that needs concrete values (Python control flow on
        # them) runs op by op on them, as a custom_jvp function does.
        return _Result(core.reference(*operands, **params))
    if isinstance(prepared, ClosesOverTracers):
        twin = prim._twin or _make_twin(prim)
        return _Result(call_closure(twin, prepared, in_tree, flat, params))
    return prim._calls.put(key, prepared)


def _declaring(core: Core) -> Declaring:
    return Declaring(core.name, core.signature, core.rules)


def _make_twin(prim: Primitive[..., Any]) -> Primitive[..., Any]:
    with prim._freeze_lock:
        if prim._twin is None:
            made: Primitive[..., Any] = Primitive(
                prim.name,
                twin_reference,
                reference_platforms=prim.rules.reference_platforms,
                _claim=False,
            )
            define_twin(made, prim._core)
            prim._twin = made
        return prim._twin


def _freeze(prim: Primitive[..., Any]) -> None:
    """Freeze the rules (first bind): later definitions raise ``DefinitionError``."""
    core = prim._core
    if core.frozen:
        return
    # Plugins' lowering rules for this primitive must be in before JAX caches a
    # lowering of it: wait for the one load of plugins (a no-op afterwards), outside
    # the freeze lock, which a vendor's rule takes on the loading thread.  jext's own
    # primitives ("jext.*") are core: using them never waits for a plugin, so a vendor
    # rule for one must be loaded before it is first called.
    if not prim.name.startswith("jext."):
        _load_plugins()
    with prim._freeze_lock:
        if core.frozen:  # another thread, or a plugin calling it while loading
            return
        core.frozen = True
        for kind in KINDS.values():
            if kind.at_freeze is not None:
                kind.at_freeze(core)


def _new_rules(reference_platforms: frozenset[str | None]) -> Rules:
    """A primitive's rules record before any declaration: it carries the rule-kind table."""
    return Rules(reference_platforms=reference_platforms, kinds=KINDS)


def _define(core: Core, kind: str, changes: Mapping[str, Any]) -> None:
    """Replace the rules record of ``core`` (the caller holds the freeze lock)."""
    rules = core.rules.replace(**changes)
    if core.frozen and rules != core.rules:
        raise DefinitionError(
            f"primitive {core.name!r}: cannot define its {kind} rule now: it has "
            "already been called, which froze its rules (JAX caches what it "
            f"compiled with them). Define @{core.short_name}.def_{kind} before the "
            "first call."
        )
    core.rules = rules  # unchanged when frozen: defining the same rule again is fine


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
