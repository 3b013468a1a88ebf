"""The registrars handed to plugin hooks: each stages what one plugin registers in one hook."""

from __future__ import annotations

import ctypes
import os
from _ctypes import CFuncPtr
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeVar, final

from jext import _jax
from jext._errors import RegistrationError
from jext.primitives._primitive import Primitive, check_platform
from jext.rng_impls._impl import RngImpl
from jext.typing import Platform

if TYPE_CHECKING:
    from jext.scipy._wrapper import ScipyWrapper

__all__ = [
    "FfiPlatform",
    "FfiTarget",
    "FfiTargetRegistrar",
    "LoweringRegistrar",
    "PendingLowering",
    "PrimitiveRegistrar",
    "RngImplRegistrar",
    "ScipyRegistrar",
]

T = TypeVar("T")

FfiPlatform = Literal["cpu", "cuda", "rocm"]
"""A platform XLA FFI handlers are registered for (TPU kernels come as Pallas, not FFI)."""

_FFI_PLATFORMS: Final = ("cpu", "cuda", "rocm")


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
    """Handed to ``jext_register_primitives``: ``registrar.add(prim)``."""

    __slots__ = ()

    def add(self, prim: Primitive[..., Any]) -> None:
        """Register ``prim`` (a :class:`jext.Primitive`) as this plugin's."""
        if not isinstance(prim, Primitive):
            raise self._refuse(f"{prim!r} ({type(prim).__name__}), which is not a jext.Primitive")
        self._staged.append(prim)


@final
class LoweringRegistrar(_Registrar[PendingLowering]):
    """Handed to ``jext_register_lowerings``: ``registrar.add_lowering(name, rule, platform=)``."""

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
class RngImplRegistrar(_Registrar[RngImpl]):
    """Handed to ``jext_register_rng_impls``: ``registrar.add(impl)``."""

    __slots__ = ()

    def add(self, impl: RngImpl) -> None:
        """Register ``impl`` (a :class:`jext.random.RngImpl`) under its name."""
        if not isinstance(impl, RngImpl):
            raise self._refuse(
                f"{impl!r} ({type(impl).__name__}), which is not a jext.random.RngImpl"
            )
        self._staged.append(impl)


@final
class ScipyRegistrar(_Registrar["ScipyWrapper"]):
    """Handed to ``jext_register_scipy_wrappers``: ``registrar.add(wrapper)``."""

    __slots__ = ()

    def add(self, wrapper: ScipyWrapper) -> None:
        """Register ``wrapper`` (a :class:`jext.scipy.ScipyWrapper`) in its scope."""
        from jext.scipy._wrapper import ScipyWrapper  # noqa: PLC0415 - jext.scipy imports the registry

        if not isinstance(wrapper, ScipyWrapper):
            raise self._refuse(
                f"{wrapper!r} ({type(wrapper).__name__}), which is not a jext.scipy.ScipyWrapper"
            )
        self._staged.append(wrapper)


@dataclass(frozen=True, slots=True)
class FfiTarget:
    """An XLA FFI handler a plugin registered: ``name`` on ``platform``."""

    name: str
    handler: object  # a PyCapsule, or {stage name: PyCapsule}
    platform: FfiPlatform
    batch_partitionable: bool
    plugin: str


def _is_capsule(x: object) -> bool:
    return type(x).__name__ == "PyCapsule"


@final
class FfiTargetRegistrar(_Registrar[FfiTarget]):
    """Handed to ``jext_register_ffi_targets``: ``registrar.add(name, handler, platform=)``."""

    __slots__ = ()

    def load_library(self, path: str | os.PathLike[str]) -> ctypes.CDLL:
        """Load the shared library at ``path`` with ``ctypes``; its symbols are handlers.

        Raises :class:`jext.RegistrationError` naming the library and the OS error, which
        makes this plugin fail in one line while every other plugin loads.
        """
        try:
            return ctypes.CDLL(os.fspath(path))
        except OSError as err:
            detail = " ".join(str(err).split())  # dlerror() text, on one line
            raise RegistrationError(
                f"plugin {self._plugin!r} cannot load FFI library {os.fspath(path)!r}: {detail}"
            ) from None

    def require_ffi_api(self, built: tuple[int, int], *, fallback: str = "") -> None:
        """Refuse this plugin's handlers if XLA cannot load the FFI API they were built for.

        ``built`` is ``(XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR)`` as the plugin's compiled
        code saw them (its extension module can return the two macros).  XLA accepts
        handlers built against an older minor FFI API than the installed jaxlib's, never a
        newer one nor another major one, and jaxlib 0.8 then cannot start its CPU backend,
        which breaks all of JAX in the process.  Called before :meth:`add`, this raises
        :class:`jext.RegistrationError` first (naming the plugin, both versions and the
        fix; ``fallback`` says what the plugin's users get meanwhile), so the plugin fails
        in one line and none of its handlers reaches XLA.  Nothing is refused where the
        installed jaxlib's version cannot be read.
        """
        installed = _jax.installed_ffi_api()
        if installed is None or (built[0] == installed[0] and built[1] <= installed[1]):
            return
        raise RegistrationError(
            f"plugin {self._plugin!r} was built against XLA FFI API {built[0]}.{built[1]}, "
            f"which the installed jaxlib {_jax.JAXLIB_RELEASE} (FFI API "
            f"{installed[0]}.{installed[1]}) cannot load, so none of its FFI handlers is "
            "registered" + (f" ({fallback})" if fallback else "") + "; rebuild it against the "
            "installed jaxlib: pip install --force-reinstall --no-deps --no-build-isolation "
            "<the plugin's source>"
        )

    def add(
        self,
        name: str,
        handler: object,
        *,
        platform: FfiPlatform = "cpu",
        batch_partitionable: bool = False,
    ) -> None:
        """Register ``handler`` as the XLA FFI target ``name`` on ``platform``.

        ``handler`` is a PyCapsule (from a compiled extension module), a ``ctypes``
        function from :meth:`load_library` (e.g. ``lib.MyHandler``), or a mapping of FFI
        stage names (``"instantiate"``, ``"prepare"``, ``"initialize"``, ``"execute"``) to
        either.  ``batch_partitionable=True`` registers the target with
        ``jax.ffi.register_ffi_target_as_batch_partitionable``, which lets XLA split the
        call along leading (batch) axes the call marks as such; declare it only for
        handlers that treat leading axes as independent.

        Nothing reaches XLA until the hook returns: then every target of the hook is
        registered, or, if one is invalid or another plugin owns its name on the
        platform, none is.
        """
        if not isinstance(name, str) or not name:
            raise self._refuse(f"an FFI target named {name!r}; a target name is a non-empty str")
        if platform not in _FFI_PLATFORMS:
            raise self._refuse(
                f"FFI target {name!r} for platform {platform!r}; expected one of "
                f"{list(_FFI_PLATFORMS)}"
            )
        target = FfiTarget(
            name, self._handler(name, handler), platform, batch_partitionable, self._plugin
        )
        self._staged.append(target)

    def _handler(self, name: str, handler: object) -> object:
        """``handler`` as XLA takes it: a PyCapsule, or {stage: PyCapsule}."""

        def one(h: object) -> object:
            if _is_capsule(h):
                return h
            if isinstance(h, CFuncPtr):
                return _jax.ffi_pycapsule(h)
            raise self._refuse(
                f"{h!r} as the handler of FFI target {name!r}; expected a PyCapsule, a ctypes "
                "function from registrar.load_library(...), or a mapping of FFI stages to them"
            )

        if isinstance(handler, Mapping):
            return {str(stage): one(h) for stage, h in handler.items()}
        return one(handler)
