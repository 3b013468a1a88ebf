"""Primitives on several devices: sharded jit, explicit sharding, shard_map (4 CPU devices).

The device count is fixed when JAX starts, so the checks run in one subprocess started
with ``--xla_force_host_platform_device_count=4``; each prints a line this module reads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

_SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, numpy as np, jext
    from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

    @jext.primitive("shard.softplus")
    def softplus(x, /):
        return jnp.logaddexp(x, 0.0)

    @jext.primitive("shard.cumsum")
    def cumsum(x, /):
        return jnp.cumsum(x, axis=-1)

    cumsum.def_transpose(lambda ct, x: (jnp.flip(jnp.cumsum(jnp.flip(ct, -1), axis=-1), -1),))

    @jext.primitive("shard.ste")  # a JVP that is not the reference's derivative
    def ste(x, /):
        return jnp.round(x)

    ste.def_jvp(lambda p, t: (ste(p[0]), 2.0 * t[0]))
    twins = {softplus: lambda v: jnp.logaddexp(v, 0.0), cumsum: lambda v: jnp.cumsum(v, -1),
             ste: None}
    grads = {softplus: jax.nn.sigmoid, cumsum: lambda v: jnp.broadcast_to(
                 jnp.arange(v.shape[-1], 0, -1, dtype=v.dtype), v.shape),
             ste: lambda v: 2.0 * jnp.ones_like(v)}
    x = jnp.linspace(-2.0, 2.0, 64, dtype=jnp.float32).reshape(16, 4)

    # 1. Auto sharding: the partitioner sees through a traceable rule (no all-gather).
    auto = Mesh(np.array(jax.devices()), ("x",))
    xs = jax.device_put(x, NamedSharding(auto, P("x")))
    for f in twins:
        text = jax.jit(f).lower(xs).compile().as_text()
        out = jax.jit(f)(xs)
        print("auto", f.name, "all-gather" in text, out.sharding.spec == P("x"))

    # 2. Explicit sharding: output types keep the sharding; grad and vmap work.
    explicit = jax.make_mesh((4,), ("x",), axis_types=(AxisType.Explicit,))
    with jax.set_mesh(explicit):
        xe = jax.device_put(x, NamedSharding(explicit, P("x")))
        for f in twins:
            out_type = jax.make_jaxpr(f)(xe).out_avals[0].str_short()
            g = jax.jit(jax.grad(lambda v, f=f: f(v).sum()))(xe)
            ok = np.allclose(g, grads[f](x), rtol=1e-5)
            vm = jax.jit(jax.vmap(f))(xe)
            print("explicit", f.name, out_type.endswith("[16@x,4]"), ok,
                  g.sharding.spec == P("x", None), vm.sharding.spec == P("x", None))

    # 3. shard_map with check_vma: values, grad, and a psum-style transpose.
    for f in twins:
        per_shard = jax.shard_map(f, mesh=auto, in_specs=P("x"), out_specs=P("x"),
                                  check_vma=True)
        same = np.allclose(jax.jit(per_shard)(x), f(x), rtol=1e-6)
        g = jax.jit(jax.grad(lambda v: per_shard(v).sum()))(x)
        w = jnp.linspace(0.5, 1.5, 4, dtype=jnp.float32)
        total = jax.shard_map(lambda u, w: jax.lax.psum((f(u) * w).sum(), "x"), mesh=auto,
                              in_specs=(P("x"), P()), out_specs=P(), check_vma=True)
        gw = jax.jit(jax.grad(total, argnums=1))(x, w)
        want_w = (f(x)).sum(0)
        print("shard_map", f.name, same, np.allclose(g, grads[f](x), rtol=1e-5),
              np.allclose(gw, want_w, rtol=1e-5, atol=1e-5))
    """
)


@pytest.fixture(scope="module")
def lines() -> list[list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


NAMES = ("shard.softplus", "shard.cumsum", "shard.ste")


@pytest.mark.parametrize("name", NAMES)
def test_sharded_jit_needs_no_all_gather(lines: list[list[str]], name: str) -> None:
    assert ["auto", name, "False", "True"] in lines


@pytest.mark.parametrize("name", NAMES)
def test_explicit_sharding_keeps_output_types_under_grad_and_vmap(
    lines: list[list[str]], name: str
) -> None:
    assert ["explicit", name, "True", "True", "True", "True"] in lines


@pytest.mark.parametrize("name", NAMES)
def test_shard_map_runs_rules_per_shard(lines: list[list[str]], name: str) -> None:
    assert ["shard_map", name, "True", "True", "True"] in lines
