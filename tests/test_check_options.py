"""Checks on jointly linear transposes, primitives without operands or examples, and what a
primitive tells the checks it supports (dtypes, tolerances, differentiability)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.testing
from jext._cli import listing
from jext._cli import main as cli_main
from jext._registry import registry
from jext.testing._checks import check_report, run_check
from jext.testing._report import CheckResult, PrimitiveReport, format_table, summary_line

X = np.linspace(-1.5, 1.5, 5, dtype=np.float32)
Y = np.linspace(0.5, 2.5, 5, dtype=np.float32)


def make(name: str, fn: Any, *examples: jext.Example) -> jext.Primitive[Any, Any]:
    prim = jext.primitive(f"check_options.{name}")(fn)

    @prim.def_examples
    def _() -> Iterator[jext.Example]:
        yield from examples or (jext.Example(X),)

    return prim


def result(prim: jext.Primitive[Any, Any], check: str) -> CheckResult:
    return run_check(prim, check, prim.examples())


# --- jointly linear operands ------------------------------------------------------------------


def _add(name: str, second: float) -> jext.Primitive[Any, Any]:
    prim = make(name, lambda x, y, /: x + y, jext.Example(X, Y))
    prim.def_transpose(lambda ct, x, y: (ct, second * ct), linear_in=[0, 1])
    return prim


def test_transpose_of_a_jointly_linear_primitive_passes() -> None:
    # x + y is linear in (x, y) together, affine in either alone with the other fixed.
    got = result(_add("add", 1.0), "transpose")
    assert got.status == "pass", got.message


def test_wrong_transpose_of_a_jointly_linear_primitive_fails_naming_the_operand() -> None:
    got = result(_add("bad_add", 2.0), "transpose")
    assert got.status == "fail" and "not the adjoint" in got.message
    assert "operand 1" in got.message


def test_transpose_keeps_nonlinear_operands_fixed() -> None:
    # Linear in x and y jointly, not in the scale s (operand 2).
    prim = make("scaled_add", lambda x, y, s, /: s * (x + y), jext.Example(X, Y, np.float32(3.0)))
    prim.def_transpose(lambda ct, x, y, s: (s * ct, s * ct, None), linear_in=[0, 1])
    assert result(prim, "transpose").status == "pass"
    bad = make(
        "bad_scaled_add", lambda x, y, s, /: s * (x + y), jext.Example(X, Y, np.float32(3.0))
    )
    bad.def_transpose(lambda ct, x, y, s: (s * ct, ct, None), linear_in=[0, 1])
    got = result(bad, "transpose")
    assert got.status == "fail" and "operand 1" in got.message


# --- no operands ------------------------------------------------------------------------------


def test_a_primitive_without_operands_is_checked_and_transformations_are_not_applicable() -> None:
    def const(*, value: int) -> jax.Array:
        return jnp.full((3,), value, jnp.float32)

    prim = make("const", const, jext.Example(value=3))
    report = check_report(prim)
    by_check = {r.check: r for r in report.results}
    for check in ("jvp", "transpose", "batching", "higher_order"):
        assert by_check[check].status == "n/a", (check, by_check[check])
        assert "no operands" in by_check[check].message
    for check in ("abstract_eval", "jit", "lowering"):
        assert by_check[check].status == "pass", by_check[check]
    assert report.ok and report.status == "pass"


def test_a_wrong_rule_of_a_primitive_without_operands_still_fails() -> None:
    def const(*, value: int) -> jax.Array:
        return jnp.full((3,), value, jnp.float32)

    prim = make("bad_const", const, jext.Example(value=3))
    prim.def_impl(lambda *, value: np.full((3,), value + 1, np.float32))
    assert result(prim, "jit").status == "fail"


# --- no examples -------------------------------------------------------------------------------


def test_a_primitive_without_examples_is_not_checked() -> None:
    prim = jext.primitive("check_options.no_examples")(lambda x, /: x)
    report = check_report(prim)
    assert {r.status for r in report.results} == {"unchecked"}
    assert report.status == "unchecked" and report.ok  # not a failure
    assert "declares no examples" in report.results[0].message
    assert report.to_json()["status"] == "unchecked"


def test_summary_counts_items_not_checked() -> None:
    good = PrimitiveReport("a", "primitive", (CheckResult("jit", "pass"),))
    bad = PrimitiveReport("b", "primitive", (CheckResult("jit", "fail", "wrong"),))
    none = PrimitiveReport("c", "primitive", (CheckResult("jit", "unchecked", "no examples"),))
    assert summary_line([good, bad, none]) == "1 passed, 1 failed, 1 not checked"
    assert summary_line([good]) == "1 passed, 0 failed"
    table = format_table([good, bad, none], {"primitive": ("jit",)})
    assert "Not checked:" in table and "c: no examples" in table


def test_jext_check_warns_about_items_not_checked_and_exits_zero(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reports = [
        PrimitiveReport("a", "primitive", (CheckResult("jit", "pass"),)),
        PrimitiveReport("c", "primitive", (CheckResult("jit", "unchecked", "no examples"),)),
    ]
    monkeypatch.setattr("jext.testing._api.run_checks", lambda *a, **k: reports)
    out = io.StringIO()
    assert cli_main(["check", "-q", "--no-cache"], out=out) == 0
    assert "1 passed, 0 failed, 1 not checked" in out.getvalue()
    out = io.StringIO()
    assert cli_main(["check", "-q", "--no-cache", "--json"], out=out) == 0
    data = json.loads(out.getvalue())
    assert data["ok"] is True and data["unchecked"] == ["c"]


# --- derived sharding rules are not custom -----------------------------------------------------


def test_listing_does_not_count_derived_rules_as_custom() -> None:
    plain = jext.primitive("check_options.listed_plain")(lambda x, /: x + 1)
    elementwise = jext.primitive("check_options.listed_elementwise")(lambda x, /: x + 1)
    elementwise.def_batching_elementwise()
    sharded = jext.primitive("check_options.listed_sharded")(lambda x, /: x + 1)
    sharded.def_sharding("i -> i")
    linear = jext.primitive("check_options.listed_linear")(lambda x, /: 2 * x)
    linear.def_transpose(lambda ct, x: (2 * ct,))
    assert plain.rules.custom_kinds() == ()
    assert elementwise.rules.custom_kinds() == ("batching",)
    assert sharded.rules.custom_kinds() == ("sharding",)
    assert linear.rules.custom_kinds() == ("transpose",)


def test_jext_list_shows_no_custom_rules_for_a_default_sharding() -> None:
    # example.polar declares no rule at all; its sharding is the derived batch rule.
    polar = next(p for p in listing(registry())["primitives"] if p["name"] == "example.polar")
    assert polar["rules"]["sharding"] == "batch"
    assert polar["custom_rules"] == []
    out = io.StringIO()
    assert cli_main(["list"], out=out) == 0
    row = next(line for line in out.getvalue().splitlines() if "example.polar " in line)
    assert row.split()[:3] == ["example.polar", "example-primitives", "-"]


# --- the dtypes a kernel supports -----------------------------------------------------------------


def _float32_only(name: str) -> jext.Primitive[Any, Any]:
    """sin, whose JVP rule is right in float32 and wrong in float64 (as a float32-only
    kernel's would be: it is never meant to run there)."""
    prim = make(name, lambda x, /: jnp.sin(x))

    @prim.def_jvp
    def _jvp(p: Any, t: Any) -> Any:
        factor = 1.0 if p[0].dtype == jnp.float32 else 3.0
        return prim(p[0]), factor * jnp.cos(p[0]) * t[0]

    return prim


def test_a_float32_only_kernel_skips_float64_with_the_reason() -> None:
    undeclared = _float32_only("f32_undeclared")
    got = result(undeclared, "jvp")
    assert got.status == "fail" and "float64" in got.message
    declared = _float32_only("f32_declared")
    declared.def_check_options(dtypes=[np.float32])
    got = result(declared, "jvp")
    assert got.status == "pass", got.message
    assert "float64 not checked: the primitive declares dtypes float32" in got.message
    got = result(declared, "higher_order")
    assert got.status == "pass" and "checked in float32" in got.message


def test_an_example_declares_its_own_dtypes() -> None:
    prim = _float32_only("f32_example")
    prim.def_examples(lambda: [jext.Example(X).with_options(dtypes=[np.float32])])
    assert result(prim, "jvp").status == "pass"


def test_a_wrong_jvp_in_a_supported_dtype_still_fails() -> None:
    prim = make("f32_wrong", lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))
    prim.def_check_options(dtypes=[np.float32])
    got = result(prim, "jvp")
    assert got.status == "fail" and "in float32" in got.message


