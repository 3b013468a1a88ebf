"""jext's pytest plugin: light until used, the project's own plugins by default, no empty pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jext._registry import Registry
from jext.testing._pytest_plugin import own_plugins, selected_cases

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = "from jext.testing import test_jext_conformance  # noqa: F401\n"


def pytest_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def test_a_session_that_never_uses_jext_imports_no_jax(tmp_path: Path) -> None:
    (tmp_path / "test_plain.py").write_text(
        "import sys\n\n"
        "def test_plain():\n"
        "    assert 'jax' not in sys.modules and 'jext' not in sys.modules\n"
    )
    result = pytest_in(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    usage = pytest_in(tmp_path, "--help")
    assert "--jext-check" in usage.stdout and "--jext-plugin" in usage.stdout


def test_a_selection_that_matches_nothing_fails(tmp_path: Path) -> None:
    (tmp_path / "test_conf.py").write_text(CONFORMANCE)
    result = pytest_in(tmp_path, "--jext-check", "nothing.matches.*")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout and "skipped" not in result.stdout
    assert "nothing registered matches" in result.stdout
    # A folder no plugin was installed from has nothing of its own: a failure, not a pass.
    result = pytest_in(tmp_path)
    assert result.returncode == 1 and "none is installed from" in result.stdout


def test_a_pattern_checks_every_check_of_the_matching_items(tmp_path: Path) -> None:
    (tmp_path / "test_conf.py").write_text(CONFORMANCE)
    result = pytest_in(tmp_path, "--jext-check", "example.cumsum", "-rA")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASSED test_conf.py::test_jext_conformance[primitive:example.cumsum]" in result.stdout
    assert "1 passed" in result.stdout


def test_this_repository_owns_the_bundled_plugins() -> None:
    # Installed with `pip install -e . -e plugins/...` from this folder.
    assert own_plugins(ROOT) == [
        "example-native",
        "example-primitives",
        "example-vendor",
        "jext-rng",
        "jext-rng-native",
        "scipy-special",
    ]
    assert own_plugins(ROOT / "tests") == []


def test_cases_cover_every_kind_and_broken_plugins(
    catalog_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(catalog_site))
    for var in ("JEXT_PLUGINS", "JEXT_DISABLE_PLUGINS", "JEXT_STRICT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JEXT_PLUGINS", "mytrial,fault-raises,example-primitives")
    reg = Registry()
    with pytest.warns(UserWarning):
        reg.load()
    cases = selected_cases(ROOT, [], ["mytrial", "fault-raises"], reg)
    assert cases == [
        ("plugin", "fault-raises"),
        ("primitive", "mytrial.shift"),
        ("rng", "mytrial.philox"),
        ("scipy", "jext.scipy.special.mytrial_exprel"),
    ]
    assert selected_cases(ROOT, ["*.softplus"], [], reg) == [("primitive", "example.softplus")]
