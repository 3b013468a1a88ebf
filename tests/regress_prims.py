"""A module-level primitive for tests/test_core_regressions.py: pickle finds it by re-import."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jext


@jext.primitive("regress.picklable")
def picklable(x: jax.Array, /, *, power: int = 2) -> jax.Array:
    """``x ** power``, elementwise."""
    return jnp.power(x, power)


def picklable_twin(x: jax.Array, /, *, power: int = 2) -> jax.Array:
    """The same signature as :data:`picklable`, written out by hand."""
    return jnp.power(x, power)
