"""A jext primitive under jit, grad and vmap, and exported for every platform at once.

Run: ``python examples/demo.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jext
import jext.lowering


@jext.primitive("demo.softplus")
def softplus(x: jax.Array, /, *, beta: float = 1.0) -> jax.Array:
    """log(1 + exp(beta * x)) / beta, computed stably."""
    return jnp.logaddexp(beta * x, 0.0) / beta


@softplus.def_lowering(platform="tpu")
def _softplus_tpu(x: jax.Array, *, beta: float) -> jax.Array:
    # A different formulation, standing in for a hand-written TPU kernel.
    return jax.nn.softplus(beta * x) / beta


def main() -> None:
    x = jnp.linspace(-3.0, 3.0, 5)
    print("jaxpr:      ", jax.make_jaxpr(lambda v: softplus(v, beta=2.0))(x))
    print("eager:      ", softplus(x, beta=2.0))
    print("jit:        ", jax.jit(lambda v: softplus(v, beta=2.0))(x))
    print("grad:       ", jax.grad(lambda v: softplus(v).sum())(x))
    print("vmap:       ", jax.vmap(softplus)(jnp.stack([x, -x])))
    exported = jext.lowering.export(softplus, x)
    print("platforms:  ", exported.platforms)
    for platform, rules in exported.rules.items():
        print(f"  {platform:5s} lowers {rules}")
    print("export call:", exported.call(x))


if __name__ == "__main__":
    main()
