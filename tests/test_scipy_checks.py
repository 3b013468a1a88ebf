"""The SciPy checks: SciPy is the oracle, and each check fails on a deliberately wrong wrapper."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import pytest

import jext.scipy
import jext.testing
from jext.scipy import Domain, EdgeCase, ScipyWrapper
from jext.testing._scipy_checks import run_scipy_check


def erf_wrapper(function: Any, **options: Any) -> ScipyWrapper:
    return ScipyWrapper(
        scope="special",
        name="erf",
        mirrors="scipy.special.erf",
        function=function,
        domains=(Domain(((-3.0, 3.0),)),),
        tolerances={"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14)},
        **{"differentiable": (0,), **options},
    )


def status(wrapper: ScipyWrapper, check: str) -> tuple[str, str]:
    result = run_scipy_check(wrapper, check)
    return result.status, result.message


def test_a_correct_wrapper_passes_every_check() -> None:
    wrapper = erf_wrapper(jsp.erf)
    for check in ["values", "edge_cases", "gradients", "jit_vmap"]:
        assert status(wrapper, check)[0] == "pass", check


def test_wrong_values_fail() -> None:
    st, message = status(erf_wrapper(jnp.tanh), "values")
    assert st == "fail" and "SciPy gives" in message


def test_wrong_value_at_infinity_fails_edge_cases() -> None:
    wrapper = erf_wrapper(lambda x: jnp.where(jnp.isinf(x), 0.0, jsp.erf(x)))
    assert status(wrapper, "values")[0] == "pass"
    st, message = status(wrapper, "edge_cases")
    assert st == "fail" and "inf" in message


@jax.custom_jvp
def erf_wrong_derivative(x: jax.Array) -> jax.Array:
    return jsp.erf(x)


@erf_wrong_derivative.defjvp
def _erf_jvp(primals: tuple[jax.Array], tangents: tuple[jax.Array]) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return jsp.erf(x), 4.0 / jnp.sqrt(jnp.pi) * jnp.exp(-x * x) * t  # twice the derivative


def test_wrong_derivative_fails_gradients() -> None:
    st, message = status(erf_wrapper(erf_wrong_derivative), "gradients")
    assert st == "fail" and "d/d(argument 0)" in message


@jax.custom_jvp
def powm1_wrong_in_p(x: jax.Array, p: jax.Array) -> jax.Array:
    return jnp.expm1(p * jnp.log(x))


@powm1_wrong_in_p.defjvp
def _powm1_jvp(primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    (x, p), (tx, tp) = primals, tangents
    power = jnp.exp(p * jnp.log(x))
    # Right in x; twice the derivative in p.
    return power - 1, power * p / x * tx + 2 * power * jnp.log(x) * tp


def test_wrong_derivative_in_a_second_argument_fails_gradients() -> None:
    # The derivatives of every argument come from one reverse pass: each is still checked.
    wrapper = ScipyWrapper(
        scope="special",
        name="powm1",
        mirrors="scipy.special.powm1",
        function=powm1_wrong_in_p,
        domains=(Domain(((0.5, 3.0), (-2.0, 2.0))),),
        tolerances={"float32": (1e-4, 1e-6), "float64": (1e-11, 1e-14)},
        differentiable=(0, 1),
    )
    st, message = status(wrapper, "gradients")
    assert st == "fail" and "d/d(argument 1)" in message, message
    assert "d/d(argument 0)" not in message


def test_shape_dependent_function_fails_jit_vmap() -> None:
    wrapper = erf_wrapper(lambda x: jsp.erf(x) * (1.0 + 1e-3 * jnp.ndim(x)))
    st, message = status(wrapper, "jit_vmap")
    assert st == "fail" and "vmap vs jit" in message and "jit gives" in message


@pytest.mark.numerics
def test_batch_dependent_function_fails_jit_vmap() -> None:
    # One ulp more wherever the batch holds a nan: within every tolerance, so the values
    # pass; only the bitwise comparison of an element alone and in a batch sees it.
    def erf_batch_dependent(x: jax.Array) -> jax.Array:
        return jsp.erf(x) * (1.0 + jnp.finfo(x.dtype).eps * jnp.any(jnp.isnan(x)))

    from jext.testing._scipy_checks import scipy_report

    # One report: both checks share the compiled programs.
    report = scipy_report(erf_wrapper(erf_batch_dependent), checks=("values", "jit_vmap"))
    values, jit_vmap = report.results
    assert values.status == "pass", values
    assert jit_vmap.status == "fail" and "float32 batch independence" in jit_vmap.message
    assert "bitwise" in jit_vmap.message


def test_no_differentiable_argument_is_a_skip_with_reason() -> None:
    st, message = status(erf_wrapper(jsp.erf, differentiable=()), "gradients")
    assert (st, message) == ("skip", "the wrapper declares no differentiable argument")


def test_bundled_wrapper_meets_its_tolerances() -> None:
    (ellipk,) = [w for w in jext.scipy.entries("special") if w.name == "ellipk"]
    assert (ellipk.status, ellipk.providers) == ("plugin", ("scipy-special",))
    from jext_scipy_special import WRAPPERS

    wrapper = next(w for w in WRAPPERS if w.name == "ellipk")
    for check in ["values", "edge_cases", "gradients", "jit_vmap"]:
        assert status(wrapper, check) == ("pass", ""), check


def test_audit_reports_where_jax_disagrees_with_scipy() -> None:
    from jext.scipy._audit import audited

    digamma = next(w for w in audited() if w.name == "digamma")
    st, message = status(digamma, "edge_cases")
    assert st == "fail" and "SciPy gives" in message  # jax gives nan at 0, SciPy -inf


def test_audit_reports_name_jax_functions_not_the_plugins_replacements() -> None:
    # jext.scipy.special.betainc is the plugin's replacement; the audit checks JAX's own.
    (report,) = jext.testing.run_checks(
        ["jax.scipy.special.betainc"], checks=["jit_vmap"], scipy_audit=True
    )
    assert (report.name, report.kind) == ("jax.scipy.special.betainc", "scipy-audit")


def test_a_wrapper_that_cannot_be_differentiated_fails_only_gradients() -> None:
    # The checks share one compiled program; when it fails, each check runs its own part,
    # so the failure is reported by the check it concerns.
    import numpy as np
    import scipy.special

    from jext.testing._scipy_checks import scipy_report

    def erf_on_host(x: jax.Array) -> jax.Array:
        return jax.pure_callback(
            lambda v: np.asarray(scipy.special.erf(v), v.dtype),
            jax.ShapeDtypeStruct(x.shape, x.dtype),
            x,
            vmap_method="expand_dims",
        )

    report = scipy_report(erf_wrapper(erf_on_host))
    statuses = {r.check: r.status for r in report.results}
    assert statuses == {
        "values": "pass",
        "edge_cases": "pass",
        "gradients": "fail",
        "jit_vmap": "pass",
    }, report.format()


@pytest.mark.numerics
@pytest.mark.usefixtures("on_cpu")  # STRUCTURE_COMPILE is used on CPU only
def test_values_are_those_of_the_default_compilation_users_get(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # x * (2 - x) - 1 at x = 1 + 2**-30: -2**-60 where XLA contracts the product and the
    # difference into a fused multiply-add, 0.0 where it does not (at the lowest
    # optimisation level).  The values the checks judge must be the bits of jax.jit, even
    # though the vmap and scalar-call copies compile with other options: here XLA's lowest
    # level, which rounds this point differently from the default.
    import numpy as np

    from jext import _jax
    from jext.testing import _scipy_checks
    from jext.testing._scipy_checks import _kw_key, _Session

    lowest_level = _jax.xla_compile_options(
        {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
    )
    monkeypatch.setattr(_scipy_checks, "STRUCTURE_COMPILE", lowest_level)
    point = 1.0 + 2.0**-30
    wrapper = erf_wrapper(lambda x: x * (2.0 - x) - 1.0, edge_cases=(EdgeCase((point,)),))
    session = _Session(wrapper)
    kw = _kw_key({})
    where = session.plan.segment(kw, "edges")
    index = int(np.flatnonzero(session.plan.columns[kw][0][where] == point)[0])
    with jax.enable_x64(True):
        x = np.full(8, point)
        user = np.asarray(jax.jit(wrapper.function)(x))[0]
        lowest = np.asarray(jax.jit(wrapper.function).lower(x).compile(lowest_level)(x))[0]
        if user == lowest:
            # (1 + u)(1 - u) - 1, u = 2**-30: -2**-60 with an FMA, 0.0 without one.
            fma = jax.jit(lambda a, b, c: a * b + c)
            operands = [np.full(8, 1.0 + 2.0**-30), np.full(8, 1.0 - 2.0**-30), np.full(8, -1.0)]
            if not np.asarray(fma(*operands))[0]:
                pytest.skip(
                    "XLA:CPU contracts nothing into an FMA here (no FMA in its instruction "
                    "set, e.g. XLA_FLAGS=--xla_cpu_max_isa=SSE4_2): both compilations agree"
                )
    assert user != lowest, "the point no longer tells the two compilations apart"
    assert session.get("float64", kw, "eval")[..., where][index] == user


def _norm_cdf_wrapper(function: Any, mirrors: str = "scipy.stats.norm.cdf") -> ScipyWrapper:
    return dataclasses.replace(
        erf_wrapper(function),
        scope="stats",
        name="norm.cdf",
        mirrors=mirrors,
        domains=(Domain(((-5.0, 5.0),)),),
    )


def test_a_method_of_a_scipy_object_is_the_oracle_its_mirrors_name() -> None:
    """``mirrors="scipy.stats.norm.cdf"`` with no ``oracle``: SciPy's ``norm.cdf``."""
    assert status(_norm_cdf_wrapper(jax.scipy.stats.norm.cdf), "values")[0] == "pass"
    st, message = status(_norm_cdf_wrapper(jax.scipy.stats.norm.sf), "values")
    assert st == "fail" and "SciPy gives" in message


def test_a_mirrored_name_scipy_lacks_is_an_error_naming_it() -> None:
    wrapper = _norm_cdf_wrapper(jax.scipy.stats.norm.cdf, "scipy.stats.no_such_dist.cdf")
    st, message = status(wrapper, "values")
    assert st == "fail" and "no_such_dist" in message