def test_declaring_no_float_dtype_the_checks_run_in_skips_them() -> None:
    prim = make("bf16_only", lambda x, /: jnp.sin(x))
    prim.def_check_options(dtypes=[jnp.bfloat16])
    got = result(prim, "jvp")
    assert got.status == "skip" and "neither float32 nor float64" in got.message


def test_check_options_are_validated() -> None:
    prim = make("validated", lambda x, /: x)
    with pytest.raises(jext.DefinitionError, match="floating-point dtypes"):
        prim.def_check_options(dtypes=[np.int32])
    with pytest.raises(jext.DefinitionError, match="no check 'jvpp'"):
        prim.def_check_options(tolerances={"jvpp": (1e-3, 1e-5)})
    with pytest.raises(jext.DefinitionError, match=r"must be \(rtol, atol\)"):
        jext.Example(X).with_options(tolerances={"jvp": (1e-3,)})  # type: ignore[dict-item]


# --- tolerances per check ------------------------------------------------------------------------


def _slightly_off(name: str) -> jext.Primitive[Any, Any]:
    """sin with a JVP 0.1% off: wrong at the check's own tolerance in float64."""
    prim = make(name, lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), 1.001 * jnp.cos(p[0]) * t[0]))
    return prim


def test_a_declared_jvp_tolerance_replaces_the_checks_own() -> None:
    assert result(_slightly_off("off_default"), "jvp").status == "fail"
    loose = _slightly_off("off_loose")
    loose.def_check_options(tolerances={"jvp": (1e-2, 1e-5)})
    got = result(loose, "jvp")
    assert got.status == "pass", got.message
    per_example = _slightly_off("off_example")
    per_example.def_examples(
        lambda: [jext.Example(X).with_options(tolerances={"jvp": (1e-2, 1e-5)})]
    )
    assert result(per_example, "jvp").status == "pass"


