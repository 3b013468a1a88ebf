"""Without the generated stubs, plugin-provided names still type-check, less precisely."""

from typing import assert_type

import jax
import jax.numpy as jnp

import jext
import jext.random
from jext.scipy import ScipyFunction, special

x = jnp.ones(3)
assert_type(special.ellipk(x), jax.Array)
assert_type(special.anything_a_plugin_may_add, ScipyFunction)
assert_type(special.erf(x), jax.Array)
assert_type(jext.get_primitive("example.softplus"), jext.Primitive[..., jax.Array])
assert_type(jext.get_primitive("example.softplus")(x), jax.Array)
assert_type(jext.random.key(0, impl="any.name"), jax.Array)
