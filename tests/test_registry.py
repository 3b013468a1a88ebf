"""The plugin registry, discovering plugins through entry points of really installed packages."""

from __future__ import annotations

import dataclasses
import json
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.lowering
import jext.random
from jext import _host
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


def test_a_missing_ffi_library_names_itself_and_the_os_error(
    catalog_registry: tuple[Registry, list[str]],
) -> None:
    registry, _ = catalog_registry
    info = {p.name: p for p in registry.plugins()}
    error = info["fault-ffi"].error or ""
    assert "libjext_fault_missing.so: cannot open shared object file: No such file" in error
    # Its primitive stays registered: the other platforms' rules keep working, and the
    # cpu rule still exports (the handler is needed only to run).
    twice = registry.get_primitive("fault_ffi.twice")
    exported = jext.lowering.export(twice, jnp.ones(3))
    assert {p: r["fault_ffi.twice"] for p, r in exported.rules.items()} == {
        "cpu": "ffi:jext_fault_twice",
        "cuda": "reference",
        "rocm": "reference",
        "tpu": "reference",
    }
    assert ("jext_fault_twice", "cpu") not in registry.ffi_targets()


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
    assert "'reads_at_import.identity'" in prims and "'faultgood.double'" in prims
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
    status = {p.name: p.status for p in registry.plugins()}
    assert status.pop("jext-rng") == "loaded"  # core
    assert status.pop("jext-rng-native", "loaded") == "loaded"  # core where installed
    assert set(status.values()) == {"disabled"}  # listed, never imported
    import jext_fault_good

    # Entry point fault-good is disabled but still owns "faultgood": switches never move
    # ownership, so the same module registered in code under another name is refused...
    with pytest.warns(jext.PluginWarning, match="belongs to plugin 'fault-good'"):
        registry.register(jext_fault_good, name="good-in-code", namespaces=["faultgood"])
    # ...and under the entry point's own namespace-less name it registers nothing foreign.
    registry.register(SimpleNamespace(), name="empty-in-code")
    info = {p.name: p for p in registry.plugins()}
    assert info["good-in-code"].status == "error"
    assert (info["empty-in-code"].distribution, info["empty-in-code"].status) == (None, "loaded")
    assert info["empty-in-code"].namespaces == ("empty_in_code",)
    assert "faultgood.double" not in registry.primitives()


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
    registry.register(owner, name="b-owner", namespaces=["tests"])
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
    assert {p.name: p.notes for p in registry.plugins()}["vendor"]
    registry.register(
        SimpleNamespace(
            jext_register_primitives=jext.hookimpl(lambda registry: registry.add(prim))
        ),
        name="owner",
        namespaces=["tests"],
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
            namespaces=["tests"],
        )
    status = {p.name: p.status for p in registry.plugins() if not p.core}
    assert status == {"late-owner": "loaded", "misfit-vendor": "error"}
    assert prim.lowering_platforms()["cpu"] == "reference"


def test_two_impls_of_one_name_in_one_hook_are_refused() -> None:
    registry = Registry(group="jext-none")
    impl = dataclasses.replace(
        jext.random.get_impl("jext.philox4x64"), name="twice_rng.philox", tag="twice_rng_phx"
    )
    registry.register(
        SimpleNamespace(
            jext_register_rng_impls=jext.hookimpl(
                lambda registry: [registry.add(impl), registry.add(impl)]
            )
        ),
        name="twice-rng",
    )
    with pytest.warns(
        jext.PluginWarning, match="RNG implementation 'twice_rng.philox' registered twice"
    ):
        registry.load()
    assert list(registry.rng_impls()) == ["jext.chacha20", "jext.philox4x64", "jext.threefry4x64"]


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
    # `jext list --json` and `jext list` in one interpreter (one start-up instead of two):
    # the process exits 0 only if both did.
    cut = "\n--- the table ---\n"
    result = run_python(
        "from jext._cli import main\n"
        "code = main(['list', '--json'])\n"
        f"print({cut!r}, end='')\n"
        "raise SystemExit(code or main(['list']))",
        catalog_site,
    )
    assert result.returncode == 0, result.stderr
    listed, table = result.stdout.split(cut)
    data = json.loads(listed)
    assert set(data) == {
        "plugins",
        "primitives",
        "ffi_targets",
        "rng_impls",
        "scipy",
        "scipy_coverage",
    }
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["fault-import"]["status"] == "error"
    assert set(plugins["fault-import"]) >= {"name", "distribution", "version", "status", "error"}
    prims = {p["name"]: p for p in data["primitives"]}
    assert prims["faultgood.double"]["plugin"] == "fault-good"
    assert set(prims["example.rms_norm"]) >= {"name", "plugin", "rules", "platforms"}
    assert "fault-import" in table and "import failed: ImportError" in table
    # JEXT_STRICT=1: the same listing, failures included, then exit status 1 (it once died
    # with a PluginError traceback before printing anything).
    strict = run_python(
        "from jext._cli import main; raise SystemExit(main(['list']))",
        catalog_site,
        JEXT_STRICT="1",
    )
    assert strict.returncode == 1 and "Traceback" not in strict.stderr, strict.stderr
    assert "import failed: ImportError" in strict.stdout and "Primitives" in strict.stdout
    assert "fault-import" in strict.stderr