def test_a_loose_tolerance_still_catches_a_wrong_rule() -> None:
    prim = make("off_by_two", lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))
    prim.def_check_options(tolerances={"jvp": (1e-2, 1e-5)})
    got = result(prim, "jvp")
    assert got.status == "fail" and "rtol 0.01" in got.message


def test_a_declared_jit_tolerance_is_used() -> None:
    off = make("jit_off", lambda x, /: x * 2)
    off.def_impl(lambda x: np.asarray(x) * 2.0001)
    assert result(off, "jit").status == "fail"
    loose = make("jit_loose", lambda x, /: x * 2)
    loose.def_impl(lambda x: np.asarray(x) * 2.0001)
    loose.def_check_options(tolerances={"jit": (1e-3, 0.0)})
    assert result(loose, "jit").status == "pass"


def test_the_example_tolerance_replaces_the_primitives_for_that_check_only() -> None:
    prim = _slightly_off("off_merge")
    prim.def_check_options(tolerances={"jvp": (1e-2, 1e-5), "jit": (0.5, 0.5)})
    prim.def_examples(lambda: [jext.Example(X).with_options(tolerances={"jvp": (1e-12, 0.0)})])
    (example,) = prim.examples()
    options = prim.check_options.merged(example.options)
    assert dict(options.tolerances) == {"jvp": (1e-12, 0.0), "jit": (0.5, 0.5)}
    assert result(prim, "jvp").status == "fail"


# --- declared not differentiable -----------------------------------------------------------------


