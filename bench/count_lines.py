"""Code lines of a forward/backward kernel pair: JAX's ``custom_vjp`` + ``ffi_call``, and jext.

Run from the repository root::

    python bench/count_lines.py [--jax PATH]

Counts code lines: no comments, no skipped, no blank lines, no imports (JAX's file is a
module of its own, jext's port shares its plugin module's imports); a statement formatted
over several lines counts each line.  Compared:

- JAX's ``examples/ffi/src/jax_ffi_example/rms_norm.py`` at :data:`JAX_TAG`: the
  registration of the handlers, ``rms_norm`` under ``jax.custom_vjp``, its ``fwd`` and
  ``bwd`` calling ``jax.ffi.ffi_call``.  ``--jax PATH`` recounts it from a JAX checkout or
  git directory (``git show JAX_TAG:...``); without it, :data:`JAX_RMS_NORM` is the count
  this script gave for that file.
- jext-example-native's port of it (``native.rms_norm_fwd``, ``native.rms_norm_bwd``
  through ``jext.lowering.ffi_rule``, ``native.rms_normalize`` with ``def_vjp``): the
  section of ``__init__.py`` that holds them, and the lines of the plugin's hooks that
  register them.  The C++ handlers are the same in both and not counted.

jext's primitives carry what JAX's example has not: a jnp reference per primitive (it gives
abstract evaluation, the lowering on every other platform and what ``jext check`` holds the
kernels to), examples for the checks, and sharding rules.  The jext count is given with
them and without them (without: each primitive's decorator and signature stay, its
reference body, its ``def_examples`` and its ``def_sharding`` go).

Goal: jext's port, without references, examples and sharding rules, at most 1.2x JAX's.
The Pallas pair ``native.layer_norm`` is counted the same way (its kernels and their
platform rules in ``_pallas.py``, its wiring in ``__init__.py``), with no JAX counterpart
written against the same kernels outside the tests: no ratio is given for it.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
PLUGIN: Final = ROOT / "plugins/jext-example-native/src/jext_example_native"

JAX_TAG: Final = "jax-v0.10.2"
JAX_RMS_NORM_PATH: Final = "examples/ffi/src/jax_ffi_example/rms_norm.py"
JAX_RMS_NORM: Final = 33
"""Code lines of JAX_RMS_NORM_PATH at JAX_TAG, as :func:`code_lines` counts them."""
GOAL: Final = 1.2

RMS_SECTION: Final = ("# --- native.rms_norm_fwd / native.rms_norm_bwd", "# --- native.counter")
LAYER_NORM_SECTION: Final = ("# --- native.layer_norm:", "# --- the plugin")
PALLAS_LAYER_NORM_SECTION: Final = ("# --- native.layer_norm:", None)
HOOKS_SECTION: Final = ("# --- the plugin", None)


def code_lines(source: str) -> set[int]:
    """The line numbers (1-based) of ``source`` that hold code: not blank, not only a
    comment, not part of a docstring or an import."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            skipped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                skipped.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return lines - skipped


def section(source: str, bounds: tuple[str, str | None]) -> tuple[int, int]:
    """The 1-based line range [first, last] from the line starting ``bounds[0]`` up to the
    line before the one starting ``bounds[1]`` (None: the end of the file)."""
    lines = source.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(bounds[0]))
    end = bounds[1]
    last = (
        len(lines)
        if end is None
        else next(i for i, line in enumerate(lines) if i > first and line.startswith(end))
    )
    return first + 1, last


def _is_call_to(node: ast.AST, attribute: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == attribute
    )


def extras(source: str) -> set[int]:
    """Lines of what JAX's example has no counterpart for: each jext primitive's reference
    body (its decorator and signature stay), ``def_examples`` functions and the functions
    they call (named ``*example*``), ``def_sharding`` calls."""
    out: set[int] = set()
    for node in ast.parse(source).body:
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.FunctionDef):
            decorators = node.decorator_list
            first = min([d.lineno for d in decorators] + [node.lineno])
            if "example" in node.name or any(
                isinstance(d, ast.Attribute) and d.attr == "def_examples" for d in decorators
            ):
                out.update(range(first, end + 1))
            elif any(
                isinstance(d, ast.Call)
                and isinstance(d.func, ast.Attribute)
                and d.func.attr == "primitive"
                for d in decorators
            ):
                out.update(range(node.body[0].lineno, end + 1))
        elif isinstance(node, ast.Expr) and _is_call_to(node.value, "def_sharding"):
            out.update(range(node.lineno, end + 1))
    return out


@dataclass(frozen=True)
class Count:
    """Code lines of one port, with and without what JAX's version has no counterpart for."""

    total: int
    without_extras: int


def count(path: Path, bounds: tuple[str, str | None], hook_names: tuple[str, ...]) -> Count:
    """Code lines of ``path`` within ``bounds``, plus the hook lines naming ``hook_names``."""
    source = path.read_text()
    first, last = section(source, bounds)
    code = {n for n in code_lines(source) if first <= n <= last}
    lines = source.splitlines()
    if hook_names:
        hook_first, hook_last = section(source, HOOKS_SECTION)
        code |= {
            n
            for n in code_lines(source)
            if hook_first <= n <= hook_last and any(h in lines[n - 1] for h in hook_names)
        }
    return Count(len(code), len(code - extras(source)))


def jax_rms_norm(jax: Path | None) -> tuple[int, str]:
    """JAX's example's count, and where it came from."""
    if jax is None:
        return JAX_RMS_NORM, f"{JAX_TAG} (recorded)"
    git_dir = jax if (jax / "HEAD").exists() and not (jax / ".git").exists() else jax / ".git"
    source = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{JAX_TAG}:{JAX_RMS_NORM_PATH}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return len(code_lines(source)), f"{JAX_TAG} (counted from {jax})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jax", type=Path, help="a JAX checkout or git dir holding " + JAX_TAG)
    parser.add_argument("--smoke", action="store_true", help="the same counts (they are quick)")
    args = parser.parse_args(argv)

    jax_count, origin = jax_rms_norm(args.jax)
    init = PLUGIN / "__init__.py"
    rms = count(init, RMS_SECTION, ("rms_norm_fwd", "rms_norm_bwd", "rms_normalize"))
    layer = count(init, LAYER_NORM_SECTION, ("layer_norm",))
    pallas = count(PLUGIN / "_pallas.py", PALLAS_LAYER_NORM_SECTION, ())

    ratio_all = rms.total / jax_count
    ratio = rms.without_extras / jax_count
    print("code lines (no comments, docstrings, blank lines or imports)")
    print(f"  JAX rms_norm.py, custom_vjp + ffi_call   {jax_count:4d}   {origin}")
    print(
        f"  jext rms_norm_fwd/bwd + rms_normalize     {rms.total:4d}   "
        f"{ratio_all:.2f}x, with references, examples, sharding rules"
    )
    print(
        f"  jext, without them                        {rms.without_extras:4d}   "
        f"{ratio:.2f}x, goal <= {GOAL}x: {'GOAL MET' if ratio <= GOAL else 'GOAL MISSED'}"
    )
    print(
        f"  jext layer_norm wiring (__init__.py)      {layer.total:4d}   "
        f"{layer.without_extras} without references and examples"
    )
    print(f"  jext layer_norm Pallas kernels + rules    {pallas.total:4d}   _pallas.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
