"""The pytest plugin in use: every registered primitive (the installed example plugins) conforms."""

from jext.testing import test_jext_conformance  # noqa: F401
