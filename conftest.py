"""The whole suite's pytest set-up (every folder of ``testpaths`` in pyproject.toml).

One XLA compilation cache per test run, shared by the pytest-xdist workers and every
Python subprocess the tests start: most of the suite's time is XLA compiling, and the
workers and subprocesses compile many of the same programs (the bundled RNGs' split and
bits, the example primitives).  The cache is keyed by the lowered program, the compile
options and the JAX version, so a test still lowers what it lowers (a changed rule is a
different program) and runs exactly the executable XLA compiled for it; a test run starts
with an empty cache, so nothing carries over from an earlier run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import jax
import pytest

pytest_plugins = ["pytester", "tests.collect_guard"]

# Programs faster to compile than this are not worth a disk write and read.
_MIN_COMPILE_SECS = "0.25"


# The run's cache folder, made by the first process (the xdist controller, or pytest
# without workers) and inherited by the workers it starts, which must not remove it.
_ENV = "JEXT_TESTS_XLA_CACHE"


def pytest_configure(config: pytest.Config) -> None:
    # Before collection: JAX decides once, at its first compile, whether to use a cache.
    folder = os.environ.get(_ENV)
    if folder is None:
        folder = tempfile.mkdtemp(prefix="jext-tests-xla-")
        os.environ[_ENV] = folder
        config.stash[_OWNED] = Path(folder)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder  # for the tests' subprocesses too
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = _MIN_COMPILE_SECS
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(_MIN_COMPILE_SECS))


def pytest_unconfigure(config: pytest.Config) -> None:
    owned = config.stash.get(_OWNED, None)
    if owned is not None:
        shutil.rmtree(owned, ignore_errors=True)
        del os.environ[_ENV]


_OWNED = pytest.StashKey[Path]()
