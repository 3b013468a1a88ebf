"""The conformance checks run on each primitive, each able to fail on the fault it targets."""

from __future__ import annotations

import contextlib
import functools
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util

from jext._errors import LoweringError, RuleError, TransposeError
from jext.lowering import ALL_PLATFORMS
from jext.lowering import export as export_for
from jext.primitives import Example, LoweringInfo, Primitive
from jext.primitives._ad import jvp_is_the_references
from jext.primitives._example import CheckOptions
from jext.testing._cache import run_kept
from jext.testing._compile import STRUCTURE_COMPILE
from jext.testing._report import (
    CheckFailure,
    CheckNotApplicable,
    CheckResult,
    CheckSkipped,
    PrimitiveReport,
    describe_error,
    guarded,
)
from jext.testing._sharding_check import SHARDING_CHECK, sharding_result

__all__ = ["PRIMITIVE_CHECKS", "SELECTABLE_CHECKS", "check_report", "submit_report"]

PRIMITIVE_CHECKS: Final = (
    "abstract_eval",
    "jit",
    "jvp",
    "transpose",
    "batching",
    "lowering",
    "higher_order",
)
"""Every check run on a primitive, in the order they run."""

SELECTABLE_CHECKS: Final = (*PRIMITIVE_CHECKS, SHARDING_CHECK)
"""The checks a primitive can be given by name: the default ones, and ``sharding``
(a subprocess on 8 host devices, so run only when asked for)."""

# Agreement between two computations of the same values (jit vs eager, vmap vs loop),
# (rtol, atol) by dtype kind and precision.
_SAME: Final = {
    np.dtype(jnp.bfloat16): (2e-2, 2e-2),
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(np.float32): (2e-5, 1e-6),
    np.dtype(np.complex64): (2e-5, 1e-6),
    np.dtype(np.float64): (1e-12, 1e-14),
    np.dtype(np.complex128): (1e-12, 1e-14),
}
# Agreement with central finite differences: (step, rtol, atol) by precision.
_FD: Final = {
    np.dtype(np.float32): (1e-3, 2e-2, 2e-3),
    np.dtype(np.float64): (1e-6, 1e-6, 1e-8),
}
_BATCH: Final = 3

# The programs each example's checks share (see _shared_parts): the values users get, at
# JAX's default compilation, and the structure programs, at structure_options(), traced
# without and with jax.enable_x64.
_VALUES: Final = "values"
_STRUCTURE: Final = "structure"
_STRUCTURE_X64: Final = "structure x64"


class _Shared:
    """Values the checks of one example compute once and share, across threads."""

    def __init__(
        self, checks: Sequence[str] = (), platforms: Sequence[str] = ALL_PLATFORMS
    ) -> None:
        self.checks = frozenset(checks)  # the checks that will run: see _shared_parts
        self.platforms = tuple(platforms)  # those the ``lowering`` check exports for
        self._lock = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._values: dict[str, tuple[bool, Any]] = {}

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()``'s value (or its exception, raised again) for ``key``, computed once."""
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._values:
                try:
                    self._values[key] = (True, compute())
                except Exception as err:
                    self._values[key] = (False, err)
            ok, value = self._values[key]
        if not ok:
            raise value
        return value


@dataclass(frozen=True, slots=True)
class _Case:
    """One example, flattened: the call the checks vary."""

    prim: Primitive[..., Any]
    example: Example
    notes: list[str] = field(default_factory=list)  # said in the report even when passing
    shared: _Shared = field(default_factory=_Shared)

    def eager(self) -> Any:
        """The primitive applied eagerly to the example, computed once for every check
        (each eager call compiles; two checks on two threads would compile it twice)."""
        return self.shared.get("eager", lambda: self.call_flat(*self.leaves))

    def run(self, group: str, name: str, program: tuple[Callable[..., Any], Sequence[Any]]) -> Any:
        """``program`` (a function and its arguments) compiled and run: as part ``name`` of
        the example's shared program ``group`` where that holds it (see
        :func:`_shared_parts`), else alone, compiled as that group is."""
        together = self.together(group)
        if name in together:
            return together.get(name)
        fn, args = program
        return run_kept(fn, args, together.options)

    def together(self, group: str) -> _Together:
        """The example's shared program ``group``, built and run once: :data:`_VALUES` at
        JAX's default compilation (the values users get), :data:`_STRUCTURE` and
        :data:`_STRUCTURE_X64` (traced under ``jax.enable_x64``) with
        :func:`structure_options` (see :func:`_shared_parts`)."""
        options = None if group == _VALUES else structure_options()

        def build() -> _Together:
            with jax.enable_x64(True) if group == _STRUCTURE_X64 else contextlib.nullcontext():
                return _Together(_shared_parts(self, group), options)

        together: _Together = self.shared.get(group, build)
        return together

    def exported(self) -> Any:
        """The primitive exported for every platform checked (see :func:`_check_exports`)."""
        return self.shared.get("exported", lambda: _check_exports(self, self.shared.platforms))

    @property
    def leaves(self) -> list[Any]:
        return list(tree_util.tree_leaves(self.example.operands))

    @property
    def tree(self) -> Any:
        return tree_util.tree_structure(self.example.operands)

    def call_flat(self, *leaves: Any) -> Any:
        operands = tree_util.tree_unflatten(self.tree, leaves)
        return self.prim(*operands, **self.example.params)

    def inexact(self) -> list[int]:
        """The floating-point operand leaves the checks differentiate in: all but those of
        the operands declared without a derivative (``def_nondifferentiable(...)``)."""
        leaves_of = tree_util.tree_unflatten(self.tree, range(len(self.leaves)))
        without = {
            i
            for k in self.prim.nondifferentiable_in
            if k < len(leaves_of)
            for i in tree_util.tree_leaves(leaves_of[k])
        }
        return [i for i, x in enumerate(self.leaves) if _is_inexact(x) and i not in without]

    @property
    def options(self) -> CheckOptions:
        """What the primitive and this example declare about the checks (the example's
        declarations win)."""
        return self.prim.check_options.merged(self.example.options)

    def tol(self, check: str, default: tuple[float, float]) -> tuple[float, float]:
        """The (rtol, atol) ``check`` compares with: declared, else ``default``."""
        return self.options.tolerances.get(check, default)

    def same(self, check: str) -> Callable[[Any], tuple[float, float]]:
        """The tolerance by dtype of ``check``'s comparisons of two computations of the
        same values: declared, else the jit-vs-eager table."""
        declared = self.options.tolerances.get(check)
        if declared is not None:
            return lambda _: declared
        return lambda dtype: _tolerance(dtype, _SAME)

    def supports(self, dtype: Any) -> bool:
        """Whether the primitive declares ``dtype`` supported (all, when it declares none)."""
        dtypes = self.options.dtypes
        return dtypes is None or np.dtype(dtype) in dtypes

    def applies(self, check: str) -> None:
        """CheckNotApplicable where ``check`` transforms operands the primitive lacks, or
        differentiates a primitive declared not differentiable."""
        if not self.leaves and check in _TRANSFORMING:
            raise CheckNotApplicable(f"no operands: nothing to {_TRANSFORMING[check]}")
        if check in _DIFFERENTIATING and not self.prim.differentiable:
            raise CheckNotApplicable("not differentiable (declared with def_nondifferentiable)")


# The checks that transform operands (what they do to them), and those that differentiate.
_TRANSFORMING: Final = {
    "jvp": "differentiate",
    "transpose": "transpose",
    "batching": "batch",
    "higher_order": "differentiate",
}
_DIFFERENTIATING: Final = frozenset({"jvp", "transpose", "higher_order"})


def _is_inexact(x: Any) -> bool:
    return bool(jnp.issubdtype(jnp.result_type(x), jnp.inexact))


