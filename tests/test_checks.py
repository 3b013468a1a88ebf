"""jext.testing: every check passes on correct rules and fails on a deliberately wrong one."""

from __future__ import annotations

import collections
import json
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jext
import jext.testing
from jext._cli import main as cli_main
from jext.testing._checks import (
    _Case,
    _distinct_inputs,
    _lowering_parts,
    _Shared,
    _Together,
    check_report,
    run_check,
)
from jext.testing._compile import STRUCTURE_COMPILE

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


def test_without_examples_nothing_is_checked_and_the_report_says_why() -> None:
    prim = jext.primitive("checks.no_examples")(lambda x, /: x)
    report = jext.testing.check_primitive(prim)
    assert {r.status for r in report.results} == {"unchecked"}
    assert report.status == "unchecked"
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


def test_a_jvp_of_the_reference_holds_the_kernel_to_its_slope_in_float64() -> None:
    # JAX differentiates the reference; finite differences run the primitive's CPU rule.
    # A kernel right at the example and wrong in slope fails, in float64 (float32's
    # finite differences, at rtol 2e-2, are not compiled for such a JVP).
    def kernel(x: Any) -> Any:
        return jnp.sin(x) + 0.5 * (x - X.astype(x.dtype))

    prim = make("kernel_slope", lambda x, /: jnp.sin(x))
    prim.def_lowering(kernel, platform="cpu")
    case = _Case(prim, prim.examples()[0], shared=_Shared(["jvp"]))
    assert "jvp float32" not in case.together("structure")
    st, message = status(prim, "jvp")
    assert st == "fail" and "jvp vs finite differences in float64" in message

    def right_kernel(x: Any) -> Any:
        return jnp.sin(x)

    right = make("kernel_slope_ok", lambda x, /: jnp.sin(x))
    right.def_lowering(right_kernel, platform="cpu")
    assert status(right, "jvp")[0] == "pass"


def test_jvp_off_by_a_factor_fails_and_right_one_passes() -> None:
    prim = make("bad_jvp", lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (prim(p[0]), 2.0 * jnp.cos(p[0]) * t[0]))
    st, message = status(prim, "jvp")
    assert st == "fail" and "jvp vs finite differences in float32" in message
    good = make("good_jvp", lambda x, /: jnp.sin(x))  # rules freeze at the first call
    good.def_jvp(lambda p, t: (good(p[0]), jnp.cos(p[0]) * t[0]))
    assert status(good, "jvp")[0] == "pass"


