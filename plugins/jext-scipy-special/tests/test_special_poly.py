"""The orthogonal polynomials (every ``eval_*``) through ``jext check``.

One shared session per wrapper runs every check (values on the declared domains, the edge
grid, ``jit``/``vmap``/scalar calls, gradients against central differences of the oracle)
from one compiled program (float64).  Oracles: SciPy at integer degrees (called with an
integer: SciPy's recurrence), mpmath for the real-degree Chebyshev functions (SciPy's
``hyp2f1`` form is inaccurate there).  ``test_special_misc.py`` holds the misc family and
the checker's tests for integer sampling and several results.
"""

from __future__ import annotations

import pytest
from _special_cases import assert_check_passes
from jext_scipy_special._functions import _poly_family

from jext.scipy import ScipyWrapper

FAMILY = list(_poly_family.WRAPPERS)


@pytest.mark.parametrize("wrapper", FAMILY, ids=[w.name for w in FAMILY])
def test_jext_check_passes(wrapper: ScipyWrapper) -> None:
    assert_check_passes(wrapper)
