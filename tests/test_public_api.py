"""The public facades: sorted, complete ``__all__`` lists that hand out the very objects."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import jext
import jext.hookspecs
import jext.lowering
import jext.typing
from jext import _errors
from jext.lowering import _export
from jext.primitives import _example, _markers, _primitive

# jext.primitives() is the registry's function; the subpackage of that name is reached by import.
FACADES = [
    jext,
    importlib.import_module("jext.primitives"),
    jext.lowering,
    jext.typing,
    jext.hookspecs,
]


@pytest.mark.parametrize("module", FACADES, ids=lambda m: m.__name__)
def test_all_is_sorted_and_complete(module: types.ModuleType) -> None:
    assert module.__all__ == sorted(module.__all__)
    # Everything jext itself defines and the module exposes must be listed.
    defined_here = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and str(getattr(value, "__module__", "")).startswith("jext")
    }
    assert defined_here <= set(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_facade_hands_out_the_implementation_objects() -> None:
    assert jext.primitive is _primitive.primitive
    assert jext.Primitive is _primitive.Primitive
    assert jext.LinearOperand is _markers.LinearOperand is jext.typing.LinearOperand
    assert jext.JextError is _errors.JextError
    assert jext.lowering.export is _export.export
    primitives = importlib.import_module("jext.primitives")
    assert primitives.CheckOptions is _example.CheckOptions
    assert jext.Example is primitives.Example is _example.Example


def test_error_hierarchy() -> None:
    for name in [
        "DefinitionError",
        "DuplicateNameError",
        "LoweringError",
        "RuleError",
        "StaticParamError",
        "TransposeError",
        "UnknownNameError",
    ]:
        assert issubclass(getattr(jext, name), jext.JextError)
    assert issubclass(jext.StaticParamError, TypeError)
    assert issubclass(jext.UnknownNameError, KeyError)
    assert str(jext.UnknownNameError("no 'x'; did you mean 'y'?")) == "no 'x'; did you mean 'y'?"


# Every entry-point scan and metadata lookup goes through Distribution.discover; the probe
# records the scans of each step after `import jax` (which scans for its own plugins).
_IMPORT_PROBE = """
import importlib.metadata as md, json, sys
scans = []
real = md.Distribution.discover.__func__
md.Distribution.discover = classmethod(lambda cls, **kw: scans.append(1) or real(cls, **kw))
import jax
steps = {}
def step(name, code):
    scans.clear()
    exec(code, globals())
    steps[name] = [len(scans), sorted(m for m in sys.modules if m.split(".")[0] in (
        "pluggy", "jext_example_primitives") or m.startswith("jax.extend"))]
step("import jext", "import jext")
step("jext.primitive", "jext.primitive")
step("jext.load_plugins()", "jext.load_plugins()")
print(json.dumps(steps))
"""


def test_import_jext_scans_no_entry_points_and_defers_the_core() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    steps = json.loads(result.stdout)
    scans, modules = steps["import jext"]
    assert scans == 0
    # Neither pluggy, nor jax.extend (the primitive core's import), nor any plugin yet.
    assert modules == []
    scans, modules = steps["jext.primitive"]
    assert scans == 0 and "jax.extend.core" in modules and "jext_example_primitives" not in modules
    scans, modules = steps["jext.load_plugins()"]
    assert scans > 0 and "jext_example_primitives" in modules  # the probe sees a real scan


def test_unknown_attribute_and_submodule_access() -> None:
    with pytest.raises(AttributeError, match="no attribute 'primitve'"):
        jext.primitve  # type: ignore[attr-defined]  # noqa: B018
    registry_module = importlib.import_module("jext._registry")
    assert jext._registry is registry_module
    assert "primitive" in dir(jext)


def test_importing_the_primitives_subpackage_keeps_the_registry_function() -> None:
    code = (
        "import importlib, types, jext, jext._registry\n"
        "sub = importlib.import_module('jext.primitives')\n"  # first import of the subpackage
        "assert jext.primitives is jext._registry.primitives, jext.primitives\n"
        "assert isinstance(sub, types.ModuleType) and jext.primitive is sub.primitive\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_lazy_names_are_the_type_checkers_imports() -> None:
    # jext/__init__.py says each name twice: in `if TYPE_CHECKING:` for type checkers and
    # stubgen, and in _LAZY for the import at first read.  Both must say the same.
    tree = ast.parse(Path(jext.__file__ or "").read_text())
    blocks = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    imported = {
        alias.asname or alias.name: (
            f"{node.module}.{alias.name}" if node.module == "jext" else node.module
        )
        for block in blocks
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert imported == jext._LAZY
    assert sorted(imported) == sorted([*jext.__all__, "hooks", "random"])
    for name, module in imported.items():
        source = importlib.import_module(module)
        expected = source if module == f"jext.{name}" else getattr(source, name)
        assert getattr(jext, name) is expected, name
