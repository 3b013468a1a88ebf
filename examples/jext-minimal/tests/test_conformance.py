"""Every check of everything this plugin registers (jext's pytest plugin picks them)."""

from jext.testing import test_jext_conformance  # noqa: F401
