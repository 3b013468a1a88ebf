"""A wrong hook signature or a misspelled hook is a type error with the typed decorators."""

import jax.numpy as jnp

import jext
import jext.lowering
import jext.random


@jext.hooks.register_primitives  # type: ignore[arg-type]
def wrong_registrar(registry: jext.LoweringRegistrar) -> None:
    pass


@jext.hooks.register_primitives  # type: ignore[arg-type]
def two_arguments(registry: jext.PrimitiveRegistrar, extra: int) -> None:
    pass


@jext.hooks.register_lowerings  # type: ignore[arg-type]
def returns_a_value(registry: jext.LoweringRegistrar) -> int:
    return 1


def misspelled(registry: jext.PrimitiveRegistrar) -> None:
    pass


jext.hooks.register_primitive(misspelled)  # type: ignore[attr-defined]


@jext.hooks.register_primitives
def adds_the_wrong_thing(registry: jext.PrimitiveRegistrar) -> None:
    registry.add(jnp.sin)  # type: ignore[arg-type]


@jext.hooks.register_lowerings
def bad_platform(registry: jext.LoweringRegistrar) -> None:
    registry.add_lowering("a.b", jnp.sin, platform="metal")  # type: ignore[arg-type]
    registry.add_lowering(3, jnp.sin)  # type: ignore[arg-type]


@jext.hooks.register_rng_impls
def adds_a_name(registry: jext.RngImplRegistrar) -> None:
    registry.add("jext.philox4x64")  # type: ignore[arg-type]


jext.random.key(0, impl="jext.philox4x46")  # type: ignore[arg-type]
jext.random.key(0)  # type: ignore[call-arg]

from jext.scipy import special  # noqa: E402

special.ellipkk(0.5)  # type: ignore[attr-defined]
special.lambertw(0.5, k="-1")  # type: ignore[arg-type]


@jext.hooks.register_ffi_targets
def ffi_on_tpu(registry: jext.FfiTargetRegistrar) -> None:
    registry.add("kernel", object(), platform="tpu")  # type: ignore[arg-type]


@jext.hooks.register_ffi_targets  # type: ignore[arg-type]
def ffi_wrong_registrar(registry: jext.PrimitiveRegistrar) -> None:
    pass


jext.lowering.ffi_rule("k", primitive=jnp.sin, attrs={"beta": "float16"})  # type: ignore[dict-item]
jext.lowering.ffi_rule("k", primitive=jnp.sin, vmap_method="vectorized")  # type: ignore[arg-type]
jext.lowering.ComputedAttr("int4", len)  # type: ignore[arg-type]
jext.lowering.ffi_rule("k", primitive=jnp.sin, input_output_aliases={"x": 0})  # type: ignore[dict-item]