def test_jvp_rule_with_a_wrong_primal_fails_and_right_one_passes() -> None:
    # The tangent is right: only the primal output is 1.5 times too large.
    prim = make("bad_jvp_primal", lambda x, /: jnp.sin(x))
    prim.def_jvp(lambda p, t: (1.5 * jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
    with pytest.raises(AssertionError) as info:
        jext.testing.check_primitive(prim, checks=["jvp"])
    text = str(info.value)
    assert "primitive checks.bad_jvp_primal" in text
    assert "FAIL  jvp" in text
    assert "primal output of the JVP rule vs the reference in float32: result 0 differs" in text
    good = make("good_jvp_primal", lambda x, /: jnp.sin(x))
    good.def_jvp(lambda p, t: (jnp.sin(p[0]), jnp.cos(p[0]) * t[0]))
    assert jext.testing.check_primitive(good, checks=["jvp"]).ok


def test_vjp_fwd_with_a_wrong_primal_fails_and_right_one_passes() -> None:
    def with_fwd_factor(name: str, factor: float) -> jext.Primitive[Any, Any]:
        prim = make(name, lambda x, /: jnp.sin(x))
        prim.def_vjp(lambda x: (factor * jnp.sin(x), jnp.cos(x)), lambda cos, ct: (cos * ct,))
        return prim

    with pytest.raises(AssertionError) as info:
        jext.testing.check_primitive(with_fwd_factor("bad_vjp_primal", 1.5), checks=["jvp"])
    text = str(info.value)
    assert "primitive checks.bad_vjp_primal" in text
    assert "FAIL  jvp" in text
    assert "primal output of the VJP rule's fwd vs the reference in float32: result 0" in text
    good = with_fwd_factor("good_vjp_primal", 1.0)
    assert jext.testing.check_primitive(good, checks=["jvp"]).ok


def test_vjp_rule_off_by_a_factor_fails_the_dot_product_test() -> None:
    def with_bwd_factor(name: str, factor: float, x: Any) -> jext.Primitive[Any, Any]:
        prim = make(name, lambda x, /: jnp.sin(x), jext.Example(x))
        prim.def_vjp(lambda x: (prim(x), jnp.cos(x)), lambda cos, ct: (factor * cos * ct,))
        prim.def_check_options(dtypes=["float32"])  # float32's loose finite differences
        return prim

    big = np.linspace(-3.0, 3.0, 40 * 50, dtype=np.float32).reshape(40, 50)
    for n, x in enumerate((X, big)):
        st, message = status(with_bwd_factor(f"bad_vjp_{n}", 1.5, x), "jvp")
        assert st == "fail" and "VJP vs finite differences in float32 (dot-product" in message
        assert status(with_bwd_factor(f"good_vjp_{n}", 1.0, x), "jvp")[0] == "pass"


def _counting(name: str, x: Any, counts: collections.Counter[str]) -> list[Any]:
    """Two primitives whose rules count their evaluations: a JVP rule, a VJP rule (fwd,
    bwd).  Each count comes from a jax.debug.callback on an operand, which vmap unrolls
    element by element: a check that batches a rule over a Jacobian's rows counts each."""

    def count(kind: str) -> Callable[[Any], None]:
        return lambda _: counts.update([kind])

    forward = make(f"count_jvp_{name}", lambda x, /: jnp.sin(x), jext.Example(x))

    @forward.def_jvp
    def _(p: Any, t: Any) -> Any:
        jax.debug.callback(count("jvp"), p[0])
        return forward(p[0]), jnp.cos(p[0]) * t[0]

    reverse = make(f"count_vjp_{name}", lambda x, /: jnp.sin(x), jext.Example(x))

    def fwd(x: Any) -> Any:
        jax.debug.callback(count("fwd"), x)
        return reverse(x), jnp.cos(x)

    def bwd(cos: Any, ct: Any) -> Any:
        jax.debug.callback(count("bwd"), ct)
        return (cos * ct,)

    reverse.def_vjp(fwd, bwd)
    return [forward, reverse]


def test_each_check_evaluates_the_rules_a_number_of_times_independent_of_shapes() -> None:
    def counted(name: str, x: Any) -> dict[str, collections.Counter[str]]:
        by_check: dict[str, collections.Counter[str]] = {}
        for check in ("jvp", "transpose", "batching", "higher_order"):
            counts: collections.Counter[str] = collections.Counter()
            for prim in _counting(f"{name}_{check}", x, counts):
                assert run_check(prim, check, prim.examples()).status in ("pass", "n/a")
            jax.effects_barrier()
            by_check[check] = counts
        return by_check

    small = counted("small", X)
    large = counted("large", np.linspace(-2.0, 2.0, 12 * 16, dtype=np.float32).reshape(12, 16))
    assert small == large
    assert small["jvp"]["bwd"] > 0 and small["transpose"]["jvp"] > 0


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


def test_reverse_mode_that_is_not_the_transpose_of_forward_mode_fails() -> None:
    # The JVP applies a linear primitive to the tangent; reverse mode transposes that
    # primitive with its (wrong) transpose rule. Forward mode alone is right.
    def with_transpose(name: str, transpose: Callable[[Any], Any]) -> jext.Primitive[Any, Any]:
        cumsum = make(f"{name}_cumsum", lambda v, /: jnp.cumsum(v))
        cumsum.def_transpose(lambda ct, v: (transpose(ct),))
        prim = make(name, lambda x, /: jnp.cumsum(jnp.sin(x)))
        prim.def_jvp(lambda p, t: (prim(p[0]), cumsum(jnp.cos(p[0]) * t[0])))
        return prim

    wrong = with_transpose("reverse_not_forward", jnp.cumsum)  # should be a reversed cumsum
    st, message = status(wrong, "transpose")
    assert st == "fail" and "reverse mode is not the transpose of forward mode" in message
    right = with_transpose("reverse_is_forward", lambda ct: jnp.flip(jnp.cumsum(jnp.flip(ct))))
    assert status(right, "transpose")[0] == "pass"
    assert status(wrong, "jvp")[0] == "pass"


def test_transpose_of_a_complex_linear_primitive_is_held_to_jaxs_convention() -> None:
    # JAX transposes without complex conjugation (the pairing Re(sum(a * b))): the
    # transpose of z -> 1j * z is ct -> 1j * ct, as jax.linear_transpose says.
    z = (np.linspace(-1.5, 1.5, 5) + 0.5j).astype(np.complex64)
    ct = (np.linspace(1.0, -1.0, 5) - 0.25j).astype(np.complex64)
    (by_jax,) = jax.linear_transpose(lambda v: 1j * v, z)(ct)
    np.testing.assert_allclose(by_jax, 1j * ct)
    for name, transpose, want in (("right", 1j, "pass"), ("conjugated", -1j, "fail")):
        prim = make(f"complex_transpose_{name}", lambda v, /: 1j * v, jext.Example(z))
        prim.def_transpose(lambda ct, v, factor=transpose: (factor * ct,))
        assert status(prim, "transpose")[0] == want, name


def test_reverse_mode_needing_a_missing_transpose_is_skipped() -> None:
    # The JVP applies the primitive to tangents, and the reference is not linear: JAX has
    # no transpose of it, and neither has jext.
    prim = make("no_transpose", lambda x, /: x * x)
    prim.def_jvp(lambda p, t: (prim(p[0]), prim(t[0])))
    st, message = status(prim, "transpose")
    assert st == "skip" and "no transpose rule" in message


def test_reverse_mode_transposes_a_linear_reference_without_a_rule() -> None:
    prim = make("derived_transpose", lambda x, /: 3 * x)
    prim.def_jvp(lambda p, t: (prim(p[0]), prim(t[0])))
    assert status(prim, "transpose")[0] == "pass"


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


def test_wrong_tpu_rule_fails_and_right_one_passes() -> None:
    prim = make("tpu_rule", lambda x, /: 2 * x)
    prim.def_lowering(lambda x: 3 * x, platform="tpu")  # runs on CPU: it is traceable
    st, message = status(prim, "lowering")
    assert st == "fail" and "tpu rule" in message and "vs the reference" in message
    # Only the platforms asked for are held to the reference.
    result = run_check(prim, "lowering", prim.examples(), platforms=["cpu", "cuda"])
    assert result.status == "pass"
    good = make("good_tpu_rule", lambda x, /: 2 * x)  # rules freeze at the first call
    good.def_lowering(lambda x: x + x, platform="tpu")
    assert status(good, "lowering")[0] == "pass"


def test_gpu_rule_right_at_the_examples_only_fails_under_vmap_or_grad() -> None:
    prim = make("gpu_rule", lambda x, /: jnp.sin(x))
    # Equal to the reference at the example, wrong at the perturbed batch and in slope.
    prim.def_lowering(lambda x: jnp.sin(X) + 2 * (x - X), platform="gpu")
    st, message = status(prim, "lowering")
    assert st == "fail" and "cuda rule" in message
    assert "vmap of" in message or "grad of" in message


def test_a_rule_several_platforms_share_runs_once_and_a_wrong_one_still_fails() -> None:
    def double(x: Any) -> Any:
        return x + x

    # "gpu" is cuda and rocm: with tpu, three platforms lower with one function, which
    # the lowering check runs here once (as the cuda rule) and reports for each.
    prim = make("shared_rule", lambda x, /: 2 * x)
    prim.def_lowering(double, platform="gpu")
    prim.def_lowering(double, platform="tpu")
    case = _Case(prim, prim.examples()[0], shared=_Shared(["lowering"]))
    ran = {name.split()[0] for name in _lowering_parts(case, "structure") if name.endswith(" jit")}
    assert ran == {"cuda"}
    report = check_report(prim, checks=["lowering"])
    message = report.results[0].message
    assert report.ok and "rocm rule" in message and "tpu rule" in message
    wrong = make("shared_wrong_rule", lambda x, /: 2 * x)
    wrong.def_lowering(lambda x: 3 * x, platform="gpu")
    st, message = status(wrong, "lowering")
    assert st == "fail" and "cuda rule" in message and "vs the reference" in message


def test_batching_loops_share_their_eager_calls() -> None:
    # vmap's debug callbacks fire per element, eager calls once each: 4 vmaps over 3 and a
    # nested 2 x 3 are 18 elements; the loops add at most 6 eager calls to the example's
    # own.
    counts: collections.Counter[str] = collections.Counter()

    def fn(x: Any, y: Any, /) -> Any:
        jax.debug.callback(lambda _: counts.update(["call"]), x)
        return x * y

    square = np.arange(9.0, dtype=np.float32).reshape(3, 3) / 9
    prim = make("counted_batching", fn, jext.Example(square, square[0]))
    assert status(prim, "batching")[0] == "pass"
    jax.effects_barrier()
    assert counts["call"] <= 18 + 1 + 6


def test_rule_that_cannot_run_here_leaves_the_other_comparisons_whole() -> None:
    # The lowering check runs its computations as one program.  A TPU rule that cannot
    # be lowered for CPU breaks that program; the check must still hold the CPU rule to
    # the reference (wrong here, right in the second primitive) and note the TPU rule.
    helper = jext.primitive("checks.tpu_only_helper", reference_lowering=["tpu"])(
        lambda x, /: 2 * x
    )

    def via_helper(x: Any) -> Any:
        return helper(x)

    wrong = make("tpu_rule_needs_tpu", lambda x, /: 2 * x)
    wrong.def_lowering(via_helper, platform="tpu")
    wrong.def_lowering(lambda x: 3 * x, platform="cpu")
    st, message = status(wrong, "lowering")
    assert st == "fail" and "cpu rule" in message and "vs the reference" in message
    right = make("tpu_rule_needs_tpu_ok", lambda x, /: 2 * x)
    right.def_lowering(via_helper, platform="tpu")
    right.def_lowering(lambda x: x + x, platform="cpu")
    st, message = status(right, "lowering")
    assert st == "pass" and "tpu rule" in message and "cannot run on CPU" in message


def test_parts_of_one_program_keep_their_own_results_and_errors() -> None:
    def wrong(x: Any) -> Any:
        raise ValueError("part b is wrong")

    together = _Together({"a": (lambda x: x + 1, [X]), "b": (wrong, [X])})
    np.testing.assert_array_equal(together.get("a"), X + 1)
    with pytest.raises(ValueError, match="part b is wrong"):
        together.get("b")


def test_parts_taking_equal_inputs_take_one_argument_and_keep_their_own_values() -> None:
    # Equal dtype, shape and bytes: one argument of the program, so XLA compiles what
    # several parts compute of it once.  Anything else stays a separate argument.
    zeros = np.zeros(5, np.float32)
    inputs, (index, _) = _distinct_inputs(
        {"a": [X, zeros], "b": [X.copy(), -zeros, zeros.astype(np.int32), X[:4]]}
    )
    assert index == [0, 1, 0, 2, 3, 4] and len(inputs) == 5
    together = _Together(
        {
            "a": (lambda x: jnp.sin(x) + 1, [X]),
            "b": (lambda x, k: jnp.sin(x) * k, [X.copy(), 3.0]),
            "c": (jnp.sin, [X.astype(np.float64)]),
        }
    )
    np.testing.assert_allclose(together.get("a"), np.sin(X) + 1, rtol=1e-6)
    np.testing.assert_allclose(together.get("b"), np.sin(X) * 3, rtol=1e-6)
    np.testing.assert_allclose(together.get("c"), np.sin(X), rtol=1e-6)


def test_a_reverse_only_primitive_compiles_its_float32_checks_as_one_program() -> None:
    # Reverse-vs-forward does not apply without forward mode, and in the program it would
    # fail to lower: left out, the other float32 checks compile as one.
    prim = make("reverse_only_program", lambda x, /: jnp.sin(x))
    prim.def_vjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda cos, ct: (cos * ct,))
    case = _Case(prim, prim.examples()[0], shared=_Shared(["jvp", "transpose", "batching"]))
    together = case.together("structure")
    assert "reverse vs forward" not in together
    assert "jvp float32" in together and "batching" in together
    assert together._merged
    assert run_check(prim, "transpose", prim.examples()).status == "n/a"


@pytest.mark.numerics
def test_values_compile_as_users_compile_and_structure_programs_faster() -> None:
    # XLA:CPU's default compilation contracts x*y + z into one rounding (here -2**-26, 0
    # without): other options may not.  The jit and lowering checks hold what users get.
    x, y, z = (np.full(3, v, np.float32) for v in (1 + 2**-13, 1 - 2**-13, -1.0))
    prim = make("fma", lambda x, y, z, /: x * y + z, jext.Example(x, y, z))
    case = _Case(prim, prim.examples()[0], [], _Shared(("jit",)))
    got = case.run("values", "jit", (case.call_flat, case.leaves))
    want = jax.jit(case.call_flat)(*case.leaves)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), np.asarray(want).view(np.uint32))
    assert case.together("values").options is None
    on_cpu = jax.default_backend() == "cpu"
    assert case.together("structure").options == (STRUCTURE_COMPILE if on_cpu else None)


