"""Conformance checks for SciPy wrappers, with SciPy itself as the oracle."""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np

from jext.scipy._wrapper import Domain, EdgeCase, ScipyWrapper
from jext.testing._cache import cached_oracle, run_kept, uncached_reason
from jext.testing._compile import STRUCTURE_COMPILE
from jext.testing._report import (
    CheckFailure,
    CheckResult,
    CheckSkipped,
    PrimitiveReport,
    guarded,
)

__all__ = [
    "SCIPY_CHECKS",
    "check_batch_independence",
    "oracle_of",
    "run_scipy_check",
    "scipy_report",
    "start_session",
]

SCIPY_CHECKS: Final = ("values", "edge_cases", "gradients", "jit_vmap")
"""Every check run on a SciPy wrapper, in the order they run."""
# The checks that ask the oracle (and may read its answers back from the cache).
_ORACLE_CHECKS: Final = ("values", "edge_cases", "gradients")

_SAMPLES: Final = 2000
_GRAD_SAMPLES: Final = 16
_JIT_VMAP_POINTS: Final = 8
_SPECIAL_VALUES: Final = (0.0, -0.0, math.inf, -math.inf, math.nan)


def oracle_of(wrapper: ScipyWrapper) -> Callable[..., Any]:
    """The function the wrapper is held to: its own oracle, else the SciPy function it mirrors."""
    if wrapper.oracle is not None:
        return wrapper.oracle
    return _scipy_function(wrapper.mirrors)


def _scipy_function(dotted: str) -> Callable[..., Any]:
    """The object ``dotted`` names: its longest importable prefix, then attributes, so that
    a method of a SciPy object (``"scipy.stats.t.cdf"``) resolves as a function does."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[:split])
        try:
            found: Any = importlib.import_module(prefix)
        except ModuleNotFoundError as error:
            if error.name != prefix:  # a module it imports is missing: say so
                raise
            continue
        for attr in parts[split:]:
            found = getattr(found, attr)
        fn: Callable[..., Any] = found
        return fn
    raise ModuleNotFoundError(f"no module in {dotted!r}")


def _checked_oracle(wrapper: ScipyWrapper) -> Callable[..., Any]:
    """:func:`oracle_of`, answering from ``jext check``'s cache folder where one is in use."""
    return cached_oracle(oracle_of(wrapper), wrapper.qualified_name)


