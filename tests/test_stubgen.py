"""``jext stubgen``: the install hint, --plugin, --check, public import paths, no frozen JAX."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jax
import pytest
from jax.typing import ArrayLike

import jext
from jext._cli import EXIT_ENVIRONMENT, EXIT_USAGE, main
from jext._registry import Registry
from jext._stubgen import _Imports, _render_type, generate


def stubgen(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["stubgen", *args], out=out)
    return code, out.getvalue()


def test_the_install_hint_is_a_path_pip_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, text = stubgen("--out", "stubs")
    assert code == 0
    assert "install them with: pip install ./stubs\n" in text  # `pip install stubs`: PyPI
    _, text = stubgen("--out", str(tmp_path / "abs"))
    assert f"pip install {tmp_path / 'abs'}\n" in text


def test_plugin_selection_types_only_that_plugin_and_jext_core(tmp_path: Path) -> None:
    code, _ = stubgen("--out", str(tmp_path), "--plugin", "example-primitives")
    assert code == 0
    facade = (tmp_path / "jext-stubs" / "__init__.pyi").read_text()
    assert "Literal['example.softplus']" in facade
    special = (tmp_path / "jext-stubs" / "scipy" / "special.pyi").read_text()
    assert "jext_scipy_special" not in special  # another plugin's wrappers
    rng = (tmp_path / "jext-stubs" / "random" / "__init__.pyi").read_text()
    assert "'jext.philox4x64'" in rng  # core is always typed
    pyproject = (tmp_path / "pyproject.toml").read_text()
    assert 'plugins = ["example-primitives"]' in pyproject
    assert '"jext-example-primitives" = "0.1.0"' in pyproject
    assert "jext-scipy-special" not in pyproject
    assert "jax" not in re.findall(r'"(jax[a-z]*)" =', pyproject)  # no JAX version recorded
    assert stubgen("--out", str(tmp_path), "--plugin", "no-such")[0] == 2


def test_check_says_whether_the_stubs_are_current(tmp_path: Path) -> None:
    assert stubgen("--out", str(tmp_path))[0] == 0
    code, text = stubgen("--out", str(tmp_path), "--check")
    assert code == 0 and "are current" in text
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            '"jext-example-primitives" = "0.1.0"', '"jext-example-primitives" = "0.0.9"'
        )
    )
    code, text = stubgen("--out", str(tmp_path), "--check")
    assert code == 1
    assert "jext-example-primitives: made from 0.0.9, installed 0.1.0" in text
    assert "out of date" in text
    assert stubgen("--out", str(tmp_path / "empty"), "--check")[0] == 1


def test_stubs_import_plugins_by_public_paths_and_jax_scipy_by_star(tmp_path: Path) -> None:
    stubgen("--out", str(tmp_path))
    for scope in (tmp_path / "jext-stubs" / "scipy").glob("*.pyi"):
        text = scope.read_text()
        for module in re.findall(r"^from (\S+) import", text, flags=re.M):
            assert not any(part.startswith("_") for part in module.split(".")), (scope, module)
        if scope.stem in ("special", "stats", "linalg", "signal"):
            # jax.scipy's names differ between JAX releases: never frozen into a list.
            assert f"from jax.scipy.{scope.stem} import *\n" in text
            assert not re.search(rf"^from jax\.scipy\.{scope.stem} import \w", text, flags=re.M)
    special = (tmp_path / "jext-stubs" / "scipy" / "special.pyi").read_text()
    assert "from jext_scipy_special import ellipk as ellipk" in special


def test_array_like_is_written_by_its_public_name() -> None:
    """jax.typing.ArrayLike's members differ between JAX releases (0.8.3 adds a private
    class): written by name, the stubs read the same whichever supported JAX wrote them."""
    imports = _Imports()
    assert _render_type(ArrayLike, imports) == "jax.typing.ArrayLike"
    assert _render_type(ArrayLike | None, imports) == "jax.typing.ArrayLike | None"
    assert imports.lines() == ["import jax.typing"]
    # A union holding only some of its members is written out.
    assert _render_type(jax.Array | int, _Imports()) == "jax.Array | int"
    special = generate()["jext-stubs/scipy/special.pyi"]
    assert "(x: jax.typing.ArrayLike) -> jax.Array: ..." in special
    assert "_src" not in special


def _registry_with(plugins: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> Registry:
    """A registry of jext's core and ``plugins`` (by name) only."""
    monkeypatch.setenv("JEXT_DISABLE_PLUGIN_AUTOLOAD", "1")
    reg = Registry()
    for name, plugin in plugins.items():
        reg.register(plugin, name)
    reg.load()
    return reg


