"""The API reference (docs/api, Sphinx) builds without a warning and lists every public
name, and the examples in jext's docstrings run as doctests (plugin autoload disabled)."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import zlib
from pathlib import Path

import jext

ROOT = Path(__file__).resolve().parents[1]
#: The public modules, as docs/stability.md lists them; each has an ``__all__``.
PUBLIC = [
    "jext",
    "jext.primitives",
    "jext.lowering",
    "jext.hooks",
    "jext.hookspecs",
    "jext.typing",
    "jext.random",
    "jext.scipy",
    "jext.testing",
]
DOCTEST = """
import doctest, importlib, sys
failed = attempted = 0
for name in sys.argv[1:]:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    failed, attempted = failed + result.failed, attempted + result.attempted
print(f"{attempted} attempted")
sys.exit(1 if failed else 0)
"""


def _run(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JEXT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if path is not None:
        env["PYTHONPATH"] = path
    return subprocess.run(
        [sys.executable, "-W", "error", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def _inventory(objects_inv: Path) -> set[str]:
    """The object names in a Sphinx ``objects.inv`` (four header lines, then zlib)."""
    lines = objects_inv.read_bytes().split(b"\n", 4)
    body = zlib.decompress(lines[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines() if " py:" in line}


def test_the_api_reference_builds_and_lists_every_public_name(tmp_path: Path) -> None:
    out = tmp_path / "html"
    built = _run("-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs/api", str(out))
    assert built.returncode == 0, built.stdout + built.stderr
    documented = _inventory(out / "objects.inv")
    missing = [
        f"{module}.{name}"
        for module in PUBLIC
        for name in importlib.import_module(module).__all__
        if f"{module}.{name}" not in documented
    ]
    assert missing == []


def test_the_public_modules_are_the_documented_ones() -> None:
    """A new public subpackage must be added to docs/api/index.rst and to PUBLIC."""
    index = (ROOT / "docs" / "api" / "index.rst").read_text()
    assert [m for m in PUBLIC if f".. jext-public:: {m}\n" not in index] == []
    subpackages = {
        f"jext.{m.name}"
        for m in pkgutil.iter_modules(jext.__path__)
        if m.ispkg and not m.name.startswith("_")
    }
    # jext.rng_impls is the code of the bundled jext-rng plugin, reached through jext.random.
    assert sorted(subpackages - set(PUBLIC)) == ["jext.rng_impls"]


def test_the_docstring_examples_run() -> None:
    modules = [
        m.name for m in pkgutil.walk_packages(jext.__path__, "jext.") if m.name != "jext.__main__"
    ]
    result = _run("-c", DOCTEST, *modules)
    assert result.returncode == 0, result.stdout + result.stderr
    assert int(result.stdout.split()[-2]) >= 15  # the examples of primitive, export, ...


def test_a_wrong_docstring_example_fails(tmp_path: Path) -> None:
    (tmp_path / "wrong_example.py").write_text('def f():\n    """\n    >>> 1 + 1\n    3\n    """\n')
    result = _run("-c", DOCTEST, "wrong_example", path=str(tmp_path))
    assert result.returncode == 1 and "Expected:\n    3" in result.stdout
