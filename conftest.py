"""The whole suite's pytest set-up (every folder of ``testpaths`` in pyproject.toml)."""

pytest_plugins = ["pytester", "tests.collect_guard"]
