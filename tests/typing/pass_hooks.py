"""Hook implementations: jext's typed decorators and pluggy's marker both type-check."""

from typing import assert_type

import jax
import jax.numpy as jnp

import jext
import jext.lowering
import jext.random
import jext.scipy


@jext.primitive("typing.hooked")
def hooked(x: jax.Array, /) -> jax.Array:
    return x


@jext.hooks.register_primitives
def add_primitives(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(hooked)
    assert_type(registry.plugin, str)


@jext.hooks.register_lowerings
def add_lowerings(registry: jext.LoweringRegistrar) -> None:
    registry.add_lowering("typing.hooked", jnp.negative, platform="rocm")
    registry.add_lowering("other.op", lambda ctx, v: [v], platform="tpu", raw=True)


@jext.hooks.register_ffi_targets
def add_ffi_targets(registry: jext.FfiTargetRegistrar) -> None:
    library = registry.load_library("libtyping_kernels.so")
    registry.add("typing_kernel", library.Kernel, platform="cuda", batch_partitionable=True)
    registry.add("typing_staged", {"execute": library.Execute})


hooked.def_lowering(
    jext.lowering.ffi_rule(
        "typing_kernel", primitive=hooked, attrs={}, vmap_method="broadcast_all"
    ),
    platform="cpu",
)
hooked.def_lowering(
    jext.lowering.ffi_rule(
        "typing_kernel",
        primitive=hooked,
        results=lambda x: x,
        attrs={"n": jext.lowering.ComputedAttr("uint64", lambda x: x.size)},
        input_output_aliases={0: 0},
        has_side_effect=True,
    ),
    platform="cuda",
)


@jext.hooks.register_rng_impls
def add_rng_impls(registry: jext.RngImplRegistrar) -> None:
    registry.add(jext.random.get_impl("jext.philox4x64"))


@jext.hooks.register_scipy_wrappers
def add_scipy(registry: jext.ScipyRegistrar) -> None:
    registry.add(
        jext.scipy.ScipyWrapper(
            scope="special",
            name="twice",
            mirrors="scipy.special.twice",
            function=lambda v: 2 * v,
            domains=(jext.scipy.Domain(((0.0, 1.0),)),),
            differentiable=(0,),
        )
    )


@jext.hookimpl
def jext_register_primitives(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(hooked)


jext.register_plugin(object(), name="typing-plugin")
jext.load_plugins()

assert_type(jext.random.key(0, impl="jext.chacha20"), jax.Array)
assert_type(jext.random.impls(), list[str])
assert_type(jext.random.get_impl("jext.philox4x64").key_shape, tuple[int, ...])
assert_type(jext.random.numpy_philox_key(7, counter=2), jax.Array)
assert_type(jext.random.chacha20_key(bytes(32)), jax.Array)

from jext.scipy import special  # noqa: E402

assert_type(special.ellipk(0.5), jax.Array)
assert_type(special.lambertw(jnp.ones(3), k=-1), jax.Array)
assert_type(special.erf(jnp.ones(3)), jax.Array)
