"""``jext.random.RngImpl``: a typed-key PRNG implementation, declared with its metadata."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, final

import jax

from jext import _host
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
    # Its four functions, as it holds them (see _ImplFunction).
    _jax_functions: dict[str, _ImplFunction] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        parts = self.name.split(".")
        if len(parts) < 2 or not self.name.isascii() or not all(p.isidentifier() for p in parts):
            raise DefinitionError(
                f"RNG implementation name {self.name!r} must be namespaced as '<lib>.<rng>' "
                "(ASCII dot-separated Python identifiers)"
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
                # Each function goes by reference, so keys of this impl pickle (JAX pickles
                # a key array's impl with it; jitted closures cannot be pickled).
                fns = self._jax_functions
                for fn in ("seed", "split", "random_bits", "fold_in"):
                    fns[fn] = _ImplFunction(getattr(self, fn), self.name, fn)
                self._jax_impl.append(
                    define_prng_impl(
                        key_shape=self.key_shape,
                        seed=fns["seed"],
                        split=fns["split"],
                        random_bits=fns["random_bits"],
                        fold_in=fns["fold_in"],
                        name=self.name,
                        tag=self.tag,
                    )
                )
            return self._jax_impl[0]


@final
class _ImplFunction:
    """A function of a registered impl, pickled as (impl name, function name).

    Unpickling looks the impl up by name in the registry of the loading process, so a
    pickled key array comes back with the very same JAX impl.
    """

    __slots__ = ("__weakref__", "_field", "_fn", "_impl_name")

    def __init__(self, fn: Callable[..., jax.Array], impl_name: str, field: str) -> None:
        self._fn = fn
        self._impl_name = impl_name
        self._field = field

    def __call__(self, *args: Any) -> jax.Array:
        return self._fn(*args)

    def __repr__(self) -> str:
        return f"<{self._field} of RNG implementation {self._impl_name!r}>"

    def __reduce__(self) -> tuple[Callable[[str, str], Any], tuple[str, str]]:
        return _registered_function, (self._impl_name, self._field)


def _registered_function(impl_name: str, field: str) -> Any:
    """The function ``field`` of the registered impl ``impl_name``'s JAX impl."""
    impl = _host.host().rng_impl(impl_name)
    impl.jax_impl  # noqa: B018 (made on first use)
    return impl._jax_functions[field]
