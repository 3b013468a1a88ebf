"""A minimal jext plugin: ``minimal.softsign`` with a custom JVP and its examples."""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

import jext

__all__ = ["softsign"]


@jext.primitive("minimal.softsign")
def softsign(x: jax.Array, /) -> jax.Array:
    """``x / (1 + |x|)``: the reference every rule is checked against."""
    return x / (1.0 + jnp.abs(x))


@softsign.def_jvp
def _softsign_jvp(
    primals: tuple[jax.Array], tangents: tuple[jax.Array]
) -> tuple[jax.Array, jax.Array]:
    (x,), (t,) = primals, tangents
    return softsign(x), t / jnp.square(1.0 + jnp.abs(x))


softsign.def_batching_elementwise()


@softsign.def_examples
def _examples() -> Iterator[jext.Example]:
    # Away from 0, where |x| has a kink: finite differences of the gradient are not
    # the gradient of the gradient there.
    yield jext.Example(np.linspace(-3.0, 3.0, 6, dtype=np.float32))


@jext.hooks.register_primitives
def _register(registrar: jext.PrimitiveRegistrar) -> None:
    registrar.add(softsign)
