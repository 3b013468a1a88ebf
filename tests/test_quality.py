"""Static checks as tests: ``mypy --strict`` and ``ruff check`` are clean on the project."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import jext
from jext.primitives import rules
from jext.primitives._rules import Rules

ROOT = Path(__file__).resolve().parents[1]
# Every package in plugins/ too (tests/typing has its own test, test_typing.py).
TYPED = [
    "jext",
    "examples",
    "bench",
    *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("plugins/*/src")),
]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_mypy_strict_is_clean() -> None:
    result = run("mypy", "--strict", *TYPED)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_type_ignores_live_in_the_jax_layer() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in (ROOT / "jext").rglob("*.py")
        if path.name != "_jax.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "type: ignore" in line
    ]
    assert offenders == []
    for line in (ROOT / "jext" / "_jax.py").read_text().splitlines():
        if "type: ignore" in line:
            assert "type: ignore[" in line, line


# --- layering --------------------------------------------------------------------------------

# jext's modules from the bottom up: a module may import its own layer and those below,
# never one above, not even inside a function.  The core (primitives, lowering, RNGs)
# asks the plugin layer through jext._host, which the registry installs.
LAYERS = (
    ("jext._errors", "jext._host", "jext._jax"),
    ("jext.primitives", "jext.typing"),
    ("jext.lowering",),
    ("jext.rng_impls",),
    ("jext.random",),
)
PLUGIN_LAYER = len(LAYERS)  # everything else: the hookspecs, the registry, jext.scipy, ...


def layer(module: str) -> int:
    for i, names in enumerate(LAYERS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return PLUGIN_LAYER


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    where = ROOT / Path(*name.split("."))
    return where.with_suffix(".py").exists() or where.is_dir()


def jext_imports(source: str, package: str) -> list[tuple[int, str, bool]]:
    """``(line, module, annotation_only)`` of each jext module ``source`` (in ``package``)
    imports, at any depth; annotation-only: under ``if TYPE_CHECKING:`` (never run)."""
    tree = ast.parse(source)
    annotations: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            annotations.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    found: list[tuple[int, str, bool]] = []
    for node in ast.walk(tree):
        only = id(node) in annotations
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, only) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((node.lineno, sub if is_module(sub) else base, only))
    return [f for f in dict.fromkeys(found) if f[1] == "jext" or f[1].startswith("jext.")]


CORE_PACKAGES = ("jext.primitives", "jext.lowering", "jext.rng_impls", "jext.random")


def layering_offenders(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """Imports from a layer above ``module``'s.  An annotation-only import may name a type
    from above (``jext/_host.py`` names the primitive it stores), but never, in the core
    packages, one of the plugin layer."""
    if layer(module) == PLUGIN_LAYER:
        return []
    package = module if is_package else module.rpartition(".")[0]
    in_core = module.startswith(tuple(p + "." for p in CORE_PACKAGES)) or module in CORE_PACKAGES
    return [
        f"{module}:{line} imports {imported}"
        for line, imported, annotation_only in jext_imports(source, package)
        if layer(imported) > layer(module)
        and (not annotation_only or (in_core and layer(imported) == PLUGIN_LAYER))
    ]


def test_the_core_never_imports_the_plugin_layer() -> None:
    offenders = [
        offender
        for path in sorted((ROOT / "jext").rglob("*.py"))
        for offender in layering_offenders(
            module_name(path), path.read_text(), is_package=path.name == "__init__.py"
        )
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "statement",
    [
        "from jext._registry import registry",
        "import jext._registrars",
        "from jext import scipy",
        "from .. import _registry",
        "import jext",
        "from jext.random import key",
        "from jext.hookspecs import hookimpl",
        "from jext import _bundled_rng_plugin",
    ],
)
def test_the_layering_check_finds_an_import_from_above(statement: str) -> None:
    source = f"def _late() -> None:\n    {statement}\n"
    assert layering_offenders("jext.rng_impls._common", source) != []
    annotation = f"if TYPE_CHECKING:\n    {statement}\n"
    if "random" not in statement:  # a type from the core above may be named, not the plugin layer
        assert layering_offenders("jext.rng_impls._common", annotation) != []
    assert layering_offenders("jext.scipy._scopes", source) == []  # the plugin layer may


# The registry's own modules: jext.scipy imports the registry, so none of them may import
# jext.scipy back (a cycle), not even inside a function; a type may be named for annotations.
REGISTRY_MODULES = (
    "jext._discovery",
    "jext._hookcall",
    "jext._hookkinds",
    "jext._registry",
    "jext._store",
    "jext._views",
)


def scipy_imports(module: str, source: str) -> list[str]:
    package = module.rpartition(".")[0]
    return [
        f"{module}:{line} imports {imported}"
        for line, imported, annotation_only in jext_imports(source, package)
        if not annotation_only and (imported == "jext.scipy" or imported.startswith("jext.scipy."))
    ]


def test_the_registry_never_imports_jext_scipy() -> None:
    offenders = [
        offender
        for module in REGISTRY_MODULES
        for offender in scipy_imports(module, (ROOT / f"{module.replace('.', '/')}.py").read_text())
    ]
    assert offenders == []


def test_the_scipy_import_check_finds_a_late_import() -> None:
    late = "def commit() -> None:\n    from jext.scipy._scopes import in_jax\n"
    assert scipy_imports("jext._store", late) != []
    annotation = "if TYPE_CHECKING:\n    from jext.scipy._wrapper import ScipyWrapper\n"
    assert scipy_imports("jext._store", annotation) == []


def unexplained_imports(source: str) -> list[int]:
    """Lines of imports inside a function that give no reason: each says why on its line
    (``# noqa: PLC0415 - why``), or a comment just above its run of imports does."""
    lines = source.splitlines()
    found = []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if any("PLC0415 -" in lines[n - 1] for n in range(node.lineno, node.end_lineno + 1)):
                continue
            above = node.lineno - 2  # walk up over the imports (and blank lines) of its run
            while above >= 0 and (
                not lines[above].strip()
                or lines[above].lstrip().startswith(("import ", "from ", ")"))
                or lines[above].startswith(" " * (node.col_offset + 4))
            ):
                above -= 1
            if above < 0 or not lines[above].lstrip().startswith("#"):
                found.append(node.lineno)
    return found


def test_every_import_inside_a_function_says_why() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "jext").rglob("*.py"))
        for line in unexplained_imports(path.read_text())
    ]
    assert offenders == []


