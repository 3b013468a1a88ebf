"""``bench/bench_scipy.py`` times every registered SciPy wrapper.

Cheap: the bench's rows are built on 4 values each, nothing is compiled or timed.
"""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jext._registry import registry

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_scipy.py"


@pytest.fixture(scope="module")
def bench() -> types.ModuleType:
    # The bench sets JAX_ENABLE_X64 on import; keep that out of this process's environment.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JAX_ENABLE_X64", "1")
        spec = importlib.util.spec_from_file_location("bench_scipy", BENCH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows(bench: types.ModuleType) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench, "N", 4)
        cases: dict[str, Any] = bench.all_cases(np.random.default_rng(0))
    return cases


def test_every_registered_scipy_wrapper_has_a_bench_row(
    bench: types.ModuleType, rows: dict[str, Any]
) -> None:
    timed = {bench.wrapper_key(row) for row in rows}
    registered = {
        key
        for key, owners in registry().scipy_wrappers().items()
        if key[0] in ("special", "stats") and any(o.plugin == "scipy-special" for o in owners)
    }
    assert registered, "the bundled scipy-special plugin registered no wrappers"
    assert sorted(registered - timed) == [], "add these to bench/bench_scipy.py"
    assert sorted(timed - registered) == [], "bench rows for no registered wrapper"


def test_rows_have_matching_inputs(rows: dict[str, Any]) -> None:
    for row, (_, _, args) in rows.items():
        assert args and all(np.shape(a) == (4,) for a in args), row


def test_markdown_table_marks_short_rows(bench: types.ModuleType) -> None:
    rows = [("erfcinv", 4, 2e-3, 1e-3, 0.5), ("exp2", 4, 1e-3, 3e-3, 3.0)]
    text = bench.markdown("cpu, 2 cores", "1.00", "2.00", rows, "9")
    lines = text.splitlines()
    assert "1 of 2 rows >= 1.0x SciPy; short: erfcinv." in lines
    assert "| `erfcinv` | 4 | 2.0 | 1.0 | 0.50 | short |" in lines
    assert "| `exp2` | 4 | 1.0 | 3.0 | 3.00 | >= 1.0 |" in lines