def test_the_lowering_checks_reference_compiles_where_it_costs_least() -> None:
    # The CPU rule is the reference: the jit check's computation, in the values program.
    plain = make("reference_rule", lambda x, /: jnp.sin(x))
    case = _Case(plain, plain.examples()[0], [], _Shared(("jit", "lowering")))
    assert "reference" in case.together("values")
    assert "reference" not in case.together("structure")
    # A kernel for CPU: the reference is the oracle, compiled with the structure programs;
    # the values program holds what users get (the kernel by jit, the export).
    kernel = make("kernel_rule", lambda x, /: jnp.sin(x))
    kernel.def_lowering(lambda x: jnp.sin(x) * 1, platform="cpu")
    case = _Case(kernel, kernel.examples()[0], [], _Shared(("lowering",)))
    values, structure = case.together("values"), case.together("structure")
    assert "jit" in values and "export" in values and "reference" not in values
    assert "reference" in structure
    assert run_check(kernel, "lowering", kernel.examples()).status == "pass"


def test_wrong_shape_tpu_rule_fails_with_the_verifier_reason() -> None:
    prim = make("tpu_shape", lambda x, /: 2 * x)
    prim.def_lowering(lambda x: jnp.concatenate([x, x]), platform="tpu")
    st, message = status(prim, "lowering")
    assert st == "fail" and "['tpu']" in message
    # The reason (10 values where 5 are declared) is kept whole, whether the core reports it
    # as a RuleError or it surfaces as an MLIR verifier error (its reason on line two).
    assert ("float32[10]" in message and "float32[5]" in message) or (
        "doesn't match function result type" in message and "tensor<10xf32>" in message
    )


