"""The implementations ``jext.rng_impls`` ships, by name, for the convention and stream tests."""

from __future__ import annotations

from collections.abc import Hashable

from jext.rng_impls import CHACHA20, PHILOX4X64, THREEFRY4X64

__all__ = ["IMPLS"]

IMPLS: dict[str, Hashable] = {
    "philox4x64": PHILOX4X64.jax_impl,
    "chacha20": CHACHA20.jax_impl,
    "threefry4x64": THREEFRY4X64.jax_impl,
}
