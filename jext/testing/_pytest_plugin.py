"""The pytest plugin's work: one test per registered item this project owns, or as selected.

In a plugin's repository, importing the test function into a test module is all it takes::

    from jext.testing import test_jext_conformance  # noqa: F401

By default it checks the project's own plugins (those whose distribution is installed
from pytest's rootdir, e.g. ``pip install -e .``): their primitives, RNG implementations
and SciPy wrappers.  ``--jext-check PATTERN`` / ini ``jext_check`` (globs over names) and
``--jext-plugin NAME`` / ini ``jext_plugins`` select instead.  A selection matching
nothing is a failed test, never a skip; an item that declares no examples is a skipped
test saying so (``jext check`` counts it as not checked).  The options are registered by the light
``_jext_pytest`` module, so pytest sessions that never use jext never import JAX.
"""

from __future__ import annotations

import json
from fnmatch import fnmatch
from importlib.metadata import distributions
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from jext._registry import Registry, registry

if TYPE_CHECKING:
    import pytest

__all__ = ["own_plugins", "parametrize", "selected_cases", "test_jext_conformance"]

CASE_FIXTURE = "jext_conformance_case"


def _installed_from(dist_name: str) -> Path | None:
    """The local folder a distribution was pip-installed from (PEP 610), or None."""
    # An editable install leaves a bare ``<name>.egg-info`` in the source folder, found
    # first when that folder is on sys.path: take the copy pip recorded (with its URL).
    text = next(
        (t for d in distributions(name=dist_name) if (t := d.read_text("direct_url.json"))),
        None,
    )
    if not text:
        return None
    url = json.loads(text).get("url", "")
    parsed = urlparse(url)
    return Path(unquote(parsed.path)).resolve() if parsed.scheme == "file" else None


def own_plugins(rootdir: Path, reg: Registry | None = None) -> list[str]:
    """The plugins whose distribution was installed from ``rootdir`` or a folder inside it."""
    rootdir = rootdir.resolve()
    own = []
    for info in (reg or registry()).plugins():
        source = _installed_from(info.distribution) if info.distribution else None
        if source is not None and (source == rootdir or rootdir in source.parents):
            own.append(info.name)
    return own


def selected_cases(
    rootdir: Path,
    patterns: list[str],
    plugins: list[str],
    reg: Registry | None = None,
) -> list[tuple[str, str]]:
    """``(kind, name)`` for each selected item; ``("nothing", why)`` if none is selected.

    Kinds: ``plugin`` (a selected plugin that failed to load), ``primitive``, ``rng``
    and ``scipy`` (``name`` as ``jext check`` takes it).
    """
    reg = reg or registry()
    # Plugins named, else (without patterns) the project's own; None: every plugin.
    chosen: list[str] | None = plugins or (None if patterns else own_plugins(rootdir, reg))
    infos = {p.name: p for p in reg.plugins()}
    items = [("primitive", n, p) for n, p in reg.primitive_owners().items()]
    items += [("rng", n, o.plugin) for n, o in reg.rng_impls().items()]
    items += [
        ("scipy", f"jext.scipy.{scope}.{name}", o.plugin)
        for (scope, name), owners in reg.scipy_wrappers().items()
        for o in owners
    ]
    cases = [
        ("plugin", name) for name in chosen or () if name in infos and infos[name].status == "error"
    ]
    cases += list(
        dict.fromkeys(
            (kind, name)
            for kind, name, plugin in items
            if (chosen is None or plugin in chosen)
            and (not patterns or any(fnmatch(name, p) for p in patterns))
        )
    )
    if not cases:
        if chosen is None:
            what = f"the patterns {patterns}"
        elif plugins:
            what = f"plugins {chosen}" + (f" and patterns {patterns}" if patterns else "")
        else:
            what = f"this project's plugins: none is installed from {rootdir}"
        cases = [("nothing", f"jext conformance: nothing registered matches {what}")]
    return cases


def parametrize(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    patterns = config.getoption("jext_check") or config.getini("jext_check")
    plugins = config.getoption("jext_plugin") or config.getini("jext_plugins")
    cases = selected_cases(Path(config.rootpath), list(patterns), list(plugins))
    ids = [k if k == "nothing" else f"{k}:{n}" for k, n in cases]
    metafunc.parametrize(CASE_FIXTURE, cases, ids=ids)


def test_jext_conformance(jext_conformance_case: tuple[str, str]) -> None:
    """Every check of one registered item (parametrized by jext's pytest plugin)."""
    import pytest  # noqa: PLC0415 - pytest is present only where this test runs

    from jext.testing._api import run_checks  # noqa: PLC0415 - the checks load only when the test runs

    kind, name = jext_conformance_case
    if kind == "nothing":
        pytest.fail(name + " (a selection that checks nothing fails; see --jext-check)")
    if kind == "plugin":
        (info,) = [p for p in registry().plugins() if p.name == name]
        pytest.fail(f"plugin {name!r} failed to load: {info.error}")
    # Broken plugins are cases of their own (kind "plugin"), not this item's failure.
    reports = [r for r in run_checks([name]) if r.kind != "plugin"]
    assert reports, f"{kind} {name} is no longer registered"
    if all(r.status == "unchecked" for r in reports):  # as `jext check`: told, not failed
        pytest.skip("; ".join(f"{r.name}: {r.results[0].message}" for r in reports))
    assert all(r.ok for r in reports), "\n".join(r.format() for r in reports)
