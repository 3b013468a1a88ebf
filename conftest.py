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
    # Ordered by serial --durations on a loaded machine (poly_real ~97 CPU s at -n 0 with
    # its compiled programs shared, bessel_jy ~14).
    "plugins/jext-scipy-special/tests/test_special_batch.py",
    "plugins/jext-scipy-special/tests/test_special_poly_real.py",
    "tests/rng_impls/test_jax_suite.py",
    "plugins/jext-scipy-special/tests/test_special_beta_family.py",
    "tests/test_properties.py",
    "plugins/jext-scipy-special/tests/test_special_transforms.py",
    "plugins/jext-scipy-special/tests/test_special_scipy_data.py",
    "plugins/jext-scipy-special/tests/test_special_struve.py",
    "plugins/jext-scipy-special/tests/test_special_discrete.py",
    "plugins/jext-scipy-special/tests/test_special_bessel_hankel_region.py",
    "plugins/jext-scipy-special/tests/test_special_bessel_jy.py",
    # Few tests, each a subprocess (mypy, pip installs), slower on a cold CI machine.
    "tests/test_quality.py",
    "tests/test_typing.py",
    "tests/test_downstream.py",
    "tests/test_plugin_guide.py",
    "tests/test_scaffold.py",
    "tests/test_bench.py",
    "tests/test_sharding.py",
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
