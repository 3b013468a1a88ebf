"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import plugin_packages as pp


@pytest.fixture(scope="session")
def catalog_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The throwaway plugins of tests/plugin_packages.py, installed for real (once a session)."""
    return pp.build_and_install(pp.ALL, tmp_path_factory.mktemp("catalog"))


def run_python(code: str, site: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``site`` first on its path, no JEXT_* set."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    full_env.update(env, PYTHONPATH=os.pathsep.join([str(site), *sys.path]))
    return subprocess.run(
        [sys.executable, "-c", code], env=full_env, capture_output=True, text=True, check=False
    )
