"""The JextError hierarchy: every error jext raises on purpose is one of these."""

from __future__ import annotations

from jax.errors import UnexpectedTracerError

__all__ = [
    "DefinitionError",
    "DuplicateNameError",
    "JextError",
    "LoweringError",
    "PluginError",
    "RegistrationError",
    "RuleError",
    "RuleNotImplementedError",
    "RuleTracerError",
    "RuleTypeError",
    "RuleValueError",
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
    """A rule returned something of the wrong arity, structure, shape or dtype.

    Where JAX's own construct with the same rule (``custom_jvp``, ``custom_vjp``,
    ``custom_vmap``) raises an error of its own, jext raises a subclass that is that error
    too, so code catching JAX's error keeps working: :class:`RuleTypeError`,
    :class:`RuleValueError`, :class:`RuleTracerError`, :class:`RuleNotImplementedError`.
    """


class RuleTypeError(RuleError, TypeError):
    """A :class:`RuleError` where JAX raises ``TypeError``: a JVP or VJP rule's result of
    the wrong structure, shape or dtype, forward mode of a primitive with only a VJP rule."""


class RuleValueError(RuleError, ValueError):
    """A :class:`RuleError` where JAX raises ``ValueError``: a ``bwd`` cotangent of the
    wrong shape, a batching rule's result or out_dims of the wrong structure or shape."""


class RuleTracerError(RuleError, UnexpectedTracerError):
    """A :class:`RuleError` where JAX raises ``UnexpectedTracerError``: a custom rule that
    would need the tangent or batch axis of a value it closes over."""

    def __init__(self, message: str) -> None:
        # Not JAX's constructor: it appends a link to JAX's page named after this class.
        TypeError.__init__(self, message)


class RuleNotImplementedError(RuleError, NotImplementedError):
    """A :class:`RuleError` where JAX raises ``NotImplementedError``: differentiating a
    primitive declared without a derivative (JAX: a primitive with no JVP rule)."""


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
