"""The whole suite's pytest set-up (every folder of ``testpaths`` in pyproject.toml)."""

import os

pytest_plugins = ["pytester", "tests.collect_guard"]

# `jext check` keeps compiled programs in the user's cache folder; the suite compiles
# afresh, as CI does, and leaves that folder alone (tests of the cache name their own).
os.environ.setdefault("JEXT_NO_CACHE", "1")
