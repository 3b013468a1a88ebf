"""Where ``jext check`` spends its time: SciPy wrappers program by program, primitives by check.

Run: ``JEXT_NO_CACHE=1 python bench/profile_check.py [NAME-OR-GLOB ...]`` (default: every
installed wrapper; add ``--markdown`` for a table).  Each wrapper's shared programs (values
per dtype at the default compilation, ``jit_vmap`` and ``grad`` at ``STRUCTURE_COMPILE``)
are compiled and run one after another on the main thread, so CPU seconds belong to one
program; then the checks compare with SciPy.  Per program it prints CPU seconds, and
JAX's own wall-clock durations of tracing, lowering to MLIR and XLA's compilation
(``jax.monitoring``).  Nothing runs in parallel here: the sum of CPU seconds over two
cores is the floor of what ``jext check`` can take cold with these programs.  ``--smoke``
(what ``tests/test_bench.py`` runs) profiles one fast wrapper unless names are given.

``python bench/profile_check.py --plugin example-native [--reps N] [--markdown]``: every
check of every primitive of a plugin (default ``example-native``; ``bench-flash`` is
``bench/_flash_attention.py``, at ``BENCH_FLASH_SHAPE`` if set), one check after another
on the main thread, in fresh interpreters: cold (nothing cached) and warm (programs read
back from a cache folder that a first run filled), alternating, N times each (default 3).
Per check it prints medians of the wall seconds and of their parts: tracing, lowering to
MLIR and XLA's compile (``jax.monitoring``; on a warm run the compile step is mostly
reading the cache, the part in the column ``cache read``), ``jax.export`` (the export for
every platform, with its own tracing and lowering), and the rest (running the programs,
finite differences, comparisons, Python).  What checks share (the export, the eager call,
the programs of each dtype) counts in the first check that needs it.  Nested ``jit``
traces count in the trace column twice, so the rest is a floor.
"""

from __future__ import annotations

import fnmatch
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jax import monitoring

from jext._registry import registry
from jext.testing import _checks as ck
from jext.testing import _scipy_checks as sc

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
_CACHE_READ = "/jax/compilation_cache/cache_retrieval_time_sec"
SMOKE_WRAPPER = "jext.scipy.special.cbrt"  # --smoke's default: a wrapper that compiles fast
_current = threading.local()
_durations: dict[tuple[str, str, str], dict[str, float]] = {}


def _listen(event: str, duration_secs: float, **_: str | int) -> None:
    key = getattr(_current, "key", None)
    if getattr(_current, "exporting", False):
        return  # counted in the export's own time
    if key is not None and event == _CACHE_READ:
        into = _durations.setdefault(key, {})
        into["cache read"] = into.get("cache read", 0.0) + duration_secs
    if key is not None and event in _EVENTS:
        into = _durations.setdefault(key, {})
        into[_EVENTS[event]] = into.get(_EVENTS[event], 0.0) + duration_secs


def profile(wrapper: Any) -> dict[str, Any]:
    """CPU seconds of each shared program of ``wrapper`` and of its checks."""
    name = wrapper.qualified_name
    session = sc._Session(wrapper)
    programs = []
    cpu0 = time.process_time()
    for kw in session.plan.columns:
        for dtype in wrapper.dtypes:
            for program in sc._PROGRAMS:
                if not session._wanted(dtype, kw, program):
                    continue
                key = (dtype, kw, program)
                _current.key = (name, f"{dtype} {dict(kw) or ''}", program)
                start = time.process_time()
                session._results[key] = session._guarded(dtype, kw, program)
                cpu = time.process_time() - start
                programs.append(
                    {"program": _current.key[1:], "cpu": cpu, **_durations.get(_current.key, {})}
                )
                _current.key = None
    start = time.process_time()
    report = sc.scipy_report(wrapper, session=session)
    checks = time.process_time() - start
    return {
        "name": name,
        "programs": programs,
        "checks": checks,
        "total": time.process_time() - cpu0,
        "ok": report.ok,
    }


# --- primitives: each check by phase, cold and warm ------------------------------------

PHASES = ("trace", "lower", "compile", "cache read", "export", "rest")


