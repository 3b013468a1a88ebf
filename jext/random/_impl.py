"""``jext.random.RngImpl``: a typed-key PRNG implementation, declared with its metadata."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Final, final

import jax

from jext._errors import DefinitionError
from jext._jax import define_prng_impl

__all__ = ["KnownAnswer", "RngImpl"]

_JAX_IMPL_LOCK: Final = threading.Lock()


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class KnownAnswer:
    """A published test vector, stated through the impl's own interface.

    ``random_bits(wrap_key_data(key_data), bit_width, shape)`` must equal ``expected``
    (in C order).  ``source`` names where the vector comes from.
    """

    key_data: tuple[int, ...]
    bit_width: int
    shape: tuple[int, ...]
    expected: tuple[int, ...]
    source: str


@final
@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RngImpl:
    """A typed-key PRNG implementation (JEP 9263) and what jext knows about it.

    The four functions have JAX's ``PRNGImpl`` types, key data being ``uint32[key_shape]``:

    - ``seed :: int[] -> K``
    - ``split :: (K, shape) -> K[*shape]``
    - ``random_bits :: (K, bit_width, shape) -> uint{bit_width}[*shape]``
    - ``fold_in :: (K, uint32[]) -> K``

    ``split(key, (n,))[i]`` must equal ``fold_in(key, i)``.  With ``byte_stream=True`` the
    impl promises that ``random_bits`` of every width reads one byte stream as
    little-endian words in C order.  ``bit_exact_with`` names the reference it
    reproduces bit for bit (e.g. ``"numpy.random.Philox"``), ``known_answers`` returns
    its published test vectors; ``jext check`` verifies both.
    """

    name: str
    key_shape: tuple[int, ...]
    seed: Callable[[jax.Array], jax.Array]
    split: Callable[[jax.Array, tuple[int, ...]], jax.Array]
    random_bits: Callable[[jax.Array, int, tuple[int, ...]], jax.Array]
    fold_in: Callable[[jax.Array, jax.Array], jax.Array]
    tag: str
    description: str
    bit_exact_with: str | None = None
    byte_stream: bool = False
    known_answers: Callable[[], Iterable[KnownAnswer]] | None = None
    # The JAX PRNGImpl, made on first use; not an init field, so dataclasses.replace
    # gives a modified copy its own.
    _jax_impl: list[Hashable] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        parts = self.name.split(".")
        if len(parts) < 2 or not all(p.isidentifier() for p in parts):
            raise DefinitionError(
                f"RNG implementation name {self.name!r} must be namespaced as '<lib>.<rng>'"
            )
        if not self.key_shape or not all(isinstance(d, int) and d > 0 for d in self.key_shape):
            raise DefinitionError(
                f"RNG implementation {self.name!r}: key_shape must be a non-empty tuple of "
                f"positive ints, got {self.key_shape!r}"
            )
        for fn in ("seed", "split", "random_bits", "fold_in"):
            if not callable(getattr(self, fn)):
                raise DefinitionError(f"RNG implementation {self.name!r}: {fn} must be callable")

    @property
    def jax_impl(self) -> Hashable:
        """The JAX ``PRNGImpl`` (made once), for ``jax.random.key(..., impl=...)``."""
        with _JAX_IMPL_LOCK:
            if not self._jax_impl:
                self._jax_impl.append(
                    define_prng_impl(
                        key_shape=self.key_shape,
                        seed=self.seed,
                        split=self.split,
                        random_bits=self.random_bits,
                        fold_in=self.fold_in,
                        name=self.name,
                        tag=self.tag,
                    )
                )
            return self._jax_impl[0]
