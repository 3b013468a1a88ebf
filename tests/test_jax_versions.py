"""jext/_jax.py absorbs every difference between the supported JAX releases, in one section.

CI runs the whole suite on the oldest supported JAX and on the newest installable one;
these tests keep the switches where a reader finds them.
"""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
import math
import pickle
import re
import tomllib
from pathlib import Path

import jax
import jax.extend.core
import numpy as np
import pytest

from jext import _jax

ROOT = Path(__file__).resolve().parents[1]
JAX_LAYER = ROOT / "jext" / "_jax.py"
SECTION = "# --- version switches ---"


def switches_section() -> str:
    text = JAX_LAYER.read_text()
    assert text.count(SECTION) == 1, f"jext/_jax.py needs one {SECTION!r} section"
    return text[text.index(SECTION) :]


def test_jax_version_is_the_installed_release() -> None:
    release = re.match(r"\d+(\.\d+)*", importlib.metadata.version("jax"))
    assert release is not None
    assert _jax.JAX_VERSION[:3] == tuple(int(p) for p in release.group().split("."))[:3]


def switches() -> dict[str, str]:
    """Each switch's name and docstring: a function, or a name with a docstring below it."""
    body = ast.parse(switches_section()).body
    found = {}
    for i, node in enumerate(body):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = ast.get_docstring(node) or ""
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            below = body[i + 1] if i + 1 < len(body) else None
            doc = below.value.value if isinstance(below, ast.Expr) else None
            found[node.target.id] = doc if isinstance(doc, str) else ""
    return found


def test_each_switch_names_the_release_and_change_it_absorbs() -> None:
    found = switches()
    assert found.pop("JAX_VERSION") != ""  # the version itself, read by the switches
    assert {"jaxpr_subcomp", "mlir_ir"} <= set(found)
    for name, doc in found.items():
        assert re.search(r"jax(lib)? 0\.\d+", doc), f"{name}: its docstring must name the release"


def test_the_version_is_read_only_in_the_switches_section() -> None:
    """A comparison with the JAX version anywhere else is a switch outside the one place."""
    before = JAX_LAYER.read_text().split(SECTION)[0]
    assert "JAX_VERSION" not in before and "__version" not in before
    offenders = [
        str(path.relative_to(ROOT))
        for path in [*ROOT.glob("jext/**/*.py"), *ROOT.glob("plugins/*/src/**/*.py")]
        if path != JAX_LAYER
        and re.search(r"jax\.__version|jaxlib\.__version|JAX_VERSION", path.read_text())
    ]
    assert offenders == []


def test_public_jax_extend_names_are_used_where_they_exist() -> None:
    for name in ("ClosedJaxpr", "Jaxpr", "Primitive", "jaxpr_as_fun"):
        assert getattr(_jax, name) is getattr(jax.extend.core, name), name


def test_mlir_ir_is_jax_extend_mlir_ir_typed_loosely() -> None:
    """The same module; only its static type (Any) differs, for jax 0.8's missing stubs."""
    import jax.extend.mlir.ir

    assert _jax.mlir_ir is jax.extend.mlir.ir
    assert hasattr(_jax.mlir_ir, "RankedTensorType")


NATIVE_PLUGINS = sorted(
    p.parent.name for p in ROOT.glob("plugins/*/pyproject.toml") if "jaxlib" in p.read_text()
)


@pytest.mark.parametrize("plugin", NATIVE_PLUGINS)
def test_native_plugins_build_against_the_oldest_supported_ffi(plugin: str) -> None:
    """XLA loads FFI handlers built against an older FFI API, never a newer one (jaxlib
    0.8.3 refuses 0.10's, and then cannot start its CPU backend at all): every plugin that
    compiles handlers builds them against jext's oldest JAX."""
    jext_deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    native = tomllib.loads((ROOT / "plugins" / plugin / "pyproject.toml").read_text())
    build = native["build-system"]["requires"]
    for dist in ("jax", "jaxlib"):
        (supported,) = [d for d in jext_deps if re.match(rf"{dist}[<>=]", d)]
        oldest = re.search(r">=([\d.]+)", supported)
        assert oldest is not None, supported
        major, minor = oldest.group(1).split(".")[:2]
        assert f"{dist}>={major}.{minor},<{major}.{int(minor) + 1}" in build, plugin


def test_both_native_plugins_are_found() -> None:
    assert {"jext-example-native", "jext-rng-native"} <= set(NATIVE_PLUGINS)


def test_typed_keys_pickle_switch_matches_jax() -> None:
    key = jax.random.key(0)
    try:
        pickle.dumps(key)
    except TypeError as error:
        assert "cannot pickle 'PRNGKeyArray'" in str(error)
        assert not _jax.typed_keys_pickle()
    else:
        assert _jax.typed_keys_pickle()