@contextmanager
def _timed_exports() -> Iterator[None]:
    """Time ``jax.export`` calls of the checks as the phase ``export`` of the current key."""
    # The check module's own name for jext.lowering.export (the checks call it by that name).
    namespace = vars(ck)
    real = namespace["export_for"]

    def export_for(*args: Any, **kwargs: Any) -> Any:
        key = getattr(_current, "key", None)
        _current.exporting = True
        start = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            _current.exporting = False
            if key is not None:
                into = _durations.setdefault(key, {})
                into["export"] = into.get("export", 0.0) + time.perf_counter() - start

    namespace["export_for"] = export_for
    try:
        yield
    finally:
        namespace["export_for"] = real


def profile_primitives(
    plugin: str, *, only: tuple[str, ...] = (), checks: tuple[str, ...] = ck.PRIMITIVE_CHECKS
) -> dict[str, dict[str, dict[str, float]]]:
    """{primitive: {check: {"wall", "cpu", phase: seconds}}} for ``plugin``'s primitives
    (or those in ``only``)."""
    reg = registry()
    names = [
        n
        for n, owner in reg.primitive_owners().items()
        if owner == plugin and (not only or n in only)
    ]
    if not names:
        raise SystemExit(f"plugin {plugin!r} registers no primitives")
    out: dict[str, dict[str, dict[str, float]]] = {}
    with _timed_exports():
        for name in names:
            prim = reg.get_primitive(name)
            examples = prim.examples()
            shared = [ck._Shared(checks) for _ in examples]
            for check in checks:
                key = _current.key = (name, check, "")
                wall, cpu = time.perf_counter(), time.process_time()
                result = ck.run_check(prim, check, examples, shared=shared)
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                _current.key = None
                if result.status == "fail":
                    raise SystemExit(f"{name} {check} failed: {result.message}")
                parts = _durations.get(key, {})
                timed = sum(parts.get(p, 0.0) for p in PHASES if p != "cache read")
                row = {"wall": wall, "cpu": cpu, **parts, "rest": max(0.0, wall - timed)}
                out.setdefault(name, {})[check] = row
    return out


_CHILD = """
import json, sys, warnings
from pathlib import Path
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import profile_check as pc
from jax import monitoring
from jext.testing._cache import check_cache_in
monitoring.register_event_duration_secs_listener(pc._listen)
if sys.argv[2] == "bench-flash":  # bench/_flash_attention.py, registered in code
    import jext, _flash_attention as flash
    jext.register_plugin(flash, flash.NAME)
cache = Path(sys.argv[3]) if sys.argv[3] else None
with check_cache_in(cache):
    print(json.dumps(pc.profile_primitives(sys.argv[2])))
"""


def _child(plugin: str, cache: str) -> dict[str, dict[str, dict[str, float]]]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(Path(__file__).parent), plugin, cache],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result: dict[str, dict[str, dict[str, float]]] = json.loads(out.strip().splitlines()[-1])
    return result


def _medians(
    runs: list[dict[str, dict[str, dict[str, float]]]],
) -> dict[str, dict[str, dict[str, float]]]:
    first = runs[0]
    return {
        name: {
            check: {
                part: statistics.median(r[name][check].get(part, 0.0) for r in runs)
                for part in ("wall", "cpu", *PHASES)
            }
            for check in checks
        }
        for name, checks in first.items()
    }