# --- namespaces: a plugin cannot take another plugin's names ---------------------------------


def test_the_owner_of_a_namespace_loads_whatever_an_impostor_does(
    catalog_registry: tuple[Registry, list[str]],
) -> None:
    registry, _ = catalog_registry
    import jext_mytrial

    info = {p.name: p for p in registry.plugins()}
    assert info["mytrial"].status == "loaded" and info["mytrial"].namespaces == ("mytrial",)
    assert info["aaa-clash"].status == "error"
    assert registry.get_primitive("mytrial.shift") is jext_mytrial.shift
    assert registry.rng_impls()["mytrial.philox"].plugin == "mytrial"
    assert [o.plugin for o in registry.scipy_wrappers()[("special", "mytrial_exprel")]] == [
        "mytrial"
    ]


@pytest.mark.parametrize("first", ["jext_aaa_clash", "jext_mytrial", "jext"])
def test_ownership_does_not_depend_on_what_the_user_imported_first(
    first: str, catalog_site: Path
) -> None:
    code = (
        f"import {first}\n"
        "import jext, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "print(jext.get_primitive('mytrial.shift').reference.__module__)\n"
        "print({p.name: p.status for p in jext.plugins()})\n"
    )
    # With the owner imported first, the impostor fails at its own import instead.
    result = run_python(code, catalog_site, JEXT_PLUGINS="mytrial,aaa-clash")
    assert result.returncode == 0, result.stderr
    module, statuses = result.stdout.splitlines()
    assert module == "jext_mytrial"
    assert "'mytrial': 'loaded'" in statuses and "'aaa-clash': 'error'" in statuses


def test_two_plugins_declaring_one_namespace_both_fail_naming_each_other() -> None:
    registry = Registry(group="jext-none")
    registry.register(SimpleNamespace(), name="one", namespaces=["common"])
    registry.register(SimpleNamespace(), name="two", namespaces=["common"])
    registry.register(SimpleNamespace(), name="three", namespaces=["one.inner"])
    reports = load(registry)
    info = {p.name: p for p in registry.plugins()}
    assert "plugin 'two' (registered in code) also claims" in (info["one"].error or "")
    assert "plugin 'one' (registered in code) also claims" in (info["two"].error or "")
    assert "inside 'one', which belongs to plugin 'one'" in (info["three"].error or "")
    assert len(reports) == 3 and all("\n" not in r for r in reports)


def test_code_registered_plugins_run_in_name_order() -> None:
    registry = Registry(group="jext-none")
    calls: list[str] = []

    def plugin(name: str) -> SimpleNamespace:
        return SimpleNamespace(
            jext_register_primitives=jext.hookimpl(lambda registry: calls.append(name + ":p")),
            jext_register_rng_impls=jext.hookimpl(lambda registry: calls.append(name + ":r")),
        )

    for name in ("zeta", "alpha", "mu"):
        registry.register(plugin(name), name=name)
    registry.load()
    assert calls == ["alpha:p", "mu:p", "zeta:p", "alpha:r", "mu:r", "zeta:r"]


def test_a_missing_name_names_its_broken_owner() -> None:
    registry = Registry(group="jext-none")

    def broken(registry: Any) -> None:
        raise RuntimeError("no GPU")

    registry.register(
        SimpleNamespace(jext_register_primitives=jext.hookimpl(broken)), name="broken-owner"
    )
    with pytest.warns(jext.PluginWarning):
        registry.load()
    with pytest.raises(jext.UnknownNameError, match=r"owner, plugin 'broken-owner'.*no GPU"):
        registry.get_primitive("broken_owner.op")