def _rng(*key: object) -> np.random.Generator:
    # Deterministic per primitive and purpose, so a failure reproduces.
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _random_like(rng: np.random.Generator, x: Any) -> Any:
    shape, dtype = np.shape(x), np.dtype(jnp.result_type(x))
    values = rng.standard_normal(shape)
    if jnp.issubdtype(dtype, jnp.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    # NumPy, not jnp: each eager jnp operation would compile a program of its own.
    return np.asarray(values).astype(dtype)


def _tolerance(dtype: Any, table: dict[np.dtype[Any], tuple[float, float]]) -> tuple[float, float]:
    dtype = np.dtype(dtype)
    if dtype in table:
        return table[dtype]
    return (0.0, 0.0) if not jnp.issubdtype(dtype, jnp.inexact) else (1e-5, 1e-6)


def _same_tree(a: Any, b: Any) -> bool:
    return bool(a == b)


def _compare(
    got: Any, want: Any, what: str, *, tol: Callable[[Any], tuple[float, float]] | None = None
) -> float:
    """Largest error between two pytrees of arrays; CheckFailure if they disagree."""
    got_leaves, got_tree = tree_util.tree_flatten(got)
    want_leaves, want_tree = tree_util.tree_flatten(want)
    if not _same_tree(got_tree, want_tree):
        raise CheckFailure(f"{what}: structure {got_tree} differs from {want_tree}")
    worst = 0.0
    for i, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g_arr, w_arr = np.asarray(g), np.asarray(w)
        if g_arr.shape != w_arr.shape:
            raise CheckFailure(
                f"{what}: result {i} has shape {g_arr.shape}, expected {w_arr.shape}"
            )
        rtol, atol = (tol or (lambda d: _tolerance(d, _SAME)))(w_arr.dtype)
        err = _elementwise_error(g_arr, w_arr)
        if err.size:
            worst = max(worst, float(err.max()))
        w_abs = np.abs(w_arr.astype(np.complex128 if np.iscomplexobj(w_arr) else np.float64))
        bad = err > atol + rtol * np.where(np.isfinite(w_abs), w_abs, 0.0)
        if bad.any():
            j = np.unravel_index(int(np.argmax(np.where(bad, err, -1.0))), bad.shape)
            raise CheckFailure(
                f"{what}: result {i} differs at index {tuple(int(k) for k in j)}: got "
                f"{g_arr[j]!r}, expected {w_arr[j]!r} (rtol {rtol:g}, atol {atol:g})",
                worst,
            )
    return worst


def _elementwise_error(got: Any, want: Any) -> np.ndarray[Any, Any]:
    """``|got - want|`` where both are finite; 0 where they are the same inf or both nan; inf
    where only one is finite or they are different non-finite values.

    Infinities and nans are compared as values, never through arithmetic on them, so no
    NumPy warning is raised (the suite runs with ``-W error``).
    """
    complex_ = np.iscomplexobj(got) or np.iscomplexobj(want)
    kind = np.complex128 if complex_ else np.float64
    g = np.asarray(got).astype(kind)
    w = np.asarray(want).astype(kind)
    finite = np.isfinite(g) & np.isfinite(w)
    diff = np.zeros(np.broadcast_shapes(g.shape, w.shape), np.float64)
    np.abs(np.subtract(g, w, where=finite, out=np.zeros(diff.shape, kind)), out=diff)
    same = (np.isnan(g) & np.isnan(w)) | (~finite & (g == w))
    return np.where(finite | same, diff, np.inf)


@contextmanager
def _x64() -> Iterator[None]:
    with jax.enable_x64(True):
        yield


def _cast(x: Any, dtype: Any) -> Any:
    if not _is_inexact(x):
        return x
    complex_ = jnp.issubdtype(jnp.result_type(x), jnp.complexfloating)
    target = jnp.result_type(dtype, jnp.complex64) if complex_ else dtype
    return np.asarray(x).astype(target)  # in NumPy: an eager conversion compiles a program


# --- the checks ------------------------------------------------------------------------------


def check_abstract_eval(case: _Case) -> float | None:
    """The abstract evaluation's shapes and dtypes equal the reference's, and the
    implementation's shapes, dtypes and weak types equal the abstract evaluation's."""
    expected = jax.eval_shape(case.call_flat, *case.leaves)
    reference = jax.eval_shape(_reference_flat(case), *case.leaves)
    ref_leaves, ref_tree = tree_util.tree_flatten(reference)
    if not _same_tree(tree_util.tree_structure(expected), ref_tree):
        raise CheckFailure(
            f"abstract eval gives structure {tree_util.tree_structure(expected)}, the "
            f"reference {ref_tree}"
        )
    for i, (e, r) in enumerate(zip(tree_util.tree_leaves(expected), ref_leaves, strict=True)):
        if (tuple(e.shape), np.dtype(e.dtype)) != (tuple(r.shape), np.dtype(r.dtype)):
            raise CheckFailure(
                f"result {i}: abstract eval gives {np.dtype(e.dtype)}{list(e.shape)}, the "
                f"reference returns {np.dtype(r.dtype)}{list(r.shape)}"
            )
    actual = case.eager()
    exp_leaves, exp_tree = tree_util.tree_flatten(expected)
    act_leaves, act_tree = tree_util.tree_flatten(actual)
    if not _same_tree(exp_tree, act_tree):
        raise CheckFailure(f"abstract eval gives structure {exp_tree}, the impl {act_tree}")
    for i, (e, a) in enumerate(zip(exp_leaves, act_leaves, strict=True)):
        a_type = jax.typeof(a)
        got = (tuple(a_type.shape), np.dtype(a_type.dtype), bool(a_type.weak_type))
        want = (tuple(e.shape), np.dtype(e.dtype), bool(e.weak_type))
        if got != want:
            raise CheckFailure(
                f"result {i}: abstract eval gives {_fmt_aval(want)}, the impl returns "
                f"{_fmt_aval(got)}"
            )
    return None


def _fmt_aval(t: tuple[tuple[int, ...], np.dtype[Any], bool]) -> str:
    return f"{t[1]}{list(t[0])}" + (" (weak)" if t[2] else "")


def check_jit(case: _Case) -> float | None:
    """Jitted equals eager."""
    eager = case.eager()
    jitted = case.run(_VALUES, "jit", (case.call_flat, case.leaves))
    return _compare(jitted, eager, "jit vs eager", tol=case.same("jit"))


def check_jvp(case: _Case) -> float | None:
    """The JVP agrees with central finite differences, in float32 and (where it runs)
    float64, each where the primitive declares it supported.

    A JVP that is JAX's JVP of the reference (no derivative rule declared) is compared in
    float64 alone where that runs: what it tests is that the primitive's rules have the
    reference's slope, which float64's finite differences hold to ``rtol`` 1e-6 and
    float32's only to 2e-2."""
    case.applies("jvp")
    without = case.prim.nondifferentiable_in
    if without:
        sig = case.prim.signature
        names = () if sig.variadic else sig.operand_names
        said = ", ".join(repr(names[k]) if k < len(names) else str(k) for k in without)
        case.notes.append(f"not differentiated in {said}: declared without a derivative")
    if not case.inexact():
        raise CheckSkipped("no floating-point operand to differentiate")
    dtypes = [d for d in (np.float32, np.float64) if case.supports(d)]
    if not dtypes:
        raise CheckSkipped(
            f"the primitive supports neither float32 nor float64 ({_declared(case)})"
        )
    if np.float32 not in dtypes:
        case.notes.append(f"float32 not checked: {_declared(case)}")
        with _x64():
            return _jvp_at(case, np.float64)
    if _float64_alone(case):
        in_float64 = _jvp_in_float64(case)
        return in_float64 if in_float64 is not None else _jvp_at(case, np.float32)
    worst = _jvp_at(case, np.float32)
    if np.float64 not in dtypes:
        case.notes.append(f"float64 not checked: {_declared(case)}")
        return worst
    in_float64 = _jvp_in_float64(case)
    return worst if in_float64 is None else max(worst, in_float64)


def _float64_alone(case: _Case) -> bool:
    """Whether the ``jvp`` check compares in float64 alone: a JVP that is JAX's JVP of the
    reference, of a primitive that supports float64 (see :func:`check_jvp`)."""
    return case.supports(np.float64) and jvp_is_the_references(case.prim.rules)


def _jvp_in_float64(case: _Case) -> float | None:
    """The float64 comparison; None (and a note) where the primitive raises in float64."""
    with _x64():
        try:
            return _jvp_at(case, np.float64)
        except CheckFailure:
            raise
        except Exception as err:  # a primitive may not support float64: checked in float32
            case.notes.append(f"float64 not checked: it raised {type(err).__name__}")
            return None


def _declared(case: _Case) -> str:
    dtypes = sorted(d.name for d in case.options.dtypes or ())
    return f"the primitive declares dtypes {', '.join(dtypes)}"


def _jvp_at(case: _Case, dtype: Any) -> float:
    group = _STRUCTURE_X64 if np.dtype(dtype) == np.float64 else _STRUCTURE
    program = _jvp_program(case, dtype)
    results = case.run(group, f"jvp {np.dtype(dtype).name}", program)
    worst = 0.0
    if "reference" in results:
        worst = _primal_vs_reference(case, dtype, results["primal"], results["reference"])
    if "cotangents" in results:
        _, (_, direction, us) = program  # the program's inputs (seeded: those it ran on)
        return max(worst, _vjp_finish(case, dtype, results, direction, us))
    tangent, fd, finite = results["tangent"], results["fd"], results["finite"]
    return max(worst, _jvp_finish(case, dtype, tangent, fd, finite))


def _jvp_program(case: _Case, dtype: Any) -> tuple[Callable[..., Any], Sequence[Any]]:
    """The derivative along one random direction and central finite differences along it,
    in ``dtype``; a custom rule's primal output beside the reference's.

    With forward mode, the JVP (its tangent, compared with the finite differences element
    by element).  With reverse mode only (``def_vjp``), :data:`_COTANGENTS` VJPs with random
    cotangents ``u``, for the dot-product test ``<J^T u, v> == <u, J v>`` (see
    :func:`_vjp_finish`): a fixed number of evaluations whatever the shapes.
    """
    leaves = [_cast(x, dtype) for x in case.leaves]
    active = case.inexact()
    rng = _rng(case.prim.name, "jvp", np.dtype(dtype).name)
    direction = tuple(_random_like(rng, leaves[i]) for i in active)
    eps = _FD[np.dtype(dtype)][0]
    reverse = _reverse_only(case)
    compare_primal = case.prim.rules.jvp is not None or case.prim.rules.vjp_fwd is not None
    reference = _reference_flat(case)

    def with_active(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*xs: Any) -> Any:
            full = list(leaves)
            for i, x in zip(active, xs, strict=True):
                full[i] = x
            return fn(*full)

        return call

    in_active = with_active(case.call_flat)
    primals = tuple(leaves[i] for i in active)
    out_leaves, out_tree = tree_util.tree_flatten(jax.eval_shape(in_active, *primals))
    # Reverse mode only: one stack of random cotangents per floating-point result (None for
    # an integer one).
    cotangents = [
        np.stack([_random_like(rng, np.zeros(o.shape, o.dtype)) for _ in range(_COTANGENTS)])
        if _is_inexact(o)
        else None
        for o in (out_leaves if reverse else ())
    ]

    def program(
        primals: tuple[Any, ...], tangents: tuple[Any, ...], us: list[Any]
    ) -> dict[str, Any]:
        results: dict[str, Any] = {}
        if reverse:
            out, pullback = jax.vjp(in_active, *primals)
        else:
            out, tangent = jax.jvp(in_active, primals, tangents)
        if compare_primal:
            results["primal"] = out
            results["reference"] = with_active(reference)(*primals)
        plus, minus = _both_sides(in_active, primals, tangents, eps)
        fd = jax.tree.map(lambda a, b: (a - b) / (2 * eps), plus, minus)
        # Integer results have no derivative: compare zeros with zeros there.
        keep = lambda t, y: t if _is_inexact(y) else jnp.zeros(jnp.shape(y))  # noqa: E731
        # Finite differences say nothing where the output or a neighbour is +-inf or nan
        # (inf - inf is nan): those points are not compared.
        finite = jax.tree.map(
            lambda y, a, b: jnp.isfinite(y) & jnp.isfinite(a) & jnp.isfinite(b), out, plus, minus
        )
        results["fd"] = jax.tree.map(keep, fd, out)
        results["finite"] = finite
        if not reverse:
            results["tangent"] = jax.tree.map(keep, tangent, out)
            return results
        masks = tree_util.tree_leaves(finite)

        def pull(u: list[Any]) -> Any:
            # Zero where finite differences say nothing, so that those points drop out of
            # both sides of the dot product.
            cts = [
                np.zeros(np.shape(o), jax.dtypes.float0)
                if u_leaf is None
                else jnp.where(m, u_leaf, jnp.zeros((), u_leaf.dtype))
                for o, m, u_leaf in zip(out_leaves, masks, u, strict=True)
            ]
            return pullback(tree_util.tree_unflatten(out_tree, cts))

        # One VJP after another (lax.map): the backward rule runs as users run it, unbatched.
        results["cotangents"] = jax.lax.map(pull, us)
        return results

    return program, (primals, direction, cotangents)


def _both_sides(
    fn: Callable[..., Any], xs: Sequence[Any], direction: Sequence[Any], eps: float
) -> tuple[Any, Any]:
    """``fn(x + eps * v)`` and ``fn(x - eps * v)``, by one ``lax.map`` over the two points:
    each unbatched, as two calls would be, with one copy of ``fn`` to compile."""
    points = [jnp.stack([x + eps * v, x - eps * v]) for x, v in zip(xs, direction, strict=True)]
    both = jax.lax.map(lambda p: fn(*p), points)
    return jax.tree.map(lambda y: y[0], both), jax.tree.map(lambda y: y[1], both)


# The dot-product test of a VJP rule: how many random cotangents (one VJP each), and the
# chi-square quantile with that many degrees of freedom that a right rule exceeds with
# probability 1e-9 (scipy.stats.chi2.isf(1e-9, 8) = 58.31).
_COTANGENTS: Final = 8
_CHI2_LIMIT: Final = 58.31
# The dot-product test of reverse against forward mode: by how many standard deviations of
# the rounding envelope (see _reverse_vs_forward) the two sides may differ.
_SIGMAS: Final = 6.0


def _reverse_only(case: _Case) -> bool:
    """Whether the primitive is differentiated by a VJP rule alone (no forward mode)."""
    rules = case.prim.rules
    return rules.jvp is None and rules.vjp_fwd is not None


def _primal_vs_reference(case: _Case, dtype: Any, primal: Any, reference: Any) -> float:
    """A custom rule's primal output (the JVP rule's, or the VJP rule's ``fwd``) against the
    reference's, within the ``jvp`` check's tolerance, or the ``lowering`` check's where
    that is looser (a rule may compute its primal with the primitive's own kernel)."""
    rtol, atol = case.tol("jvp", _FD[np.dtype(dtype)][1:])
    k_rtol, k_atol = _rule_tol(case)(dtype)
    loose = (max(rtol, k_rtol), max(atol, k_atol))
    rule = "JVP rule" if case.prim.rules.jvp is not None else "VJP rule's fwd"
    return _compare(
        primal,
        reference,
        f"primal output of the {rule} vs the reference in {np.dtype(dtype).name}",
        tol=lambda d: loose if jnp.issubdtype(d, jnp.inexact) else (0.0, 0.0),
    )


def _not_compared(case: _Case, masks: Sequence[np.ndarray[Any, Any]]) -> None:
    skipped = sum(int(m.size - m.sum()) for m in masks)
    if skipped:
        case.notes.append(
            f"jvp not compared at {skipped} point(s) where the output or its finite-difference "
            "neighbours are not finite"
        )


def _fd_scale(fd: Any) -> float:
    """The largest finite difference (at least 1): what ``atol`` is multiplied by."""
    finite_fd = [np.asarray(v)[np.isfinite(v)] for v in tree_util.tree_leaves(fd)]
    return max([1.0, *(float(np.max(np.abs(v), initial=0.0)) for v in finite_fd)])


def _jvp_finish(case: _Case, dtype: Any, tangent: Any, fd: Any, finite: Any) -> float:
    rtol, atol = case.tol("jvp", _FD[np.dtype(dtype)][1:])
    masks = [np.asarray(m) for m in tree_util.tree_leaves(finite)]
    _not_compared(case, masks)
    tangent = _masked(tangent, masks)
    fd = _masked(fd, masks)
    scale = _fd_scale(fd)
    return _compare(
        tangent,
        fd,
        f"jvp vs finite differences in {np.dtype(dtype).name}",
        tol=lambda _: (rtol, atol * scale),
    )


def _vjp_finish(
    case: _Case,
    dtype: Any,
    results: Mapping[str, Any],
    direction: Sequence[Any],
    us: Sequence[Any | None],
) -> float:
    """The dot-product test of a VJP rule against central finite differences.

    For each random cotangent ``u_k`` (zero where the finite differences are not finite),
    ``d_k = <J^T u_k, v> - <u_k, fd>``: the VJP's projection against the finite
    differences ``fd`` along the direction ``v``.  Each element of ``fd`` may miss ``J v``
    by the elementwise check's tolerance ``e_i = atol * scale + rtol * |fd_i|``, and the
    ``u_k`` are standard normal, drawn independently of those errors: for a right rule each
    ``d_k`` is normal with a standard deviation of at most ``||e||_2``, so
    ``sum_k d_k**2 / ||e||_2**2`` is at most chi-square with :data:`_COTANGENTS` degrees of
    freedom, and the test allows its ``1 - 1e-9`` quantile, :data:`_CHI2_LIMIT`.
    """
    rtol, atol = case.tol("jvp", _FD[np.dtype(dtype)][1:])
    masks = [np.asarray(m) for m in tree_util.tree_leaves(results["finite"])]
    _not_compared(case, masks)
    fd = _masked(results["fd"], masks)
    scale = _fd_scale(fd)
    direction = [np.asarray(v) for v in direction]
    us = [None if u is None else np.asarray(u) for u in us]
    fd_leaves = tree_util.tree_leaves(fd)
    envelope = 0.0
    for f, m, u in zip(fd_leaves, masks, us, strict=True):
        if u is not None:
            e = atol * scale + rtol * np.abs(_widened(f))
            envelope += float(np.sum(np.where(m, e, 0.0) ** 2))
    cts = tree_util.tree_leaves(results["cotangents"])
    sides = [
        (
            sum(_pair(np.asarray(c)[k], v) for c, v in zip(cts, direction, strict=True)),
            sum(
                _pair(np.where(m, u[k], 0), f)
                for f, m, u in zip(fd_leaves, masks, us, strict=True)
                if u is not None
            ),
        )
        for k in range(_COTANGENTS)
    ]
    misses = [abs(by_vjp - by_fd) for by_vjp, by_fd in sides]
    rms, limit = (
        float(np.sqrt(x / _COTANGENTS))
        for x in (sum(d * d for d in misses), _CHI2_LIMIT * envelope)
    )
    if not rms <= limit:  # nan fails too
        k = int(np.nanargmax(misses)) if not all(np.isnan(misses)) else 0
        by_vjp, by_fd = sides[k]
        raise CheckFailure(
            f"VJP vs finite differences in {np.dtype(dtype).name} (dot-product test): "
            f"<u, J v> by the VJP rule misses the finite differences' by {rms:.3g} (root mean "
            f"square over {_COTANGENTS} random cotangents u; the worst: {by_vjp:.6g} against "
            f"{by_fd:.6g}), more than the {limit:.3g} their error allows (rtol {rtol:g}, "
            f"atol {atol * scale:g})",
            rms,
        )
    return rms


def _pair(a: Any, b: Any) -> float:
    """``Re(sum(a * b))`` in float64: the pairing of cotangents with tangents under which
    JAX's VJP is the transpose of its JVP (bilinear, no complex conjugate)."""
    return float(np.real(np.sum(_widened(a) * _widened(b))))


def _widened(x: Any) -> np.ndarray[Any, Any]:
    """``x`` in float64, or complex128 if complex."""
    x = np.asarray(x)
    widened: np.ndarray[Any, Any] = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    return widened


def _masked(tree: Any, masks: Sequence[np.ndarray[Any, Any]]) -> Any:
    """``tree``'s leaves as NumPy arrays, zero where ``masks`` is False."""
    leaves, treedef = tree_util.tree_flatten(tree)
    out = [
        np.where(m, np.asarray(v), np.zeros((), np.asarray(v).dtype))
        for v, m in zip(leaves, masks, strict=True)
    ]
    return tree_util.tree_unflatten(treedef, out)


def check_transpose(case: _Case) -> float | None:
    """The transpose is the adjoint (dot-product test); reverse mode agrees with forward mode."""
    case.applies("transpose")
    active = case.inexact()
    if not active:
        raise CheckSkipped("no floating-point operand to differentiate")
    if _reverse_only(case):
        raise CheckNotApplicable(
            "reverse mode only (def_vjp): the jvp check holds the VJP rule to finite "
            "differences, and there is no forward mode to compare it with"
        )
    worst = 0.0
    ran: list[str] = []
    if case.prim.has_transpose:
        worst = max(worst, _adjoint_test(case))
        ran.append("adjoint")
    try:
        worst = max(worst, _reverse_vs_forward(case))
        ran.append("reverse vs forward")
    except TransposeError:
        if not ran:
            raise CheckSkipped(
                "no transpose rule, and reverse mode needs one (its JVP applies the primitive "
                "to tangents)"
            ) from None
    return worst


def _adjoint_test(case: _Case) -> float:
    """``<ct, f(x)> == sum_i <f^T(ct)_i, x_i>`` for ``f`` the primitive as a function of its
    floating-point ``linear_in`` operands together (jointly linear: varying one alone with
    the others at their example values is affine), the other operands fixed."""
    operands = case.example.operands
    linear = range(len(operands)) if case.prim.linear_in is None else case.prim.linear_in
    varied = [i for i in linear if all(_is_inexact(x) for x in tree_util.tree_leaves(operands[i]))]
    if not varied:
        raise CheckSkipped("no floating-point linear operand")

    def f(*xs: Any) -> Any:
        full = list(operands)
        for i, x in zip(varied, xs, strict=True):
            full[i] = x
        return case.prim(*full, **case.example.params)

    xs = [operands[i] for i in varied]
    y = f(*xs)
    rng = _rng(case.prim.name, "transpose")
    ct = jax.tree.map(lambda v: _random_like(rng, v), y)
    x_cts = jax.jit(jax.linear_transpose(f, *xs))(ct)
    lhs = _vdot(ct, y)
    terms = [_vdot(x_ct, x) for x_ct, x in zip(x_cts, xs, strict=True)]
    rhs = sum(terms)
    err = abs(lhs - rhs)
    dtype = jnp.result_type(*tree_util.tree_leaves(y))
    rtol, atol = case.tol("transpose", (_tolerance(dtype, _SAME)[0] * 10, 1e-6))
    if err <= rtol * (abs(lhs) + sum(abs(t) for t in terms)) + atol:
        return err
    what = "of operand" if len(varied) == 1 else "of operands"
    blame = _blame(f, varied, xs, ct, terms, (rtol, atol))
    raise CheckFailure(
        f"transpose {what} {', '.join(map(str, varied))} is not the adjoint: <ct, f(x)> = "
        f"{lhs:.6g} but sum_i <f^T(ct)_i, x_i> = {rhs:.6g}{blame}",
        err,
    )


def _blame(
    f: Callable[..., Any],
    varied: Sequence[int],
    xs: Sequence[Any],
    ct: Any,
    terms: Sequence[float],
    tol: tuple[float, float],
) -> str:
    """Which operand's cotangent is wrong: ``<ct, f(0, .., x_i, .., 0)>`` against
    ``<f^T(ct)_i, x_i>`` (with the other linear operands zero, ``f`` is linear in ``x_i``)."""
    if len(xs) < 2:
        return ""
    wrong = []
    for i, term in enumerate(terms):
        alone = [x if j == i else jax.tree.map(np.zeros_like, x) for j, x in enumerate(xs)]
        try:
            lhs = _vdot(ct, f(*alone))
        except Exception:  # localising is a courtesy: the joint test already failed
            return ""
        if abs(lhs - term) > tol[0] * (abs(lhs) + abs(term)) + tol[1]:
            wrong.append(f"operand {varied[i]}: <ct, f> {lhs:.6g} vs <f^T(ct), x> {term:.6g}")
    return f" ({'; '.join(wrong)})" if wrong else ""


def _vdot(a: Any, b: Any) -> float:
    """``sum(Re(a * b))`` over two pytrees' leaves (see :func:`_pair`)."""
    return sum(
        (
            _pair(u, v)
            for u, v in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b), strict=True)
        ),
        0.0,
    )