def _rounded(name: str) -> jext.Primitive[Any, Any]:
    prim = make(name, lambda x, /: jnp.round(x * 4.0))
    prim.def_nondifferentiable()
    return prim


def test_a_nondifferentiable_primitive_reports_ad_checks_not_applicable() -> None:
    prim = _rounded("rounded")
    report = check_report(prim)
    by_check = {r.check: r for r in report.results}
    for check in ("jvp", "transpose", "higher_order"):
        assert by_check[check].status == "n/a", by_check[check]
        assert "not differentiable" in by_check[check].message
    for check in ("abstract_eval", "jit", "batching", "lowering"):
        assert by_check[check].status == "pass", by_check[check]
    assert prim.rule_sources()["jvp"] == "nondifferentiable" and not prim.differentiable


def test_differentiating_a_nondifferentiable_primitive_raises_naming_it() -> None:
    prim = _rounded("rounded_grad")
    with pytest.raises(jext.RuleError, match=r"'check_options\.rounded_grad' is declared not"):
        jax.grad(lambda x: prim(x).sum())(X)
    # Its operand's gradient stopped, it is not differentiated: it runs.
    grad = jax.grad(lambda x: (prim(jax.lax.stop_gradient(x)) * x).sum())(X)
    np.testing.assert_allclose(grad, np.round(X * 4.0))


def test_a_nondifferentiable_primitive_with_a_wrong_rule_still_fails() -> None:
    prim = _rounded("rounded_bad_batching")
    prim.def_batching(lambda args, dims: (prim(jnp.moveaxis(args[0], dims[0], 0)), dims[0]))
    assert result(prim, "batching").status == "fail"


# --- operands without a derivative -------------------------------------------------------------


def _order_and_x(name: str, slope: float = 1.0) -> jext.Primitive[Any, Any]:
    """``v sin x``, differentiable in ``x`` only, as ``kv(v, x)`` is: its JVP rule refuses
    any tangent of ``v`` but a symbolic zero; ``slope`` scales its derivative in ``x``."""
    prim = make(name, lambda v, x, /: v * jnp.sin(x), jext.Example(Y, X))
    prim.def_nondifferentiable("v")

    @prim.def_jvp(symbolic_zeros=True)
    def _jvp(p: Any, t: Any) -> Any:
        if not isinstance(t[0], jext.SymbolicZero):
            raise NotImplementedError("no derivative in v")
        return prim(*p), slope * p[0] * jnp.cos(p[1]) * t[1]

    return prim


def test_the_checks_differentiate_only_in_the_operands_with_a_derivative() -> None:
    prim = _order_and_x("order_and_x")
    assert prim.nondifferentiable_in == (0,) and prim.differentiable
    report = check_report(prim)
    assert report.ok, format_table([report])
    jvp = {r.check: r for r in report.results}["jvp"]
    assert jvp.status == "pass"
    assert "not differentiated in 'v': declared without a derivative" in jvp.message


def test_a_wrong_derivative_in_the_other_operands_still_fails() -> None:
    wrong = _order_and_x("order_and_x_wrong", slope=1.5)
    assert result(wrong, "jvp").status == "fail"
    assert not check_report(wrong).ok


def test_differentiating_in_an_operand_without_a_derivative_raises_naming_it() -> None:
    prim = make("no_derivative_in_v", lambda v, x, /: v * jnp.sin(x), jext.Example(Y, X))
    prim.def_nondifferentiable(0)
    np.testing.assert_allclose(jax.grad(lambda x: prim(Y, x).sum())(X), Y * np.cos(X), rtol=1e-6)
    for differentiate in (
        lambda: jax.grad(lambda v: prim(v, X).sum())(Y),
        lambda: jax.jvp(lambda v: prim(v, X), (Y,), (Y,)),
        lambda: jax.vmap(jax.grad(prim))(Y, X),
    ):
        with pytest.raises(jext.RuleError, match=r"not differentiable in operand 'v'"):
            differentiate()
    grad = jax.grad(lambda v: (prim(jax.lax.stop_gradient(v), X) * v).sum())(Y)
    np.testing.assert_allclose(grad, Y * np.sin(X), rtol=1e-6)


