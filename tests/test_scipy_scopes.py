"""jext.scipy scopes: jax.scipy's own functions, plugin wrappers, replacements and conflicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jext
import jext.scipy
from tests.conftest import run_python


def test_jax_functions_are_in_their_scope() -> None:
    from jext.scipy import special, stats

    assert special.gammaln is jax.scipy.special.gammaln
    assert stats.norm is jax.scipy.stats.norm
    assert "gammaln" in dir(special)


def test_unknown_name_is_an_attribute_error_with_suggestions() -> None:
    from jext.scipy import special

    with pytest.raises(AttributeError, match=r"no attribute 'gamaln'.*Did you mean 'gammaln'"):
        special.gamaln  # noqa: B018


def test_scopes_without_a_module_file_are_made_on_demand() -> None:
    integrate = jext.scipy.integrate  # type: ignore[attr-defined]
    assert integrate.__name__ == "jext.scipy.integrate"
    assert integrate.trapezoid is jax.scipy.integrate.trapezoid
    import jext.scipy.integrate as again  # type: ignore[import-not-found]

    assert again is integrate
    with pytest.raises(AttributeError):
        jext.scipy._not_a_scope  # type: ignore[attr-defined]  # noqa: B018


def test_plugins_wrappers_replacements_and_conflicts(catalog_site: Path) -> None:
    code = (
        "import json, jext\n"
        "from jext.scipy import special\n"
        "out = {'erf': float(special.erf(0.5))}\n"
        "try:\n"
        "    special.twice\n"
        "except jext.scipy.ScipyConflictError as e:\n"
        "    out['conflict'] = str(e)\n"
        "out['entries'] = [(e.name, e.status, list(e.providers))\n"
        "                  for e in jext.scipy.entries('special')\n"
        "                  if e.name in ('erf', 'twice', 'erfc')]\n"
        "out['plugins'] = {p.name: [p.status, p.error] for p in jext.plugins()}\n"
        "print(json.dumps(out))\n"
    )
    result = run_python(code, catalog_site)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["erf"] == 7.0  # the declared replacement wins over jax.scipy's erf
    assert "provided by plugins 'scipy-a', 'scipy-b', and neither wins" in out["conflict"]
    assert sorted(map(tuple, [(n, s, tuple(p)) for n, s, p in out["entries"]])) == [
        ("erf", "replacement", ("scipy-a",)),
        ("erfc", "jax", ("jax",)),
        ("twice", "conflict", ("scipy-a", "scipy-b")),
    ]
    assert out["plugins"]["fault-scipy"][0] == "error"

    preferred = run_python(
        "from jext.scipy import special; print(float(special.twice(1.5)))",
        catalog_site,
        JEXT_SCIPY_PREFER="special.twice=scipy-b",
    )
    assert preferred.stdout.strip() == "3.0", preferred.stderr


def test_jext_list_shows_scope_entries() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jext", "list", "--json"], capture_output=True, text=True, check=True
    )
    entries = json.loads(result.stdout)["scipy"]
    erf = next(e for e in entries if (e["scope"], e["name"]) == ("special", "erf"))
    assert erf["status"] == "jax" and erf["providers"] == ["jax"]
    assert set(erf) >= {"scope", "name", "status", "providers", "mirrors"}


def test_wrapper_declaration_is_validated() -> None:
    with pytest.raises(jext.DefinitionError, match="mirrors must name a SciPy function"):
        jext.scipy.ScipyWrapper(
            scope="special", name="f", mirrors="numpy.sin", function=jnp.sin,
            domains=(jext.scipy.Domain(((0.0, 1.0),)),),
        )  # fmt: skip
    with pytest.raises(jext.DefinitionError, match="at least one Domain"):
        jext.scipy.ScipyWrapper(
            scope="special", name="f", mirrors="scipy.special.f", function=jnp.sin, domains=()
        )