def test_random_exponential_out_sharding_switch_matches_jax() -> None:
    takes = "out_sharding" in inspect.signature(jax.random.exponential).parameters
    assert _jax.random_exponential_takes_out_sharding() == takes


def test_literal_array_types_switch_matches_jax() -> None:
    # 0.9.2 made JAX's tracing literal a numpy array; before it, jext lists it as an operand.
    assert bool(_jax.literal_array_types()) == (_jax.JAX_VERSION < (0, 9, 2))
    for literal in _jax.literal_array_types():
        assert not issubclass(literal, np.ndarray)


@pytest.mark.numerics
@pytest.mark.usefixtures("on_cpu")  # the probe is about XLA:CPU's cbrt
def test_cbrt_rounding_probe_matches_a_direct_measurement() -> None:
    """The probe says what mpmath measures here: XLA's float64 cbrt rounds correctly iff
    every root of the sample is nearer the exact root than either neighbour is.  On an
    AVX-512 Xeon with jax 0.10.2 it is False (3 ulp at ``7.94e-75``)."""
    mpmath = pytest.importorskip("mpmath")
    x = _jax._cbrt_probe_points()
    with jax.enable_x64(True):
        got = np.asarray(jax.numpy.cbrt(x))

    def nearest(v: float, root: float) -> bool:
        exact = mpmath.cbrt(mpmath.mpf(v))
        miss = abs(mpmath.mpf(root) - exact)
        return all(
            miss < abs(mpmath.mpf(np.nextafter(root, side)) - exact) for side in (-np.inf, np.inf)
        )

    with mpmath.workprec(240):
        measured = all(nearest(float(v), float(r)) for v, r in zip(x, got, strict=True))
    assert _jax.xla_cbrt_is_correctly_rounded() == measured


@pytest.mark.numerics
def test_cbrt_probe_rejects_a_root_one_ulp_off() -> None:
    """The probe's exact check can fail: the float64 nearest the cube root (mpmath's root
    at 240 bits, rounded once to 53) is accepted, and each neighbour of it is rejected."""
    mpmath = pytest.importorskip("mpmath")
    for v in (7.943282347242919e-75, 2.0, -27.0, 1e300, 5.0, 4.466835921509397e-284):
        with mpmath.workprec(240):
            exact = mpmath.cbrt(mpmath.mpf(abs(v)))
        with mpmath.workprec(53):
            root = math.copysign(float(+exact), v)  # unary plus rounds to nearest at 53 bits
        assert _jax._is_nearest_cbrt(v, root)
        for side in (-np.inf, np.inf):
            assert not _jax._is_nearest_cbrt(v, float(np.nextafter(root, side)))
    assert _jax._is_nearest_cbrt(0.0, 0.0) and not _jax._is_nearest_cbrt(8.0, -2.0)


def test_compile_options_the_running_xla_lacks_are_left_out() -> None:
    """XLA refuses a whole compilation over one option it does not know (jax 0.12 has no
    ``xla_cpu_use_fusion_emitters``); the options jext compiles with are probed, not assumed."""
    wanted = {"xla_backend_optimization_level": 0, "xla_jext_no_such_option": True}
    with pytest.raises(jax.errors.JaxRuntimeError, match="xla_jext_no_such_option"):
        jax.jit(lambda x: x * 2).lower(np.float32(1)).compile(wanted)
    assert _jax.xla_compile_options(wanted) == {"xla_backend_optimization_level": 0}


def test_the_checks_and_tests_fast_compile_options_compile_here() -> None:
    from jext.testing._compile import STRUCTURE_COMPILE
    from tests.fast_compile import run_fast

    assert STRUCTURE_COMPILE["xla_backend_optimization_level"] == 1
    x = np.arange(3, dtype=np.float32)
    compiled = jax.jit(lambda v: v * 2).lower(x).compile(STRUCTURE_COMPILE)
    np.testing.assert_array_equal(compiled(x), 2 * x)
    np.testing.assert_array_equal(run_fast(lambda v: v * 2, x), 2 * x)


def test_a_jax_internal_gone_is_a_clear_error_naming_the_versions_and_the_remedy() -> None:
    """pyproject gives JAX no upper bound (docs/stability.md): a JAX release that drops an
    internal jext/_jax.py imports fails at jext's first use with what to do, not with a
    bare ImportError from deep inside JAX."""
    import subprocess
    import sys

    script = (
        "import jax, jax._src.core as core\n"
        "del core.jaxprs_in_params  # as a future JAX without it\n"
        "import jext._jax\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: jext cannot use jax "), last
    assert "jaxprs_in_params" in last and jax.__version__ in last
    major, minor = _jax.JAX_TESTED
    assert f"tested up to jax {major}.{minor}" in last
    assert f"pip install 'jax<{major}.{minor + 1}' 'jaxlib<{major}.{minor + 1}'" in last