def _print_primitives(
    medians: dict[str, dict[str, dict[str, dict[str, float]]]],
    markdown: bool,
    out: Callable[[str], None] = print,
) -> None:
    columns = ["wall", "cpu", *PHASES]
    for state, table in medians.items():
        out(f"\n{state}: medians, seconds (wall; CPU of all threads; wall by phase)")
        header = ["primitive", "check", *columns]
        if markdown:
            out("| " + " | ".join(header) + " |")
            out("|" + "---|" * len(header))
        else:
            out("  ".join(f"{h:>10}" if i > 1 else f"{h:<16}" for i, h in enumerate(header)))
        totals = dict.fromkeys(columns, 0.0)
        for name, checks in table.items():
            for check, row in checks.items():
                cells = [f"{row[c]:.3f}" for c in columns]
                for c in columns:
                    totals[c] += row[c]
                if markdown:
                    out(f"| {name} | {check} | " + " | ".join(cells) + " |")
                else:
                    out(f"{name:<16}  {check:<16}  " + "  ".join(f"{x:>10}" for x in cells))
        cells = [f"{totals[c]:.2f}" for c in columns]
        if markdown:
            out("| **all** | | " + " | ".join(f"**{x}**" for x in cells) + " |")
        else:
            out(f"{'all':<16}  {'':<16}  " + "  ".join(f"{x:>10}" for x in cells))
        # Cache reads happen inside XLA's compile step: a part of it, not a phase beside it.
        share = ", ".join(
            f"{p} {totals[p] / totals['wall']:.0%}"
            + (
                f" (cache reads {totals['cache read'] / totals['wall']:.0%})"
                if p == "compile"
                else ""
            )
            for p in PHASES
            if p != "cache read" and totals["wall"] > 0
        )
        out(f"{state}: {totals['wall']:.2f} s wall in all, of which {share}")


def main_primitives(argv: list[str]) -> None:
    plugin = argv[argv.index("--plugin") + 1] if "--plugin" in argv else "example-native"
    reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 3
    if "--smoke" in argv:
        reps = 1
    runs: dict[str, list[dict[str, dict[str, dict[str, float]]]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="jext-profile-cache-") as folder:
        _child(plugin, folder)  # fills the cache folder
        for _ in range(reps):  # interleaved, so machine load hits both alike
            runs["cold"].append(_child(plugin, ""))
            runs["warm"].append(_child(plugin, folder))
    print(f"plugin {plugin}: every check of each primitive, {reps} fresh interpreters per state")
    _print_primitives({state: _medians(r) for state, r in runs.items()}, "--markdown" in argv)


# --- SciPy wrappers: each program ---------------------------------------------------------


def main() -> None:
    if "--plugin" in sys.argv:
        main_primitives(sys.argv[1:])
        return
    warnings.simplefilter("ignore")
    markdown = "--markdown" in sys.argv
    patterns = [a for a in sys.argv[1:] if a not in ("--markdown", "--smoke")]
    monitoring.register_event_duration_secs_listener(_listen)
    if "--smoke" in sys.argv and not patterns:
        patterns = [SMOKE_WRAPPER]
        # The primitives' profile too, in this process, on one check of one primitive.
        one = profile_primitives("example-primitives", only=("example.softplus",), checks=("jit",))
        _print_primitives({"smoke": _medians([one])}, markdown)
    wrappers = {
        f"jext.scipy.{scope}.{n}": owners[0].item
        for (scope, n), owners in registry().scipy_wrappers().items()
    }
    chosen = [
        n for n in wrappers if not patterns or any(fnmatch.fnmatchcase(n, p) for p in patterns)
    ]
    sums: dict[str, float] = {}
    for name in chosen:
        row = profile(wrappers[name])
        for p in row["programs"]:
            kind = "values" if p["program"][1] == "values" else p["program"][1]
            sums[kind] = sums.get(kind, 0.0) + p["cpu"]
            for what in ("trace", "lower", "compile"):
                sums[f"{what} wall"] = sums.get(f"{what} wall", 0.0) + p.get(what, 0.0)
        sums["checks"] = sums.get("checks", 0.0) + row["checks"]
        sums["total"] = sums.get("total", 0.0) + row["total"]
        parts = ", ".join(f"{' '.join(p['program'])} {p['cpu']:.2f}" for p in row["programs"])
        if markdown:
            print(
                f"| {name} | {len(row['programs'])} | {parts} "
                f"| {row['checks']:.2f} | {row['total']:.2f} |"
            )
        else:
            print(
                f"{name}: {row['total']:.2f} s CPU ({parts}; checks {row['checks']:.2f})",
                flush=True,
            )
    n = max(1, len(chosen))
    print(
        f"{len(chosen)} wrappers, CPU s per wrapper: total {sums.get('total', 0) / n:.2f} = "
        + ", ".join(f"{k} {v / n:.2f}" for k, v in sums.items() if k != "total")
        + f"; floor on 2 cores {sums.get('total', 0) / n / 2:.2f} s per wrapper"
    )


if __name__ == "__main__":
    main()
