"""The checker's extensions that ``zetac, shichi, wrightomega, ellipj`` and the orthogonal
polynomials use: integer-sampled arguments, and functions with several results (a wrong
value or a wrong derivative of one result of a pair is caught).

Every check of ``jext check`` runs on each of these wrappers in the README's main job,
which CI runs beside this suite (not repeated here, for the suite's time).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jext_scipy_special._functions import _misc_family

from jext.scipy import Domain, ScipyWrapper
from jext.testing._scipy_checks import _sample, run_scipy_check

FAMILY = list(_misc_family.WRAPPERS)


def test_integer_arguments_are_sampled_as_whole_numbers() -> None:
    domain = Domain(((0.0, 40.0), (-1.0, 1.0)), integers=(0,))
    n, x = _sample(np.random.default_rng(0), domain, 50)
    np.testing.assert_array_equal(n, np.round(n))
    assert len(np.unique(n)) > 10
    assert not np.array_equal(x, np.round(x))


def _pair_oracle(x: Any) -> Any:
    return np.sinh(x), np.cosh(x)


@jax.custom_jvp
def _pair_wrong_derivative(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jnp.sinh(x), jnp.cosh(x)


@_pair_wrong_derivative.defjvp
def _pair_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (dx,) = primals, tangents
    # cosh' = sinh; the rule says 1.01 sinh: only the second result's derivative is wrong.
    return _pair_wrong_derivative(x), (jnp.cosh(x) * dx, 1.01 * jnp.sinh(x) * dx)


def _pair(function: Any) -> ScipyWrapper:
    return ScipyWrapper(
        scope="special",
        name="pair_test",
        mirrors="scipy.special.shichi",
        function=function,
        domains=(Domain(((0.5, 3.0),)),),
        differentiable=(0,),
        dtypes=("float64",),
        oracle=_pair_oracle,
    )


def test_a_wrong_second_result_fails_the_values_check() -> None:
    wrapper = _pair(lambda x: (jnp.sinh(x), jnp.cosh(x) * (1.0 + 1e-9)))
    assert run_scipy_check(wrapper, "values").status == "fail"
    assert run_scipy_check(_pair(lambda x: (jnp.sinh(x), jnp.cosh(x))), "values").status == "pass"


def test_a_wrong_derivative_of_the_second_result_fails_the_gradient_check() -> None:
    result = run_scipy_check(_pair(_pair_wrong_derivative), "gradients")
    assert result.status == "fail", result.message
