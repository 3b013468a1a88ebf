"""JAX's own tests of ``custom_jvp`` and ``custom_vjp`` (``tests/custom_api_test.py`` at the
tag of the installed JAX, in ``tests/data/jax_custom_api``), run with every custom function
made a jext primitive by adoption (``tests/adopting.py``): the oracle is JAX itself.

Each test that fails so is listed below with the reason it is expected to; any other
failure, or a listed test that starts to pass, fails this test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import pytest

from tests.fast_compile import xla_flags

HERE = Path(__file__).resolve().parent
VENDORED = HERE / "data" / "jax_custom_api"

_ERRORS = "both raise; jext's error is a jext.RuleError naming the primitive, JAX's another"
_JAXPR = "reads JAX's own equations (custom_jvp_call, custom_vjp_call) in the jaxpr"
#: Test (class::name) -> why it fails with adopted functions (docs/jax-custom-rules.md,
#: "Intentional differences").
EXPECTED_FAILURES: dict[str, str] = {
    "CustomJVPTest::test_jvp_rule_doesnt_return_pair_error_message": _ERRORS,
    "CustomJVPTest::test_jvp_rule_inconsistent_pytree_structures_error_message": _ERRORS,
    "CustomJVPTest::test_jvp_rule_primal_out_type_doesnt_match_primal_error_message": _ERRORS,
    "CustomJVPTest::test_primal_tangent_aval_disagreement_error_message": _ERRORS,
    "CustomJVPTest::test_resolve_kwargs_error_message": _ERRORS,
    "CustomVJPTest::test_bwd_rule_shape_mismatch": _ERRORS,
    "CustomVJPTest::test_fwd_rule_primal_out_type_doesnt_match_primal_error_message": _ERRORS,
    "CustomVJPTest::test_jvp_error": _ERRORS,
    "CustomVJPTest::test_resolve_kwargs_error_message": _ERRORS,
    "CustomVJPTest::test_vjp_bwd_returns_non_tuple_error": _ERRORS,
    "CustomVJPTest::test_vjp_rule_inconsistent_pytree_structures_error": _ERRORS,
    "CustomVJPTest::test_bwd_rule_shape_mismatch_disable": (
        "jext checks bwd's shapes whatever jax.config's disable_bwd_checks says"
    ),
    "CustomJVPTest::test_dce": _JAXPR,
    "CustomJVPTest::test_pretty_print": _JAXPR,
    "CustomVJPTest::test_dce": _JAXPR,
    "CustomVJPTest::test_pretty_print": _JAXPR,
    "CustomVJPTest::test_custom_lin_pretty_print": _JAXPR,
    "CustomJVPTest::test_symbolic_zero_custom_jvp": (
        "eagerly a primitive returns arrays; the test wants a Python float back"
    ),
    "CustomVJPTest::test_symbolic_zero_custom_vjp": (
        "eagerly a primitive returns arrays; the test wants a Python float back"
    ),
    "CustomJVPTest::test_closure_with_vmap2": (
        "a rule's own closure over a vmapped value, differentiated outside that vmap (docs)"
    ),
    "CustomVJPTest::test_closure_with_vmap2": (
        "a rule's own closure over a vmapped value, differentiated outside that vmap (docs)"
    ),
    "CustomVJPTest::test_optimize_remat_gh21303": "optimize_remat is not reproduced (docs)",
    "CustomVJPTest::test_symbolic_zero_custom_vjp_custom_pytree": (
        "bwd returns an array where the operand is a one-leaf pytree: a RuleError"
    ),
}


def _vendored_tests() -> Path:
    path = VENDORED / f"custom_api_test-jax-v{jax.__version__}.py.txt"
    if not path.exists():
        tags = sorted(p.name.split("-jax-")[1][:-7] for p in VENDORED.glob("*.py.txt"))
        pytest.skip(f"JAX's custom_api tests are vendored for {', '.join(tags)} only")
    return path


@pytest.mark.slow
def test_jaxs_custom_function_tests_pass_with_adopted_primitives(tmp_path: Path) -> None:
    shutil.copy(_vendored_tests(), tmp_path / "custom_api_test.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    report, log = tmp_path / "report.xml", tmp_path / "refused.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "JEXT_ADOPTION_LOG": str(log),
        "JAX_PLATFORMS": "cpu",
        # JAX's tests compare values computed in that process, all compiled alike: XLA's
        # fast-compile options (tests/fast_compile.py) change no outcome and a third of the
        # CPU time.
        "XLA_FLAGS": xla_flags(os.environ.get("XLA_FLAGS", "")),
    }
    command = [sys.executable, "-m", "pytest", "-c", str(tmp_path / "pytest.ini")]
    command += ["-p", "adopting", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "--tb=line"]
    command += ["-k", "CustomJVPTest or CustomVJPTest", f"--junitxml={report}"]
    done = subprocess.run(
        [*command, "custom_api_test.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    ran, failed = set(), set()
    for case in ET.parse(report).iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        if case.find("skipped") is None:
            ran.add(name)
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(name)
    assert len(ran) > 100, done.stdout[-3000:]
    expected = {name for name in EXPECTED_FAILURES if name in ran}
    assert failed - expected == set(), done.stdout[-6000:]
    assert expected - failed == set(), "listed as failing, now passing: drop them from the list"
    # Where jext refuses adoption, with its alternative, the test ran plain JAX.
    refused = json.loads(log.read_text())
    reasons = ("nondiff_argnums", "no rules yet", "symbolic_zeros=True")
    assert all(any(r in message for r in reasons) for message in refused.values()), refused
    assert len(ran) - len(refused) > 100
