"""``jext init NAME``: the plugin it writes installs, passes ``jext check`` and its own tests."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from jext._cli import main
from jext._scaffold import check_name, scaffold, templates
from tests.test_plugin_guide import _install, _run, _venv_over_running


@pytest.mark.slow
def test_the_scaffold_installs_checks_and_tests_green(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Named "conformance": a unit test named after the plugin would replace the
    # conformance test, and the project's pytest would run no jext check.
    project = tmp_path / "work" / "jext-conformance"
    assert main(["init", "conformance", "--dir", str(project)]) == 0
    assert "jext check --plugin conformance" in capsys.readouterr().out
    python = _venv_over_running(tmp_path / "venv")
    _install(python, project)

    listing = _run(python, project, "-m", "jext", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    prims = {p["name"]: p["plugin"] for p in json.loads(listing.stdout)["primitives"]}
    assert prims["conformance.logcosh"] == "conformance"
    plugins = {p["name"]: p for p in json.loads(listing.stdout)["plugins"]}
    assert plugins["conformance"]["namespaces"] == ["conformance"]
    assert plugins["conformance"]["distribution"] == "jext-conformance"

    check = _run(python, project, "-m", "jext", "check", "--plugin", "conformance")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "conformance.logcosh" in check.stdout and "1 passed, 0 failed" in check.stdout

    tests = _run(python, project, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert (
        "PASSED tests/test_conformance.py::test_jext_conformance[primitive:conformance.logcosh]"
        in tests.stdout
    )
    assert "PASSED tests/test_logcosh.py::test_values_and_gradient" in tests.stdout


def test_the_scaffold_declares_its_plugin_and_namespace(tmp_path: Path) -> None:
    written = scaffold("mylib", tmp_path / "p")
    names = {str(p.relative_to(tmp_path / "p")) for p in written}
    assert {
        "pyproject.toml",
        "README.md",
        ".github/workflows/ci.yml",
        "src/jext_mylib/__init__.py",
        "tests/test_conformance.py",
        "tests/test_logcosh.py",
    } <= names
    pyproject = tomllib.loads((tmp_path / "p" / "pyproject.toml").read_text())
    assert pyproject["project"]["name"] == "jext-mylib"
    assert pyproject["project"]["entry-points"]["jext"] == {"mylib": "jext_mylib"}
    source = (tmp_path / "p" / "src" / "jext_mylib" / "__init__.py").read_text()
    assert '@jext.primitive("mylib.logcosh")' in source
    assert "def_jvp" in source and "def_examples" in source
    conformance = (tmp_path / "p" / "tests" / "test_conformance.py").read_text()
    assert "from jext.testing import test_jext_conformance  # noqa: F401" in conformance
    ci = (tmp_path / "p" / ".github" / "workflows" / "ci.yml").read_text()
    assert "pytest" in ci and "jext check --plugin mylib" in ci
    for path in written:  # every placeholder filled in
        assert not re.search("__(NAME|MODULE|DIST)__", path.read_text()), path


@pytest.mark.parametrize("name", ["conformance", "logcosh", "mylib", "test", "jext_conformance"])
def test_every_template_file_lands_whatever_the_name(name: str, tmp_path: Path) -> None:
    """A name equal to a template's file name (the plugin "conformance" and the
    conformance test) never makes one template replace another."""
    written = scaffold(name, tmp_path / "p")
    relative = [p.relative_to(tmp_path / "p").as_posix() for p in written]
    assert sorted(relative) == sorted(
        [
            "pyproject.toml",
            "README.md",
            ".gitignore",
            ".github/workflows/ci.yml",
            f"src/jext_{name}/__init__.py",
            f"src/jext_{name}/py.typed",
            "tests/test_conformance.py",
            "tests/test_logcosh.py",
        ]
    )
    for path, text in zip(written, [text for _, text in templates(name)], strict=True):
        assert path.read_text(encoding="utf-8") == text
    conformance = (tmp_path / "p" / "tests" / "test_conformance.py").read_text()
    assert "from jext.testing import test_jext_conformance" in conformance
    unit = (tmp_path / "p" / "tests" / "test_logcosh.py").read_text()
    assert f"from jext_{name} import logcosh" in unit


@pytest.mark.parametrize("name", ["1lib", "my-lib", "my.lib", "café", "class", "jext", ""])
def test_a_name_that_cannot_be_a_namespace_is_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=r"namespace|identifier"):
        check_name(name)
    assert main(["init", name, "--dir", str(tmp_path / "p")]) == 2
    assert "jext init: " in capsys.readouterr().err
    assert not (tmp_path / "p").exists()


def test_an_existing_folder_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jext-mylib").mkdir()
    (tmp_path / "jext-mylib" / "keep.txt").write_text("mine")
    assert main(["init", "mylib"]) == 2
    assert "exists" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "jext-mylib").iterdir()] == ["keep.txt"]
    with pytest.raises(FileExistsError):
        scaffold("mylib")
