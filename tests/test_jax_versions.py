"""jext/_jax.py absorbs every difference between the supported JAX releases, in one section.

CI runs the whole suite on the oldest supported JAX and on the newest installable one;
these tests keep the switches where a reader finds them.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
from pathlib import Path

import jax.extend.core

from jext import _jax

ROOT = Path(__file__).resolve().parents[1]
JAX_LAYER = ROOT / "jext" / "_jax.py"
SECTION = "# --- version switches ---"


def switches_section() -> str:
    text = JAX_LAYER.read_text()
    assert text.count(SECTION) == 1, f"jext/_jax.py needs one {SECTION!r} section"
    return text[text.index(SECTION) :]


def test_jax_version_is_the_installed_release() -> None:
    release = re.match(r"\d+(\.\d+)*", importlib.metadata.version("jax"))
    assert release is not None
    assert _jax.JAX_VERSION[:3] == tuple(int(p) for p in release.group().split("."))[:3]


def test_each_switch_names_the_release_and_change_it_absorbs() -> None:
    functions = [
        node for node in ast.parse(switches_section()).body if isinstance(node, ast.FunctionDef)
    ]
    assert functions, "no version switch found"
    for fn in functions:
        doc = ast.get_docstring(fn) or ""
        assert re.search(r"jax 0\.\d+", doc), f"{fn.name}: its docstring must name the release"


def test_the_version_is_read_only_in_the_switches_section() -> None:
    """A comparison with the JAX version anywhere else is a switch outside the one place."""
    before = JAX_LAYER.read_text().split(SECTION)[0]
    assert "JAX_VERSION" not in before and "__version" not in before
    offenders = [
        str(path.relative_to(ROOT))
        for path in [*ROOT.glob("jext/**/*.py"), *ROOT.glob("plugins/*/src/**/*.py")]
        if path != JAX_LAYER
        and re.search(r"jax\.__version|jaxlib\.__version|JAX_VERSION", path.read_text())
    ]
    assert offenders == []


def test_public_jax_extend_names_are_used_where_they_exist() -> None:
    for name in ("ClosedJaxpr", "Jaxpr", "Primitive", "jaxpr_as_fun"):
        assert getattr(_jax, name) is getattr(jax.extend.core, name), name