# --- strict and warning modes -----------------------------------------------------------------


def test_strict_mode_raises_on_every_call_and_chains_the_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = Registry(group="jext-none")

    def hook(registry: Any) -> None:
        raise RuntimeError("database unreachable")

    registry.register(SimpleNamespace(jext_register_primitives=jext.hookimpl(hook)), name="db")
    monkeypatch.setenv("JEXT_STRICT", "1")
    for _ in range(3):  # never a partial registry, however often asked
        with pytest.raises(jext.PluginError, match="database unreachable") as info:
            registry.primitives()
        assert isinstance(info.value.__cause__, RuntimeError)
    (plugin,) = [p for p in registry.plugins() if p.name == "db"]
    assert f"({__file__}:" in (plugin.error or "")  # the plugin's own file and line


def test_warnings_once_per_failure_but_never_hidden_by_error_filters(catalog_site: Path) -> None:
    code = (
        "import jext, warnings\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('error')\n"
        "    for _ in range(3):\n"
        "        try:\n"
        "            jext.primitives()\n"
        "            print('silent')\n"
        "        except jext.PluginWarning as err:\n"
        "            print('raised', str(err).count('jext plugin'), type(err.__cause__).__name__)\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    jext.primitives(); jext.primitives()\n"
        "print(len(seen))\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('error')\n"
        "    jext.primitives()\n"
        "print('delivered')\n"
    )
    result = run_python(code, catalog_site, JEXT_PLUGINS="fault-good,fault-raises,fault-import")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n") == [
        "raised 2 ImportError",
        "raised 2 ImportError",
        "raised 2 ImportError",
        "2",  # each failure warned once, on the first call that could deliver it
        "delivered",
        "",
    ]


# --- core is core --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "switch",
    [
        {"JEXT_PLUGINS": "other"},
        {"JEXT_DISABLE_PLUGINS": "jext-rng"},
        {"JEXT_DISABLE_PLUGIN_AUTOLOAD": "1"},
        {"JEXT_RNG_NATIVE": "0"},
        {},
    ],
)
def test_bundled_rngs_work_whatever_the_switches(
    switch: dict[str, str], catalog_site: Path
) -> None:
    code = (
        "import sys, jax, jax.numpy as jnp, numpy as np, jext.random\n"
        "bits = jax.random.bits(jext.random.numpy_philox_key(7), (4,), jnp.uint32)\n"
        "raw = np.random.Philox(key=7).random_raw(2)\n"
        "print(np.array_equal(np.asarray(bits), raw.view(np.uint32)))\n"
        "jext.random.key(0, impl='jext.chacha20'); jext.random.key(0, impl='jext.threefry4x64')\n"
        "print('jext_fault_good' in sys.modules)\n"  # a core name loads no plugin
        "print([(p.name, p.status, p.core) for p in jext.plugins() if p.core])\n"
    )
    result = run_python(code, catalog_site, **switch)
    assert result.returncode == 0, result.stderr
    # jext-rng-native (installed with the repository) is core too, unless switched off.
    core = [("jext-rng", "loaded", True)]
    if "JEXT_RNG_NATIVE" not in switch:
        core.append(("jext-rng-native", "loaded", True))
    assert result.stdout.splitlines() == ["True", "False", str(core)]


# --- registering while plugins load ----------------------------------------------------------


