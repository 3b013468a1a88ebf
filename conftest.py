"""The whole suite's pytest set-up (every folder of ``testpaths`` in pyproject.toml)."""

import os

import pytest

pytest_plugins = ["pytester", "tests.collect_guard"]

# `jext check` keeps compiled programs in the user's cache folder; the suite compiles
# afresh, as CI does, and leaves that folder alone (tests of the cache name their own).
os.environ.setdefault("JEXT_NO_CACHE", "1")

#: Modules that run long for their number of tests (mypy runs, pip installs, subprocesses,
#: SciPy kernels compiled by the hundred), longest first.  With ``--dist loadfile`` the two
#: workers take whole modules in the order collected; xdist's own order (most tests first,
#: turned off in pyproject.toml) left these few-test modules for the end, where one worker
#: ran them alone while the other waited.  Order only: every test still runs.
LONG_FIRST = (
    # Ordered by CPU seconds (user + sys, children included) of each module in one serial
    # run of the suite (-n 0, jax 0.10.2, on a loaded 2-core machine), longest first:
    # with --dist loadfile a worker that takes a long module last finishes alone.
    "plugins/jext-scipy-special/tests/test_special_batch.py",  # ~115
    "plugins/jext-scipy-special/tests/test_special_poly_real.py",  # ~88
    "tests/rng_impls/test_jax_suite.py",  # ~77 (a subprocess on 4 CPU devices)
    "tests/test_bench.py",  # ~75, in subprocesses two at a time
    "plugins/jext-scipy-special/tests/test_special_beta_family.py",  # ~70
    "tests/test_compositions.py",  # ~70
    "tests/rng_impls/test_strategies.py",  # ~60
    "plugins/jext-scipy-special/tests/test_special_subnormals.py",  # ~40
    "plugins/jext-example-native/tests/test_layer_norm.py",  # ~40
    "tests/test_registry.py",  # ~38, mostly subprocesses
    "plugins/jext-scipy-special/tests/test_special_transforms.py",  # ~35
    "plugins/jext-scipy-special/tests/test_special_discrete.py",  # ~33
    "tests/test_effect_counts.py",  # ~31
    "plugins/jext-example-native/tests/test_native.py",  # ~30
    "plugins/jext-scipy-special/tests/test_special_families.py",  # ~30
    "plugins/jext-scipy-special/tests/test_special_grads.py",  # ~25
    "plugins/jext-scipy-special/tests/test_special_bessel_hankel_region.py",  # ~25
    "tests/test_jax_custom_api.py",  # ~25, one subprocess
    "tests/rng_impls/test_known_answers.py",  # ~25
    "tests/test_properties.py",  # ~24
    # Few tests, each a subprocess (mypy, pip installs), slower on a cold CI machine.
    "tests/test_quality.py",
    "tests/test_typing.py",
    "tests/test_plugin_guide.py",
    "tests/test_scaffold.py",
    "tests/test_downstream.py",
    "plugins/jext-scipy-special/tests/test_special_struve.py",  # ~20
    "tests/test_jax_twins.py",  # ~15
    "tests/test_hijax_twins.py",  # ~15
    "tests/rng_impls/test_conventions.py",  # ~15
    "plugins/jext-scipy-special/tests/test_special_ks_voigt.py",  # ~15
    "plugins/jext-scipy-special/tests/test_special_edges.py",  # ~15
    "tests/test_transformations.py",  # ~13
    "plugins/jext-scipy-special/tests/test_special_scipy_data.py",  # ~10
    "tests/test_core_regressions.py",  # ~10
    "plugins/jext-scipy-special/tests/test_special_bessel_jy.py",  # ~10
    "tests/test_checks.py",  # ~10
    "tests/test_sharding.py",  # ~5, a subprocess on 4 CPU devices
    "tests/test_multiprocess.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules in :data:`LONG_FIRST` first, then the others by number of tests, most first
    (xdist's own order), so that short modules make the end of the run and both workers
    finish together.  The tests of a module keep their order."""
    counts: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        counts[module] = counts.get(module, 0) + 1

    def rank(item: pytest.Item) -> tuple[int, int]:
        module = item.nodeid.split("::", 1)[0]
        if module in LONG_FIRST:
            return (0, LONG_FIRST.index(module))
        return (1, -counts[module])

    items.sort(key=rank)  # stable: a module's tests stay in order
