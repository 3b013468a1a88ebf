"""Where a cold ``jext check`` of SciPy wrappers spends its time, program by program.

Run: ``JEXT_NO_CACHE=1 python bench/profile_check.py [NAME-OR-GLOB ...]`` (default: every
installed wrapper; add ``--markdown`` for a table).  Each wrapper's shared programs (values
per dtype at the default compilation, ``jit_vmap`` and ``grad`` at ``STRUCTURE_COMPILE``)
are compiled and run one after another on the main thread, so CPU seconds belong to one
program; then the checks compare with SciPy.  Per program it prints CPU seconds, and
JAX's own wall-clock durations of tracing, lowering to MLIR and XLA's compilation
(``jax.monitoring``).  Nothing runs in parallel here: the sum of CPU seconds over two
cores is the floor of what ``jext check`` can take cold with these programs.  ``--smoke``
(what ``tests/test_bench.py`` runs) profiles one fast wrapper unless names are given.
"""

from __future__ import annotations

import fnmatch
import sys
import threading
import time
import warnings
from typing import Any

from jax import monitoring

from jext._registry import registry
from jext.testing import _scipy_checks as sc

_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
SMOKE_WRAPPER = "jext.scipy.special.cbrt"  # --smoke's default: a wrapper that compiles fast
_current = threading.local()
_durations: dict[tuple[str, str, str], dict[str, float]] = {}


def _listen(event: str, duration_secs: float, **_: str | int) -> None:
    key = getattr(_current, "key", None)
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


def main() -> None:
    warnings.simplefilter("ignore")
    markdown = "--markdown" in sys.argv
    patterns = [a for a in sys.argv[1:] if a not in ("--markdown", "--smoke")]
    if "--smoke" in sys.argv and not patterns:
        patterns = [SMOKE_WRAPPER]
    monitoring.register_event_duration_secs_listener(_listen)
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