def _reverse_vs_forward(case: _Case) -> float:
    """Reverse mode is the transpose of forward mode, by the dot-product test: ``<u, J v>``
    from one JVP along a random direction ``v`` against ``<J^T u, v>`` from one VJP with a
    random cotangent ``u``.

    Both sides are computed from the same rules and differ only by rounding.  Each element
    of ``J v`` and of ``J^T u`` may be off by the check's tolerance ``atol + rtol * |x_i|``
    (that of two computations of the same values); ``u`` is drawn independently of the
    rounding of ``J v`` and ``v`` of that of ``J^T u``, so the test allows :data:`_SIGMAS`
    standard deviations of the two envelopes' sum, ``||e_out||_2 + ||e_in||_2``.
    """
    program = _reverse_vs_forward_program(case)
    results = case.run(_STRUCTURE, "reverse vs forward", program)
    tangent, cotangent = results["tangent"], results["cotangent"]
    _, (_, direction, u) = program  # the program's inputs (seeded: those it ran on)
    lhs = sum(_pair(a, b) for a, b in zip(u, tangent, strict=True))
    rhs = sum(_pair(a, b) for a, b in zip(cotangent, direction, strict=True))
    tol = case.same("transpose")

    def envelope(leaves: Sequence[Any]) -> float:
        total = 0.0
        for leaf in leaves:
            x = np.asarray(leaf)
            rtol, atol = tol(x.dtype)
            total += float(np.sum((atol + rtol * np.abs(_widened(x))) ** 2))
        return float(np.sqrt(total))

    limit = _SIGMAS * (envelope(tangent) + envelope(cotangent))
    err = abs(lhs - rhs)
    if not err <= limit:  # nan fails too
        raise CheckFailure(
            f"reverse mode is not the transpose of forward mode (dot-product test): "
            f"<u, J v> is {lhs:.6g} by the JVP, <J^T u, v> {rhs:.6g} by the VJP; they differ "
            f"by {err:.3g}, more than {limit:.3g}",
            err,
        )
    return err


