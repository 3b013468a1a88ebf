"""Values against SciPy on each function's sampled domain, float64 and float32."""

from __future__ import annotations

import numpy as np
import pytest
from _special_cases import CASE_IDS, CASES, FLOOR, JITTED, Case, check_close, reference, sample, x64

# More than one chunk (2048), so the chunked / partitioned path is exercised.
N = 3000


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_matches_scipy(case: Case, dt: type) -> None:
    args = sample(case, dt, N)
    ref = reference(case, args)
    with x64(dt is np.float64):
        got = np.asarray(JITTED[case.name](*args))
    assert got.dtype == dt
    check_close(got, ref, case.rtol[dt], FLOOR[dt])
