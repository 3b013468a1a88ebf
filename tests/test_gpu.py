"""On a GPU: the GPU platform's own rule runs there, and exports travel between CPU and GPU.

Every test here carries the ``gpu`` marker; tests/conftest.py skips them where JAX has no
cuda or rocm backend.  An export is made in one process and loaded in another whose JAX
sees only the CPU (``JAX_PLATFORMS=cpu``), so "made on GPU, run on CPU" is meant literally.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.lowering
from jext.random import RngImpl
from jext.rng_impls import CHACHA20, PHILOX4X64, THREEFRY4X64
from jext.testing._rng_checks import run_rng_check
from tests import prims
from tests.conftest import gpu_devices

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
X = np.linspace(-1.0, 1.0, 4, dtype=np.float32)
PLATFORMS = ("cpu", "cuda", "rocm")

# What prims.by_platform computes with each platform's rule.
CPU_RULE = np.sin(X) + 1
GPU_RULE = np.tanh(X)


@jext.primitive("tests.gpu_rule_per_platform")
def per_platform(x: jax.Array, /) -> jax.Array:
    return x


@per_platform.def_lowering(platform="cuda")
def _per_platform_cuda(x: jax.Array) -> jax.Array:
    return x + 10


@per_platform.def_lowering(platform="rocm")
def _per_platform_rocm(x: jax.Array) -> jax.Array:
    return x + 20


def gpu_platform(device: jax.Device) -> str:
    """``cuda`` or ``rocm``: JAX names both backends' devices ``gpu``."""
    try:
        return "cuda" if device in jax.devices("cuda") else "rocm"
    except RuntimeError:  # no cuda backend at all
        return "rocm"


def run_on_cpu_only(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter whose JAX sees only the CPU."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    env.update(JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(ROOT), *sys.path]))
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_platform_rule_runs_on_the_gpu() -> None:
    device = gpu_devices()[0]
    platform = gpu_platform(device)
    x = jax.device_put(X, device)
    for run in (per_platform, jax.jit(per_platform)):  # eager and jitted
        out = run(x)
        assert out.devices() == {device}
        np.testing.assert_allclose(out, X + {"cuda": 10, "rocm": 20}[platform])
    np.testing.assert_allclose(jax.jit(prims.by_platform)(x), GPU_RULE, rtol=1e-6)
    # The same function on the CPU runs the CPU rule, in the same process.
    cpu = jax.device_put(X, jax.devices("cpu")[0])
    np.testing.assert_allclose(jax.jit(prims.by_platform)(cpu), CPU_RULE, rtol=1e-6)
    np.testing.assert_allclose(per_platform(cpu), X)


def test_an_export_made_on_the_gpu_runs_on_the_cpu(tmp_path: Path) -> None:
    device = gpu_devices()[0]
    with jax.default_device(device):
        exported = jext.lowering.export(prims.by_platform, jnp.asarray(X), platforms=PLATFORMS)
        np.testing.assert_allclose(exported.call(jnp.asarray(X)), GPU_RULE, rtol=1e-6)
    path = tmp_path / "by_platform.bin"
    path.write_bytes(exported.exported.serialize())
    result = run_on_cpu_only(
        f"""
        import json, jax, numpy as np
        restored = jax.export.deserialize(bytearray(open({str(path)!r}, "rb").read()))
        out = restored.call(np.asarray({X.tolist()!r}, np.float32))
        print(json.dumps([jax.default_backend(), np.asarray(out).tolist()]))
        """
    )
    assert result.returncode == 0, result.stderr
    backend, values = json.loads(result.stdout)
    assert backend == "cpu"
    np.testing.assert_allclose(values, CPU_RULE, rtol=1e-6)


def test_an_export_made_on_the_cpu_runs_on_the_gpu(tmp_path: Path) -> None:
    path = tmp_path / "by_platform.bin"
    result = run_on_cpu_only(
        f"""
        import jax, numpy as np
        import jext.lowering
        from tests import prims
        assert jax.default_backend() == "cpu"
        x = np.asarray({X.tolist()!r}, np.float32)
        exported = jext.lowering.export(prims.by_platform, x, platforms={PLATFORMS!r})
        open({str(path)!r}, "wb").write(exported.exported.serialize())
        """
    )
    assert result.returncode == 0, result.stderr
    restored = jax.export.deserialize(bytearray(path.read_bytes()))
    device = gpu_devices()[0]
    out = restored.call(jax.device_put(X, device))
    assert out.devices() == {device}
    np.testing.assert_allclose(out, GPU_RULE, rtol=1e-6)
    cpu = jax.device_put(X, jax.devices("cpu")[0])
    np.testing.assert_allclose(restored.call(cpu), CPU_RULE, rtol=1e-6)


@pytest.mark.parametrize("form", ["rolled", "pallas"])
def test_each_gpu_form_of_the_rngs_gives_the_known_answers_and_the_cpu_bits(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forms a GPU runs (docs/rng.md, "Forms"), compiled there: jext check's
    known-answer check passes, and batched keys give the bits the CPU gives."""
    device = gpu_devices()[0]
    platform = gpu_platform(device)
    if form == "pallas" and platform != "cuda":
        pytest.skip("the pallas form runs on cuda (Triton) only")
    monkeypatch.setenv("JEXT_RNG_FORM", f"{platform}={form}")
    jax.clear_caches()  # JEXT_RNG_FORM is read at lowering
    try:
        for impl in (PHILOX4X64, CHACHA20, THREEFRY4X64):
            with jax.default_device(device):
                result = run_rng_check(impl, "known_answers")
            assert result.status == "pass", (impl.name, result.message)
            words = np.random.default_rng(7).integers(0, 2**32, (3, *impl.key_shape), np.uint32)

            def bits(data: jax.Array, impl: RngImpl = impl) -> jax.Array:
                keys = jax.random.wrap_key_data(data, impl=impl.jax_impl)
                return jax.vmap(lambda k: jax.random.bits(k, (2**16 + 3,), jnp.uint32))(keys)

            on_gpu = jax.jit(bits)(jax.device_put(words, device))
            assert on_gpu.devices() == {device}
            on_cpu = jax.jit(bits)(jax.device_put(words, jax.devices("cpu")[0]))
            np.testing.assert_array_equal(np.asarray(on_gpu), np.asarray(on_cpu))
    finally:
        jax.clear_caches()
