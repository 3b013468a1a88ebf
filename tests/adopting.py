"""A pytest plugin that makes every ``jax.custom_jvp`` and ``jax.custom_vjp`` function a jext
primitive at its first call (``jext.primitive(name)(f)``, adoption), so that JAX's own
tests of those functions test jext's primitives instead.

Loaded by ``tests/test_jax_custom_api.py`` in a child pytest (``-p adopting``).  A function
jext refuses to adopt (``nondiff_argnums``, no rules yet, a ``custom_vjp`` with
``symbolic_zeros``) runs as plain JAX, and the test is recorded as refused in the JSON
file named by ``JEXT_ADOPTION_LOG``.  A function whose rules change after a call is
adopted again.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.custom_derivatives
import pytest
from jax._src.api_util import resolve_kwargs

import jext

_names = itertools.count()
_refused: dict[str, str] = {}
_current = ["<collection>"]


def _adopted_call(f: Any, plain: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    rules = (f.fun, *(getattr(f, a, None) for a in ("jvp", "fwd", "bwd", "symbolic_zeros")))
    adopted = f.__dict__.get("_jext_adopted")
    if adopted is None or adopted[0] != rules:
        try:
            adopted = (rules, jext.primitive(f"jax_tests.f{next(_names)}")(f))
        except jext.DefinitionError as err:
            _refused.setdefault(_current[0], str(err))
            return plain(*args, **kwargs)
        f.__dict__["_jext_adopted"] = adopted
    if kwargs:  # a primitive's operands are positional
        args = tuple(resolve_kwargs(f.fun, args, kwargs))
    return adopted[1](*args)


class _CustomJvp(jax.custom_jvp):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _adopted_call(self, super().__call__, args, kwargs)


class _CustomVjp(jax.custom_vjp):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _adopted_call(self, super().__call__, args, kwargs)


_CustomJvp.__name__, _CustomVjp.__name__ = "custom_jvp", "custom_vjp"
for _module in (jax, jax.custom_derivatives):
    _module.custom_jvp = _CustomJvp
    _module.custom_vjp = _CustomVjp


@pytest.fixture(autouse=True)
def _name_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    _current[0] = request.node.name
    yield


def pytest_sessionfinish(session: pytest.Session) -> None:
    log = os.environ.get("JEXT_ADOPTION_LOG")
    if log:
        with open(log, "w") as out:
            json.dump(_refused, out, indent=1, sort_keys=True)
