"""``jext stubgen``: the install hint, --plugin, --check, public import paths, no frozen JAX."""

from __future__ import annotations

import io
import re
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