def _reverse_vs_forward_program(case: _Case) -> tuple[Callable[..., Any], Sequence[Any]]:
    """One JVP and one VJP of the floating-point results, with the random direction and
    cotangent (complex ones for complex values: the pairing is JAX's, see :func:`_pair`)."""
    leaves = case.leaves
    active = case.inexact()

    def inexact_out(*xs: Any) -> Any:
        full = list(leaves)
        for i, x in zip(active, xs, strict=True):
            full[i] = x
        # Only floating-point results have derivatives.
        return [o for o in tree_util.tree_leaves(case.call_flat(*full)) if _is_inexact(o)]

    args = tuple(leaves[i] for i in active)
    rng = _rng(case.prim.name, "transpose", "reverse vs forward")
    direction = tuple(_random_like(rng, x) for x in args)
    u = [_random_like(rng, np.zeros(o.shape, o.dtype)) for o in jax.eval_shape(inexact_out, *args)]

    def both(args: tuple[Any, ...], direction: tuple[Any, ...], u: list[Any]) -> dict[str, Any]:
        _, tangent = jax.jvp(inexact_out, args, direction)
        _, pullback = jax.vjp(inexact_out, *args)
        return {"tangent": tangent, "cotangent": pullback(u)}

    return both, (args, direction, u)