def test_the_import_reason_check_finds_an_import_without_one() -> None:
    bare = "def f() -> None:\n    x = 1\n    import math\n"
    assert unexplained_imports(bare) == [3]
    assert unexplained_imports(bare.replace("math", "math  # noqa: PLC0415 - heavy")) == []
    assert unexplained_imports(bare.replace("    x = 1", "    # math loads late")) == []


def imported_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    return []


def test_only_the_jax_layer_imports_jax_internals() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / "jext").rglob("*.py"))
        if path.name != "_jax.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if any(name.startswith("jax._src") for name in imported_names(node))
    ]
    assert offenders == []


# --- the shape of the code ---------------------------------------------------------------

MAX_CLASS_LINES = 450


def long_classes(source: str, limit: int = MAX_CLASS_LINES) -> list[str]:
    """``name (lines)`` of each class in ``source`` longer than ``limit`` lines."""
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_no_class_in_jext_exceeds_450_lines() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "jext").rglob("*.py"))
        for name in long_classes(path.read_text())
    ]
    assert offenders == []


def test_the_class_size_check_finds_a_long_class() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_CLASS_LINES))
    assert long_classes(f"class Big:\n{body}") == [f"Big ({MAX_CLASS_LINES + 1} lines)"]
    assert long_classes(f"class Fits:\n{body[: body.rindex('    x')]}") == []


def test_each_rule_kind_is_one_module_registered_in_the_table() -> None:
    """Adding a rule kind is one module under ``jext/primitives/rules/`` and one table row:
    every such module is in the table, every row comes from one, and each ``def_*`` method
    of ``Primitive`` declares through its row.  The rules record keeps the kinds' fields
    by name and the table it was made with, so it has no field of its own for a kind
    (``tests/primitives/test_rule_kinds.py`` adds a kind)."""
    folder = ROOT / "jext" / "primitives" / "rules"
    kind_modules = {
        f"jext.primitives.rules.{p.stem}"
        for p in folder.glob("_*.py")
        if p.stem not in ("__init__", "_kind")
    }
    assert {m.__name__ for m in rules.MODULES} == kind_modules
    for module in rules.MODULES:
        assert module.KINDS, module.__name__
        for kind in module.KINDS:
            assert rules.KINDS[kind.name] is kind
            assert kind.declare.__module__ == module.__name__
            assert callable(getattr(jext.Primitive, kind.declaration))
    declarations = {kind.declaration for kind in rules.KINDS.values()}
    rule_methods = {
        name
        for name in vars(jext.Primitive)
        if name.startswith("def_") and name not in ("def_examples", "def_check_options")
    }
    assert rule_methods == declarations
    record = [f.name for f in dataclasses.fields(Rules)]
    assert record == ["reference_platforms", "kinds", "values"]
