"""The registrars handed to plugin hooks: each stages what one plugin registers in one hook."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, final

from jext._errors import RegistrationError
from jext.primitives._primitive import Primitive, check_platform
from jext.typing import Platform

if TYPE_CHECKING:
    from jext.random._impl import RngImpl
    from jext.scipy._wrapper import ScipyWrapper

__all__ = [
    "LoweringRegistrar",
    "PendingLowering",
    "PrimitiveRegistrar",
    "RngImplRegistrar",
    "ScipyRegistrar",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PendingLowering:
    """A lowering rule a plugin registered for a primitive, possibly another package's."""

    primitive: str
    rule: Callable[..., Any]
    platform: Platform | None
    raw: bool
    plugin: str


class _Registrar(Generic[T]):
    __slots__ = ("_plugin", "_staged")

    def __init__(self, plugin: str) -> None:
        self._plugin = plugin
        self._staged: list[T] = []

    @property
    def plugin(self) -> str:
        """The name of the plugin this registrar records for."""
        return self._plugin

    def staged(self) -> list[T]:
        return list(self._staged)

    def _refuse(self, what: str) -> RegistrationError:
        return RegistrationError(f"plugin {self._plugin!r} registered {what}")


@final
class PrimitiveRegistrar(_Registrar[Primitive[..., Any]]):
    """Handed to ``jext_register_primitives``: ``registry.add(prim)``."""

    __slots__ = ()

    def add(self, prim: Primitive[..., Any]) -> None:
        """Register ``prim`` (a :class:`jext.Primitive`) as this plugin's."""
        if not isinstance(prim, Primitive):
            raise self._refuse(f"{prim!r} ({type(prim).__name__}), which is not a jext.Primitive")
        self._staged.append(prim)


@final
class LoweringRegistrar(_Registrar[PendingLowering]):
    """Handed to ``jext_register_lowerings``: ``registry.add_lowering(name, rule, platform=)``."""

    __slots__ = ()

    def add_lowering(
        self,
        name: str,
        rule: Callable[..., Any],
        *,
        platform: Platform | None = None,
        raw: bool = False,
    ) -> None:
        """Add ``rule`` as the lowering of primitive ``name`` on ``platform``.

        ``rule`` is as for :meth:`jext.Primitive.def_lowering`; the primitive may belong
        to any plugin, or to none yet (the rule is then listed as unused).
        """
        if not isinstance(name, str):
            raise self._refuse(f"a lowering for {name!r}, which is not a primitive name")
        if not callable(rule):
            raise self._refuse(f"a lowering rule {rule!r} for {name!r} that is not callable")
        check_platform(name, platform)
        self._staged.append(PendingLowering(name, rule, platform, raw, self._plugin))


@final
class RngImplRegistrar(_Registrar["RngImpl"]):
    """Handed to ``jext_register_rng_impls``: ``registry.add(impl)``."""

    __slots__ = ()

    def add(self, impl: RngImpl) -> None:
        """Register ``impl`` (a :class:`jext.random.RngImpl`) under its name."""
        from jext.random._impl import RngImpl  # jext.random imports the registry

        if not isinstance(impl, RngImpl):
            raise self._refuse(
                f"{impl!r} ({type(impl).__name__}), which is not a jext.random.RngImpl"
            )
        self._staged.append(impl)


@final
class ScipyRegistrar(_Registrar["ScipyWrapper"]):
    """Handed to ``jext_register_scipy_wrappers``: ``registry.add(wrapper)``."""

    __slots__ = ()

    def add(self, wrapper: ScipyWrapper) -> None:
        """Register ``wrapper`` (a :class:`jext.scipy.ScipyWrapper`) in its scope."""
        from jext.scipy._wrapper import ScipyWrapper  # jext.scipy imports the registry

        if not isinstance(wrapper, ScipyWrapper):
            raise self._refuse(
                f"{wrapper!r} ({type(wrapper).__name__}), which is not a jext.scipy.ScipyWrapper"
            )
        self._staged.append(wrapper)
