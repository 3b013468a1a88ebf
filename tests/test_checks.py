"""jext.testing: every check passes on correct rules and fails on a deliberately wrong one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.testing
from jext._cli import main as cli_main
from jext.testing._checks import run_check

X = np.linspace(-1.5, 1.5, 5, dtype=np.float32)


def make(name: str, fn: Any, *examples: jext.Example) -> jext.Primitive[Any, Any]:
    prim = jext.primitive(f"checks.{name}")(fn)

    @prim.def_examples
    def _() -> Iterator[jext.Example]:
        yield from examples or (jext.Example(X),)

    return prim


def status(prim: jext.Primitive[Any, Any], check: str) -> tuple[str, str]:
    result = run_check(prim, check, prim.examples())
    return result.status, result.message


def test_good_primitive_passes_every_check() -> None:
    prim = make("good", lambda x, /, *, k=2.0: jnp.sin(x) * k, jext.Example(X, k=3.0))
    report = jext.testing.check_primitive(prim)
    assert [r.status for r in report.results] == ["pass"] * len(jext.testing.PRIMITIVE_CHECKS)
    assert report.details["platforms"] == dict.fromkeys(("cpu", "cuda", "rocm", "tpu"), "reference")


def test_without_examples_every_check_is_skipped_with_the_reason() -> None:
    prim = jext.primitive("checks.no_examples")(lambda x, /: x)
    report = jext.testing.check_primitive(prim)
    assert {r.status for r in report.results} == {"skip"}
    assert "declares no examples" in report.results[0].message


# --- each check catches its fault --------------------------------------------------------------


def test_abstract_eval_with_wrong_dtype_fails() -> None:
    prim = make("bad_aval", lambda x, /: x * 2)
    prim.def_abstract_eval(lambda x: jax.ShapeDtypeStruct(x.shape, jnp.float16))
    assert status(prim, "abstract_eval")[0] == "fail"


def test_abstract_eval_with_wrong_weak_type_fails() -> None:
    prim = make("bad_weak", lambda x, /: x * 2)
    prim.def_abstract_eval(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=True))
    prim.def_impl(lambda x: np.asarray(x) * 2)
    st, message = status(prim, "abstract_eval")
    assert st == "fail" and "(weak)" in message


def test_jit_eager_mismatch_fails() -> None:
    prim = make("bad_impl", lambda x, /: x * 2)
    prim.def_impl(lambda x: np.asarray(x) * 2.01)
    st, message = status(prim, "jit")
    assert st == "fail" and "jit vs eager" in message


def test_jvp_off_by_a_factor_fails_and_right_one_passes() -> None:
    prim = make("bad_jvp", lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))
    st, message = status(prim, "jvp")
    assert st == "fail" and "jvp vs finite differences in float32" in message
    good = make("good_jvp", lambda x, /: jnp.sin(x))  # rules freeze at the first call
    good.def_jvp(lambda p, t: (good(p[0]), jnp.cos(p[0]) * t[0]))
    assert status(good, "jvp")[0] == "pass"


def test_transpose_that_is_not_the_adjoint_fails() -> None:
    prim = make("bad_transpose", lambda x, /: jnp.cumsum(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), prim(t[0])))
    prim.def_transpose(lambda ct, x: (jnp.cumsum(ct),))  # should be a reversed cumsum
    st, message = status(prim, "transpose")
    assert st == "fail" and "not the adjoint" in message
    good = make("good_transpose", lambda x, /: jnp.cumsum(x))  # rules freeze at first call
    good.def_jvp(lambda p, t: (good(p[0]), good(t[0])))
    good.def_transpose(lambda ct, x: (jnp.flip(jnp.cumsum(jnp.flip(ct))),))
    assert status(good, "transpose")[0] == "pass"


def test_reverse_mode_needing_a_missing_transpose_is_skipped() -> None:
    prim = make("no_transpose", lambda x, /: 3 * x)
    prim.def_jvp(lambda p, t: (prim(p[0]), prim(t[0])))
    st, message = status(prim, "transpose")
    assert st == "skip" and "no transpose rule" in message


def test_batching_rule_with_wrong_out_dim_fails() -> None:
    square = np.arange(9.0, dtype=np.float32).reshape(3, 3) / 9  # batch 3 on a (3,) operand
    prim = make("bad_batching", lambda x, /: x * 2 + 1, jext.Example(square[0]))
    # Claims the batch axis is where it found it, but always computes at axis 0.
    prim.def_batching(lambda args, dims: (prim(jnp.moveaxis(args[0], dims[0], 0)), dims[0]))
    st, message = status(prim, "batching")
    assert st == "fail" and "vs a loop" in message


def test_batching_rule_that_breaks_on_unbatched_operands_fails() -> None:
    prim = make("bad_unbatched", lambda x, y, /: x * y, jext.Example(X, X + 1))
    # Treats every operand as batched at axis 0.
    prim.def_batching(lambda args, dims: (args[0] * args[1], 0))
    assert status(prim, "batching")[0] == "fail"


def test_lowering_missing_for_tpu_fails_naming_it() -> None:
    prim = jext.primitive("checks.no_tpu", reference_lowering=["cpu", "gpu"])(lambda x, /: x + 1)
    prim.def_examples(lambda: [jext.Example(X)])
    st, message = status(prim, "lowering")
    assert st == "fail" and "no lowering for ['tpu']" in message
    result = run_check(prim, "lowering", prim.examples(), platforms=["cpu", "cuda"])
    assert result.status == "pass"


def test_wrong_second_derivative_fails_higher_order() -> None:
    prim = make("bad_second", lambda x, /: jnp.sin(x))
    # Right first derivative, but blocks the second.
    prim.def_jvp(lambda p, t: (prim(p[0]), jax.lax.stop_gradient(jnp.cos(p[0])) * t[0]))
    assert status(prim, "jvp")[0] == "pass"
    st, message = status(prim, "higher_order")
    assert st == "fail" and "grad of grad" in message


def test_check_primitive_raises_a_readable_assertion() -> None:
    prim = make("bad_for_assert", lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), -jnp.cos(p[0]) * t[0]))
    with pytest.raises(AssertionError) as info:
        jext.testing.check_primitive(prim, checks=["jit", "jvp"])
    text = str(info.value)
    assert "primitive checks.bad_for_assert" in text
    assert "PASS  jit" in text and "FAIL  jvp" in text


def test_unknown_check_name_is_refused() -> None:
    prim = make("unknown_check", lambda x, /: x)
    with pytest.raises(jext.UnknownNameError, match="Did you mean 'jvp'"):
        jext.testing.check_primitive(prim, checks=["jvpp"])


def test_pytree_and_integer_operands_are_checked() -> None:
    def f(d: dict[str, Any], n: Any, /) -> Any:
        return {"s": d["a"] * n, "t": (d["a"] + d["b"], n * 2)}

    prim = make(
        "pytree",
        f,
        jext.Example({"a": X, "b": X[::-1].copy()}, np.arange(5, dtype=np.int32)),
    )
    report = jext.testing.check_primitive(prim)
    assert report.ok


# --- the command and the pytest plugin ---------------------------------------------------------


def test_cli_check_json_reports_installed_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["check", "example.softplus", "--json", "--checks", "jit,lowering", "-q"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["ok"] is True
    (report,) = data["reports"]
    assert report["name"] == "example.softplus" and report["plugin"] == "example-primitives"
    assert set(report["checks"]) == {"jit", "lowering"}
    assert report["checks"]["jit"]["status"] == "pass"
    assert report["details"]["platforms"]["tpu"] == "reference"


def test_cli_check_exit_code_and_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["check", "example.nope", "-q"]) == 2
    assert "nothing registered is named 'example.nope'" in capsys.readouterr().err
    assert cli_main(["check", "--checks", "bogus", "-q"]) == 2
