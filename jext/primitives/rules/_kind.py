"""The record of one rule kind, and what its declaration is given to work with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jext._errors import DefinitionError
from jext.primitives._core import Core
from jext.primitives._rules import Derivative, Rule, Rules
from jext.primitives._signature import OperandSignature, rule_arity

__all__ = ["Declaring", "Derivative", "RuleKind"]


@dataclass(frozen=True, slots=True)
class Declaring:
    """What a ``def_*`` declaration sees: the primitive's name, operands and rules so far."""

    name: str
    signature: OperandSignature
    rules: Rules

    @property
    def n(self) -> int | None:
        """The number of operands, None where it varies (``*operands``, defaults)."""
        sig = self.signature
        return None if sig.variadic or sig.operand_defaults else len(sig.operand_names)

    def rule(self, kind: str, fn: Callable[..., Any], positional: int | None) -> Rule:
        """``fn`` as a rule taking ``positional`` arguments and the static params it names;
        DefinitionError where it cannot."""
        if not callable(fn):
            raise DefinitionError(
                f"{kind} rule of primitive {self.name!r} must be callable, got {fn!r}"
            )
        arity = rule_arity(
            self.name, kind, fn, positional=positional, param_names=self.signature.param_names
        )
        return Rule(fn, arity)

    def operand_indices(self, operands: Sequence[int | str], declaration: str) -> tuple[int, ...]:
        """The operands named by index or name, sorted; DefinitionError for another."""
        names = self.signature.operand_names
        variadic = self.signature.variadic
        indices = []
        for operand in operands:
            if isinstance(operand, str) and operand in names and not variadic:
                indices.append(names.index(operand))
            elif (
                isinstance(operand, int)
                and not isinstance(operand, bool)
                and operand >= 0
                and (variadic or operand < len(names))
            ):
                indices.append(operand)
            else:
                raise DefinitionError(
                    f"primitive {self.name!r}: {declaration} takes operands by index "
                    f"or name; {operand!r} is neither (operands: {', '.join(names) or 'none'}"
                    f"{', variadic' if variadic else ''})"
                )
        return tuple(sorted(set(indices)))


@dataclass(frozen=True, slots=True)
class RuleKind:
    """One kind of rule a primitive declares: a row of :data:`jext.primitives.rules.KINDS`.

    - ``name``: the kind, as a frozen primitive's refusal names it (``def_<name>``);
    - ``declaration``: the ``Primitive`` method that declares it;
    - ``fields``: the fields the kind keeps in the rules record (``Rules.values``, by
      name), which its declaration sets;
    - ``declare(declaring, *args, **kwargs) -> changes``: validates what the author gave
      (raising :class:`jext.DefinitionError`) and returns the new values of ``fields``;
    - ``register(core, freeze)``: installs the JAX rule this kind backs on the primitive
      when it is made (``freeze`` freezes the rules: a first bind); None for a kind that
      composes through another's JAX rule, as ``composes`` says;
    - ``at_freeze(core)``: what the kind installs when the rules freeze (lowerings);
    - ``twin(made, rules)``: declares the kind's rule of ``rules`` on ``made``, the closure
      twin (``_closure.py``), adapted to its operands (the hidden values first);
    - ``composes``: how the kind enters the primitive's JAX rules, in words;
    - ``checks``: the ``jext check`` checks that hold a rule of this kind to the reference;
    - ``source(rules)``: where the kind's rule comes from (``Primitive.rule_sources()``:
      ``"default"``, ``"custom"``, ``"none"``, ...); None for a kind listed under another;
    - ``derived``: the sources that mean the author declared no rule of this kind (not one
      of ``Rules.custom_kinds()``);
    - ``derivative``: for a derivative rule kind, its place in each differentiation mode's
      preference and the JVP it gives (``Derivative``).
    """

    name: str
    declaration: str
    fields: tuple[str, ...]
    declare: Callable[..., dict[str, Any]]
    composes: str
    checks: tuple[str, ...] = ()
    register: Callable[[Core, Callable[[], None]], None] | None = None
    at_freeze: Callable[[Core], None] | None = None
    twin: Callable[[Any, Rules], None] | None = None
    source: Callable[[Rules], str] | None = None
    derived: frozenset[str] = frozenset({"default"})
    derivative: Derivative | None = None
