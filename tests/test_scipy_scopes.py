"""jext.scipy scopes: jax.scipy's own functions, plugin wrappers, replacements and conflicts."""

from __future__ import annotations

import inspect
import io
import json
import re
import subprocess
import sys
import types
import weakref
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
import scipy.special

import jext
import jext.scipy
from jext._cli import _print_listing
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


# --- wrappers are functions ---------------------------------------------------------------------


def test_a_wrapper_is_a_plain_function_with_its_real_signature() -> None:
    from jext.scipy import special

    f = special.ellipk
    assert isinstance(f, types.FunctionType)
    assert weakref.ref(f)() is f
    assert (f.__name__, f.__qualname__, f.__module__) == ("ellipk", "ellipk", "jext.scipy.special")
    assert "scipy.special.ellipk" in (f.__doc__ or "")
    assert list(inspect.signature(f).parameters) == ["m"]
    assert list(inspect.signature(special.lambertw).parameters) == ["z", "k"]
    wrapper = vars(f)["jext_wrapper"]  # the declaration, with the metadata, beside it
    assert isinstance(wrapper, jext.scipy.ScipyWrapper)
    assert vars(f)["__wrapped__"] is wrapper.function and wrapper.public is f
    assert special.ellipk is f  # the same object each time: JAX's caches stay warm


def test_a_wrapper_works_under_every_transformation_repeatedly() -> None:
    # In a subprocess: jax 0.10.2 crashed on the second jax.jit of a slotted callable.
    code = """
import jax, jax.numpy as jnp, numpy as np, scipy.special as sp
from jext.scipy import special
from jext_scipy_special import WRAPPERS
x = jnp.linspace(0.1, 0.9, 4)
want = sp.ellipk(np.asarray(x, np.float64))
for f in (special.ellipk, WRAPPERS[0], special.ellipk, WRAPPERS[0]):
    for out in (jax.jit(f)(x), jax.jit(f)(x), jax.checkpoint(f)(x), jax.vmap(f)(x)):
        np.testing.assert_allclose(out, want, rtol=1e-5)
    assert jax.eval_shape(f, x).shape == (4,)
    g = jax.grad(f)(0.3)
    h = 1e-6
    np.testing.assert_allclose(g, (sp.ellipk(0.3 + h) - sp.ellipk(0.3 - h)) / (2 * h), rtol=1e-3)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(0.3), g, rtol=1e-6)
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_jext_list_json_shows_wrapper_and_rng_metadata() -> None:
    data = json.loads(
        subprocess.run(
            [sys.executable, "-m", "jext", "list", "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout,
        parse_constant=lambda token: pytest.fail(f"non-standard JSON token {token}"),
    )
    (entry,) = [s for s in data["scipy"] if s["name"] == "ellipk"]
    meta = entry["wrappers"]["scipy-special"]
    assert meta["tolerances"]["float64"] == {"rtol": 1e-12, "atol": 1e-300}
    assert meta["domains"] == [
        {"bounds": [[-10.0, 0.999]], "kwargs": {}, "log": False, "integers": []}
    ]
    assert meta["dtypes"] == ["float32", "float64"] and meta["differentiable"] == [0]
    assert entry["providers"] == ["scipy-special"] and entry["status"] == "plugin"
    (philox,) = [r for r in data["rng_impls"] if r["name"] == "jext.philox4x64"]
    assert philox["bit_exact_with"] == "numpy.random.Philox"
    assert philox["tag"] and philox["description"]
    # Plugins' namespaces and which are core; FFI targets; coverage against SciPy itself.
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["jext-rng"]["core"] and plugins["jext-rng"]["namespaces"] == ["jext"]
    assert not plugins["scipy-special"]["core"]
    assert "scipy_special" in plugins["scipy-special"]["namespaces"]
    targets = {(t["name"], t["platform"]): t for t in data["ffi_targets"]}
    assert targets[("native_rms_norm", "cpu")]["plugin"] == "example-native"
    assert targets[("native_rms_norm", "cpu")]["batch_partitionable"] is True
    special = {c["scope"]: c for c in data["scipy_coverage"]}["special"]
    public = {n for n in scipy.special.__all__ if callable(getattr(scipy.special, n))}
    assert special["callables"] == len(public) and special["scipy_version"] == scipy.__version__
    provided = {s["name"] for s in data["scipy"] if s["scope"] == "special"}
    assert special["covered"] == len(provided & public)
    assert special["covered"] == special["from_jax"] + special["from_plugins"]
    assert special["from_plugins"] > 0 and "ellipk" not in special["missing"]
    assert sorted(special["missing"]) == sorted(public - provided)
    # The table `jext list` prints from the same data.
    text = io.StringIO()
    _print_listing(data, text)
    assert re.search(
        r"^  special: \d+ of \d+ \(\d+ from jax\.scipy, \d+ from plugins\)$", text.getvalue(), re.M
    )
    assert re.search(r"^  jext-rng .*loaded \(core\)\s+jext\s*$", text.getvalue(), re.M)
    assert re.search(r"^  native_rms_norm\s+cpu\s+example-native\s+yes", text.getvalue(), re.M)
    # The cuda handler library is built only where the plugin's install found nvcc; its
    # target is registered (and listed) exactly when the library is there.
    from jext_example_native import cuda_library

    cuda_row = re.search(r"^  native_softplus\s+cuda\s+example-native", text.getvalue(), re.M)
    assert (cuda_row is not None) == (cuda_library() is not None)
    assert (("native_softplus", "cuda") in targets) == (cuda_row is not None)
