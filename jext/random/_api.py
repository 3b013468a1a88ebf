"""Typed keys by registered name: ``jext.random.key(seed, impl="jext.philox4x64")``."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jext import _host
from jext.rng_impls._impl import RngImpl

__all__ = ["get_impl", "impls", "key", "wrap_key_data"]


def impls() -> list[str]:
    """The names of every registered RNG implementation, sorted."""
    return _host.host().rng_impl_names()


def get_impl(name: str) -> RngImpl:
    """The registered implementation ``name``; :class:`jext.UnknownNameError` if none."""
    return _host.host().rng_impl(name)


def key(seed: ArrayLike, *, impl: str) -> jax.Array:
    """A typed key for ``seed`` from the registered implementation ``impl``.

    It works with every ``jax.random`` function, under ``jit``, ``vmap`` and ``scan``.
    """
    return jax.random.key(seed, impl=_jax_impl(impl))


def wrap_key_data(key_data: ArrayLike, *, impl: str) -> jax.Array:
    """A typed key from raw ``uint32`` key data of the registered implementation ``impl``."""
    key: jax.Array = jax.random.wrap_key_data(jnp.asarray(key_data), impl=_jax_impl(impl))
    return key


def _jax_impl(name: str) -> Any:
    return get_impl(name).jax_impl
