"""Caches keyed by everything that changes a result, and bounded."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jext
from jext.primitives._core import CACHE_SIZE, LruCache, StaticParam, typed_key


def test_lru_cache_keeps_the_most_recently_used() -> None:
    cache: LruCache[int, str] = LruCache(maxsize=2)
    cache.put(1, "a")
    cache.put(2, "b")
    assert cache.get(1) == "a"  # 1 is now the most recent
    cache.put(3, "c")
    assert (cache.get(1), cache.get(2), cache.get(3)) == ("a", None, "c")
    assert cache.get_or_make(4, lambda: "d") == "d" and len(cache) == 2


def test_typed_keys_and_static_params_tell_2_from_2_0_from_true() -> None:
    assert len({typed_key(2), typed_key(2.0), typed_key(True)}) == 3
    assert typed_key((1, 2.0)) != typed_key((1, 2))
    assert StaticParam(2) != StaticParam(2.0) and StaticParam(2) == StaticParam(2)
    assert hash(StaticParam(2)) == hash(StaticParam(2))
    assert StaticParam(2.0) == 2.0 and StaticParam(2.0) != 2 and {"b": StaticParam(1)} == {"b": 1}
    assert repr(StaticParam(2.0)) == "2.0"


def test_equal_params_of_different_types_give_their_own_results() -> None:
    @jext.primitive("core.scale")
    def scale(x: jax.Array, /, *, factor: float) -> jax.Array:
        return x * factor

    xi = jnp.arange(3, dtype=jnp.int32)
    assert scale(xi, factor=2.0).dtype == jnp.float32
    assert scale(xi, factor=2).dtype == jnp.int32
    assert jax.jit(lambda v: scale(v, factor=2))(xi).dtype == jnp.int32
    assert "factor=2]" in str(jax.make_jaxpr(lambda v: scale(v, factor=2))(xi))
    assert "factor=2.0" in str(jax.make_jaxpr(lambda v: scale(v, factor=2.0))(xi))


def test_the_x64_switch_is_part_of_the_trace_key() -> None:
    @jext.primitive("core.third")
    def third(x: jax.Array, /) -> jax.Array:
        return x.astype(float) / 3

    xi = np.arange(3, dtype=np.int32)
    assert third(xi).dtype == jnp.float32
    with jax.enable_x64(True):
        assert third(np.arange(3, dtype=np.int32)).dtype == jnp.float64
    assert third(xi).dtype == jnp.float32


def test_caches_stay_bounded_over_many_static_params() -> None:
    @jext.primitive("core.many")
    def shift(x: jax.Array, /, *, c: float) -> jax.Array:
        return x + c

    x = jnp.zeros(2)
    for i in range(CACHE_SIZE + 40):
        jax.make_jaxpr(lambda v, c=float(i): shift(v, c=c))(x)
    core = shift._core
    assert len(shift._calls) <= CACHE_SIZE
    assert len(core.traces) <= CACHE_SIZE and len(core.out_trees) <= CACHE_SIZE
    np.testing.assert_allclose(shift(x, c=0.0), x)  # an evicted entry is rebuilt