def test_a_plugin_registered_while_plugins_load_joins_the_load(tmp_path: Path) -> None:
    """A meta-plugin's companions, registered with jext.register_plugin from its hook or
    from its import, load: their hooks run (a hook's companion in the round after), their
    primitives are registered, and a companion claiming another plugin's namespace fails
    saying whose it is."""
    site = pp.build_and_install([pp.META_HOOK, pp.META_IMPORT], tmp_path)
    code = (
        "import json, sys, warnings\n"
        "import jax.numpy as jnp\n"
        "import jext\n"
        "from jext._registry import registry\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    jext.load_plugins()\n"
        "plugins = {p.name: [p.status, p.error] for p in jext.plugins()}\n"
        "owners = registry().primitive_owners()\n"
        "print(json.dumps({\n"
        "    'plugins': {n: s for n, s in plugins.items() if n.startswith('meta')},\n"
        "    'owners': {n: o for n, o in owners.items() if n.startswith('meta')},\n"
        "    'values': [float(jext.get_primitive(n)(jnp.ones(()) * 2)) for n in\n"
        "               ('meta_hook_sub.triple', 'meta_import_sub.halve')],\n"
        "    'order': sys.modules['jext_meta_hook'].ORDER,\n"
        "    'warnings': [str(w.message) for w in caught],\n"
        "}))\n"
    )
    result = run_python(code, site, JEXT_PLUGINS="meta-hook,meta-import")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    thief = (
        "claims namespace 'meta_hook', which belongs to plugin 'meta-hook' "
        "(distribution jext-meta-hook 0.1.0)"
    )
    assert got["plugins"] == {
        "meta-hook": ["loaded", None],
        "meta-hook-sub": ["loaded", None],
        "meta-import": ["loaded", None],
        "meta-import-sub": ["loaded", None],
        "meta-import-thief": ["error", thief],
    }
    assert got["owners"] == {
        "meta_hook_sub.triple": "meta-hook-sub",
        "meta_import_sub.halve": "meta-import-sub",
    }
    assert got["values"] == [6.0, 1.0]
    # Round one: every loaded plugin, kind by kind; round two: the companion its hook added.
    assert got["order"] == [
        "meta-hook primitives",
        "meta-hook rng_impls",
        "meta-hook-sub primitives",
        "meta-hook-sub rng_impls",
    ]
    assert len(got["warnings"]) == 1 and thief in got["warnings"][0]


def test_a_plugin_registered_from_a_hook_after_loading_runs_in_the_next_round() -> None:
    """After loading, a plugin's hook that registers a companion finishes every hook of its
    own before the companion's run, as during a load (never the companion's inside it)."""
    registry = Registry(group="jext-none")
    registry.load()
    prim = jext.primitive("late_sub.double")(lambda x, /: 2 * x)
    order: list[str] = []

    def hook(plugin: str, kind: str, body: Any = None) -> Any:
        def run(registrar: Any) -> None:
            order.append(f"{plugin} {kind}")
            if body is not None:
                body(registrar)

        return jext.hookimpl(specname=f"jext_register_{kind}")(run)

    companion = SimpleNamespace(
        jext_register_primitives=hook("late-sub", "primitives", lambda r: r.add(prim)),
        jext_register_rng_impls=hook("late-sub", "rng_impls"),
    )
    meta = SimpleNamespace(
        jext_register_primitives=hook(
            "late-meta", "primitives", lambda r: registry.register(companion, "late-sub")
        ),
        jext_register_rng_impls=hook("late-meta", "rng_impls"),
    )
    registry.register(meta, "late-meta")
    assert order == [
        "late-meta primitives",
        "late-meta rng_impls",
        "late-sub primitives",
        "late-sub rng_impls",
    ]
    assert registry.primitive_owners()["late_sub.double"] == "late-sub"
    assert {p.name: p.status for p in registry.plugins()}["late-sub"] == "loaded"


# --- loading under races and interrupts -------------------------------------------------------

# A fresh interpreter with no entry-point plugins: what a first call does depends on the
# process-wide registry, which the other tests have long loaded.
_RACE_PRELUDE = """
import threading, time, warnings
from types import SimpleNamespace
import jax.numpy as jnp
import jext
"""


