"""The ``sharding`` check: each primitive under a sharded ``jit`` on 8 host devices.

The device count is fixed when JAX starts, so the check runs in one subprocess (started
with ``--xla_force_host_platform_device_count=8``) for every primitive selected, while
the other checks run here.  For each example and each operand axis the primitive's
sharding rule lets the partitioner split, the subprocess compares the result of a
``jit`` with that operand sharded to the unsharded result, and looks for an all-gather
in the compiled program where the rule promises none.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Final

import jax
import numpy as np
from jax import tree_util

from jext import _jax
from jext._registry import get_primitive
from jext.primitives import _sharding, defined_primitives
from jext.testing._report import CheckResult

__all__ = ["SHARDING_CHECK", "check_sharding", "sharding_result", "start_sharding_session"]

SHARDING_CHECK: Final = "sharding"
DEVICES: Final = 8
MAX_RUNS: Final = 6
"""Sharded runs per primitive at most (each compiles a program)."""
TIMEOUT_S: Final = 600
_TAG: Final = "JEXT-SHARDING "

_pending: dict[str, Future[CheckResult]] = {}
_lock = threading.Lock()


def check_sharding(*prims: Any) -> dict[str, CheckResult]:
    """The ``sharding`` check of each of ``prims``, run in one subprocess on 8 host devices.

    Returns each primitive's result by name (never raises for a failed check), e.g. in a
    plugin's tests::

        results = jext.testing.check_sharding(rms_norm, softplus)
        assert results["mylib.rms_norm"].status == "pass", results["mylib.rms_norm"].message
    """
    futures: dict[str, Future[CheckResult]] = {p.name: Future() for p in prims}
    _run_into(list(prims), futures)
    return {name: future.result() for name, future in futures.items()}


def start_sharding_session(prims: Sequence[Any]) -> None:
    """Start checking ``prims`` in one subprocess, in the background; the results are
    collected by :func:`sharding_result`."""
    futures: dict[str, Future[CheckResult]] = {p.name: Future() for p in prims}
    with _lock:
        _pending.update(futures)
    thread = threading.Thread(
        target=_run_into, args=(list(prims), futures), name="jext-sharding", daemon=True
    )
    thread.start()


def sharding_result(prim: Any) -> CheckResult:
    """The sharding check of ``prim``: from the running session, or a subprocess of its own."""
    with _lock:
        future = _pending.pop(prim.name, None)
    if future is None:
        future = Future()
        _run_into([prim], {prim.name: future})
    return future.result()


def _run_into(prims: list[Any], futures: dict[str, Future[CheckResult]]) -> None:
    try:
        results = _run(prims)
    except Exception as err:  # the subprocess could not be run at all: every check fails
        results = {
            p.name: CheckResult(SHARDING_CHECK, "fail", f"could not run: {err}") for p in prims
        }
    for name, future in futures.items():
        future.set_result(results[name])


def _run(prims: list[Any]) -> dict[str, CheckResult]:
    payload = [(p.name, getattr(p.reference, "__module__", None)) for p in prims]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(
        XLA_FLAGS=f"--xla_force_host_platform_device_count={DEVICES}",
        JAX_PLATFORMS="cpu",
        # The subprocess imports a primitive's defining module as this process can: from
        # this process's path, less its entries relative to the current folder.
        PYTHONPATH=os.pathsep.join(p for p in sys.path if os.path.isabs(p)),
    )
    # Nothing from the current folder, which may be anyone's (a jax.py there would be
    # imported first): -P keeps it off the path (python -m prepends it otherwise), and the
    # subprocess runs in a private empty folder of its own.
    with tempfile.TemporaryDirectory(prefix="jext-sharding-") as private:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "jext.testing._sharding_check", json.dumps(payload)],
            env=env,
            cwd=private,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    results: dict[str, CheckResult] = {}
    for line in done.stdout.splitlines():
        if line.startswith(_TAG):
            got = json.loads(line[len(_TAG) :])
            error = got["max_error"]
            results[got["name"]] = CheckResult(
                SHARDING_CHECK,
                got["status"],
                got["message"],
                None if error is None else float(error),
            )
    tail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
    for p in prims:
        results.setdefault(
            p.name,
            CheckResult(
                SHARDING_CHECK, "fail", f"the subprocess on {DEVICES} devices died: {tail[0]}"
            ),
        )
    return results


# --- in the subprocess ---------------------------------------------------------------------


def _find(name: str, module: str | None) -> Any:
    known = defined_primitives().get(name)
    if known is None and module and module != "__main__":
        importlib.import_module(module)
        known = defined_primitives().get(name)
    return known if known is not None else get_primitive(name)


@dataclass(frozen=True, slots=True)
class _Run:
    """One sharded run: an operand axis split over ``devices`` devices."""

    operand: int
    dim: int
    devices: int
    kept: str | None  # the factor the rule keeps whole (then nothing runs)
    promised: bool  # the rule promises no all-gather
    tiles: tuple[tuple[int, int, int], ...] = ()  # (operand, axis, repeats) before the run


def _check(prim: Any) -> CheckResult:
    """Every sharded run of ``prim``'s examples: pass, or the first that fails."""
    examples = prim.examples()
    if not examples:
        return CheckResult(SHARDING_CHECK, "skip", "the primitive declares no examples")
    runs: list[str] = []
    kept: list[str] = []
    worst = 0.0
    for n, example in enumerate(examples):
        for run in _plan(prim, example):
            where = f"example {n}, operand {run.operand} axis {run.dim}"
            if run.kept is not None:
                kept.append(f"{where} ({_sharding.describe_factor(run.kept)})")
                continue
            if len(runs) >= MAX_RUNS:
                continue
            failure, error = _sharded_run(prim, example, run)
            if failure is not None:
                return CheckResult(
                    SHARDING_CHECK, "fail", f"{where} split over {run.devices} devices: {failure}"
                )
            worst = max(worst, error)
            tiled = " (tiled)" if run.tiles else ""
            runs.append(
                f"{where}{tiled} over {run.devices}"
                + ("" if run.promised else " (no rule: values only)")
            )
    if not runs:
        why = "; kept whole by the rule: " + ", ".join(kept) if kept else ""
        return CheckResult(
            SHARDING_CHECK, "skip", f"no operand axis can be split over 2 to 8 devices{why}"
        )
    message = f"sharded runs on {DEVICES} host devices: " + ", ".join(runs)
    if kept:
        message += "; kept whole by the rule: " + ", ".join(kept)
    return CheckResult(SHARDING_CHECK, "pass", message, worst)