def check_batching(case: _Case) -> float | None:
    """``vmap`` over random in_axes, the last axis, axis 0, only the first operand and nested
    equals a loop."""
    case.applies("batching")
    batches = _Batches(case)
    got, got_nested = case.run(_STRUCTURE, "batching", batches.program())
    tol = case.same("batching")
    worst = 0.0
    for (label, axes), out in zip(batches.configs, got, strict=True):
        want = batches.loop([batches.picks(axes, b) for b in range(_BATCH)])
        worst = max(
            worst, _compare(out, want, f"vmap ({label}, in_axes={tuple(axes)}) vs a loop", tol=tol)
        )
    n_leaves = len(case.leaves)
    want_nested = jax.tree.map(
        lambda *ys: np.stack(ys),
        *(
            batches.loop([((b + o) % _BATCH,) * n_leaves for b in range(_BATCH)])
            for o in range(_OUTER)
        ),
    )
    what = f"nested vmap (inner in_axes={tuple(batches.inner)}) vs a loop"
    return max(worst, _compare(got_nested, want_nested, what, tol=tol))


# The nested vmap of the batching check: an outer batch of _OUTER over an inner of _BATCH.
_OUTER: Final = 2


class _Batches:
    """The batched inputs of the batching check (the same each time: seeded by the name).

    Each operand has :data:`_BATCH` versions: the example's own, then (if floating-point)
    perturbed copies.  Every ``vmap`` stacks these same versions, along its own axes, so
    the loops it is compared with call the primitive on few distinct argument lists: an
    element's arguments depend only on which operands are batched (all of them, the first
    only, or the random configuration's), and the nested ``vmap``'s outer elements hold
    the versions rotated, so at most ``3 * (_BATCH - 1)`` eager calls beyond the example's
    own serve every configuration.  A call serving several configurations computes the
    same values for each: sharing it takes nothing from any comparison.
    """

    def __init__(self, case: _Case) -> None:
        self.case = case
        leaves = [np.asarray(x) if not isinstance(x, jax.Array) else x for x in case.leaves]
        rng = _rng(case.prim.name, "batching")
        # "last axis" batches every operand of rank >= 1 at a non-leading axis, where a
        # rule that ignores the batch dimension's position goes wrong.
        self.configs: list[tuple[str, list[int | None]]] = [
            ("random axes", [_random_axis(rng, x, allow_none=True) for x in leaves]),
            ("last axis, negative", [-1] * len(leaves)),
            ("all at axis 0", [0] * len(leaves)),
        ]
        # No configuration with nothing batched: JAX binds the primitive unbatched there
        # and runs no batching rule, which would repeat the jit check's comparison.
        if len(leaves) > 1:
            self.configs.append(("only the first", [0, *([None] * (len(leaves) - 1))]))
        self.versions = [_versions(rng, x, _BATCH) for x in leaves]
        self.inputs = [
            [_stack_at(vs, a) for vs, a in zip(self.versions, axes, strict=True)]
            for _, axes in self.configs
        ]
        # Nested: an outer batch over an inner batch at random axes.
        self.inner = [_random_axis(rng, x, allow_none=False) for x in leaves]
        self.nested = [
            np.stack([_stack_at(vs[o:] + vs[:o], a) for o in range(_OUTER)], axis=0)
            for vs, a in zip(self.versions, self.inner, strict=True)
        ]
        self._calls: dict[tuple[int, ...], Any] = {}

    @staticmethod
    def picks(axes: Sequence[int | None], b: int) -> tuple[int, ...]:
        """The version of each operand in element ``b`` of a batch over ``axes``."""
        return tuple(0 if a is None else b for a in axes)

    def loop(self, picks: Sequence[tuple[int, ...]]) -> Any:
        """The primitive called eagerly on each list of versions, results stacked along
        axis 0; a list already called is not called again (the example's own, all
        versions 0, is the eager call every check shares)."""
        outs = []
        for pick in picks:
            if pick not in self._calls:
                if not any(pick):
                    self._calls[pick] = self.case.eager()
                else:
                    args = [vs[k] for vs, k in zip(self.versions, pick, strict=True)]
                    self._calls[pick] = self.case.call_flat(*args)
            outs.append(self._calls[pick])
        return jax.tree.map(lambda *ys: np.stack([np.asarray(y) for y in ys]), *outs)

    def program(self) -> tuple[Callable[..., Any], Sequence[Any]]:
        """Every ``vmap`` of the check, as one function and its arguments."""
        call, configs, inner = self.case.call_flat, self.configs, self.inner

        def all_vmaps(inputs: list[list[Any]], nested: list[Any]) -> tuple[list[Any], Any]:
            outs = [
                jax.vmap(call, in_axes=tuple(axes), axis_size=_BATCH)(*args)
                for (_, axes), args in zip(configs, inputs, strict=True)
            ]
            return outs, jax.vmap(jax.vmap(call, in_axes=tuple(inner)))(*nested)

        return all_vmaps, (self.inputs, self.nested)


def _stack_at(versions: list[Any], axis: int | None) -> Any:
    """``versions`` stacked along ``axis``; with ``None`` (not batched), the first."""
    return versions[0] if axis is None else np.stack(versions, axis=axis)


def _versions(rng: np.random.Generator, x: Any, size: int) -> list[Any]:
    """``x`` and ``size - 1`` copies of it, perturbed if floating, in NumPy."""
    x = np.asarray(x)
    copies = [x]
    for _ in range(size - 1):
        copies.append(x + np.asarray(0.1 * _random_like(rng, x), x.dtype) if _is_inexact(x) else x)
    return copies


def _random_axis(rng: np.random.Generator, x: Any, *, allow_none: bool) -> int | None:
    if allow_none and rng.random() < 0.3:
        return None
    ndim = np.ndim(x)
    axis = int(rng.integers(0, ndim + 1))
    return axis - (ndim + 1) if rng.random() < 0.5 else axis


def _stack(rng: np.random.Generator, x: Any, axis: int | None, size: int) -> Any:
    """``size`` versions of ``x`` (see :func:`_versions`) stacked along ``axis``, in NumPy."""
    if axis is None:
        return x
    return np.stack(_versions(rng, x, size), axis=axis)


def check_lowering(case: _Case, platforms: Sequence[str]) -> float | None:
    """Every platform's rule exports, and every rule that can run here equals the reference.

    1. The function exports for every platform in ``platforms`` (a failure names each
       platform and keeps its error whole, e.g. an MLIR verifier error's reason).
    2. Each platform's rule is compared numerically with the reference implementation:

       - on a platform whose backend is present (CPU here, always), the primitive compiled
         for it, unless its rule is the reference itself;
       - a traceable rule (``def_lowering(fn, platform=...)`` without ``raw``) of any
         platform but the default device's (TPU and GPU rules on a CPU machine; on a GPU
         machine the GPU rule too, beside its native run at the examples, which a rule
         wrong only away from them would pass) runs on the default device: under
         ``jit``; under ``vmap`` against a loop of the reference (a primitive without its
         own batching rule vectorizes each platform's rule); and under ``grad``, which
         compares the rule's derivative with the reference's.  JAX never differentiates
         a lowering (a primitive's gradient is its JVP rule, whose primal values on that
         platform come from this rule and whose tangents the ``jvp`` check holds to finite
         differences), so ``grad`` here tests the rule's local behaviour around the
         examples, not the platform's gradient; a rule JAX cannot differentiate (a Pallas
         kernel, say) is noted, not failed;
       - a raw MLIR rule of a platform with no backend is exported only (noted).
    3. The CPU export's values equal the reference's.
    """
    case.exported()  # CheckFailure naming each platform that does not export
    # What users get (the primitive compiled for the default device, by its rule, and the
    # CPU export) are parts of the example's values program, beside the jit check's; the
    # traceable rules of other platforms, run here, are parts of its structure program,
    # and so is the reference unless it is the default platform's rule (_lowering_parts).
    results = case.together(_VALUES)
    here = _default_platform()
    want = case.together(_reference_group(case)).get("reference")
    worst = 0.0
    for platform in platforms:
        info = case.prim.lowering_rule(platform)
        if info is None:  # reported by the export above
            continue
        if _has_backend(platform):
            if info.kind == "reference":
                continue
            if platform == here:
                got = results.get("jit")  # the primitive compiled for here: its rule
            else:
                device = jax.devices(platform)[0]
                got = jax.jit(case.call_flat)(*jax.device_put(case.leaves, device))
            worst = max(
                worst,
                _compare(
                    got, want, f"{platform} rule {info.label} vs the reference", tol=_rule_tol(case)
                ),
            )
        if info.kind == "traceable" and platform != here:
            worst = max(worst, _compare_traceable_rule(case, info, want))
            first = _same_rule_as(case, info)
            if first != platform:
                case.notes.append(
                    f"{platform} rule {info.label} is the {first} rule: run once, as that one"
                )
        elif info.kind == "raw" and not _has_backend(platform):
            case.notes.append(
                f"{platform} rule {info.label} is raw MLIR and no {platform} device is here: "
                "exported, not run"
            )
    if "cpu" in platforms:
        got = tree_util.tree_unflatten(
            tree_util.tree_structure(want), tree_util.tree_leaves(results.get("export"))
        )
        worst = max(worst, _compare(got, want, "CPU export vs the reference", tol=_rule_tol(case)))
    return worst


