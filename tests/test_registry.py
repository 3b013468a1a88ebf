"""The plugin registry, discovering plugins through entry points of really installed packages."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.random
from jext._registry import Registry
from tests import plugin_packages as pp
from tests.conftest import run_python


@pytest.fixture
def on_path(catalog_site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for var in (
        "JEXT_PLUGINS",
        "JEXT_DISABLE_PLUGINS",
        "JEXT_STRICT",
        "JEXT_DISABLE_PLUGIN_AUTOLOAD",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.syspath_prepend(str(catalog_site))
    yield catalog_site


def load(registry: Registry) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        registry.load()
    assert all(issubclass(w.category, jext.PluginWarning) for w in caught)
    return [str(w.message) for w in caught]


@pytest.fixture(scope="module")
def catalog_registry(catalog_site: Path) -> tuple[Registry, list[str]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(catalog_site))
        for var in ("JEXT_PLUGINS", "JEXT_DISABLE_PLUGINS", "JEXT_STRICT"):
            mp.delenv(var, raising=False)
        registry = Registry()
        return registry, load(registry)


# --- the fault catalog -----------------------------------------------------------------------


@pytest.mark.parametrize("fault", list(pp.FAULTS))
def test_each_fault_is_isolated_and_reported_in_one_line(
    fault: str, catalog_registry: tuple[Registry, list[str]]
) -> None:
    registry, reports = catalog_registry
    package, cause = pp.FAULTS[fault]
    info = {p.name: p for p in registry.plugins()}
    broken = info[package.entry_point]
    assert broken.status == "error"
    assert broken.distribution == package.dist and broken.version == "0.1.0"
    assert cause in (broken.error or "")
    (line,) = [r for r in reports if f"'{package.entry_point}'" in r]
    assert "\n" not in line
    assert f"distribution {package.dist} 0.1.0" in line and cause in line
    # Every other plugin keeps working.
    assert info["fault-good"].status == "loaded"
    assert info["example-primitives"].status == "loaded"
    double = registry.get_primitive("faultgood.double")
    np.testing.assert_allclose(double(jnp.ones(2)), 2 * np.ones(2))


def test_unused_lowering_is_a_note_not_an_error(
    catalog_registry: tuple[Registry, list[str]],
) -> None:
    registry, reports = catalog_registry
    info = {p.name: p for p in registry.plugins()}
    unused = info["fault-unused"]
    assert unused.status == "loaded" and unused.error is None
    assert unused.notes == (
        "unused lowering for 'nobody.defines_this' on tpu: no loaded plugin defines it",
    )
    assert not any("fault-unused" in r for r in reports)


def test_a_plugin_may_read_the_registry_while_imported(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    site = pp.build_and_install([pp.READS_AT_IMPORT, pp.GOOD], tmp_path_factory.mktemp("reads"))
    code = (
        "import jext, jext_fault_good\n"
        "print(sorted(jext.primitives()), len(jext_fault_good.IMPORTS))\n"
        "print({p.name: p.status for p in jext.plugins()})\n"
    )
    # Only these two: strict mode would also raise for any broken plugin installed beside jext.
    result = run_python(code, site, JEXT_STRICT="1", JEXT_PLUGINS="reads-at-import,fault-good")
    assert result.returncode == 0, result.stderr
    prims, statuses = result.stdout.splitlines()
    assert "'readsatimport.identity'" in prims and "'faultgood.double'" in prims
    assert prims.endswith(" 1")  # every plugin imported once, not again from inside
    assert "'reads-at-import': 'loaded'" in statuses


def test_a_failed_hook_commits_nothing(catalog_registry: tuple[Registry, list[str]]) -> None:
    registry, _ = catalog_registry
    owners = registry.primitive_owners()
    assert owners["faultgood.double"] == "fault-good"
    assert "fault-reregister" not in owners.values()


def test_strict_mode_raises_with_every_report(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JEXT_STRICT", "1")
    with pytest.raises(jext.PluginError) as info:
        Registry().load()
    for package, cause in pp.FAULTS.values():
        assert cause in str(info.value), package.dist


# --- switches --------------------------------------------------------------------------------


def test_only_listed_plugins_load(on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JEXT_PLUGINS", "fault-good, example-primitives")
    registry = Registry()
    assert load(registry) == []
    status = {p.name: p.status for p in registry.plugins()}
    assert status["fault-good"] == status["example-primitives"] == "loaded"
    assert status["fault-import"] == "disabled"
    assert {p.error for p in registry.plugins() if p.status == "disabled"} == {
        "disabled by JEXT_PLUGINS"
    }


def test_blocked_plugins_do_not_load(on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "JEXT_DISABLE_PLUGINS",
        ",".join(pkg.entry_point for pkg, _ in pp.FAULTS.values()),
    )
    registry = Registry()
    # Reports about plugins installed beside jext (not the catalog's) are not this test's.
    catalog = [pkg.entry_point for pkg in pp.ALL]
    assert [r for r in load(registry) if any(f"'{name}'" in r for name in catalog)] == []
    status = {p.name: p.status for p in registry.plugins()}
    assert status["fault-import"] == "disabled"
    assert status["fault-good"] == "loaded"


def test_autoload_off_still_takes_plugins_registered_in_code(
    on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JEXT_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry = Registry()
    assert load(registry) == []
    assert registry.plugins() == []
    import jext_fault_good

    registry.register(jext_fault_good, name="good-in-code")
    (info,) = registry.plugins()
    assert (info.name, info.distribution, info.status) == ("good-in-code", None, "loaded")
    assert registry.primitives()["faultgood.double"] is jext_fault_good.double


# --- phases and ordering ---------------------------------------------------------------------


def test_lowering_finds_its_primitive_whatever_the_order() -> None:
    registry = Registry(group="jext-none")
    prim = jext.primitive("tests.vendor_target")(lambda x, /: x + 1)

    def tpu_rule(x: Any) -> Any:
        return x + 1

    vendor = SimpleNamespace(
        jext_register_lowerings=jext.hookimpl(
            lambda registry: registry.add_lowering("tests.vendor_target", tpu_rule, platform="tpu")
        )
    )
    owner = SimpleNamespace(
        jext_register_primitives=jext.hookimpl(lambda registry: registry.add(prim))
    )
    registry.register(vendor, name="a-vendor")  # registered before the primitive's owner
    registry.register(owner, name="b-owner")
    registry.load()
    assert prim.lowering_platforms()["tpu"].endswith("tpu_rule")
    assert all(p.notes == () for p in registry.plugins())


def test_a_later_primitive_picks_up_an_unused_lowering() -> None:
    registry = Registry(group="jext-none")
    prim = jext.primitive("tests.late_target")(lambda x, /: x)

    def rocm_rule(x: Any) -> Any:
        return x

    registry.register(
        SimpleNamespace(
            jext_register_lowerings=jext.hookimpl(
                lambda registry: registry.add_lowering(
                    "tests.late_target", rocm_rule, platform="rocm"
                )
            )
        ),
        name="vendor",
    )
    registry.load()
    assert registry.plugins()[0].notes
    registry.register(
        SimpleNamespace(
            jext_register_primitives=jext.hookimpl(lambda registry: registry.add(prim))
        ),
        name="owner",
    )
    assert prim.lowering_platforms()["rocm"].endswith("rocm_rule")
    assert all(p.notes == () for p in registry.plugins())


def test_a_waiting_lowering_that_does_not_fit_fails_its_own_plugin() -> None:
    registry = Registry(group="jext-none")
    prim = jext.primitive("tests.late_misfit")(lambda x, /: x)
    registry.register(
        SimpleNamespace(
            jext_register_lowerings=jext.hookimpl(
                # Two positional parameters for a one-operand primitive: refused when applied.
                lambda registry: registry.add_lowering("tests.late_misfit", lambda a, b: a)
            )
        ),
        name="misfit-vendor",
    )
    registry.load()
    with pytest.warns(jext.PluginWarning, match="misfit-vendor"):
        registry.register(
            SimpleNamespace(
                jext_register_primitives=jext.hookimpl(lambda registry: registry.add(prim))
            ),
            name="late-owner",
        )
    status = {p.name: p.status for p in registry.plugins()}
    assert status == {"late-owner": "loaded", "misfit-vendor": "error"}
    assert prim.lowering_platforms()["cpu"] == "reference"


def test_two_impls_of_one_name_in_one_hook_are_refused() -> None:
    registry = Registry(group="jext-none")
    impl = jext.random.get_impl("jext.philox4x64")
    registry.register(
        SimpleNamespace(
            jext_register_rng_impls=jext.hookimpl(
                lambda registry: [registry.add(impl), registry.add(impl)]
            )
        ),
        name="twice-rng",
    )
    with pytest.warns(
        jext.PluginWarning, match="RNG implementation 'jext.philox4x64' registered twice"
    ):
        registry.load()
    assert dict(registry.rng_impls()) == {}


def test_registering_a_plugin_name_twice_is_refused() -> None:
    registry = Registry(group="jext-none")
    registry.register(SimpleNamespace(), name="twice")
    with pytest.raises(jext.PluginError, match="already registered"):
        registry.register(SimpleNamespace(), name="twice")


# --- the global registry ---------------------------------------------------------------------


def test_installed_examples_through_the_public_api() -> None:
    names = set(jext.primitives())
    assert {"example.softplus", "example.cumsum", "example.polar", "example.rms_norm"} <= names
    info = {p.name: p for p in jext.plugins()}
    assert info["example-primitives"].distribution == "jext-example-primitives"
    assert info["example-vendor"].status == "loaded"
    rms = jext.get_primitive("example.rms_norm")
    assert rms.lowering_platforms()["rocm"] == "rms_norm_rocm"  # from the vendor plugin
    assert rms.lowering_platforms()["cpu"] == "_rms_norm_cpu"


def test_unknown_primitive_suggests_close_matches() -> None:
    with pytest.raises(jext.UnknownNameError) as info:
        jext.get_primitive("example.softpls")
    assert isinstance(info.value, KeyError)
    assert "Did you mean 'example.softplus'?" in str(info.value)


def test_import_is_lazy(catalog_site: Path) -> None:
    code = (
        "import sys, importlib.metadata as md\n"
        "groups = []\n"
        "real = md.entry_points\n"
        "md.entry_points = lambda **kw: groups.append(kw.get('group')) or real(**kw)\n"
        "import jext\n"
        "print(groups.count('jext'), 'jext_fault_good' in sys.modules)\n"
        "jext.primitives()\n"
        "jext.primitives()\n"
        "print(groups.count('jext'), 'jext_fault_good' in sys.modules)\n"
    )
    result = run_python(code, catalog_site, JEXT_PLUGINS="fault-good")
    assert result.stdout.split() == ["0", "False", "1", "True"], result.stderr


def test_32_threads_load_each_plugin_once(catalog_site: Path) -> None:
    code = (
        "import threading, jext\n"
        "barrier = threading.Barrier(32)\n"
        "def go():\n"
        "    barrier.wait()\n"
        "    jext.load_plugins()\n"
        "threads = [threading.Thread(target=go) for _ in range(32)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "import jext_fault_good\n"
        "print(len(jext_fault_good.IMPORTS), sorted(jext.primitives()))\n"
    )
    result = run_python(code, catalog_site, JEXT_PLUGINS="fault-good", JEXT_STRICT="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 ['faultgood.double']"


def test_cli_lists_broken_plugins_and_exits_zero(catalog_site: Path) -> None:
    result = run_python(
        "from jext._cli import main; raise SystemExit(main(['list', '--json']))", catalog_site
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"plugins", "primitives", "rng_impls", "scipy"}
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["fault-import"]["status"] == "error"
    assert set(plugins["fault-import"]) >= {"name", "distribution", "version", "status", "error"}
    prims = {p["name"]: p for p in data["primitives"]}
    assert prims["faultgood.double"]["plugin"] == "fault-good"
    assert set(prims["example.rms_norm"]) >= {"name", "plugin", "rules", "platforms"}
    table = run_python("from jext._cli import main; raise SystemExit(main(['list']))", catalog_site)
    assert table.returncode == 0
    assert "fault-import" in table.stdout and "import failed: ImportError" in table.stdout