def test_names_that_differ_only_in_dot_or_underscore_get_their_own_classes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``clash.a_b`` and ``clash.a.b`` get a class each: with one class for both, mypy
    --strict would check a call of one against the other's signature."""

    @jext.primitive("clash.a_b")
    def a_b(x: jax.Array, /) -> jax.Array:
        return x

    @jext.primitive("clash.a.b")
    def a_dot_b(x: jax.Array, /, *, k: int) -> jax.Array:
        return x

    class Clash:
        @jext.hookimpl
        def jext_register_primitives(self, registry: jext.PrimitiveRegistrar) -> None:
            registry.add(a_b)
            registry.add(a_dot_b)

    facade = generate(_registry_with({"clash": Clash()}, monkeypatch))["jext-stubs/__init__.pyi"]
    returns = dict(
        re.findall(r"def get_primitive\(name: Literal\['(clash\.[\w.]+)'\]\) -> (\w+)", facade)
    )
    assert set(returns) == {"clash.a_b", "clash.a.b"}
    assert returns["clash.a_b"] != returns["clash.a.b"]
    for cls in returns.values():
        assert facade.count(f"class {cls}(") == 1
    assert "def __call__(self, x: jax.Array, /, *, k: int) -> jax.Array" in facade


def test_any_plugin_name_is_written_as_valid_toml(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plugin names are written as TOML strings, quotes and backslashes escaped (an
    entry-point name may hold them: ``say"hi``)."""
    odd = ['say"hi', "back\\slash", "tab\there", "ünï"]
    reg = _registry_with({name: object() for name in odd}, monkeypatch)
    pyproject = tomllib.loads(generate(reg, plugins=odd)["pyproject.toml"])
    assert pyproject["tool"]["jext-stubs"]["plugins"] == sorted(odd)


def test_an_output_that_cannot_be_written_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    assert stubgen("--out", str(tmp_path / "file" / "stubs"))[0] == EXIT_ENVIRONMENT
    err = capsys.readouterr().err
    assert (
        err
        == f"jext stubgen: cannot write the stubs: Not a directory: {tmp_path / 'file' / 'stubs'}\n"
    )


def test_a_cut_short_or_foreign_pyproject_is_bad_input_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert stubgen("--out", str(tmp_path))[0] == 0
    pyproject = tmp_path / "pyproject.toml"
    whole = pyproject.read_text()
    pyproject.write_text(whole[: whole.index("made-from") + 14])  # cut short
    assert stubgen("--out", str(tmp_path), "--check")[0] == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"jext stubgen: {pyproject} is not valid TOML: ") and err.count("\n") == 1
    pyproject.write_text('[tool.jext-stubs]\nplugins = "not a list"\n')
    assert stubgen("--out", str(tmp_path), "--check")[0] == EXIT_USAGE
    assert "is not what `jext stubgen` writes" in capsys.readouterr().err


# --- every annotation jext accepts is written so that it parses and type-checks -------------

# A module of its own (the stubs import the enum from it by its public path), annotated
# with every form below, one unresolvable forward reference among them.
_ANNOTATED = """\
from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Literal, Optional, Union

import jax
import jax.numpy as jnp
import jext


class Mode(enum.Enum):
    A = "a"
    B = "b"


class Later:
    pass


@jext.primitive("stubcase.op")
def op(
    x: jax.Array,
    /,
    *,
    mode: Literal[Mode.A, Mode.B] = Mode.A,
    name: Literal["s", "t"] = "s",
    level: Literal[1, -2] = 1,
    flag: Literal[True] = True,
    fn: Callable[..., jax.Array] = jnp.sin,
    pair: Callable[[jax.Array, int], jax.Array] | None = None,
    maybe: Optional[int] = None,
    either: Union[int, str] = 0,
    shape: tuple[int, ...] = (),
    pairs: tuple[int, str] = (1, "a"),
    nested: Optional[tuple[tuple[str, Callable[[], float]], ...]] = None,
    later: Later | None = None,
    ann: Annotated[int, "metadata"] = 0,
) -> jax.Array:
    return x


@jext.primitive("stubcase.ghostly")
def ghostly(x: jax.Array, /, *, ghost: NoSuchName = None, mode: Mode = Mode.A) -> jax.Array:
    return x


class Plugin:
    @jext.hookimpl
    def jext_register_primitives(self, registrar):
        registrar.add(op)
        registrar.add(ghostly)
"""

# What the stubs let a caller do, and the one call they must refuse (a name outside the
# Literal): proof that the types are written, not turned into Any.
_USE = """\
import jax.numpy as jnp

import stubcase_types
from facade_stub import get_primitive

op = get_primitive("stubcase.op")
x = jnp.ones(3)
op(x, mode=stubcase_types.Mode.B, name="t", level=-2, flag=True)
op(x, fn=jnp.cos, pair=lambda a, k: a * k, maybe=None, either="e", shape=(1, 2))
op(x, pairs=(2, "b"), nested=(("k", lambda: 1.0),), later=stubcase_types.Later(), ann=3)
get_primitive("stubcase.ghostly")(x, ghost=object(), mode=stubcase_types.Mode.B)
op(x, name="u")
"""


def test_stubs_parse_and_type_check_for_every_annotation_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Literal of enum members, of str/int/bool; Callable[..., X] and Callable[[A, B], X];
    Optional, Union and |; tuples; nested generics; forward references, one of them to
    nothing (written as Any); Annotated.  Every file parses, and mypy --strict accepts the
    stub and the calls it should, refusing only the one outside a Literal."""
    (tmp_path / "stubcase_types.py").write_text(_ANNOTATED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import stubcase_types

    files = generate(_registry_with({"stubcase": stubcase_types.Plugin()}, monkeypatch))
    for relative, text in files.items():
        if relative.endswith(".pyi"):
            ast.parse(text, filename=relative)
    facade = files["jext-stubs/__init__.pyi"]
    (signature,) = re.findall(r"class _stubcase__op\(RegisteredPrimitive\):\n    (.*)\n", facade)
    for written in (
        "mode: Literal[stubcase_types.Mode.A, stubcase_types.Mode.B] = ...",
        "name: Literal['s', 't'] = ...",
        "level: Literal[1, -2] = ...",
        "flag: Literal[True] = ...",
        "fn: collections.abc.Callable[..., jax.Array] = ...",
        "pair: collections.abc.Callable[[jax.Array, int], jax.Array] | None = ...",
        "maybe: int | None = ...",
        "either: int | str = ...",
        "shape: tuple[int, ...] = ...",
        "pairs: tuple[int, str] = ...",
        "nested: tuple[tuple[str, collections.abc.Callable[[], float]], ...] | None = ...",
        "later: stubcase_types.Later | None = ...",
        "ann: int = ...",
    ):
        assert written in signature, (written, signature)
    # A forward reference to nothing is Any; the other annotations keep their types.
    assert "(self, x: jax.Array, /, *, ghost: Any = ..., mode: stubcase_types.Mode = ...)" in (
        facade
    )

    (tmp_path / "facade_stub.pyi").write_text(facade)
    (tmp_path / "use_stub.py").write_text(_USE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(tmp_path / "mypy_cache"), "facade_stub.pyi", "use_stub.py"],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    # Checked as a module of its own, not as installed stubs (whose own errors mypy never
    # reports), every facade draws two errors that have nothing to do with annotations:
    # its classes leave RegisteredPrimitive's members to the runtime class, and the
    # get_primitive(name: str) overload overlaps the ones by name.
    errors = [
        line
        for line in checked.stdout.splitlines()
        if ": error:" in line
        and "has abstract attributes" not in line
        and "[overload-overlap]" not in line
    ]
    assert len(errors) == 1, checked.stdout + checked.stderr
    assert errors[0].startswith("use_stub.py:12: error:") and '"name"' in errors[0], errors


def test_check_says_a_stub_that_does_not_parse_is_not_current(tmp_path: Path) -> None:
    assert stubgen("--out", str(tmp_path))[0] == 0
    facade = tmp_path / "jext-stubs" / "__init__.pyi"
    facade.write_text(facade.read_text() + "def f(mode: Literal[<Mode.A: 'a'>]) -> None: ...\n")
    code, text = stubgen("--out", str(tmp_path), "--check")
    assert code == 1
    assert "jext-stubs/__init__.pyi: does not parse (line " in text
