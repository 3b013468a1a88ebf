"""docs/plugins.md's minimal plugin (examples/jext-minimal), installed for real and checked.

It is pip-installed into a throwaway venv made from the running interpreter (no system
site packages; a ``.pth`` file adds the running site-packages), then its own test suite
runs there: jext's pytest plugin finds it as the project's own plugin.  A copy with a
wrong JVP must fail.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "jext-minimal"
RIGHT_JVP = "t / jnp.square(1.0 + jnp.abs(x))"


def _venv_over_running(env: Path) -> Path:
    """A venv seeing the running interpreter's packages through ``site.addsitedir``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    dirs = dict.fromkeys([*site.getsitepackages(), sysconfig.get_path("purelib")])
    lines = [f"import site; site.addsitedir({d!r})" for d in dirs]
    (Path(purelib) / "_jext_running_env.pth").write_text("\n".join(lines) + "\n")
    return python


def _install(python: Path, source: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check",
         str(source)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def _run(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python, project folder): the example copied (builds write next to the sources)."""
    root = tmp_path_factory.mktemp("guide")
    project = Path(shutil.copytree(EXAMPLE, root / "jext-minimal"))
    python = _venv_over_running(root / "venv")
    _install(python, project)
    return python, project


def test_the_guide_plugin_is_discovered_and_owns_its_namespace(
    installed: tuple[Path, Path],
) -> None:
    python, project = installed
    listing = _run(python, project, "-m", "jext", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    plugins = {p["name"]: p for p in json.loads(listing.stdout)["plugins"]}
    assert plugins["minimal"]["status"] == "loaded"
    assert plugins["minimal"]["distribution"] == "jext-minimal"
    prims = {p["name"]: p["plugin"] for p in json.loads(listing.stdout)["primitives"]}
    assert prims["minimal.softsign"] == "minimal"


def test_the_guide_plugin_passes_its_own_conformance_suite(
    installed: tuple[Path, Path],
) -> None:
    python, project = installed
    result = _run(python, project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA")
    assert result.returncode == 0, result.stdout + result.stderr
    # Only its own plugin, though jext's example plugins are installed too.
    assert (
        "PASSED tests/test_conformance.py::test_jext_conformance[primitive:minimal.softsign]"
        in (result.stdout)
    )
    assert "1 passed" in result.stdout and "example." not in result.stdout


def test_a_wrong_jvp_in_the_guide_plugin_fails_its_suite(tmp_path: Path) -> None:
    env = _venv_over_running(tmp_path / "venv")
    broken = Path(shutil.copytree(EXAMPLE, tmp_path / "jext-minimal"))
    module = broken / "src" / "jext_minimal" / "__init__.py"
    source = module.read_text()
    assert RIGHT_JVP in source
    module.write_text(source.replace(RIGHT_JVP, "2.0 * t / jnp.square(1.0 + jnp.abs(x))"))
    _install(env, broken)
    result = _run(env, broken, "-m", "pytest", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout and "jvp" in result.stdout
