"""The JextError hierarchy: every error jext raises on purpose is one of these."""

from __future__ import annotations

__all__ = [
    "DefinitionError",
    "DuplicateNameError",
    "JextError",
    "LoweringError",
    "PluginError",
    "RegistrationError",
    "RuleError",
    "StaticParamError",
    "TransposeError",
    "UnknownNameError",
]


class JextError(Exception):
    """Base class of the errors jext raises; each message names the primitive and the rule."""


class DefinitionError(JextError, TypeError):
    """A primitive or rule was declared wrongly (caught at decoration time)."""


class StaticParamError(JextError, TypeError):
    """A static (keyword-only) parameter has a value JAX cannot use, e.g. an unhashable one."""


class DuplicateNameError(JextError, ValueError):
    """A name is claimed by two different definitions."""


class RuleError(JextError):
    """A rule returned something of the wrong arity, structure, shape or dtype."""


class TransposeError(JextError, NotImplementedError):
    """A primitive was transposed but has no transpose rule."""


class LoweringError(JextError, NotImplementedError):
    """A primitive was lowered for a platform it has no lowering rule for."""


class RegistrationError(JextError, TypeError):
    """A plugin registered something that is not what the hook takes."""


class PluginError(JextError):
    """With ``JEXT_STRICT=1``: one or more plugins failed to load or register."""


class UnknownNameError(JextError, KeyError):
    """A name was looked up that nothing registered; the message suggests close matches."""

    def __str__(self) -> str:
        # KeyError's str() is the repr of its argument; show the sentence instead.
        return str(self.args[0]) if self.args else ""
