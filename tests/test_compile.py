"""The compile options of the checks' structure programs (jext/testing/_compile.py) and of
the suite's fast-compiled programs (tests/fast_compile.py) give the values JAX's default
compilation gives."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jext.testing._compile import STRUCTURE_COMPILE
from tests.fast_compile import compile_options


def _hypot_twice(x: jax.Array) -> jax.Array:
    inner = jnp.hypot(x, x * x + 1.0)
    return jnp.hypot(inner * 0.5, inner * inner + 1.0)


# XLA:CPU's elemental emitter at optimisation level 0 (jaxlib 0.8.3 to 0.10.2) gives wrong
# values for this gradient.
PROGRAMS: dict[str, Callable[[jax.Array], Any]] = {
    "grad_of_hypot_twice": jax.grad(lambda x: _hypot_twice(x).sum()),
    "jacrev_of_hypot_twice": jax.jacrev(_hypot_twice),
    "hessian_of_hypot": jax.hessian(lambda x: jnp.hypot(x, x * x + 1.0).sum()),
}
OPTIONS: dict[str, Callable[[], Mapping[str, Any] | None]] = {
    "STRUCTURE_COMPILE": lambda: dict(STRUCTURE_COMPILE),
    "tests.fast_compile": compile_options,
}


@pytest.mark.parametrize("options", list(OPTIONS))
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_the_fast_options_give_the_default_compilations_values(program: str, options: str) -> None:
    x = jnp.linspace(-1.5, 2.0, 6, dtype=jnp.float32)
    lowered = jax.jit(PROGRAMS[program]).lower(x)
    want = np.asarray(lowered.compile()(x))
    got = np.asarray(lowered.compile(OPTIONS[options]())(x))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