def _lowering_parts(case: _Case, group: str) -> dict[str, tuple[Callable[..., Any], Sequence[Any]]]:
    """What :func:`check_lowering` runs here, as parts of the example's program ``group``.

    :data:`_VALUES`: the primitive compiled for the default device (the ``jit`` check's
    part: the default platform's rule is what it runs) and the CPU export.
    :data:`_STRUCTURE`: each traceable rule of another platform, run here under ``jit``,
    ``vmap`` and ``grad`` (their values on this device are not what that platform's users
    get, so they compile as the other checks' structure programs do).  The reference, the
    oracle, in the group :func:`_reference_group` names.
    """
    exported = case.exported()
    platforms = case.shared.platforms
    here = _default_platform()
    parts: dict[str, tuple[Callable[..., Any], Sequence[Any]]] = {}
    if group == _reference_group(case):
        parts["reference"] = (_reference_flat(case), case.leaves)
    if group == _VALUES:
        here_rule = case.prim.lowering_rule(here) if here in platforms else None
        if here_rule is not None and here_rule.kind != "reference":
            parts["jit"] = (case.call_flat, case.leaves)
        if "cpu" in platforms:
            parts["export"] = (exported.call, case.leaves)
        return parts
    for platform in platforms:
        info = case.prim.lowering_rule(platform)
        if (
            info is not None
            and platform != here
            and info.kind == "traceable"
            and _same_rule_as(case, info) == platform
        ):
            # Wherever it can also run natively (a GPU rule on a GPU machine): the native
            # comparison is at the examples only, and a rule wrong away from them (under
            # vmap, in slope) would pass it.  A function that several platforms lower
            # with runs here once (its parts are named by the first of them).
            parts.update(_traceable_rule_parts(case, info))
    return parts


def _reference_group(case: _Case) -> str:
    """The program the ``lowering`` check's reference runs in: the values program where
    the default platform's rule is the reference (there it is the ``jit`` check's
    computation on the same inputs, compiled once), else the structure program (it is the
    oracle, not what users get: compared at ten times the jit-vs-eager tolerance, far above
    the last bits :data:`STRUCTURE_COMPILE` changes)."""
    here = _default_platform()
    rule = case.prim.lowering_rule(here) if here is not None else None
    return _VALUES if rule is not None and rule.kind == "reference" else _STRUCTURE


def _same_rule_as(case: _Case, info: LoweringInfo) -> str:
    """The first checked platform, other than the default device's, whose traceable rule
    is ``info``'s function with its batching: run on the default device, the two are one
    computation, compared once under that platform's name."""
    here = _default_platform()
    rules = case.prim.rules
    mine = rules.lowering_for(info.platform)
    for platform in case.shared.platforms:
        other = case.prim.lowering_rule(platform)
        entry = rules.lowering_for(platform)
        if (
            platform != here
            and other is not None
            and other.kind == "traceable"
            and other.batching == info.batching
            and entry is not None
            and entry.rule is not None
            and mine is not None
            and mine.rule is not None
            and entry.rule.fn is mine.rule.fn
        ):
            return platform
    return info.platform


def _default_platform() -> str | None:
    """``"cpu"`` where JAX's default device is a CPU (the checks' programs run there)."""
    return "cpu" if jax.default_backend() == "cpu" else None