def test_abstract_eval_disagreeing_with_the_reference_says_so() -> None:
    prim = make("aval_vs_reference", lambda x, /: x * 2)
    prim.def_abstract_eval(lambda x: jax.ShapeDtypeStruct(x.shape, jnp.float16))
    st, message = status(prim, "abstract_eval")
    assert st == "fail" and "abstract eval gives float16[5], the reference returns" in message
    # Other checks hit the mismatch as the core's RuleError naming both types (once a raw
    # MLIR verifier error).
    st, message = status(prim, "jit")
    assert st == "fail" and "RuleError" in message, message
    assert "float16[5]" in message and "float32[5]" in message and "the reference" in message


def test_batching_rule_with_wrong_out_dims_structure_fails_with_a_reason() -> None:
    prim = make("bad_out_dims", lambda x, /: (x, x * 2))
    prim.def_batching(lambda args, dims: ((args[0], args[0] * 2), ((0, 0),)))
    st, message = status(prim, "batching")
    assert st == "fail" and "raised RuleValueError" in message and "wrong structure" in message
    nested = make("nested_out_dims", lambda x, /: (x, x * 2))
    nested.def_batching(lambda args, dims: ((args[0], args[0] * 2), (0, (0,))))
    st, message = status(nested, "batching")
    assert st == "fail" and "raised RuleValueError" in message
    assert "'checks.nested_out_dims'" in message


