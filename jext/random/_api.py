"""Typed keys by registered name: ``jext.random.key(seed, impl="jext.philox4x64")``."""

from __future__ import annotations

from typing import Any, Final

import jax
import jax.numpy as jnp
import numpy as np
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
    A Python int seed is read as an ``int64``, with x64 on or off, as ``jax.random.key``
    reads it with x64 on: one seed, one key in both modes (``jax.random.key`` without x64
    truncates it to ``int32``, so that ``2**32 + 5`` would give the key of ``5``).  Raises
    ``OverflowError`` for a Python int outside ``[-2**63, 2**63)``, as ``jax.random.key``
    does.
    """
    jax_impl = _jax_impl(impl)
    if isinstance(seed, int) and not _INT32_MIN <= seed <= _INT32_MAX and not _x64():
        return _key_of_int64(np.int64(seed), jax_impl)  # np.int64 raises OverflowError
    return jax.random.key(seed, impl=jax_impl)


def wrap_key_data(key_data: ArrayLike, *, impl: str) -> jax.Array:
    """A typed key from raw ``uint32`` key data of the registered implementation ``impl``."""
    key: jax.Array = jax.random.wrap_key_data(jnp.asarray(key_data), impl=_jax_impl(impl))
    return key


def _jax_impl(name: str) -> Any:
    return get_impl(name).jax_impl


_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1


def _x64() -> bool:
    """Whether x64 is on (JAX keeps 64-bit integers as they are)."""
    return bool(jax.dtypes.canonicalize_dtype(np.int64) == np.int64)


def _key_of_int64(seed: np.int64, jax_impl: Any) -> jax.Array:
    """The key ``jax.random.key(seed)`` gives with x64 on, made with x64 off.

    The key data is computed eagerly (even inside a trace: the seed is a constant) and
    is ``uint32`` in both modes, so it wraps into a key of the caller's mode unchanged.
    """
    with jax.enable_x64(True), jax.ensure_compile_time_eval():
        data = np.asarray(jax.random.key_data(jax.random.key(seed, impl=jax_impl)))
    wrapped: jax.Array = jax.random.wrap_key_data(jnp.asarray(data), impl=jax_impl)
    return wrapped
