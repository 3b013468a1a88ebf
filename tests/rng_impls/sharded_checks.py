"""Sharded-output cases of the JAX PRNG suite, run on 4 CPU devices in a process of their own.

JAX fixes the device count when it starts, so ``test_jax_suite.py`` runs this module as a
script with ``XLA_FLAGS=--xla_force_host_platform_device_count=4``.  It prints one JSON
object: for every registered RNG implementation and case, ``"ok"`` or the error.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jext

Case = Callable[[jax.Array], None]
OUT_SHARDING: dict[str, Callable[[jax.Array, int, NamedSharding], jax.Array]] = {
    "bits": lambda k, n, s: jax.random.bits(k, (n,), out_sharding=s),
    "uniform": lambda k, n, s: jax.random.uniform(k, (n,), out_sharding=s),
    "normal": lambda k, n, s: jax.random.normal(k, (n,), out_sharding=s),
    "bernoulli": lambda k, n, s: jax.random.bernoulli(k, 0.5, (n,), out_sharding=s),
    "randint": lambda k, n, s: jax.random.randint(k, (n,), 0, 10, out_sharding=s),
    "exponential": lambda k, n, s: jax.random.exponential(k, (n,), out_sharding=s),
}


def out_sharding_case(fn: Callable[[jax.Array, int, NamedSharding], jax.Array]) -> Case:
    # random_lax_test.RandomOutShardingTest: out_sharding is obeyed, eagerly and under jit.
    def case(key: jax.Array) -> None:
        mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
        sharding = NamedSharding(mesh, P("x"))
        with jax.set_mesh(mesh):
            eager = fn(key, 4, sharding)
            jitted = jax.jit(fn, static_argnums=(1, 2))(key, 4, sharding)
        for result in (eager, jitted):
            assert result.sharding.is_equivalent_to(sharding, result.ndim), result.sharding

    return case


def jit_out_shardings(key: jax.Array) -> None:
    # Sharding the output must not change the bits.
    mesh = jax.make_mesh((4,), ("x",))
    draw = jax.jit(lambda k: jax.random.uniform(k, (8,)))
    sharded = jax.jit(
        lambda k: jax.random.uniform(k, (8,)), out_shardings=NamedSharding(mesh, P("x"))
    )
    out = sharded(key)
    assert len(out.sharding.device_set) == 4
    np.testing.assert_array_equal(np.asarray(out), np.asarray(draw(key)))


def vmap_over_sharded_keys(key: jax.Array) -> None:
    mesh = jax.make_mesh((4,), ("x",))
    keys = jax.random.split(key, 4)
    sharded = jax.device_put(keys, NamedSharding(mesh, P("x")))
    for fn in (
        lambda k: jax.random.uniform(k, (2,)),
        lambda k: jax.random.key_data(jax.random.split(k)),
    ):
        got = jax.jit(jax.vmap(fn))(sharded)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(jax.vmap(fn)(keys)))


CASES: dict[str, Case] = {
    **{f"out_sharding_{name}": out_sharding_case(fn) for name, fn in OUT_SHARDING.items()},
    "jit_out_shardings": jit_out_shardings,
    "vmap_over_sharded_keys": vmap_over_sharded_keys,
}


def main() -> int:
    assert jax.device_count() == 4, os.environ.get("XLA_FLAGS")
    results: dict[str, dict[str, str]] = {}
    for name in jext.random.impls():
        key = jext.random.key(0, impl=name)
        results[name] = {}
        for case, fn in CASES.items():
            try:
                fn(key)
                results[name][case] = "ok"
            except Exception:  # reported per case to the parent test, which fails on it
                results[name][case] = traceback.format_exc(limit=4)
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