def test_in_a_full_report_a_wrong_rule_fails_only_its_own_check() -> None:
    # Several checks of an example share one compiled program: a rule wrong in value, or
    # raising while traced, must still fail only the check it concerns, with its reason.
    square = np.arange(9.0, dtype=np.float32).reshape(3, 3) / 9
    wrong_value = make("report_bad_batching", lambda x, /: x * 2 + 1, jext.Example(square[0]))
    # As with custom_vmap, the rule may be called with nothing batched (jacfwd).
    wrong_value.def_batching(
        lambda args, dims: (
            wrong_value(args[0] if dims[0] is None else jnp.moveaxis(args[0], dims[0], 0)),
            dims[0],
        )
    )
    raising = make("report_bad_out_dims", lambda x, /: (x, x * 2))
    raising.def_batching(lambda args, dims: ((args[0], args[0] * 2), ((0, 0),)))
    with ThreadPoolExecutor(2) as pool:
        reports = [check_report(p, pool=pool) for p in (wrong_value, raising)]
    # Under vmap a derivative of a primitive with a batching rule is the rule's derivative
    # (custom_vmap's semantics), so a rule that raises also fails the check that batches a
    # derivative (vmap of grad), with the same reason.
    expected = (["batching"], ["batching", "higher_order"])
    reasons = ("vs a loop", "wrong structure")
    for report, reason, want in zip(reports, reasons, expected, strict=True):
        by_check = {r.check: r for r in report.results}
        failed = [r.check for r in report.results if r.status == "fail"]
        assert failed == want, report.format()
        assert all(reason in by_check[c].message for c in want)


