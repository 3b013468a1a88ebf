"""A downstream repository, installed for real, type-checks clean under ``mypy --strict``.

The throwaway package has its own pyproject with a ``jext`` entry point, one primitive,
one hook implementation and one call into ``jext.scipy.special``.  It is installed into
a temporary environment, ``jext stubgen`` runs there, and mypy checks the package
against the generated stubs; a copy with a deliberately wrong call gives the error.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.plugin_packages import pip_install, venv_over_running

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "jext-downstream"
version = "0.1.0"
dependencies = ["jext"]

[project.entry-points.jext]
downstream = "jext_downstream"

[tool.setuptools.package-data]
jext_downstream = ["py.typed"]
"""

MODULE = '''
"""A downstream library: one primitive, one hook, one SciPy call."""

import jax
import jax.numpy as jnp

import jext
from jext.scipy import special


@jext.primitive("downstream.scale")
def scale(x: jax.Array, /, *, factor: float = 2.0) -> jax.Array:
    return x * factor


@jext.hooks.register_primitives
def _register(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(scale)


def smooth_step(x: jax.Array) -> jax.Array:
    return special.erf(scale(x, factor=0.5))
'''

USE = """
import jax.numpy as jnp

import jext

y = jext.get_primitive("downstream.scale")(jnp.ones(3), factor={factor})
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def downstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The downstream package's folder and the python of the environment it is installed in."""
    root = tmp_path_factory.mktemp("downstream")
    pkg = root / "repo"
    (pkg / "src" / "jext_downstream").mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(PYPROJECT)
    (pkg / "src" / "jext_downstream" / "__init__.py").write_text(textwrap.dedent(MODULE))
    (pkg / "src" / "jext_downstream" / "py.typed").write_text("")
    python = venv_over_running(root / "venv")
    installed = pip_install(python, str(pkg))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    stubs = root / "stubs"
    generated = run(str(python), "-m", "jext", "stubgen", "--out", str(stubs))
    assert generated.returncode == 0, generated.stderr
    installed = pip_install(python, str(stubs))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return pkg, python


def mypy(python: Path, cwd: Path, *paths: str) -> subprocess.CompletedProcess[str]:
    return run(
        sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python),
        "--cache-dir", str(ROOT / ".mypy_cache"), *paths, cwd=cwd,
    )  # fmt: skip


def test_downstream_package_type_checks_clean(downstream: tuple[Path, Path]) -> None:
    pkg, python = downstream
    (pkg / "use.py").write_text(textwrap.dedent(USE.format(factor="3.0")))
    result = mypy(python, pkg, "src/jext_downstream", "use.py")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_call_gives_the_expected_error(downstream: tuple[Path, Path]) -> None:
    pkg, python = downstream
    (pkg / "use_wrong.py").write_text(textwrap.dedent(USE.format(factor='"big"')))
    result = mypy(python, pkg, "use_wrong.py")
    assert result.returncode == 1
    assert (
        'use_wrong.py:6: error: Argument "factor" to "__call__" of "_downstream__scale" has '
        'incompatible type "str"; expected "float"  [arg-type]'
    ) in result.stdout
