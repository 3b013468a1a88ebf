"""How a reference implementation's signature splits a call into operands and static params."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jext._errors import DefinitionError, StaticParamError

__all__ = ["RESERVED_PARAM_PREFIX", "OperandSignature", "RuleArity", "rule_arity"]

#: Static params starting with this prefix are jext's own (e.g. the operand tree).
RESERVED_PARAM_PREFIX: Final = "jext_"

_REQUIRED: Final = inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class OperandSignature:
    """The operands (positional-only) and static params (keyword-only) of a primitive."""

    primitive: str
    operand_names: tuple[str, ...]
    operand_defaults: tuple[Any, ...]  # defaults of the trailing optional operands
    variadic: bool  # ``*operands``
    param_defaults: Mapping[str, Any]  # name -> default, or _REQUIRED; declaration order

    @classmethod
    def of(cls, primitive: str, reference: Callable[..., Any]) -> OperandSignature:
        try:
            sig = inspect.signature(reference)
        except (TypeError, ValueError) as err:
            raise DefinitionError(
                f"primitive {primitive!r}: cannot read the signature of {reference!r}: {err}"
            ) from err
        names: list[str] = []
        defaults: list[Any] = []
        variadic = False
        params: dict[str, Any] = {}
        for p in sig.parameters.values():
            if p.kind is p.POSITIONAL_OR_KEYWORD:
                raise DefinitionError(
                    f"primitive {primitive!r}: operand {p.name!r} must be positional-only; "
                    f"add '/' after the operands, as in "
                    f"'def {getattr(reference, '__name__', 'f')}({p.name}, /, *, param): ...'"
                )
            if p.kind is p.POSITIONAL_ONLY:
                names.append(p.name)
                if p.default is not _REQUIRED:
                    defaults.append(p.default)
                elif defaults:  # Python itself forbids this; kept for callables with odd signatures
                    raise DefinitionError(
                        f"primitive {primitive!r}: required operand {p.name!r} follows an "
                        "optional one"
                    )
            elif p.kind is p.VAR_POSITIONAL:
                variadic = True
            elif p.kind is p.KEYWORD_ONLY:
                if p.name.startswith(RESERVED_PARAM_PREFIX):
                    raise DefinitionError(
                        f"primitive {primitive!r}: parameter names starting with "
                        f"{RESERVED_PARAM_PREFIX!r} are reserved for jext ({p.name!r})"
                    )
                params[p.name] = p.default
            else:  # VAR_KEYWORD
                # A static param is part of the equation (and of every cache key) by name,
                # so the set of names is fixed when the primitive is defined.
                raise DefinitionError(
                    f"primitive {primitive!r}: '**{p.name}' is not allowed; declare every "
                    "static param as a keyword-only parameter after '*' (an FFI handler's "
                    "dictionary attributes have fixed keys: one keyword-only param per key, "
                    "which jext.lowering.ffi_rule passes by name), or take an open set of "
                    "options as one static param holding a hashable tuple of (key, value) "
                    f"pairs, e.g. {p.name}=tuple(sorted(options.items())). See docs/native.md"
                )
        return cls(primitive, tuple(names), tuple(defaults), variadic, params)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.param_defaults)

    def operands(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The operand tuple of a call, optional operands filled in; a TypeError if miscounted."""
        n = len(self.operand_names)
        if len(args) == n or (self.variadic and len(args) > n):
            return args
        n_required = n - len(self.operand_defaults)
        if n_required <= len(args) < n:
            return args + self.operand_defaults[len(args) - n_required :]
        if len(args) < n_required:
            missing = ", ".join(repr(m) for m in self.operand_names[len(args) : n_required])
            raise TypeError(f"{self.primitive}() missing operand(s): {missing}")
        raise TypeError(f"{self.primitive}() takes {n} operand(s) but {len(args)} were given")

    def params(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The static params of a call, defaults filled in, in declaration order."""
        if not kwargs and not any(v is _REQUIRED for v in self.param_defaults.values()):
            return dict(self.param_defaults)
        out: dict[str, Any] = {}
        for name, default in self.param_defaults.items():
            value = kwargs.get(name, default)
            if value is _REQUIRED:
                raise TypeError(f"{self.primitive}() missing keyword parameter {name!r}")
            out[name] = value
        if len(kwargs) > len(out) or any(k not in out for k in kwargs):
            unknown = sorted(k for k in kwargs if k not in self.param_defaults)
            raise TypeError(
                f"{self.primitive}() got unexpected keyword parameter(s) {unknown}; "
                f"its static params are {list(self.param_names)}"
            )
        return out

    def check_hashable(self, params: Mapping[str, Any]) -> None:
        """Raise StaticParamError naming the first param whose value is unhashable."""
        for name, value in params.items():
            try:
                hash(value)
            except TypeError:
                raise StaticParamError(
                    f"{self.primitive}(): static parameter {name!r} must be hashable, got "
                    f"{type(value).__name__} {value!r}; pass a tuple instead of a list, or "
                    "make the array an operand"
                ) from None


@dataclass(frozen=True, slots=True)
class RuleArity:
    """Which static params a rule accepts, so that it is called with those alone."""

    accepts_all_params: bool
    param_names: frozenset[str]

    def select(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.accepts_all_params:
            return params
        return {k: v for k, v in params.items() if k in self.param_names}


def rule_arity(
    primitive: str,
    kind: str,
    rule: Callable[..., Any],
    *,
    positional: int | None,
    param_names: tuple[str, ...],
) -> RuleArity:
    """Check at decoration time that ``rule`` can be called the way jext calls it.

    ``positional`` is the number of positional arguments jext passes (None: any number).
    """
    try:
        sig = inspect.signature(rule)
    except (TypeError, ValueError):  # builtins without signatures: trust them
        return RuleArity(True, frozenset())
    pos = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    required = sum(1 for p in pos if p.default is _REQUIRED)
    where = f"{kind} rule {getattr(rule, '__qualname__', rule)!r} of primitive {primitive!r}"
    if positional is not None and (
        required > positional or (len(pos) < positional and not varargs)
    ):
        accepted = f"{required}" if required == len(pos) else f"{required} to {len(pos)}"
        raise DefinitionError(
            f"{where} takes {accepted} positional argument(s) but jext passes {positional}"
        )
    var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    keyword = {p.name: p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
    unknown = [n for n, p in keyword.items() if n not in param_names and p.default is _REQUIRED]
    if unknown:
        raise DefinitionError(
            f"{where} requires keyword parameter(s) {unknown} that are not static params of "
            f"the primitive (those are {list(param_names)})"
        )
    return RuleArity(var_kw, frozenset(keyword) & frozenset(param_names))