def test_correct_jvp_passes_where_the_output_is_infinite() -> None:
    at_pole = np.array([0.0, 0.5, 1.0, 2.0], np.float32)
    prim = make("log_at_zero", lambda x, /: jnp.log(x), jext.Example(at_pole))
    prim.def_jvp(lambda p, t: (prim(p[0]), t[0] / p[0]))
    st, message = status(prim, "jvp")
    assert st == "pass" and "not compared at 1 point" in message
    wrong = make("log_at_zero_wrong", lambda x, /: jnp.log(x), jext.Example(at_pole))
    wrong.def_jvp(lambda p, t: (wrong(p[0]), 2 * t[0] / p[0]))
    assert status(wrong, "jvp")[0] == "fail"


def test_infinite_and_nan_outputs_compare_as_values_without_warnings() -> None:
    values = np.array([-np.inf, np.inf, np.nan, 1.0], np.float32)
    prim = make("nonfinite", lambda x, /: x * 1, jext.Example(values))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf must not be computed
        assert status(prim, "jit")[0] == "pass"
        assert status(prim, "lowering")[0] == "pass"
    prim = make("nonfinite_wrong", lambda x, /: x * 1, jext.Example(values))
    prim.def_lowering(lambda x: -x, platform="tpu")  # -inf where inf is expected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st, message = status(prim, "lowering")
    assert st == "fail" and "tpu rule" in message