def test_a_first_call_waits_for_the_load_another_first_call_started(tmp_path: Path) -> None:
    # Thread A's first call starts loading plugins; the vendor's hook is slow.  The main
    # thread's first call of another primitive meanwhile must wait for that load, or it
    # freezes its rules before the vendor's rocm rule arrives (and the vendor fails).
    code = _RACE_PRELUDE + (
        "first = jext.primitive('race.first')(lambda x, /: x + 1)\n"
        "second = jext.primitive('race.second')(lambda x, /: 2 * x)\n"
        "def rocm(x): return x + x\n"
        "in_hook = threading.Event()\n"
        "def lowerings(registry):\n"
        "    in_hook.set(); time.sleep(1.5)\n"
        "    registry.add_lowering('race.second', rocm, platform='rocm')\n"
        "jext.register_plugin(SimpleNamespace(jext_register_primitives=jext.hookimpl(\n"
        "    lambda registry: [registry.add(first), registry.add(second)])),\n"
        "    name='race', namespaces=['race'])\n"
        "jext.register_plugin(SimpleNamespace(jext_register_lowerings=jext.hookimpl(lowerings)),\n"
        "    name='vendor')\n"
        "a = threading.Thread(target=lambda: first(jnp.ones(2))); a.start()\n"
        "assert in_hook.wait(30)\n"
        "second(jnp.ones(2))\n"
        "a.join()\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    status = {p.name: p.status for p in jext.plugins()}\n"
        "print(status['vendor'], second.lowering_platforms()['rocm'], len(caught))\n"
    )
    result = run_python(code, tmp_path, JEXT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["loaded", "rocm", "0"], result.stderr


def test_a_plugin_calling_a_primitive_while_loading_does_not_deadlock(tmp_path: Path) -> None:
    code = _RACE_PRELUDE + (
        "prim = jext.primitive('reentry.double')(lambda x, /: 2 * x)\n"
        "def register(registry):\n"
        "    registry.add(prim)\n"
        "    print(float(prim(jnp.ones(())).sum()))  # on the loading thread: goes ahead\n"
        "jext.register_plugin(SimpleNamespace(jext_register_primitives=jext.hookimpl(register)),\n"
        "    name='reentry', namespaces=['reentry'])\n"
        "t = threading.Thread(target=jext.load_plugins, daemon=True); t.start(); t.join(60)\n"
        "print(t.is_alive())\n"
    )
    result = run_python(code, tmp_path, JEXT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert result.stdout.split() == ["2.0", "False"], result.stderr


def test_a_core_rng_never_waits_for_a_plugin(tmp_path: Path) -> None:
    # A plugin whose hook joins a thread that uses a core RNG: with a lock held while the
    # plugin's code runs, the thread waits for the hook that waits for it.  And another
    # thread's core key never waits behind a slow plugin either.
    code = _RACE_PRELUDE + (
        "import jax, jext.random\n"
        "done = []\n"
        "def use_rng():\n"
        "    key = jext.random.key(0, impl='jext.philox4x64')\n"
        "    done.append(int(jax.random.bits(key, (2,)).sum() >= 0))\n"
        "in_hook = threading.Event()\n"
        "def slow(registry):\n"
        "    in_hook.set()\n"
        "    t = threading.Thread(target=use_rng, daemon=True); t.start(); t.join(20)\n"
        "    time.sleep(1.0)\n"
        "jext.register_plugin(SimpleNamespace(jext_register_primitives=jext.hookimpl(slow)),\n"
        "    name='slow')\n"
        "loader = threading.Thread(target=jext.load_plugins, daemon=True); loader.start()\n"
        "assert in_hook.wait(30)\n"
        "start = time.perf_counter()\n"
        "jext.random.key(1, impl='jext.chacha20')\n"
        "waited = time.perf_counter() - start\n"
        "loader.join(60)\n"
        "print(done, loader.is_alive(), waited < 0.9)\n"
    )
    result = run_python(code, tmp_path, JEXT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert result.stdout.split() == ["[1]", "False", "True"], result.stderr


_PHASES = (
    "import",
    "jext_register_primitives",
    "jext_register_ffi_targets",
    "jext_register_lowerings",
    "jext_register_rng_impls",
    "jext_register_scipy_wrappers",
)


@pytest.mark.parametrize("phase", _PHASES)
def test_an_interrupted_load_is_rolled_back_and_loads_again(
    phase: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jext import _discovery, _registry

    ns = f"interrupted_{_PHASES.index(phase)}"
    prim = jext.primitive(f"{ns}.double")(lambda x, /: 2 * x)
    impl = dataclasses.replace(
        jext.random.get_impl("jext.philox4x64"), name=f"{ns}.philox", tag=f"{ns}_phx"
    )

    def tpu_rule(x: Any) -> Any:
        return x + x

    interrupted: list[str] = []

    def maybe_interrupt(where: str) -> None:
        if where == phase and not interrupted:
            interrupted.append(where)
            raise KeyboardInterrupt

    def hook(name: str, body: Any) -> Any:
        def run(registry: Any) -> None:
            body(registry)
            maybe_interrupt(name)  # after staging: nothing staged may survive

        return jext.hookimpl(specname=name)(run)

    plugin = SimpleNamespace(
        primitives=hook("jext_register_primitives", lambda r: r.add(prim)),
        ffi=hook("jext_register_ffi_targets", lambda r: None),
        lowerings=hook(
            "jext_register_lowerings",
            lambda r: r.add_lowering(f"{ns}.double", tpu_rule, platform="tpu"),
        ),
        rngs=hook("jext_register_rng_impls", lambda r: r.add(impl)),
        scipy=hook("jext_register_scipy_wrappers", lambda r: None),
    )

    class EntryPoint:
        name = ns
        value = f"{ns}_module"
        dist = None

        def load(self) -> object:
            maybe_interrupt("import")
            return plugin

    found = _discovery.Discovery((EntryPoint(),), {}, ())
    monkeypatch.setattr(_registry, "discover", lambda group: found)
    registry = Registry(group="jext-none")
    with pytest.raises(KeyboardInterrupt):
        registry.load()
    assert interrupted == [phase]
    assert load(registry) == []  # no bogus "declared twice" or "already registered by"
    (info,) = [p for p in registry.plugins() if p.name == ns]
    assert (info.status, info.error) == ("loaded", None)
    assert registry.get_primitive(f"{ns}.double") is prim
    assert f"{ns}.philox" in registry.rng_impls()
    assert prim.lowering_platforms()["tpu"].endswith("tpu_rule")


# --- FFI target names --------------------------------------------------------------------------


def test_an_ffi_target_named_like_jaxlibs_fails_only_its_plugin(tmp_path: Path) -> None:
    # XLA has one table of handler names, jaxlib's own included: a second handler under
    # "lapack_sgetrf_ffi" would make every later LU decomposition fail to compile.
    code = _RACE_PRELUDE + (
        "import importlib\n"
        "handlers = importlib.import_module('jext_example_native._native_cpu').handlers()\n"
        "capsule = handlers['jext_native_softplus']\n"
        "def targets(registry):\n"
        "    registry.add('lapack_sgetrf_ffi', capsule)\n"
        "def mine(registry):\n"
        "    registry.add('ffiowner_softplus', capsule)\n"
        "jext.register_plugin(SimpleNamespace(jext_register_ffi_targets=jext.hookimpl(targets)),\n"
        "    name='impostor')\n"
        "jext.register_plugin(SimpleNamespace(jext_register_ffi_targets=jext.hookimpl(mine)),\n"
        "    name='ffiowner')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    jext.load_plugins()\n"
        "print(*[str(w.message) for w in caught], sep='\\n', file=__import__('sys').stderr)\n"
        "status = {p.name: p.status for p in jext.plugins()}\n"
        "print(status['impostor'], status['ffiowner'])\n"
        "x = jnp.array([[2.0, 1.0], [1.0, 3.0]], jnp.float32)\n"
        "print(bool(jnp.allclose(jnp.linalg.inv(x) @ x, jnp.eye(2), atol=1e-5)))\n"
    )
    result = run_python(code, tmp_path, JEXT_DISABLE_PLUGIN_AUTOLOAD="1")
    assert result.stdout.split() == ["error", "loaded", "True"], result.stderr
    assert "FFI target 'lapack_sgetrf_ffi' is outside its namespaces" in result.stderr


# --- vendor lowerings against the owner's and each other's --------------------------------------


def _lowering_plugins(name: str, *vendors: str) -> tuple[Registry, jext.Primitive[..., Any]]:
    """A registry with the owner of ``name`` (its own rocm rule) and ``vendors``, each
    offering rocm and tpu rules named after it."""
    registry = Registry(group="jext-none")
    prim = jext.primitive(name)(lambda x, /: x + 1)

    @prim.def_lowering(platform="gpu")
    def owners_gpu(x: Any) -> Any:
        return x + 1

    for vendor in vendors:

        def rules(registry: Any, vendor: str = vendor) -> None:
            for platform in ("rocm", "tpu"):

                def rule(x: Any) -> Any:
                    return x + 1

                rule.__qualname__ = f"{vendor}_{platform}"
                registry.add_lowering(name, rule, platform=platform)

        registry.register(
            SimpleNamespace(jext_register_lowerings=jext.hookimpl(rules)), name=vendor
        )
    owner = SimpleNamespace(
        jext_register_primitives=jext.hookimpl(lambda registry: registry.add(prim))
    )
    registry.register(owner, name="owner", namespaces=[name.split(".", maxsplit=1)[0]])
    return registry, prim


def test_a_vendor_rule_never_silently_replaces_the_owners(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JEXT_LOWERING_PREFER", raising=False)
    registry, prim = _lowering_plugins("clash_owner.op", "z-vendor")
    with pytest.warns(jext.PluginWarning) as caught:
        registry.load()
    (message,) = [str(w.message) for w in caught]
    assert "'clash_owner.op' on rocm" in message and "'owner'" in message
    assert "'z-vendor'" in message and "JEXT_LOWERING_PREFER=clash_owner.op:rocm=" in message
    platforms = prim.lowering_platforms()
    assert platforms["rocm"].endswith("owners_gpu") and platforms["tpu"] == "z-vendor_tpu"
    assert {p.name: p.status for p in registry.plugins()}["z-vendor"] == "loaded"


def test_the_user_chooses_a_vendor_over_the_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JEXT_LOWERING_PREFER", "clash_chosen.op:rocm=z-vendor")
    registry, prim = _lowering_plugins("clash_chosen.op", "z-vendor")
    assert load(registry) == []
    assert prim.lowering_platforms()["rocm"] == "z-vendor_rocm"
    assert prim.lowering_platforms()["cuda"].endswith("owners_gpu")


def test_two_vendors_on_one_platform_are_reported_never_ordered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JEXT_LOWERING_PREFER", raising=False)
    registry, prim = _lowering_plugins("clash_vendors.op", "a-vendor", "z-vendor")
    messages = load(registry)
    tpu = [m for m in messages if "on tpu" in m]
    assert len(tpu) == 1 and "'a-vendor'" in tpu[0] and "'z-vendor'" in tpu[0]
    assert "none is used (the reference is)" in tpu[0]
    assert prim.lowering_platforms()["tpu"] == "reference"

    monkeypatch.setenv("JEXT_LOWERING_PREFER", "clash_vendors2.op=a-vendor")
    registry, prim = _lowering_plugins("clash_vendors2.op", "a-vendor", "z-vendor")
    assert load(registry) == []
    assert prim.lowering_platforms()["tpu"] == "a-vendor_tpu"
    assert prim.lowering_platforms()["rocm"] == "a-vendor_rocm"


# --- look-alike names ----------------------------------------------------------------------------


def test_a_look_alike_namespace_owns_nothing() -> None:
    lookalike = "j\u0435xt"  # with a Cyrillic "\u0435" (U+0435), it reads "jext"
    registry = Registry(group="jext-none")

    def rngs(registry: Any) -> None:
        base = jext.random.get_impl("jext.philox4x64")
        registry.add(dataclasses.replace(base, name=f"{lookalike}.philox4x64", tag="lookalike"))

    registry.register(SimpleNamespace(jext_register_rng_impls=jext.hookimpl(rngs)), name=lookalike)
    messages = load(registry)
    assert len(messages) == 1 and "ASCII" in messages[0], messages
    assert {p.name: p.status for p in registry.plugins()}[lookalike] == "error"
    assert [n for n in registry.rng_impls() if not n.isascii()] == []
    with pytest.raises(jext.PluginError, match="ASCII"):
        registry.register(SimpleNamespace(), name="lookalike-ns", namespaces=[lookalike])
    with pytest.raises(jext.DefinitionError, match="ASCII"):
        jext.primitive(f"{lookalike}.softplus")(lambda x, /: x)


def test_an_rng_tag_names_one_impl() -> None:
    registry = Registry(group="jext-none")
    clone = dataclasses.replace(jext.random.get_impl("jext.philox4x64"), name="clone.philox")
    registry.register(
        SimpleNamespace(
            jext_register_rng_impls=jext.hookimpl(lambda registry: registry.add(clone))
        ),
        name="clone",
    )
    (message,) = load(registry)
    assert "tag 'jext_phx64'" in message and "'jext.philox4x64'" in message
    assert "clone.philox" not in registry.rng_impls()


# --- hooks: the table of kinds, argument names, renamed hooks --------------------------------


def test_every_hookspec_is_one_kind_in_the_table() -> None:
    from jext._hookkinds import KINDS

    specs = sorted(n for n in jext.hookspecs.__all__ if n.startswith("jext_"))
    assert sorted(kind.hook for kind in KINDS) == specs
    for kind in KINDS:
        marked = kind.implement(lambda registrar: None)
        assert getattr(marked, "jext_impl", {}).get("specname") == kind.hook
    assert jext.hooks.register_lowerings.__self__ is KINDS.lowerings


@pytest.mark.parametrize("argument", ["registrar", "registry"])
def test_a_hook_takes_its_registrar_by_either_name(argument: str) -> None:
    registry = Registry(group="jext-none")
    prim = jext.primitive(f"argname_{argument}.double")(lambda x, /: 2 * x)
    plugin = types.ModuleType(f"argname_{argument}")
    exec(  # a plain function whose one argument has the name under test
        f"def jext_register_primitives({argument}):\n    {argument}.add(prim)\n",
        {"prim": prim},
        vars(plugin),
    )
    plugin.jext_register_primitives = jext.hookimpl(plugin.jext_register_primitives)
    registry.register(plugin, namespaces=[f"argname_{argument}"])
    assert load(registry) == []
    assert registry.get_primitive(f"argname_{argument}.double") is prim


def test_a_renamed_hook_still_runs_and_warns_with_the_new_name() -> None:
    from jext._hookcall import HookCaller

    specs = types.ModuleType("specs_with_a_former_name")
    vars(specs).update(
        {n: getattr(jext.hookspecs, n) for n in jext.hookspecs.__all__ if n.startswith("jext_")}
    )

    def jext_add_primitives(registrar: Any) -> None:
        """Former name of jext_register_primitives."""

    specs.jext_add_primitives = jext.hookspecs.hookspec(
        warn_on_impl=DeprecationWarning(
            "jext_add_primitives is deprecated: implement jext_register_primitives"
        )
    )(jext_add_primitives)
    specs.RENAMED_HOOKS = {"jext_add_primitives": "jext_register_primitives"}
    added: list[Any] = []

    def add(registry: Any) -> None:  # the old hook, with the old argument name
        added.append(registry)

    plugin = SimpleNamespace(jext_add_primitives=jext.hookimpl(add))
    caller = HookCaller(specs)
    with pytest.warns(DeprecationWarning, match="implement jext_register_primitives"):
        impls = caller.implementations(plugin, "old-plugin")
    assert list(impls) == ["jext_register_primitives"]
    caller.call(impls["jext_register_primitives"], "the registrar")
    assert added == ["the registrar"]


def test_a_registered_primitive_is_read_from_the_one_table_of_names() -> None:
    # A re-run definition (same module and qualified name) replaces the earlier one in the
    # table of definitions; the registry holds no copy of its own that could go stale.
    def define() -> jext.Primitive[..., Any]:
        def one_table(x: Any, /) -> Any:
            return x + 1

        return jext.primitive("one_table.inc")(one_table)

    first = define()
    registry = Registry(group="jext-none")
    registry.register(
        SimpleNamespace(
            jext_register_primitives=jext.hookimpl(lambda registry: registry.add(first))
        ),
        name="one-table",
    )
    registry.load()
    assert registry.get_primitive("one_table.inc") is first
    second = define()
    assert second is not first
    assert registry.get_primitive("one_table.inc") is second
    assert _host.DEFINITIONS["one_table.inc"] is second


def test_a_plugin_import_joining_a_thread_that_uses_a_core_rng(tmp_path: Path) -> None:
    # The plugin's import (an entry point's load) itself waits for a core RNG's thread.
    code = _RACE_PRELUDE + (
        "import jax, jext.random\n"
        "from jext import _discovery, _registry\n"
        "done = []\n"
        "def use_rng():\n"
        "    key = jext.random.key(0, impl='jext.philox4x64')\n"
        "    done.append(int(jax.random.bits(key, (2,)).sum() >= 0))\n"
        "class EntryPoint:\n"
        "    name, value, dist = 'joiner', 'joiner_module', None\n"
        "    def load(self):\n"
        "        t = threading.Thread(target=use_rng, daemon=True); t.start(); t.join(20)\n"
        "        return SimpleNamespace()\n"
        "found = _discovery.Discovery((EntryPoint(),), {}, ())\n"
        "_registry.discover = lambda group: found\n"
        "loader = threading.Thread(target=jext.load_plugins, daemon=True); loader.start()\n"
        "loader.join(60)\n"
        "print(done, loader.is_alive())\n"
    )
    result = run_python(code, tmp_path)
    assert result.stdout.split() == ["[1]", "False"], result.stderr