def _rng(wrapper: ScipyWrapper, purpose: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{wrapper.qualified_name}:{purpose}".encode()))


def _sample(rng: np.random.Generator, domain: Domain, n: int, *, shrink: float = 0.0) -> list[Any]:
    args = []
    for i, (low, high) in enumerate(domain.bounds):
        lo, hi = low + shrink * (high - low), high - shrink * (high - low)
        if domain.log and lo > 0:
            column = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
        else:
            column = rng.uniform(lo, hi, n)
        args.append(np.round(column) if i in domain.integers else column)
    return args


def _in_dtype(values: Any, dtype: str) -> Any:
    """SciPy's float64 answer as ``dtype`` represents it (beyond its range: inf or 0)."""
    values = np.asarray(values)
    if np.iscomplexobj(values):  # complex results (hankel1): complex64 for float32
        return values.astype(np.result_type(dtype, np.complex64)).astype(np.complex128)
    return values.astype(dtype).astype(np.float64)


def _compare(
    got: Any,
    want: Any,
    rtol: float,
    atol: float,
    what: str,
    points: Sequence[Any],
    oracle: str = "SciPy",
) -> float:
    """Largest relative error; CheckFailure naming the worst point if over tolerance."""
    want = np.asarray(want)
    if np.iscomplexobj(want) != np.iscomplexobj(np.asarray(got)):
        raise CheckFailure(
            f"{what}: the wrapper and the oracle disagree on complex results; "
            "give the wrapper an oracle of its kind"
        )
    # Complex results are compared by the modulus of the difference.
    kind = np.complex128 if np.iscomplexobj(want) else np.float64
    got = np.asarray(got, kind)
    want = want.astype(kind)
    got, want = np.broadcast_arrays(got, want)
    same_kind = (np.isnan(got) & np.isnan(want)) | (np.isinf(want) & (got == want))
    finite = np.isfinite(want) & ~same_kind
    err = np.where(same_kind, 0.0, np.abs(got - want))
    err = np.where(np.isnan(err), np.inf, err)
    bad = err > rtol * np.abs(np.where(finite, want, 0.0)) + atol
    # The reported error is relative, over the points above the absolute floor.
    above_floor = finite & (rtol * np.abs(np.where(finite, want, 0.0)) > atol)
    rel = np.where(above_floor, err / np.where(above_floor, np.abs(want), 1.0), 0.0)
    worst = float(rel.max(initial=0.0))
    if bad.any():
        i = int(np.argmax(np.where(bad, err, -1.0)))
        at = ", ".join(_plain(np.broadcast_to(p, got.shape).ravel()[i]) for p in points)
        raise CheckFailure(
            f"{what}: at ({at}) got {_plain(got.ravel()[i])}, {oracle} gives "
            f"{_plain(want.ravel()[i])} "
            f"(rtol {rtol:g}, atol {atol:g})",
            worst,
        )
    return worst


KwKey = tuple[tuple[str, Any], ...]


def _kw_key(kwargs: Mapping[str, Any]) -> KwKey:
    return tuple(sorted(kwargs.items()))


@dataclass(frozen=True)
class _Plan:
    """Every point the checks evaluate a wrapper at, laid out for one program per dtype and
    set of static keyword arguments (a branch ``k=-1`` is another program).

    ``layout[kw]`` lists the segments of the argument vectors for that ``kw`` in order:
    ``("values", d)``, ``("edges", None)`` and ``("jit_vmap", None)``, each with its length.
    """

    columns: dict[KwKey, list[np.ndarray[Any, Any]]]  # float64 argument columns
    layout: dict[KwKey, list[tuple[str, int | None, int, int]]]  # (part, domain, start, stop)
    values: dict[int, list[np.ndarray[Any, Any]]]
    edges: dict[KwKey, list[np.ndarray[Any, Any]]]
    jit_vmap: list[np.ndarray[Any, Any]]
    grads: dict[KwKey, list[np.ndarray[Any, Any]]]  # gradient points, concatenated domains
    grad_domains: dict[KwKey, list[tuple[int, int, int]]]  # (domain, start, stop)

    def segment(self, kw: KwKey, part: str, domain: int | None = None) -> slice:
        for name, d, start, stop in self.layout[kw]:
            if name == part and d == domain:
                return slice(start, stop)
        raise KeyError((kw, part, domain))


def _plan(wrapper: ScipyWrapper) -> _Plan:
    values = {
        d: _sample(_rng(wrapper, f"values{d}"), domain, _SAMPLES)
        for d, domain in enumerate(wrapper.domains)
    }
    edge_points: dict[KwKey, list[tuple[float, ...]]] = {}
    for edge in _edge_points(wrapper):
        edge_points.setdefault(_kw_key(edge.kwargs), []).append(edge.args)
    edges = {
        kw: [np.array(col, np.float64) for col in zip(*points, strict=True)]
        for kw, points in edge_points.items()
    }
    first = wrapper.domains[0]
    jit_vmap = _sample(_rng(wrapper, "jit_vmap"), first, _JIT_VMAP_POINTS, shrink=0.01)
    columns: dict[KwKey, list[np.ndarray[Any, Any]]] = {}
    layout: dict[KwKey, list[tuple[str, int | None, int, int]]] = {}

    def append(kw: KwKey, part: str, domain: int | None, args: list[Any]) -> None:
        cols = columns.setdefault(kw, [])
        start = len(cols[0]) if cols else 0
        if cols:
            columns[kw] = [
                np.concatenate([c, np.asarray(a, np.float64)])
                for c, a in zip(cols, args, strict=True)
            ]
        else:
            columns[kw] = [np.asarray(a, np.float64) for a in args]
        layout.setdefault(kw, []).append((part, domain, start, start + len(args[0])))

    for d, domain in enumerate(wrapper.domains):
        append(_kw_key(domain.kwargs), "values", d, values[d])
    for kw, cols in edges.items():
        append(kw, "edges", None, cols)
    append(_kw_key(first.kwargs), "jit_vmap", None, jit_vmap)
    grads: dict[KwKey, list[np.ndarray[Any, Any]]] = {}
    grad_domains: dict[KwKey, list[tuple[int, int, int]]] = {}
    if wrapper.differentiable:
        for d, domain in enumerate(wrapper.domains):
            kw = _kw_key(domain.kwargs)
            args = _sample(_rng(wrapper, f"grad{d}"), domain, _GRAD_SAMPLES, shrink=0.02)
            have = grads.get(kw)
            start = len(have[0]) if have else 0
            grads[kw] = (
                [np.concatenate([h, a]) for h, a in zip(have, args, strict=True)] if have else args
            )
            grad_domains.setdefault(kw, []).append((d, start, start + len(args[0])))
    return _Plan(columns, layout, values, edges, jit_vmap, grads, grad_domains)


#: The shared programs of a wrapper, per dtype and keyword set, and the parts each computes.
#: The values program holds one copy of the function, at the default compilation users
#: get.  The ``vmap`` and scalar-call copies (compared with the values at the wrapper's
#: tolerance, which a wrong batching rule or a shape-dependent function misses by far) and
#: the gradient (compared with finite differences at 1e-5) are programs of their own,
#: compiled on CPU with ``STRUCTURE_COMPILE``, three to four times faster than the default
#: for the big kernels; apart, they also compile beside the values on other cores.
_PROGRAMS: Final = {
    "values": ("eval", "among_themselves"),
    "jit_vmap": ("jit_vmap",),
    "grad": ("grad",),
}


class _Session:
    """The evaluations of one wrapper that its checks share: per dtype and keyword set, one
    compiled program computes every point of the values, edge case and ``jit_vmap`` checks,
    and one (float64) every gradient, instead of one program per check, domain and shape.

    If the shared program fails (a wrapper that cannot be differentiated, say), each check
    evaluates only its own part, so the failure is reported by the check it concerns.
    """

    def __init__(self, wrapper: ScipyWrapper) -> None:
        self.wrapper = wrapper
        self.plan = _plan(wrapper)
        self._results: dict[tuple[str, KwKey, str], Any] = {}
        self._pending: dict[tuple[str, KwKey, str], Future[Any]] = {}

    def start(self, pool: Executor) -> None:
        """Compile and run every shared program on ``pool`` ahead of the checks.

        XLA compiles without holding the GIL, so programs compile side by side on the
        machine's cores while the caller compares earlier results with SciPy.
        """
        for kw in self.plan.columns:
            for dtype in self.wrapper.dtypes:
                for program in _PROGRAMS:
                    key = (dtype, kw, program)
                    if self._wanted(dtype, kw, program) and key not in self._pending:
                        self._pending[key] = pool.submit(self._guarded, dtype, kw, program)

    def get(self, dtype: str, kw: KwKey, part: str) -> Any:
        """``part`` ("eval", "jit_vmap" or "grad") of the program for ``dtype`` and ``kw``."""
        (program,) = [name for name, parts in _PROGRAMS.items() if part in parts]
        shared = self._run(dtype, kw, program)
        if not isinstance(shared, BaseException):
            return shared[part]
        alone = self._run(dtype, kw, part) if _PROGRAMS[program] != (part,) else shared
        if isinstance(alone, BaseException):
            raise alone
        return alone[part]

    def _run(self, dtype: str, kw: KwKey, parts: str) -> Any:
        key = (dtype, kw, parts)
        if key not in self._results:
            pending = self._pending.pop(key, None)
            self._results[key] = (
                pending.result() if pending is not None else self._guarded(dtype, kw, parts)
            )
        return self._results[key]

    def _guarded(self, dtype: str, kw: KwKey, parts: str) -> Any:
        try:
            return self._evaluate(dtype, kw, parts)
        except Exception as err:  # reported by the check that needs this part
            return err

    def _wanted(self, dtype: str, kw: KwKey, parts: str) -> set[str]:
        """What the program ``parts`` (a name in ``_PROGRAMS`` or one part) computes."""
        want = set(_PROGRAMS.get(parts, (parts,)))
        first = kw == _kw_key(self.wrapper.domains[0].kwargs)
        if dtype != self.wrapper.dtypes[0] or not first:
            want.discard("jit_vmap")
        if not first:
            want.discard("among_themselves")
        if dtype != "float64" or kw not in self.plan.grads:
            want.discard("grad")
        return want

    def _evaluate(self, dtype: str, kw: KwKey, parts: str) -> dict[str, Any]:
        wrapper, plan = self.wrapper, self.plan
        f = functools.partial(wrapper.function, **dict(kw))
        want = self._wanted(dtype, kw, parts)
        if not want:
            raise CheckSkipped(f"nothing to evaluate for {parts}")
        differentiable = wrapper.differentiable

        def program(columns: list[Any], grad_columns: list[Any]) -> dict[str, Any]:
            out: dict[str, Any] = {}
            if want & {"eval", "among_themselves"}:
                out["eval"] = _stacked(f(*columns))
            if "jit_vmap" in want:  # ``columns`` are the jit_vmap points alone
                out["jit_vmap"] = {
                    "vmap": _stacked(jax.vmap(f)(*columns)),
                    # The body is traced with scalar arguments: a loop of scalar calls.
                    "scalar": _stacked(jax.lax.map(lambda xs: f(*xs), tuple(columns))),
                }
            if "grad" in want:
                out["grad"] = _gradients(f, grad_columns, differentiable)
            return out

        with jax.enable_x64(dtype == "float64"):
            # NumPy arrays, not jnp.asarray: each eager conversion compiles a program.
            columns = [np.asarray(c, dtype) for c in plan.columns[kw]]
            if "jit_vmap" in want:
                columns = [c[plan.segment(kw, "jit_vmap")] for c in columns]
            grad_columns = list(plan.grads.get(kw, [])) if "grad" in want else []
            compiled: Callable[..., Any] = jax.jit(program)
            if not want & {"eval", "among_themselves"} and jax.default_backend() == "cpu":
                # Neither gradients (held to finite differences at 1e-5) nor the vmap and
                # scalar calls (held to the values at the wrapper's tolerance) are compared
                # bit for bit, and what XLA's optimisation level moves is far below both
                # (docs/checking.md).  CPU only: the options name XLA:CPU's emitters, and
                # GPU compiles are not where the time goes.  Run once: its outputs may be
                # read back from the cache folder.
                outputs = run_kept(program, (columns, grad_columns), STRUCTURE_COMPILE)
            else:
                outputs = compiled(columns, grad_columns)
            result: dict[str, Any] = jax.tree.map(np.asarray, outputs)
            if "among_themselves" in want:
                # The same executable on a batch of the same shape made of the jit_vmap
                # points alone (tiled, each in its own place): no compilation, and any
                # difference in their bits comes from their companions in the first batch.
                where = plan.segment(kw, "jit_vmap")
                alone = [np.resize(c[where], len(c)) for c in columns]
                for a, c in zip(alone, columns, strict=True):
                    a[where] = c[where]
                again = compiled(alone, grad_columns)["eval"]
                result["among_themselves"] = np.asarray(again)[..., where]
            return result


def _stacked(result: Any) -> Any:
    """One array per call: a function with several results (``ellipj``'s four) is checked
    as their stack, result by result along the first axis."""
    return jnp.stack(result) if isinstance(result, tuple | list) else result


def _gradients(
    f: Callable[..., Any], columns: Sequence[Any], differentiable: Sequence[int]
) -> dict[int, Any]:
    """The derivative of ``f`` in each differentiable argument at every point of ``columns``.

    A SciPy function is elementwise, so its Jacobian is diagonal.  For one real result, one
    reverse pass with unit cotangents gives every argument's derivative at every point: one
    forward and one backward copy of ``f`` to compile, instead of one of each per argument.
    Several results (``ellipj``) or complex ones (``hankel1``) go forward instead, one unit
    tangent per argument over a single linearization: a reverse pass would sum the results'
    derivatives and drop imaginary parts.
    """

    def of_differentiable(*xs: Any) -> Any:
        full = list(columns)
        for i, x in zip(differentiable, xs, strict=True):
            full[i] = x
        return f(*full)

    primals = [columns[i] for i in differentiable]
    # The reverse pass's own trace says what ``f`` returns (an eval_shape first would
    # trace ``f`` once more); where it is the wrong kind, it is left unused.
    values, pullback = jax.vjp(of_differentiable, *primals)
    if isinstance(values, tuple | list) or jnp.issubdtype(values.dtype, jnp.complexfloating):
        _, tangent_of = jax.linearize(of_differentiable, *primals)

        def unit(k: int) -> list[Any]:
            return [(jnp.ones_like if j == k else jnp.zeros_like)(x) for j, x in enumerate(primals)]

        return {i: _stacked(tangent_of(*unit(k))) for k, i in enumerate(differentiable)}
    cotangents = pullback(jnp.ones_like(values))
    return dict(zip(differentiable, cotangents, strict=True))


def check_values(wrapper: ScipyWrapper, session: _Session | None = None) -> float | None:
    """Values agree with SciPy on the sampled domains, in every supported dtype."""
    session = session or _Session(wrapper)
    oracle = _checked_oracle(wrapper)
    worst = 0.0
    for d, domain in enumerate(wrapper.domains):
        kw = _kw_key(domain.kwargs)
        where = session.plan.segment(kw, "values", d)
        for dtype in wrapper.dtypes:
            rounded = [np.asarray(a, dtype).astype(np.float64) for a in session.plan.values[d]]
            got = session.get(dtype, kw, "eval")[..., where]
            want = _in_dtype(oracle(*rounded, **domain.kwargs), dtype)
            rtol, atol = wrapper.tolerances[dtype]
            kwtext = f" with {dict(domain.kwargs)}" if domain.kwargs else ""
            worst = max(
                worst, _compare(got, want, rtol, atol, f"{dtype} domain {d}{kwtext}", rounded)
            )
    return worst


def _edge_points(wrapper: ScipyWrapper) -> list[EdgeCase]:
    points = list(wrapper.edge_cases)
    for domain in wrapper.domains:
        mid = [
            float(np.round((lo + hi) / 2)) if i in domain.integers else (lo + hi) / 2
            for i, (lo, hi) in enumerate(domain.bounds)
        ]
        for i, (lo, hi) in enumerate(domain.bounds):
            for value in (*_SPECIAL_VALUES, lo, hi):
                args = list(mid)
                args[i] = value
                points.append(EdgeCase(tuple(args), domain.kwargs))
    return points


def check_edge_cases(wrapper: ScipyWrapper, session: _Session | None = None) -> float | None:
    """+-0, +-inf, nan, the domain boundaries and declared edge cases equal SciPy's values."""
    session = session or _Session(wrapper)
    oracle = _checked_oracle(wrapper)
    worst = 0.0
    for kw, columns in session.plan.edges.items():
        kwargs = dict(kw)
        where = session.plan.segment(kw, "edges")
        for dtype in wrapper.dtypes:
            args = [c.astype(dtype).astype(np.float64) for c in columns]
            got = session.get(dtype, kw, "eval")[..., where]
            want = _in_dtype(oracle(*args, **kwargs), dtype)
            rtol, atol = wrapper.tolerances[dtype]
            kwtext = f" with {kwargs}" if kwargs else ""
            worst = max(worst, _compare(got, want, rtol, atol, f"{dtype} edge case{kwtext}", args))
    return worst


def check_gradients(wrapper: ScipyWrapper, session: _Session | None = None) -> float | None:
    """Gradients in the differentiable arguments agree with finite differences of SciPy."""
    if not wrapper.differentiable:
        raise CheckSkipped("the wrapper declares no differentiable argument")
    if "float64" not in wrapper.dtypes:
        raise CheckSkipped("gradients are checked in float64, which the wrapper does not support")
    session = session or _Session(wrapper)
    oracle = _checked_oracle(wrapper)
    worst = 0.0
    for kw, columns in session.plan.grads.items():
        grads = session.get("float64", kw, "grad")
        for d, start, stop in session.plan.grad_domains[kw]:
            domain = wrapper.domains[d]
            args = [c[start:stop] for c in columns]
            for i in wrapper.differentiable:
                got = grads[i][..., start:stop]
                h = 1e-6 * np.maximum(1.0, np.abs(args[i]))
                up, down = list(args), list(args)
                up[i], down[i] = args[i] + h, args[i] - h
                high, low = oracle(*up, **domain.kwargs), oracle(*down, **domain.kwargs)
                fd = (np.asarray(high) - np.asarray(low)) / (2 * h)
                scale = float(np.max(np.abs(fd[np.isfinite(fd)]), initial=1.0))
                worst = max(
                    worst,
                    _compare(
                        got,
                        fd,
                        1e-5,
                        1e-7 * scale,
                        f"d/d(argument {i}), domain {d}",
                        args,
                        "finite differences",
                    ),
                )
    return worst


def check_jit_vmap(wrapper: ScipyWrapper, session: _Session | None = None) -> float | None:
    """``jit`` on a vector, ``vmap``, and scalar calls (``lax.map``) agree; and in every
    dtype, no value depends on its batch (see :func:`check_batch_independence`)."""
    session = session or _Session(wrapper)
    for each in wrapper.dtypes:
        check_batch_independence(wrapper, each, session)
    dtype = wrapper.dtypes[0]
    kw = _kw_key(wrapper.domains[0].kwargs)
    vector = session.get(dtype, kw, "eval")[..., session.plan.segment(kw, "jit_vmap")]
    parts = session.get(dtype, kw, "jit_vmap")
    args = session.plan.jit_vmap
    # The copies compile apart from the vector (at STRUCTURE_COMPILE on CPU), so their last
    # bits may differ where XLA contracts a*b + c differently: near a zero of the function
    # that is large relative to the value, hence the wrapper's own absolute floor, as
    # check_values uses.  A wrong batching rule moves values far above both.
    rtol, atol = wrapper.tolerances[dtype]
    worst = _compare(parts["vmap"], vector, rtol, atol, "vmap vs jit", args, "jit")
    return max(
        worst,
        _compare(
            parts["scalar"], vector, rtol, atol, "scalar calls vs jit on a vector", args, "jit"
        ),
    )


def check_batch_independence(
    wrapper: ScipyWrapper, dtype: str, session: _Session | None = None
) -> None:
    """A few points computed among themselves equal, bit for bit, the same points computed
    in a batch with the sampled values, the domain bounds, +-0, +-inf and nan: a stopping
    rule that waits for the whole batch fails here.  Both batches run through one compiled
    program, with the points in the same places, so nothing but their companions differs.
    """
    session = session or _Session(wrapper)
    kw = _kw_key(wrapper.domains[0].kwargs)
    in_batch = session.get(dtype, kw, "eval")[..., session.plan.segment(kw, "jit_vmap")]
    alone = session.get(dtype, kw, "among_themselves")
    _same_bits(alone, in_batch, f"{dtype} batch independence", session.plan.jit_vmap)


def _plain(value: Any) -> str:
    """A value as Python writes it (``0.1``, ``[0.1, 2.0]``), not NumPy's ``np.float64(0.1)``:
    the shortest repr that reads back to the same number."""
    return repr(np.asarray(value).tolist())


def _same_bits(alone: Any, in_batch: Any, what: str, points: Sequence[Any]) -> None:
    """CheckFailure naming the first point where ``alone`` and ``in_batch`` differ in any
    bit (+0 is not -0); a nan equals any nan, whatever its payload."""
    alone, in_batch = np.asarray(alone), np.asarray(in_batch)
    if np.iscomplexobj(alone) or np.iscomplexobj(in_batch):
        alone = np.stack([alone.real, alone.imag])
        in_batch = np.stack([in_batch.real, in_batch.imag])
    same = (alone == in_batch) & (np.signbit(alone) == np.signbit(in_batch))
    same |= np.isnan(alone) & np.isnan(in_batch)
    if not same.all():
        i = int(np.argmin(same.reshape(-1, same.shape[-1]).all(axis=0)))
        at = ", ".join(_plain(np.asarray(p)[i]) for p in points)
        raise CheckFailure(
            f"{what}: at ({at}) the points among themselves give {_plain(alone[..., i])}, "
            f"in a batch with edge cases {_plain(in_batch[..., i])} (compared bitwise)"
        )


_RUNNERS: Final[dict[str, Callable[[ScipyWrapper, _Session], float | None]]] = {
    "values": check_values,
    "edge_cases": check_edge_cases,
    "gradients": check_gradients,
    "jit_vmap": check_jit_vmap,
}


def run_scipy_check(
    wrapper: ScipyWrapper, check: str, session: _Session | None = None
) -> CheckResult:
    """Run one check; ``session`` shares compiled evaluations with the wrapper's other checks."""

    def run() -> float | None:
        # inf - inf and 0/0 at edge cases are expected, not warnings worth raising.
        with np.errstate(all="ignore"):
            return _RUNNERS[check](wrapper, session or _Session(wrapper))

    result = guarded(check, run)
    if check in _ORACLE_CHECKS and result.status == "pass" and not result.message:
        note = _cache_note(wrapper)  # shown by `jext check --verbose`
        if note is not None:
            result = dataclasses.replace(result, message=f"the oracle: {note}")
    return result


def _cache_note(wrapper: ScipyWrapper) -> str | None:
    """Why the wrapper's oracle keeps no answers in ``jext check``'s cache, if it does not."""
    try:
        oracle = oracle_of(wrapper)
    except Exception:  # the checks themselves say why the oracle cannot be found
        return None
    return uncached_reason(oracle)


def start_session(wrapper: ScipyWrapper, pool: Executor) -> _Session:
    """The shared evaluations of ``wrapper``, started on ``pool``; pass to :func:`scipy_report`."""
    session = _Session(wrapper)
    session.start(pool)
    return session


def scipy_report(
    wrapper: ScipyWrapper,
    *,
    checks: Sequence[str] = SCIPY_CHECKS,
    plugin: str | None = None,
    kind: str = "scipy",
    progress: Callable[[str, CheckResult], None] | None = None,
    session: _Session | None = None,
) -> PrimitiveReport:
    """Run ``checks`` on ``wrapper``; ``session`` (see :func:`start_session`) may have
    started its evaluations already."""
    results = []
    session = session or _Session(wrapper)
    # An audit holds jax.scipy's own function, which a plugin's replacement may shadow
    # under the jext.scipy name: the report names what was checked.
    name = wrapper.qualified_name
    if kind == "scipy-audit":
        name = f"jax.scipy.{wrapper.scope}.{wrapper.name}"
    for check in checks:
        result = run_scipy_check(wrapper, check, session)
        if progress is not None:
            progress(name, result)
        results.append(result)
    details = {"mirrors": wrapper.mirrors, "max_error": "relative error, absolute floor per dtype"}
    return PrimitiveReport(name, kind, tuple(results), plugin, details)