def test_nan_where_the_reference_is_finite_fails() -> None:
    prim = make("nan_rule", lambda x, /: x + 1)
    prim.def_lowering(lambda x: jnp.where(x > 0, jnp.nan, x + 1), platform="tpu")
    st, message = status(prim, "lowering")
    assert st == "fail" and "nan" in message


def test_json_report_is_strict_json() -> None:
    prim = make("inf_error", lambda x, /: 2 * x)
    prim.def_lowering(lambda x: x / 0.0, platform="tpu")
    rep = check_report(prim, checks=["lowering"])
    assert not rep.ok and rep.results[0].max_error == float("inf")

    def reject(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(json.dumps(rep.to_json(), allow_nan=False), parse_constant=reject)
    check = data["checks"]["lowering"]
    assert check["max_error"] is None and check["max_error_nonfinite"] == "inf"


def test_wrong_second_derivative_fails_higher_order() -> None:
    prim = make("bad_second", lambda x, /: jnp.sin(x))
    # Right first derivative, but blocks the second.
    prim.def_jvp(lambda p, t: (prim(p[0]), jax.lax.stop_gradient(jnp.cos(p[0])) * t[0]))
    assert status(prim, "jvp")[0] == "pass"
    st, message = status(prim, "higher_order")
    assert st == "fail" and "grad of grad" in message


def test_wrong_second_derivative_that_cancels_in_the_sum_of_results_fails() -> None:
    # Right first derivatives; the second derivatives of the two results are off by +1 and
    # -1 (x - stop_gradient(x) is 0 with derivative 1): their sum is right.
    prim = make("bad_second_cancelling", lambda x, /: (jnp.sin(x), jnp.cos(x)))

    @prim.def_jvp
    def _(p: Any, t: Any) -> Any:
        (x,), (dx,) = p, t
        zero_with_slope = x - jax.lax.stop_gradient(x)
        tangents = ((jnp.cos(x) + zero_with_slope) * dx, (-jnp.sin(x) - zero_with_slope) * dx)
        return prim(x), tangents

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


def test_an_empty_platform_or_check_list_is_an_error_not_a_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--platforms ""`` would lower for no platform and pass everything, a wrong cpu
    rule included: an empty selection is a usage error (the API: ValueError)."""
    wrong = make("empty_platforms", lambda x, /: x + x)
    wrong.def_lowering(lambda x: 3 * x, platform="cpu")
    with pytest.raises(AssertionError, match="lowering"):
        jext.testing.check_primitive(wrong, checks=["lowering"], platforms=["cpu"])
    for selection in ({"platforms": []}, {"checks": []}):
        with pytest.raises(ValueError, match="selects nothing"):
            jext.testing.check_primitive(wrong, **selection)
        with pytest.raises(ValueError, match="selects nothing"):
            jext.testing.run_checks(["example.softplus"], **selection)
    for option in ("--platforms", "--checks"):
        for value in ("", " , "):
            assert cli_main(["check", "example.softplus", option, value, "-q"]) == 2
            assert "an empty list selects nothing" in capsys.readouterr().err


def test_cli_check_takes_globs_and_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["check", "example.s*", "example.cum?um", "--checks", "jit", "--json", "-q"])
    data = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in data["reports"] if r["kind"] != "plugin"}
    assert code == 0 and names == {"example.softplus", "example.cumsum"}
    code = cli_main(["check", "--plugin", "jext-scipy-special", "--checks", "jit", "-q", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["reports"] == []  # its wrappers have no "jit" check; no primitives
    code = cli_main(
        ["check", "*.ellipk", "--plugin", "scipy-special", "--checks", "jit_vmap", "-q", "--json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and {r["plugin"] for r in data["reports"]} == {"scipy-special"}
    assert cli_main(["check", "--plugin", "scipy-specal", "-q"]) == 2
    assert "Did you mean 'scipy-special'" in capsys.readouterr().err
    assert cli_main(["check", "nope.*", "-q"]) == 2
    assert "nothing registered matches 'nope.*'" in capsys.readouterr().err


def test_cli_check_suggests_near_names_of_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["check", "ellipk", "-q"]) == 2
    assert "Did you mean 'jext.scipy.special.ellipk'" in capsys.readouterr().err
    assert cli_main(["check", "example.sofplus", "-q"]) == 2
    assert "Did you mean 'example.softplus'" in capsys.readouterr().err
    assert cli_main(["check", "philox4x6", "-q"]) == 2
    assert "'jext.philox4x64'" in capsys.readouterr().err


def test_missing_name_names_the_broken_plugin() -> None:
    from jext._registry import PluginInfo
    from jext.testing._api import select

    infos = [
        PluginInfo("mytrial", "jext-mytrial", "1.0", "error", "import failed: ImportError: x"),
        PluginInfo("example-primitives", "jext-example-primitives", "1.0", "loaded"),
    ]
    catalog = {"example.softplus": "example-primitives"}
    with pytest.raises(jext.UnknownNameError) as info:
        select(["mytrial.shift"], None, catalog, infos)
    message = str(info.value)
    assert "Plugin 'mytrial' failed to load (import failed: ImportError: x)" in message
    assert "its names are missing" in message
    with pytest.raises(jext.UnknownNameError, match="'mytrial' failed to load"):
        select(["other.thing"], None, catalog, infos)
    assert select(["example.*"], ["example-primitives"], catalog, infos) == {"example.softplus"}


def test_broken_plugins_are_reported_whatever_the_filter(catalog_site: Any) -> None:
    from tests.conftest import run_python

    code = (
        "import json, sys\n"
        "from jext._cli import main\n"
        "sys.exit(main(['check', 'faultgood.double', '--checks', 'jit', '--json', '-q']))\n"
    )
    result = run_python(code, catalog_site)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    broken = {r["name"]: r for r in data["reports"] if r["kind"] == "plugin"}
    assert "fault-import" in broken
    assert "needs libfoo 2.0" in broken["fault-import"]["checks"]["load"]["message"]
    checked = [r for r in data["reports"] if r["kind"] == "primitive"]
    assert [r["name"] for r in checked] == ["faultgood.double"] and checked[0]["ok"]


def test_checks_on_a_pool_report_in_order_and_keep_failures() -> None:
    from concurrent.futures import ThreadPoolExecutor

    prim = make("pooled", lambda x, /: 2 * x)
    prim.def_lowering(lambda x: 3 * x, platform="tpu")  # wrong: the lowering check fails
    seen: list[str] = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        report = check_report(
            prim,
            checks=["lowering", "jit", "abstract_eval"],
            pool=pool,
            progress=lambda name, result: seen.append(result.check),
        )
    assert [r.check for r in report.results] == seen == ["lowering", "jit", "abstract_eval"]
    assert [r.status for r in report.results] == ["fail", "pass", "pass"]
    assert "tpu rule" in report.results[0].message


def test_a_platform_rule_gets_the_defaulted_params_when_checked_on_cpu() -> None:
    # A tpu rule without a default for a param the example leaves to its default: the
    # check must call it as the primitive would (the default filled in) and compare it.
    prim = make("defaulted_tpu", lambda x, /, *, k=2.0: x * k, jext.Example(X))
    prim.def_lowering(lambda x, *, k: x * k * 1.5, platform="tpu")  # wrong by 1.5
    st, message = status(prim, "lowering")
    assert st == "fail" and "tpu" in message, message
