"""The public facades: sorted, complete ``__all__`` lists that hand out the very objects."""

from __future__ import annotations

import importlib
import types

import pytest

import jext
import jext.hookspecs
import jext.lowering
import jext.typing
from jext import _errors
from jext.lowering import _export
from jext.primitives import _example, _markers, _primitive

# jext.primitives() is the registry's function; the subpackage of that name is reached by import.
FACADES = [
    jext,
    importlib.import_module("jext.primitives"),
    jext.lowering,
    jext.typing,
    jext.hookspecs,
]


@pytest.mark.parametrize("module", FACADES, ids=lambda m: m.__name__)
def test_all_is_sorted_and_complete(module: types.ModuleType) -> None:
    assert module.__all__ == sorted(module.__all__)
    # Everything jext itself defines and the module exposes must be listed.
    defined_here = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and str(getattr(value, "__module__", "")).startswith("jext")
    }
    assert defined_here <= set(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name), name


def test_facade_hands_out_the_implementation_objects() -> None:
    assert jext.primitive is _primitive.primitive
    assert jext.Primitive is _primitive.Primitive
    assert jext.LinearOperand is _markers.LinearOperand is jext.typing.LinearOperand
    assert jext.JextError is _errors.JextError
    assert jext.lowering.export is _export.export
    primitives = importlib.import_module("jext.primitives")
    assert primitives.CheckOptions is _example.CheckOptions
    assert jext.Example is primitives.Example is _example.Example


def test_error_hierarchy() -> None:
    for name in [
        "DefinitionError",
        "DuplicateNameError",
        "LoweringError",
        "RuleError",
        "StaticParamError",
        "TransposeError",
        "UnknownNameError",
    ]:
        assert issubclass(getattr(jext, name), jext.JextError)
    assert issubclass(jext.StaticParamError, TypeError)
    assert issubclass(jext.UnknownNameError, KeyError)
    assert str(jext.UnknownNameError("no 'x'; did you mean 'y'?")) == "no 'x'; did you mean 'y'?"