class _Together:
    """Several computations (name -> function and arguments) as one compiled program.

    A tiny program costs about as much to compile as a larger one, so the computations a
    check needs are traced into one.  A part whose tracing raises is left out and keeps
    its own error.  If the program then fails to lower, compile or run, each part is
    computed alone when asked for, so every error stays with the part that raised it.
    """

    def __init__(
        self,
        parts: Mapping[str, tuple[Callable[..., Any], Sequence[Any]]],
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self._parts = parts
        self.options = options  # the XLA options it compiles with (None: JAX's default)
        self._errors: dict[str, Exception] = {}
        self._values: dict[str, Any] = {}
        self._merged = True

        if not parts:
            return
        inputs, where = _distinct_inputs({k: list(a) for k, (_, a) in parts.items()})

        def program(inputs: list[Any]) -> dict[str, Any]:
            args = tree_util.tree_unflatten(where[1], [inputs[i] for i in where[0]])
            out = {}
            for name, (fn, _) in parts.items():
                try:
                    out[name] = fn(*args[name])
                except Exception as err:  # this part's own failure: kept for its check
                    self._errors[name] = err
            return out

        try:
            self._values = run_kept(program, (inputs,), options)
        except Exception:  # computed part by part below, each with its own error
            self._merged = False
            self._errors = {}

    def __contains__(self, name: str) -> bool:
        return name in self._parts

    def get(self, name: str) -> Any:
        """Part ``name``'s value, or the error it raised."""
        if self._merged:
            if name in self._errors:
                raise self._errors[name]
            return self._values[name]
        fn, args = self._parts[name]
        return run_kept(fn, args, self.options)


def _distinct_inputs(args: Any) -> tuple[list[Any], tuple[list[int], Any]]:
    """The distinct arrays among the leaves of ``args`` (equal dtype, shape and bytes), and
    where each leaf is among them (its index, and the tree).

    Parts that take the same input take it as one parameter of the program: XLA sees
    their computations on it as the same and computes (and compiles) them once."""
    leaves, tree = tree_util.tree_flatten(args)
    inputs: list[Any] = []
    seen: dict[tuple[Any, ...], list[int]] = {}  # (dtype, shape) or the object -> inputs
    index = []
    for leaf in leaves:
        numeric = isinstance(leaf, np.ndarray | np.generic) and leaf.dtype.kind in "biufc"
        # The same object is the same input; equal arrays are found by their bytes.
        key = ("array", leaf.dtype.str, leaf.shape) if numeric else ("object", id(leaf))
        candidates = seen.setdefault(key, [])
        found = next((i for i in candidates if not numeric or _same_bytes(inputs[i], leaf)), None)
        if found is None:
            found = len(inputs)
            candidates.append(found)
            inputs.append(leaf)
        index.append(found)
    return inputs, (index, tree)


def _same_bytes(a: Any, b: Any) -> bool:
    """Whether two arrays of one dtype and shape hold the same bytes (nan payloads too)."""
    a_bytes, b_bytes = (np.ascontiguousarray(x).reshape(-1).view(np.uint8) for x in (a, b))
    return bool(np.array_equal(a_bytes, b_bytes))


def structure_options() -> Mapping[str, Any] | None:
    """The XLA options of the programs that check a rule's structure, not its last bits.

    These programs compare a rule with finite differences (``jvp``, ``higher_order``), with
    another transformation compiled beside it (reverse vs forward mode, ``vmap`` of
    ``grad`` vs a loop), or ``vmap`` with a loop of eager calls at the jit-vs-eager
    tolerance, far above the last-bit differences an optimisation level makes (XLA:CPU's
    default contracts ``a*b + c`` into one rounding, its lowest level does not).  On CPU
    they compile with :data:`STRUCTURE_COMPILE`, about five times faster; the ``jit``
    check, the eager calls and the ``lowering`` check's programs keep JAX's default
    compilation, the values users get.  Other backends compile as usual (the options name
    XLA:CPU's emitters).
    """
    return STRUCTURE_COMPILE if jax.default_backend() == "cpu" else None


def _check_exports(case: _Case, platforms: Sequence[str]) -> Any:
    """The function exported for every platform, or CheckFailure naming those that fail."""
    try:
        return export_for(case.call_flat, *case.leaves, platforms=platforms)
    except Exception:  # find out which platforms fail, one at a time
        pass
    missing: dict[str, str] = {}
    no_rule = True
    for platform in platforms:
        try:
            export_for(case.call_flat, *case.leaves, platforms=[platform])
        except LoweringError as err:
            missing[platform] = str(err)
        except Exception as err:
            missing[platform] = describe_error(err)
            no_rule = False
    if missing:
        by_message: dict[str, list[str]] = {}
        for platform, message in missing.items():
            by_message.setdefault(message, []).append(platform)
        detail = "; ".join(f"{', '.join(ps)}: {m}" for m, ps in by_message.items())
        what = "no lowering" if no_rule else "lowering failed"
        raise CheckFailure(f"{what} for {sorted(missing)} ({detail})")
    # Each platform alone exports but not all together: that is the failure to report.
    return export_for(case.call_flat, *case.leaves, platforms=platforms)


def _rule_tol(case: _Case) -> Callable[[Any], tuple[float, float]]:
    """The tolerance by dtype of a platform rule against the reference: declared for the
    ``lowering`` check, else ten times the jit-vs-eager tolerance (another formulation of
    the same function, a kernel summing in another order, may round differently)."""
    declared = case.options.tolerances.get("lowering")
    if declared is not None:
        return lambda _: declared

    def tol(dtype: Any) -> tuple[float, float]:
        rtol, atol = _tolerance(dtype, _SAME)
        return rtol * 10, atol * 10

    return tol


@functools.cache
def _has_backend(platform: str) -> bool:
    """Whether this process can run code on ``platform`` (CPU always can)."""
    if platform == "cpu":
        return True
    try:
        return bool(jax.devices(platform))
    except Exception:  # JAX raises RuntimeError for a backend absent or failing to start
        return False


def _reference_flat(case: _Case) -> Callable[..., Any]:
    return _flat_call(case, case.prim.reference)


def _flat_call(case: _Case, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (called like the primitive) taking the example's flat leaves."""
    tree, params = case.tree, case.example.params

    def call(*leaves: Any) -> Any:
        return fn(*tree_util.tree_unflatten(tree, leaves), **params)

    return call


def _traceable_rule_parts(
    case: _Case, info: LoweringInfo
) -> dict[str, tuple[Callable[..., Any], Sequence[Any]]]:
    """What :func:`_compare_traceable_rule` compares, as parts of one program."""
    reference = _reference_flat(case)
    rule = _flat_call(case, info.fn)
    key = info.platform  # the first platform with this rule (see _same_rule_as)
    parts: dict[str, tuple[Callable[..., Any], Sequence[Any]]] = {f"{key} jit": (rule, case.leaves)}
    if info.batching == "vmap" and case.leaves:  # vmap needs an operand to batch
        rng = _rng(case.prim.name, "platform", info.platform)
        stacked = [_stack(rng, x, 0, _BATCH) for x in case.leaves]

        def looped(*xs: Any) -> Any:  # the reference applied slice by slice
            return jax.lax.map(lambda ys: reference(*ys), xs)

        parts[f"{key} vmap"] = (jax.vmap(rule), stacked)
        parts[f"{key} loop"] = (looped, stacked)
    active = [i for i in case.inexact() if not jnp.iscomplexobj(case.leaves[i])]
    if active:
        at = [[case.leaves[i] for i in active]]
        parts["reference grad"] = (jax.grad(_summed(reference, case.leaves, active)), at)
        parts[f"{key} grad"] = (jax.grad(_summed(rule, case.leaves, active)), at)
    return parts


def _compare_traceable_rule(case: _Case, info: LoweringInfo, want: Any) -> float:
    results = case.together(_STRUCTURE)
    key = _same_rule_as(case, info)
    here = (
        "CPU" if jax.default_backend() == "cpu" else f"the default device ({jax.default_backend()})"
    )
    what = f"{info.platform} rule {info.label} (run on {here})"
    try:
        got = results.get(f"{key} jit")
    except (CheckFailure, RuleError):
        raise
    except Exception as err:
        # Bound to its platform (an FFI custom call, a Triton or Mosaic kernel): it
        # exported above, but only its own device can run it.
        case.notes.append(
            f"{info.platform} rule {info.label} cannot run on {here} ({type(err).__name__}): "
            "exported, not run"
        )
        return 0.0
    worst = _compare(got, want, f"{what} vs the reference", tol=_rule_tol(case))
    if f"{key} vmap" in results:
        vmapped = results.get(f"{key} vmap")
        looped = jax.tree.map(np.asarray, results.get(f"{key} loop"))
        worst = max(
            worst,
            _compare(
                vmapped, looped, f"vmap of {what} vs a loop of the reference", tol=_rule_tol(case)
            ),
        )
    if f"{key} grad" not in results or not any(_is_inexact(o) for o in tree_util.tree_leaves(want)):
        return worst
    try:
        want_grad = results.get("reference grad")
    except Exception:  # the reference itself is not differentiable: nothing to hold to
        return worst
    try:
        got_grad = results.get(f"{key} grad")
    except Exception as err:
        case.notes.append(f"grad of {what} not compared: it raised {type(err).__name__}")
        return worst
    return max(
        worst,
        _compare(
            got_grad, want_grad, f"grad of {what} vs grad of the reference", tol=_rule_tol(case)
        ),
    )


def _summed(
    fn: Callable[..., Any], leaves: Sequence[Any], active: Sequence[int]
) -> Callable[[list[Any]], Any]:
    """The sum of ``fn``'s real floating-point results, as a function of the active leaves."""

    def scalar(xs: list[Any]) -> Any:
        full = list(leaves)
        for i, x in zip(active, xs, strict=True):
            full[i] = x
        outs = [o for o in tree_util.tree_leaves(fn(*full)) if _is_inexact(o)]
        return sum(jnp.sum(jnp.real(o)) for o in outs)

    return scalar


def check_higher_order(case: _Case) -> float | None:
    """``grad`` of ``grad`` agrees with finite differences of ``grad``; ``vmap`` of ``grad`` with
    a loop."""
    case.applies("higher_order")
    i = _first_real(case)
    if not case.supports(np.float64):
        if not case.supports(np.float32):
            raise CheckSkipped(
                f"the primitive supports neither float32 nor float64 ({_declared(case)})"
            )
        case.notes.append(f"checked in float32: {_declared(case)}")
        return _higher_order_at(case, i, np.float32)
    try:
        with _x64():
            return _higher_order_at(case, i, np.float64)
    except (TransposeError, CheckFailure):
        raise
    except Exception as err:  # float64 unsupported: float32 with its looser tolerance
        case.notes.append(f"checked in float32: float64 raised {type(err).__name__}")
        return _higher_order_at(case, i, np.float32)


def _higher_order_at(case: _Case, i: int, dtype: Any) -> float:
    group = _STRUCTURE_X64 if np.dtype(dtype) == np.float64 else _STRUCTURE
    program = _higher_order_program(case, i, dtype)
    hvp, fd, vmapped, looped = case.run(group, f"higher_order {np.dtype(dtype).name}", program)
    rtol, atol = case.tol("higher_order", _FD[np.dtype(dtype)][1:])
    scale = max(1.0, float(np.max(np.abs(fd), initial=0.0)))
    worst = _compare(
        hvp, fd, "grad of grad vs finite differences of grad", tol=lambda _: (rtol, atol * scale)
    )
    return max(
        worst, _compare(vmapped, looped, "vmap of grad vs a loop", tol=case.same("higher_order"))
    )


def _higher_order_program(
    case: _Case, i: int, dtype: Any
) -> tuple[Callable[..., Any], Sequence[Any]]:
    """The Hessian-vector product, its finite differences, and vmap of grad vs a loop, of
    ``<u, f(x)>`` for a random ``u`` (the results projected on one random direction: a
    fixed number of evaluations whatever the shapes).  The batch's first element is ``x``
    itself, whose ``grad`` the Hessian-vector product computes as its primal output; one
    loop computes the others and the finite differences' two points (``lax.map``: one
    copy of ``grad`` to compile)."""
    leaves = [_cast(x, dtype) for x in case.leaves]
    eps = _FD[np.dtype(dtype)][0]
    rng = _rng(case.prim.name, "higher_order")
    x = leaves[i]
    v = _random_like(rng, x)
    stacked = _stack(rng, x, 0, _BATCH)  # NumPy: an eager jnp.asarray compiles a program

    # The other floating-point operands are arguments, not constants: XLA would fold what
    # depends on constants alone at compile time, slowly (seconds for a large operand).
    others = {j: y for j, y in enumerate(leaves) if j != i and _is_inexact(y)}

    def inexact_outs(x: Any, others: dict[int, Any]) -> list[Any]:
        full = list(leaves)
        full[i] = x
        for j, y in others.items():
            full[j] = y
        return [jnp.real(o) for o in tree_util.tree_leaves(case.call_flat(*full)) if _is_inexact(o)]

    u = [
        _random_like(rng, np.zeros(o.shape, o.dtype))
        for o in jax.eval_shape(inexact_outs, x, others)
    ]

    def everything(
        x: Any, v: Any, stacked: Any, u: list[Any], others: dict[int, Any]
    ) -> tuple[Any, Any, Any, Any]:
        def scalar(x: Any) -> Any:
            return sum(jnp.sum(o * w) for o, w in zip(inexact_outs(x, others), u, strict=True))

        grad = jax.grad(scalar)
        at_x, hvp = jax.jvp(grad, (x,), (v,))
        # grad at x +- eps v and at the batch's other elements, unbatched: one lax.map.
        points = jnp.concatenate([jnp.stack([x + eps * v, x - eps * v]), stacked[1:]])
        grads = jax.lax.map(grad, points)
        fd = (grads[0] - grads[1]) / (2 * eps)
        looped = jnp.concatenate([at_x[None], grads[2:]])
        return hvp, fd, jax.vmap(grad)(stacked), looped

    return everything, (x, v, stacked, u, others)


def _first_real(case: _Case) -> int:
    """The operand the higher-order check differentiates in (CheckSkipped if none)."""
    active = [i for i in case.inexact() if not jnp.iscomplexobj(case.leaves[i])]
    if not active:
        raise CheckSkipped("no real floating-point operand to differentiate")
    return active[0]


def _shared_parts(case: _Case, group: str) -> dict[str, tuple[Callable[..., Any], Sequence[Any]]]:
    """The programs of an example's checks that compile as one (see :class:`_Together`).

    :data:`_VALUES` (JAX's default compilation: what users get) holds the ``jit`` check's
    program and the ``lowering`` check's CPU export; :data:`_STRUCTURE` the float32
    ``jvp``'s, ``transpose``'s reverse-vs-forward, ``batching``'s and the ``lowering``
    check's runs of other platforms' rules; the reference the ``lowering`` check compares
    with is in one or the other (:func:`_reference_group`); :data:`_STRUCTURE_X64` (traced
    under ``jax.enable_x64``) the float64 ``jvp``'s and ``higher_order``'s; the last two
    compile with :func:`structure_options`.  Only the checks that will run are included
    (``case.shared.checks``).  A program whose making raises (a check that skips, a
    primitive that does not export) is left out: its check meets that error itself and
    reports it.
    """
    parts: dict[str, tuple[Callable[..., Any], Sequence[Any]]] = {}
    if group == _VALUES and "jit" in case.shared.checks:
        parts["jit"] = (case.call_flat, case.leaves)
    if group in (_VALUES, _STRUCTURE) and "lowering" in case.shared.checks:
        with contextlib.suppress(Exception):  # check_lowering meets it and reports it
            parts.update(_lowering_parts(case, group))
    builders: dict[str, list[tuple[str, str, Callable[[], Any]]]] = {
        _VALUES: [],
        _STRUCTURE: [
            ("jvp", "jvp float32", lambda: _jvp_program(case, np.float32)),
            ("transpose", "reverse vs forward", lambda: _reverse_vs_forward_program(case)),
            ("batching", "batching", lambda: _Batches(case).program()),
        ],
        _STRUCTURE_X64: [
            ("jvp", "jvp float64", lambda: _jvp_program(case, np.float64)),
            (
                "higher_order",
                "higher_order float64",
                lambda: _higher_order_program(case, _first_real(case), np.float64),
            ),
        ],
    }
    for check, name, build in builders[group]:
        if check not in case.shared.checks:
            continue
        if check in ("jvp", "transpose") and not case.inexact():
            continue  # the check skips
        if check == "transpose" and _reverse_only(case):
            continue  # not applicable (and forward mode would fail to lower)
        if (check in _TRANSFORMING and not case.leaves) or (
            check in _DIFFERENTIATING and not case.prim.differentiable
        ):
            continue  # not applicable
        if name in _PROGRAM_DTYPE and not case.supports(_PROGRAM_DTYPE[name]):
            continue  # a dtype the primitive does not support: the check says so
        if name == "jvp float32" and _float64_alone(case):
            continue  # compared in float64 alone (see check_jvp)
        try:
            parts[name] = build()
        except Exception:  # its check meets the same error and reports it
            continue
    return parts


# The dtype of each shared program that a declaration of dtypes may leave out.
_PROGRAM_DTYPE: Final = {
    "jvp float32": np.dtype(np.float32),
    "jvp float64": np.dtype(np.float64),
    "higher_order float64": np.dtype(np.float64),
}

_RUNNERS: Final[dict[str, Callable[..., float | None]]] = {
    "abstract_eval": check_abstract_eval,
    "jit": check_jit,
    "jvp": check_jvp,
    "transpose": check_transpose,
    "batching": check_batching,
    "lowering": check_lowering,
    "higher_order": check_higher_order,
}


def run_check(
    prim: Primitive[..., Any],
    check: str,
    examples: Sequence[Example],
    *,
    platforms: Sequence[str] = ALL_PLATFORMS,
    shared: Sequence[_Shared] | None = None,
) -> CheckResult:
    """Run one named check over every example; a raised error is a failure, not a crash.

    ``shared`` (one per example) holds what the checks of one report compute once.
    """
    if not examples:
        return CheckResult(check, "unchecked", "the primitive declares no examples (def_examples)")
    if check == SHARDING_CHECK:  # all primitives in one subprocess (_sharding_check.py)
        return sharding_result(prim)
    runner = _RUNNERS[check]
    extra = (platforms,) if check == "lowering" else ()
    worst: float | None = None
    skipped: list[CheckResult] = []
    notes: list[str] = []
    for n, example in enumerate(examples):
        case = _Case(prim, example, notes, shared[n] if shared else _Shared((check,), platforms))
        where = f" (example {n}: {example!r})" if len(examples) > 1 else ""
        result = guarded(check, functools.partial(runner, case, *extra), where=where)
        if result.status == "fail":
            return result
        if result.status in ("skip", "n/a"):
            skipped.append(result)
        elif result.max_error is not None:
            worst = max(worst or 0.0, result.max_error)
    if len(skipped) == len(examples):
        # n/a only where it holds for every example; else one ran nowhere: skipped.
        not_applicable = all(r.status == "n/a" for r in skipped)
        return CheckResult(check, "n/a" if not_applicable else "skip", skipped[0].message)
    return CheckResult(check, "pass", "; ".join(dict.fromkeys(notes)), worst)


def check_report(
    prim: Primitive[..., Any],
    *,
    checks: Sequence[str] = PRIMITIVE_CHECKS,
    platforms: Sequence[str] = ALL_PLATFORMS,
    plugin: str | None = None,
    progress: Callable[[str, CheckResult], None] | None = None,
    pool: Executor | None = None,
) -> PrimitiveReport:
    """Run ``checks`` on ``prim`` and collect the results (never raises for a failed check).

    With ``pool``, the checks run on it side by side (see :func:`submit_report`).
    """
    return submit_report(prim, pool, checks=checks, platforms=platforms, plugin=plugin)(progress)


def submit_report(
    prim: Primitive[..., Any],
    pool: Executor | None,
    *,
    checks: Sequence[str] = PRIMITIVE_CHECKS,
    platforms: Sequence[str] = ALL_PLATFORMS,
    plugin: str | None = None,
) -> Callable[[Callable[[str, CheckResult], None] | None], PrimitiveReport]:
    """Start ``checks`` on ``pool`` (each its own task; inline without a pool) and return
    the function that waits for them and makes the report, calling ``progress`` in order.

    The checks of one primitive are independent and their time is mostly XLA compilation,
    which runs without the GIL: on a pool they compile side by side.  Call the returned
    function outside the pool (a pool task waiting on the pool could deadlock).
    """
    try:
        examples = prim.examples()
    except Exception as err:
        result = CheckResult("examples", "fail", f"raised {describe_error(err)}")
        failed = PrimitiveReport(prim.name, "primitive", (result,), plugin)

        def report_failed(progress: Callable[[str, CheckResult], None] | None) -> PrimitiveReport:
            if progress is not None:
                progress(prim.name, result)
            return failed

        return report_failed

    shared = [_Shared(checks, platforms) for _ in examples]

    def run(check: str) -> CheckResult:
        return run_check(prim, check, examples, platforms=platforms, shared=shared)

    pending: list[Future[CheckResult]] = []
    if pool is not None:
        pending = [pool.submit(run, check) for check in checks]

    def finish(progress: Callable[[str, CheckResult], None] | None) -> PrimitiveReport:
        results = []
        for n, check in enumerate(checks):
            result = pending[n].result() if pending else run(check)
            if progress is not None:
                progress(prim.name, result)
            results.append(result)
        details = {"platforms": prim.lowering_platforms(), "rules": prim.rule_sources()}
        return PrimitiveReport(prim.name, "primitive", tuple(results), plugin, details)

    return finish
