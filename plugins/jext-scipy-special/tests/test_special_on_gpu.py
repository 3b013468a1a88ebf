"""On a GPU: the wrappers whose checks a ``jext check`` on an H100 (jax 0.11.2) failed.

GPUs keep float32 subnormals, which XLA on CPU flushes to 0, and they contract products
and sums differently, so a float32 kernel tuned on CPU can miss its declared tolerance
there.  Each test runs the wrapper's whole check on the GPU (the default device) and at
the point that failed; they skip where JAX has no GPU.
"""

from __future__ import annotations

from collections.abc import Iterator

import jax
import numpy as np
import pytest
import scipy.special as sc

import jext.testing
from jext.scipy import special


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:  # "Unknown backend: 'gpu' requested, but no platforms ..."
        return False


# Skipped here too, not only by the repository's tests/conftest.py: the plugin's own
# tests run on their own (`pytest plugins/jext-scipy-special/tests`) as well.
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not _has_gpu(), reason="needs a GPU: JAX has no cuda or rocm backend"),
]


@pytest.fixture
def on_gpu() -> Iterator[jax.Device]:
    gpu = jax.devices("gpu")[0]
    with jax.default_device(gpu):
        yield gpu


@pytest.mark.parametrize("name", ["gammainccinv", "gammaincinv", "elliprj", "smirnov"])
def test_float32_checks_pass_on_the_gpu(name: str, on_gpu: jax.Device) -> None:
    checks = ["values", "edge_cases"]
    (report,) = jext.testing.run_checks([f"jext.scipy.special.{name}"], checks=checks)
    assert report.ok, report.format()


def test_gammainccinv_float32_where_exp_of_minus_x_is_subnormal(on_gpu: jax.Device) -> None:
    # x near 102: e^-x = 5.6e-45 is subnormal in float32 (a product with that factor is 6e-4 off).
    a = np.full(4, 6.5464654, np.float32)
    q = np.array([2.4405658e-36, 1e-36, 1.878e-33, 1e-30], np.float32)
    got = np.asarray(jax.jit(special.gammainccinv)(a, q))
    want = sc.gammainccinv(a.astype(np.float64), q.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=5e-6)
