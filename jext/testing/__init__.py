"""Conformance checks for jext primitives, as a library and as a pytest plugin.

``jext.testing.check_primitive(prim)`` runs every check on a primitive's declared
examples and raises ``AssertionError`` with a readable report if one fails.  In a
plugin's repository, one line gives a test per registered primitive and check::

    from jext.testing import test_jext_conformance  # noqa: F401
"""

from jext.testing._api import check_primitive as check_primitive
from jext.testing._api import run_checks as run_checks
from jext.testing._checks import PRIMITIVE_CHECKS as PRIMITIVE_CHECKS
from jext.testing._pytest_plugin import test_jext_conformance as test_jext_conformance
from jext.testing._report import CheckResult as CheckResult
from jext.testing._report import CheckStatus as CheckStatus
from jext.testing._report import PrimitiveReport as PrimitiveReport
from jext.testing._sharding_check import check_sharding as check_sharding

__all__ = [
    "PRIMITIVE_CHECKS",
    "CheckResult",
    "CheckStatus",
    "PrimitiveReport",
    "check_primitive",
    "check_sharding",
    "run_checks",
    "test_jext_conformance",
]
