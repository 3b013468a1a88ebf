"""``jext.scipy.ScipyWrapper``: a JAX function mirroring a SciPy one, with what checks need."""

from __future__ import annotations

import contextlib
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, final

from jext._errors import DefinitionError
from jext.scipy._jax_scipy import in_jax

__all__ = ["Domain", "EdgeCase", "ScipyWrapper"]

# |got - want| <= rtol * |want| + atol: the relative error with an absolute floor near zeros.
Tolerance = tuple[float, float]

DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {"float32": (5e-6, 1e-30), "float64": (1e-12, 1e-300)}


@final
@dataclass(frozen=True, slots=True)
class Domain:
    """A box of arguments the checks sample: ``bounds[i] = (low, high)`` for argument ``i``.

    ``kwargs`` are passed with every sample (e.g. a branch ``k=-1``); with ``log=True`` an
    argument whose bounds are both positive is sampled log-uniformly; the arguments listed
    in ``integers`` (an integer degree or order) are sampled as whole numbers.
    """

    bounds: tuple[tuple[float, float], ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    log: bool = False
    integers: tuple[int, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class EdgeCase:
    """One point where the wrapper must equal SciPy exactly in kind (inf, nan) and in value."""

    args: tuple[float, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@final
# weakref_slot: JAX holds weak references to the callables it transforms (jax.jit of a
# slotted object without one raises, and on jax 0.10.2 crashes the second time).
@dataclass(frozen=True, slots=True, kw_only=True, eq=False, weakref_slot=True)
class ScipyWrapper:
    """A JAX-traceable function registered as ``jext.scipy.<scope>.<name>``.

    **Arguments:**

    - ``scope``: the SciPy module it belongs to (``"special"``, ``"stats"``, ...).
    - ``name``: its name there; a method of a ``scipy.stats`` distribution is named
      ``"<distribution>.<method>"`` (``"chi2.ppf"``) and appears as
      ``jext.scipy.stats.chi2.ppf``, next to ``jax.scipy.stats.chi2``'s own methods.
    - ``mirrors``: the SciPy function it mirrors, ``"scipy.special.ellipk"``.
    - ``function``: the JAX implementation (jit-, vmap- and grad-able; a
      :func:`jext.primitive` where it needs its own JVP or lowering).
    - ``differentiable``: indices of the positional arguments it is differentiable in.
    - ``dtypes``: the dtypes it supports and is checked in.
    - ``domains``: where the checks sample arguments.
    - ``edge_cases``: points checked beyond the automatic ones (+-0, +-inf, nan and the
      domain boundaries).
    - ``tolerances``: per dtype, ``(rtol, atol)``.
    - ``oracle``: the function to compare with, when it is not SciPy's own (e.g. the real
      part of a complex result); default: the function ``mirrors`` names.
    - ``replaces_jax``: a plugin may provide a name ``jax.scipy`` already has only by
      saying why here (e.g. ``"accurate to 1 ulp in the tails"``).
    """

    scope: str
    name: str
    mirrors: str
    function: Callable[..., Any]
    domains: tuple[Domain, ...]
    differentiable: tuple[int, ...] = ()
    dtypes: tuple[str, ...] = ("float32", "float64")
    edge_cases: tuple[EdgeCase, ...] = ()
    tolerances: Mapping[str, Tolerance] = field(default_factory=lambda: dict(DEFAULT_TOLERANCES))
    oracle: Callable[..., Any] | None = None
    replaces_jax: str | None = None
    description: str = ""
    # The public function ``jext.scipy.<scope>.<name>``, made in __post_init__.
    _public: list[Callable[..., Any]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        where = f"SciPy wrapper {self.scope}.{self.name}"
        parts = self.name.split(".")
        named = len(parts) <= 2 and all(map(str.isidentifier, parts))
        if not (self.scope.isidentifier() and named):
            raise DefinitionError(
                f"{where}: scope and name must be Python identifiers, or the name one "
                "distribution's method (e.g. 'chi2.ppf', as scipy.stats spells it)"
            )
        if not self.mirrors.startswith("scipy."):
            raise DefinitionError(
                f"{where}: mirrors must name a SciPy function, got {self.mirrors!r}"
            )
        if not callable(self.function):
            raise DefinitionError(f"{where}: function must be callable")
        if not self.domains:
            raise DefinitionError(f"{where}: at least one Domain is needed for the checks")
        for dtype in self.dtypes:
            if dtype not in self.tolerances:
                raise DefinitionError(f"{where}: no tolerance for dtype {dtype!r}")

        self._public.append(_public_function(self))

    @property
    def qualified_name(self) -> str:
        return f"jext.scipy.{self.scope}.{self.name}"

    def shadows_jax(self) -> bool:
        """Whether ``jax.scipy.<scope>`` has this name already (then ``replaces_jax`` must
        say why a plugin replaces it)."""
        return in_jax(self.scope, self.name)

    @property
    def public(self) -> Callable[..., Any]:
        """The plain function users get as ``jext.scipy.<scope>.<name>``.

        A real function object (JAX holds weak references to what it jits, and keys caches
        by it), named ``name`` in module ``jext.scipy.<scope>``, with ``function``'s
        signature and ``__wrapped__``; its ``jext_wrapper`` attribute is this declaration.
        """
        return self._public[0]

    def metadata(self) -> dict[str, Any]:
        """What ``jext list --json`` says of the wrapper: where it is checked and how tightly."""
        return {
            "mirrors": self.mirrors,
            "description": self.description,
            "dtypes": list(self.dtypes),
            "tolerances": {d: {"rtol": t[0], "atol": t[1]} for d, t in self.tolerances.items()},
            "domains": [
                {
                    "bounds": [[_json_float(x) for x in b] for b in d.bounds],
                    "kwargs": dict(d.kwargs),
                    "log": d.log,
                    "integers": list(d.integers),
                }
                for d in self.domains
            ],
            "differentiable": list(self.differentiable),
            "edge_cases": [
                {"args": list(e.args), "kwargs": dict(e.kwargs)} for e in self.edge_cases
            ],
            "replaces_jax": self.replaces_jax,
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def _json_float(x: float) -> float | str:
    # Strict JSON has no inf or nan: an edge case at infinity is listed as "inf".
    return x if math.isfinite(x) else str(x)


def _public_function(wrapper: ScipyWrapper) -> Callable[..., Any]:
    impl = wrapper.function

    def function(*args: Any, **kwargs: Any) -> Any:
        return impl(*args, **kwargs)

    function.__name__ = wrapper.name
    function.__qualname__ = wrapper.name
    function.__module__ = f"jext.scipy.{wrapper.scope}"
    doc = wrapper.description or inspect.getdoc(impl) or ""
    function.__doc__ = (
        f"{doc}\n\nMirrors ``{wrapper.mirrors}`` (``jext check {wrapper.qualified_name}`` "
        "holds it to SciPy)."
    ).lstrip()
    # Beside the function: what inspect and JAX read, and the declaration with its metadata.
    extra: dict[str, Any] = {"__wrapped__": impl, "jext_wrapper": wrapper}
    # A callable without a signature keeps (*args, **kwargs).
    with contextlib.suppress(TypeError, ValueError):
        extra["__signature__"] = inspect.signature(impl)
    vars(function).update(extra)
    return function