def _plan(prim: Any, example: Any) -> list[_Run]:
    """A run per axis of each array operand.  With a sharding rule, an axis of odd size
    is tiled (with every axis of the same factor) until 8 devices divide it; without
    one, only axes that 2, 4 or 8 devices divide are split, and only values compared."""
    leaves = tree_util.tree_leaves(example.operands)
    avals = [_jax.typeof(x) for x in leaves]
    outs = tree_util.tree_leaves(
        jax.eval_shape(lambda *a: prim(*a, **example.params), *example.operands)
    )
    rules = prim.rules
    rule = _sharding.equation_rule(
        prim.name,
        rules.sharding,
        elementwise=rules.batching_kind == "elementwise",
        avals_in=avals,
        avals_out=[_jax.shaped_array(o.shape, o.dtype) for o in outs],
        levels=(),
        in_tree=tree_util.tree_structure(example.operands),
    )
    plan: list[_Run] = []
    for i, aval in enumerate(avals):
        for d, n in enumerate(aval.shape):
            if rule is None:
                size = next((k for k in (DEVICES, 4, 2) if n % k == 0), None)
                if size is not None:
                    plan.append(_Run(i, d, size, None, False))
                continue
            factor = rule.operands[i][d]
            if factor in rule.need_replication:
                plan.append(_Run(i, d, DEVICES, factor, False))
                continue
            repeats = DEVICES // math.gcd(n, DEVICES)
            tiles = tuple(
                (j, e, repeats)
                for j, factors in enumerate(rule.operands)
                for e, f in enumerate(factors)
                if f == factor and repeats > 1
            )
            plan.append(_Run(i, d, DEVICES, None, True, tiles))
    return plan


def _sharded_run(prim: Any, example: Any, run: _Run) -> tuple[str | None, float]:
    leaves, tree = tree_util.tree_flatten(example.operands)
    for j, axis, repeats in run.tiles:
        leaves[j] = np.concatenate([np.asarray(leaves[j])] * repeats, axis=axis)

    def call(*xs: Any) -> Any:
        return tree_util.tree_leaves(prim(*tree_util.tree_unflatten(tree, xs), **example.params))

    mesh = jax.sharding.Mesh(np.array(jax.devices()[: run.devices]), ("x",))
    spec: list[str | None] = [None] * np.ndim(leaves[run.operand])
    spec[run.dim] = "x"
    placed = [
        jax.device_put(x, _jax.named_sharding(mesh, spec if i == run.operand else []))
        for i, x in enumerate(leaves)
    ]
    jitted = jax.jit(call)
    want = jitted(*leaves)
    text = jitted.lower(*placed).compile().as_text() or ""
    got = jitted(*placed)
    worst = 0.0
    for k, (got_k, want_k) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(got_k), np.asarray(want_k)
        error = _error(g, w)
        if error > 0 and not _close(g, w):
            return f"result {k} differs from the unsharded run (max error {error:.3g})", error
        worst = max(worst, error)
    if run.promised and "all-gather" in text:
        rule = prim.rules.sharding
        how = f"rule {str(rule)!r}" if rule is not None else f"{prim.rules.sharding_source} rule"
        return (
            f"the compiled program all-gathers, though the {how} lets this axis be split "
            "(an opaque kernel without a sharding rule, or a rule that does not describe "
            "the kernel)",
            worst,
        )
    return None, worst


def _error(got: Any, want: Any) -> float:
    if got.dtype.kind not in "fc":
        return 0.0 if np.array_equal(got, want) else float("inf")
    diff = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
    both_nan = np.isnan(got) & np.isnan(want)
    return float(np.max(np.where(both_nan, 0.0, diff), initial=0.0))


def _close(got: Any, want: Any) -> bool:
    if got.dtype.kind not in "fc":
        return bool(np.array_equal(got, want))
    rtol = {2: 1e-2, 4: 2e-5, 8: 1e-12, 16: 1e-12}.get(
        got.dtype.itemsize // (2 if got.dtype.kind == "c" else 1), 1e-5
    )
    return bool(np.allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True))


def main(argv: Sequence[str]) -> int:
    """Check the primitives named in ``argv[0]`` (JSON ``[[name, module], ...]``)."""
    for name, module in json.loads(argv[0]):
        try:
            result = _check(_find(name, module))
        except Exception as err:  # a check that raised is a failure, as in the other checks
            result = CheckResult(
                SHARDING_CHECK, "fail", f"raised {type(err).__name__}: {str(err)[:500]}"
            )
        line = {"name": name, **result.to_json()}
        print(_TAG + json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