def test_an_operand_without_a_derivative_is_refused_in_closures_and_pytrees() -> None:
    def closing_over(c: Any) -> jext.Primitive[Any, Any]:
        @jext.primitive("check_options.closed_no_derivative_in_v")
        def closed(v: Any, x: Any, /) -> Any:
            return v * jnp.sin(x) * c

        closed.def_nondifferentiable("v")
        return closed

    got = jax.grad(lambda c, x: closing_over(c)(Y, x).sum(), (0, 1))(1.5, X)
    np.testing.assert_allclose(got[0], np.sum(Y * np.sin(X)), rtol=1e-5)
    with pytest.raises(jext.RuleError, match=r"in operand 'v'"):
        jax.grad(lambda c, v: closing_over(c)(v, X).sum(), (0, 1))(1.5, Y)

    @jext.primitive("check_options.tree_no_derivative_in_a")
    def tree(a: Any, b: Any, /) -> Any:
        return a["p"] * jnp.sin(b) + a["q"]

    tree.def_nondifferentiable("a")
    np.testing.assert_allclose(
        jax.grad(lambda b: tree({"p": Y, "q": X}, b).sum())(X), Y * np.cos(X), rtol=1e-6
    )
    with pytest.raises(jext.RuleError, match=r"in operand 'a'"):
        jax.grad(lambda q: tree({"p": Y, "q": q}, X).sum())(X)


def test_def_nondifferentiable_refuses_an_operand_it_does_not_have() -> None:
    prim = make("no_such_operand", lambda v, x, /: v * x, jext.Example(Y, X))
    for operand in ("w", 2, -1, True):
        with pytest.raises(jext.DefinitionError, match="by index or name"):
            prim.def_nondifferentiable(operand)  # type: ignore[arg-type]


def _off_by(check: str, factor: float, name: str) -> jext.Primitive[Any, Any]:
    """A primitive whose rule for ``check`` is ``factor`` times the right one."""
    if check == "transpose":
        prim = make(name, lambda x, /: jnp.cumsum(x))
        prim.def_transpose(lambda ct, x: (factor * jnp.flip(jnp.cumsum(jnp.flip(ct))),))
    elif check == "batching":
        prim = make(name, lambda x, /: jnp.sin(x))
        prim.def_batching(lambda args, dims: (factor * jnp.sin(args[0]), dims[0]))
    elif check == "lowering":
        prim = make(name, lambda x, /: 2.0 * x)
        prim.def_lowering(lambda x: factor * 2.0 * x, platform="tpu")
    else:  # the first derivative right, the second ``factor`` times the right one
        prim = make(name, lambda x, /: jnp.sin(x))

        @prim.def_jvp
        def _jvp(p: Any, t: Any) -> Any:
            cos = jnp.cos(p[0])
            return prim(p[0]), (factor * cos - (factor - 1) * jax.lax.stop_gradient(cos)) * t[0]

    return prim


@pytest.mark.parametrize("check", ["transpose", "batching", "lowering", "higher_order"])
def test_each_check_takes_its_declared_tolerance(check: str) -> None:
    assert result(_off_by(check, 1.001, f"off_{check}"), check).status == "fail"
    loose = _off_by(check, 1.001, f"loose_{check}")
    loose.def_check_options(tolerances={check: (1e-2, 1e-4)})
    got = result(loose, check)
    assert got.status == "pass", got.message
    wrong = _off_by(check, 1.5, f"wrong_{check}")
    wrong.def_check_options(tolerances={check: (1e-2, 1e-4)})
    assert result(wrong, check).status == "fail"


def test_items_not_checked_are_skipped_by_the_pytest_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Imported here: at the top of the module pytest would collect it as a test of its own.
    from jext.testing import test_jext_conformance

    report = PrimitiveReport("c", "primitive", (CheckResult("jit", "unchecked", "no examples"),))
    monkeypatch.setattr("jext.testing._api.run_checks", lambda *a, **k: [report])
    with pytest.raises(pytest.skip.Exception, match="c: no examples"):
        test_jext_conformance(("primitive", "c"))
