"""Fixtures shared by the test modules, and the ``gpu`` marker's skip."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import pytest

from tests import plugin_packages as pp


def gpu_devices() -> list[jax.Device]:
    """JAX's CUDA or ROCm devices; empty where JAX has no GPU backend."""
    try:
        return jax.devices("gpu")
    except RuntimeError:  # "Unknown backend: 'gpu' requested, but no platforms ..."
        return []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``gpu`` where JAX sees no GPU (asked only if one is collected)."""
    marked = [item for item in items if item.get_closest_marker("gpu") is not None]
    if marked and not gpu_devices():
        skip = pytest.mark.skip(reason="needs a GPU: JAX has no cuda or rocm backend here")
        for item in marked:
            item.add_marker(skip)


@pytest.fixture
def on_cpu() -> Iterator[jax.Device]:
    """JAX's default device is the CPU for the test: for tests that mean "the CPU rule".

    Uncommitted arrays (made without a device) follow the default device, so on a GPU
    machine the test still runs, and checks, the CPU rule.
    """
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        yield cpu


@pytest.fixture(scope="session")
def catalog_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The throwaway plugins of tests/plugin_packages.py, installed for real (once a session)."""
    return pp.build_and_install(pp.ALL, tmp_path_factory.mktemp("catalog"))


def run_python(code: str, site: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``site`` first on its path, no JEXT_* set
    (but JEXT_NO_CACHE, which keeps the suite's ``jext check`` runs out of the user's cache)."""
    full_env = {
        k: v for k, v in os.environ.items() if not k.startswith("JEXT_") or k == "JEXT_NO_CACHE"
    }
    full_env.update(env, PYTHONPATH=os.pathsep.join([str(site), *sys.path]))
    return subprocess.run(
        [sys.executable, "-c", code], env=full_env, capture_output=True, text=True, check=False
    )
