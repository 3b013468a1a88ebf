"""The folder where ``jext check`` keeps what it computed between runs: compiled programs
(JAX's persistent cache), the values of slow oracles and the outputs of the checks'
programs."""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import importlib.metadata
import io
import os
import platform
import re
import stat
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jax
import numpy as np
from jax import tree_util
from jax.experimental.compilation_cache import compilation_cache
from jax.extend import backend as jax_backend

from jext._jax import JAX_RELEASE, JAXLIB_RELEASE, config_value, set_config

__all__ = [
    "ENV_CACHE_DIR",
    "ENV_NO_CACHE",
    "CacheWarning",
    "cached_oracle",
    "check_cache_in",
    "default_cache_dir",
    "oracle_identity",
    "run_kept",
    "uncached_reason",
]

ENV_CACHE_DIR = "JEXT_CACHE_DIR"
"""Where ``jext check`` keeps compiled programs and oracle values (default:
``$XDG_CACHE_HOME/jext``)."""

ENV_NO_CACHE = "JEXT_NO_CACHE"
"""``1`` compiles everything afresh and writes nothing, as ``jext check --no-cache`` does."""

# Programs that compile faster than this are cheaper to compile again than to read back.
_MIN_COMPILE_S = 0.05
# Oracles that answer faster than this are cheaper to ask again than to read back (SciPy's
# ufuncs answer in microseconds; mpmath at thousands of points takes seconds).
_MIN_ORACLE_S = 0.05
# Programs that compile and run faster than this are cheaper to run again than to read back.
_MIN_RUN_S = 0.05
# Kept program outputs take as much room as the checks' results (hundreds of MB for large
# kernels): when a run ends, the least recently used beyond this many bytes are deleted.
_OUTPUTS_BUDGET = 1 << 30
#: Libraries oracles are built on (distribution names, which are also their import names):
#: every oracle value's key holds their versions; their sources, too many to read on
#: every run, are not read.
_ORACLE_LIBRARIES = ("numpy", "scipy", "mpmath")


class _Folder:
    """The oracle values' folder of the enclosing check_cache_in block (``None``: no
    cache).  One for the process, like JAX's own cache setting: the checks may ask their
    oracles on any thread."""

    path: Path | None = None


_oracle_folder = _Folder()


class CacheWarning(UserWarning):
    """The cache folder is not safe or not usable: the checks run without it."""


class _Unusable(Exception):
    """Why a cache folder is not used (the message completes "not using the cache ...")."""


def default_cache_dir() -> Path:
    """``$JEXT_CACHE_DIR``, else ``jext`` in the user's cache folder (``$XDG_CACHE_HOME``,
    else ``~/.cache``).

    JAX runs what it reads back from this folder, so it is the user's own, not the current
    directory (which may be shared, such as /tmp).  A relative ``$XDG_CACHE_HOME`` is
    ignored, as the XDG Base Directory specification says: it would name a folder under
    whatever the current directory is.
    """
    given = os.environ.get(ENV_CACHE_DIR)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "jext"


def _host_tag() -> str:
    """A short digest of this machine's processor: its features decide what XLA:CPU emits,
    so a folder shared between machines (a CI cache restored on another runner) keeps one
    subfolder per kind of processor instead of executables the other cannot run."""
    features = ""
    with (
        contextlib.suppress(OSError),
        open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info,
    ):
        features = next((ln for ln in info if ln.startswith(("flags", "Features"))), "")
    text = f"{platform.machine()}|{platform.processor()}|{features}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _prepare(folder: Path) -> tuple[Path, Path]:
    """``folder``, made private to the user, with the markers that keep it out of version
    control and backups (as pytest's own cache folder has); this host's subfolders for
    compiled programs and for oracle values (NumPy and SciPy pick code by processor too).

    JAX executes what it reads back from here, so the folder is used only where nobody
    else can have written to it, as ssh treats ``~/.ssh`` (and pip its cache): raises
    :class:`_Unusable` where it or a subfolder is a symbolic link, not a folder, owned by
    another user or writable by others, where a marker is a link, or where nothing can
    be written (read-only, a full disk, a path under a regular file).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:
        pass  # not a folder: said below
    except OSError as exc:
        raise _Unusable(f"cannot create it: {_reason(exc)}") from None
    _check_private(folder, "it")
    for name, text in {
        ".gitignore": "# Created by jext check: compiled programs, safe to delete.\n*\n",
        "CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n# jext check's cache\n",
    }.items():
        _write_new(folder / name, text.encode())
    # Markers already there prove nothing about the space left: one small write does.
    probe = folder / f".probe.{os.getpid()}.{threading.get_ident()}"
    _write_new(probe, b"jext\n")
    with contextlib.suppress(OSError):
        probe.unlink()
    tag = _host_tag()
    subfolders = folder / f"xla-{tag}", folder / f"oracle-{tag}"
    for sub in subfolders:
        try:
            sub.mkdir(exist_ok=True, mode=0o700)
        except FileExistsError:
            pass  # not a folder: said below
        except OSError as exc:
            raise _Unusable(f"cannot create {sub.name}: {_reason(exc)}") from None
        _check_private(sub, sub.name)
    return subfolders


def _check_private(path: Path, called: str) -> None:
    """Raise :class:`_Unusable` unless ``path`` (``called`` so in the message) is a real
    folder that only its owner, the user running this, can write to (group- or
    world-writable ones are refused)."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise _Unusable(f"cannot look at {called}: {_reason(exc)}") from None
    if stat.S_ISLNK(info.st_mode):
        raise _Unusable(f"{called} is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise _Unusable(f"{called} is not a folder")
    if not hasattr(os, "getuid"):
        return  # no POSIX owners and modes (Windows): the folder's ACLs are the user's
    if info.st_uid != os.getuid():
        raise _Unusable(f"{called} is owned by uid {info.st_uid}, not by this user ({os.getuid()})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise _Unusable(
            f"{called} is writable by others (mode {stat.S_IMODE(info.st_mode):04o}; "
            "chmod go-w, or delete it)"
        )


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data`` unless it exists; never through a symbolic link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    except FileExistsError:
        if os.path.islink(path):
            raise _Unusable(f"its {path.name} is a symbolic link") from None
        return
    except OSError as exc:
        raise _Unusable(f"cannot write in it: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink()
        raise _Unusable(f"cannot write in it: {_reason(exc)}") from None


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


@contextlib.contextmanager
def check_cache_in(folder: Path | None) -> Iterator[Path | None]:
    """Keep the programs compiled, the slow oracles' values and the programs' outputs
    (see :func:`run_kept`) computed inside the block in ``folder`` (``None``: no cache),
    and read back those an earlier run kept; yields the subfolder JAX compiles into.

    JAX's key for a program covers its HLO, the compile options and XLA flags, and the
    versions of jax, jaxlib and the backend, so a plugin changed since, or another JAX,
    compiles afresh (oracle values: see :func:`cached_oracle`).  A folder that is not safe
    or not usable (see :func:`_prepare`) gives a :class:`CacheWarning` saying why, and the
    block runs without a cache.  JAX's settings are restored afterwards (``jext check``
    runs in other programs' processes too, such as the test suite's).
    """
    if folder is not None:
        try:
            host, oracles = _prepare(folder)
        except _Unusable as exc:
            warnings.warn(
                f"not using the cache folder {folder}: {exc}; running without it",
                CacheWarning,
                stacklevel=3,
            )
            folder = None
    if folder is None:
        yield None
        return
    old_oracles = _oracle_folder.path
    _oracle_folder.path = oracles
    _sources_digest.cache_clear()  # read the sources afresh on every run
    _library_versions.cache_clear()
    old_dir = config_value("jax_compilation_cache_dir")
    old_min = config_value("jax_persistent_cache_min_compile_time_secs")
    # JAX decides once whether its cache is used, at the first compilation of a process:
    # reset before and after, so that the setting here is the one that holds inside.
    compilation_cache.reset_cache()
    set_config("jax_compilation_cache_dir", str(host))
    set_config("jax_persistent_cache_min_compile_time_secs", _MIN_COMPILE_S)
    try:
        yield host
    finally:
        _oracle_folder.path = old_oracles
        evict_outputs(oracles, _OUTPUTS_BUDGET)
        set_config("jax_compilation_cache_dir", old_dir)
        set_config("jax_persistent_cache_min_compile_time_secs", old_min)
        compilation_cache.reset_cache()


def cached_oracle(oracle: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``oracle``, answering from the cache folder of the enclosing :func:`check_cache_in`
    block what an earlier run asked it; ``oracle`` itself outside such a block.

    An answer is kept when it is one numeric array that took ``oracle`` at least
    ``_MIN_ORACLE_S`` to give (so SciPy's fast functions are simply called again).  Its key
    covers ``label`` (what ``oracle`` is the oracle of: one factory's oracles share a
    qualified name), what ``oracle`` is (see :func:`oracle_identity`: the code it runs,
    wherever it is wrapped, with the source files of each package that code comes from),
    the versions of Python, NumPy, SciPy and mpmath, and the arguments' dtypes, shapes and
    bytes.  An oracle whose code cannot be identified keeps no answer
    (:func:`uncached_reason` says why).  An oracle built on another library that changes
    without its package changing keeps stale values: ``--no-cache`` or deleting the folder
    starts afresh.
    """
    folder = _oracle_folder.path
    if folder is None:
        return oracle
    identity = oracle_identity(oracle)
    if isinstance(identity, _Unknown):
        return oracle

    @functools.wraps(oracle)
    def answer(*args: Any, **kwargs: Any) -> Any:
        key = _oracle_key(identity, label, args, kwargs)
        if key is None:
            return oracle(*args, **kwargs)
        kept = folder / key[:2] / f"{key}.answer"
        value = _read_back(kept, key)
        if value is not None:
            return value
        start = time.perf_counter()
        value = oracle(*args, **kwargs)
        if time.perf_counter() - start >= _MIN_ORACLE_S:
            _keep(kept, key, value)
        return value

    return answer


def uncached_reason(oracle: Callable[..., Any]) -> str | None:
    """Why ``oracle``'s answers are not kept in the cache folder of the enclosing
    :func:`check_cache_in` block; None where they are, or where there is no such folder."""
    if _oracle_folder.path is None:
        return None
    identity = oracle_identity(oracle)
    if isinstance(identity, _Unknown):
        return f"its answers are not kept between runs: {identity.why}"
    return None


# --- what an oracle is ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Unknown:
    """Why something an oracle is made of cannot be identified."""

    why: str


# Objects nested deeper than this are not identified (a chain of wrappers that deep is
# taken for a cycle the walk does not see).
_MAX_DEPTH: Final = 24


def oracle_identity(oracle: Callable[..., Any]) -> str | _Unknown:
    """A digest of what ``oracle`` is, stable between runs; or why it cannot be identified.

    Wrappers are looked through: a ``functools.partial`` is its function and its bound
    arguments, an ``np.vectorize`` its ``pyfunc`` and options, a ``functools.wraps``
    wrapper its own code and ``__wrapped__``'s, a bound method its function and its object,
    an instance with ``__call__`` its class and its attributes, a ufunc its module and
    name.  A Python function is its module, qualified name and code, the source files of
    its package (see :func:`_sources_digest`), and the callables it closes over or takes as
    defaults (its other closure values come from that source).  Unknown: a bound
    argument that is not numbers, strings, arrays of numbers, containers of them or
    callables; a function without source files (defined at the interactive prompt); a
    ufunc made by ``np.frompyfunc``.
    """
    parts = _Walk().identify(oracle, 0)
    if isinstance(parts, _Unknown):
        return parts
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


class _Walk:
    """One identification: the objects on the path being walked, to stop at a cycle."""

    def __init__(self) -> None:
        self._open: set[int] = set()

    def identify(self, fn: Any, depth: int) -> list[str] | _Unknown:
        if depth > _MAX_DEPTH:
            return _Unknown(f"{_name(fn)} is wrapped more than {_MAX_DEPTH} levels deep")
        if id(fn) in self._open:
            return ["<cycle>"]
        self._open.add(id(fn))
        try:
            return self._identify(fn, depth + 1)
        finally:
            self._open.discard(id(fn))

    def _identify(self, fn: Any, depth: int) -> list[str] | _Unknown:
        if isinstance(fn, functools.partial):
            bound = [*fn.args, *sorted(fn.keywords.items())]
            return self._join("partial", self.identify(fn.func, depth), self.value(bound, depth))
        if isinstance(fn, np.vectorize):
            options = (fn.otypes, sorted(map(str, fn.excluded)), fn.signature, fn.cache)
            return self._join("vectorize", repr(options), self.identify(fn.pyfunc, depth))
        if isinstance(fn, np.ufunc):
            return _ufunc(fn)
        if isinstance(fn, types.MethodType):
            return self._join(
                "method", self.identify(fn.__func__, depth), self.state(fn.__self__, depth)
            )
        if isinstance(fn, types.BuiltinMethodType) and not isinstance(
            fn.__self__, types.ModuleType | None
        ):  # a method of an object implemented in C (np.add.reduce)
            return self._join(f"builtin method {fn.__name__}", self.value(fn.__self__, depth))
        if isinstance(fn, types.FunctionType | types.BuiltinFunctionType):
            parts = self._join("function", _code(fn), self._captured(fn, depth))
        elif isinstance(fn, type):
            parts = self._join("class", _code(fn))
        elif callable(fn):  # an instance with __call__: its class's code and its state
            parts = self._join("instance", self._attributes(fn, depth))
        else:
            return _Unknown(f"{_name(fn)} is not callable")
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None and not isinstance(parts, _Unknown):
            return self._join(parts, "wraps", self.identify(wrapped, depth))
        return parts

    def _captured(self, fn: Any, depth: int) -> list[str] | _Unknown:
        """The callables a Python function closes over or takes as defaults."""
        cells = [c.cell_contents for c in getattr(fn, "__closure__", None) or () if _full(c)]
        defaults = [*(getattr(fn, "__defaults__", None) or ())]
        defaults += list((getattr(fn, "__kwdefaults__", None) or {}).values())
        found: list[str] = []
        for value in (*cells, *defaults):
            if callable(value) and not isinstance(value, type):
                got = self.identify(value, depth)
                if isinstance(got, _Unknown):
                    return got
                found += got
        return found

    def state(self, obj: Any, depth: int) -> list[str] | _Unknown:
        """An object's class and attributes.  Of an object of an oracle library (NumPy,
        SciPy, mpmath, whose versions are in the key) the attributes that cannot be keyed
        are library internals (random states, caches) and are left out."""
        if id(obj) in self._open:
            return ["<cycle>"]
        self._open.add(id(obj))
        try:
            return self._attributes(obj, depth)
        finally:
            self._open.discard(id(obj))

    def _attributes(self, obj: Any, depth: int) -> list[str] | _Unknown:
        own = _code(type(obj))
        if isinstance(own, _Unknown):
            return own
        attributes = dict(getattr(obj, "__dict__", {}))
        for slot in getattr(type(obj), "__slots__", ()):
            if isinstance(slot, str) and hasattr(obj, slot):
                attributes[slot] = getattr(obj, slot)
        library = _top(type(obj).__module__) in _ORACLE_LIBRARIES
        found = list(own)
        for name, value in sorted(attributes.items()):
            got = self.value(value, depth + 1)
            if isinstance(got, _Unknown):
                if library:
                    continue
                return _Unknown(f"attribute {name!r} of {_name(obj)}: {got.why}")
            found += [name, *got]
        return found

    def value(self, value: Any, depth: int) -> list[str] | _Unknown:
        """A bound value: by type and value; containers item by item; callables by what
        they are."""
        if depth > _MAX_DEPTH:
            return _Unknown(f"a value nested more than {_MAX_DEPTH} levels deep")
        if value is None or isinstance(value, bool | int | float | complex | str | bytes):
            return [f"{type(value).__name__}:{value!r}"]
        if isinstance(value, np.ndarray | np.generic):
            array = np.asarray(value)
            if array.dtype.kind not in "biufc":
                return _Unknown(f"an array of dtype {array.dtype}")
            data = hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()
            return [f"{type(value).__name__}:{array.dtype.str}{array.shape}:{data}"]
        if isinstance(value, enum.Enum):
            return self._join("enum", _code(type(value)), value.name)
        if isinstance(value, tuple | list | frozenset | set | dict):
            items = list(value.items()) if isinstance(value, dict) else list(value)
            keyed: list[list[str]] = []
            for item in items:
                got = self.value(item, depth + 1)
                if isinstance(got, _Unknown):
                    return got
                keyed.append(got)
            if not isinstance(value, tuple | list):  # no order of their own: by their keys
                keyed.sort(key="\0".join)
            return [f"{type(value).__name__}({len(value)})", *(k for got in keyed for k in got)]
        if isinstance(value, type):
            return self._join("class", _code(value))
        if isinstance(value, types.ModuleType):
            return self._join("module", _code(value))
        if callable(value):
            return self.identify(value, depth)
        return _Unknown(f"{_name(value)} ({type(value).__name__}) cannot be keyed")

    @staticmethod
    def _join(*parts: str | list[str] | _Unknown) -> list[str] | _Unknown:
        joined: list[str] = []
        for part in parts:
            if isinstance(part, _Unknown):
                return part
            joined += [part] if isinstance(part, str) else part
        return joined


def _full(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _name(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return repr(name) if isinstance(name, str) else f"a {type(obj).__name__}"


def _top(module: str) -> str:
    return module.partition(".")[0]


def _code(obj: Any) -> list[str] | _Unknown:
    """Where ``obj`` (a function, class or module) is defined: its module and qualified
    name, its package's sources, and, for a Python function, its code."""
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", None)
    if isinstance(obj, types.FunctionType):  # functools.wraps copies the wrapped's __module__
        module = obj.__globals__.get("__name__", module)
    if not isinstance(module, str):
        return _Unknown(f"{_name(obj)} names no module")
    sources = _sources_digest(_top(module))
    if sources is None:
        return _Unknown(f"{_name(obj)} is defined in {module}, which has no source files")
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", "")
    parts = [f"{module}.{name}", sources]
    code = getattr(obj, "__code__", None)
    if isinstance(code, types.CodeType):
        parts.append(_code_digest(code))  # two lambdas of one line differ here
    return parts


def _code_digest(code: types.CodeType) -> str:
    digest = hashlib.sha256(code.co_code)
    for const in code.co_consts:
        text = _code_digest(const) if isinstance(const, types.CodeType) else repr(const)
        digest.update(text.encode() + b"\0")
    digest.update(repr((code.co_names, code.co_varnames)).encode())
    return digest.hexdigest()


def _ufunc(fn: np.ufunc) -> list[str] | _Unknown:
    """A ufunc by its module and name: NumPy's name their module; SciPy's do not, and are
    found in ``scipy.special``; others (``np.frompyfunc``'s) are unknown."""
    module = getattr(fn, "__module__", None)
    if not isinstance(module, str):
        special = sys.modules.get("scipy.special")
        module = "scipy.special" if getattr(special, fn.__name__, None) is fn else None
    if module is None:
        return _Unknown(f"ufunc {fn.__name__!r} names no module (made by np.frompyfunc?)")
    sources = _sources_digest(_top(module))
    if sources is None:
        return _Unknown(f"ufunc {fn.__name__!r} is defined in {module}, which has no source files")
    return [f"ufunc {module}.{fn.__name__}", sources]


def _digest(key: str, payload: bytes | memoryview) -> bytes:
    digest = hashlib.sha256(key.encode() + b"\0")
    digest.update(payload)  # the payload is not copied (it may be hundreds of MB)
    return digest.digest()


def _read_back(path: Path, key: str) -> np.ndarray | None:
    """The answer kept at ``path`` for ``key``; None where there is none to trust (see
    :func:`_read_payload`)."""
    payload = _read_payload(path, key)
    if payload is None:
        return None
    try:
        value: np.ndarray = np.load(io.BytesIO(payload), allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return None
    return value


def _read_payload(path: Path, key: str) -> bytes | None:
    """The payload kept at ``path`` for ``key``; None where there is none to trust.

    A kept file is the SHA-256 of its key and payload, then the payload (a ``.npy`` array,
    or a ``.npz`` of a program's outputs).  A file cut short by a run that was killed,
    changed on disk, or written for another key fails the digest and is computed again;
    so is one behind a symbolic link.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        with os.fdopen(fd, "rb") as src:
            data = src.read()
    except OSError:
        return None
    digest, payload = data[:32], data[32:]
    if digest != _digest(key, payload):
        return None
    return payload


def _keep(path: Path, key: str, value: Any) -> None:
    """Write ``value`` to ``path`` with its digest (see :func:`_read_payload`) if it is one
    numeric array."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biufc":
        return
    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=False)
    _keep_payload(path, key, buffer.getvalue())


def _keep_payload(path: Path, key: str, payload: bytes | memoryview) -> None:
    """Write ``payload`` to ``path`` with its digest, whole or not at all (another run may
    read the folder meanwhile); a write that fails (a full disk) leaves nothing behind."""
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
    try:
        path.parent.mkdir(exist_ok=True, mode=0o700)
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(_digest(key, payload))
            out.write(payload)
        os.replace(part, path)
    except OSError:
        with contextlib.suppress(OSError):
            part.unlink()


# --- the outputs of the checks' programs ----------------------------------------------------

#: Custom-call targets that are XLA's own pure operations (sharding annotations); any other
#: target is code the program text does not show (an FFI handler, a host callback).
_PURE_TARGETS: Final = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})
_CUSTOM_CALL = re.compile(r"custom_call\s*@([\w.$-]+)|call_target_name\s*=\s*\"([^\"]*)\"")
# Tokens order effects (I/O, callbacks); ``stablehlo.rng`` draws from XLA's own state
# (``rng_bit_generator`` takes its state as an operand and is a function of it).
_IMPURE = re.compile(r"stablehlo\.token|!stablehlo\.token|\bstablehlo\.rng\b(?!_bit_generator)")


_MAIN = re.compile(r"func\.func public @main\(.*")
_ARG = re.compile(r"%arg\d+:")


def run_kept(fn: Callable[..., Any], args: Sequence[Any], options: Mapping[str, Any] | None) -> Any:
    """``jax.jit(fn)(*args)``, compiled with XLA ``options`` where given; inside a
    :func:`check_cache_in` block with a folder, its outputs are read back where an earlier
    run kept them for the same program and the same inputs (nothing is compiled or run).

    A deterministic program run on byte-identical inputs gives byte-identical outputs, so
    the key is what decides them (see :func:`_program_key`): the program's StableHLO text,
    the compile options, ``XLA_FLAGS``, the versions of jax, jaxlib and the backend, this
    machine's processor and its number of CPUs, and the inputs' dtypes, shapes and bytes.
    Outputs are kept only for programs whose text is the whole of what they compute
    (:func:`unkept_program_reason`: no custom calls other than XLA's sharding annotations,
    so no FFI handler and no host callback; no tokens, so no effects; no ``rng`` from XLA's
    own state; no operands besides the inputs), whose outputs are numeric arrays, and which
    took at least ``_MIN_RUN_S`` to compile and run.  What the outputs are compared with,
    and at which tolerance, is decided afresh on every run by the caller.
    """
    folder = _oracle_folder.path
    if folder is None:
        if options is None:
            return jax.jit(fn)(*args)
        return jax.jit(fn).lower(*args).compile(dict(options))(*args)
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    key = _program_key(lowered, options, args)
    if key is None:
        return _run(lowered, options, args)
    kept = folder / key[:2] / f"{key}.outputs"
    outputs = _read_outputs(kept, key, lowered.out_tree)
    if outputs is not None:
        with contextlib.suppress(OSError):
            os.utime(kept)  # used now: the last to go (see evict_outputs)
        return outputs
    value = _run(lowered, options, args)
    if time.perf_counter() - start >= _MIN_RUN_S:
        _keep_outputs(kept, key, value)
    return value


def _run(lowered: Any, options: Mapping[str, Any] | None, args: Sequence[Any]) -> Any:
    """``lowered`` compiled (with ``options``) and run on ``args``."""
    compiled = lowered.compile(None if options is None else dict(options))
    return compiled(*args)


def unkept_program_reason(text: str) -> str | None:
    """Why the outputs of the program whose StableHLO is ``text`` are never kept between
    runs; None where they may be."""
    for found in _CUSTOM_CALL.finditer(text):
        target = found.group(1) or found.group(2)
        if target not in _PURE_TARGETS:
            return f"it calls {target!r}, code its text does not show"
    if _IMPURE.search(text):
        return "it has effects or draws from XLA's random state"
    return None


def _program_key(
    lowered: Any, options: Mapping[str, Any] | None, args: Sequence[Any]
) -> str | None:
    """The key of ``lowered``'s outputs on ``args``; None where they are not kept (see
    :func:`run_kept`)."""
    text = lowered.as_text()
    if unkept_program_reason(text) is not None:
        return None
    main = _MAIN.search(text)
    if main is None or len(_ARG.findall(main.group())) > lowered.in_tree.num_leaves:
        return None  # operands besides the inputs (constants JAX passes as arguments)
    digest = hashlib.sha256()
    options_text = repr(sorted((k, type(v).__name__, repr(v)) for k, v in (options or {}).items()))
    for part in (
        "jext program outputs 1",
        _platform_versions(),
        os.environ.get("XLA_FLAGS", ""),
        options_text,
        str(lowered.in_tree),
        str(lowered.out_tree),
        text,
    ):
        digest.update(part.encode() + b"\0")
    if not _digest_arrays(digest, tree_util.tree_leaves(args)):
        return None
    return digest.hexdigest()


@functools.cache
def _platform_versions() -> str:
    """What runs a compiled program besides its text: jax, jaxlib and the default backend's
    versions, this machine's processor (see :func:`_host_tag`) and CPU count (XLA:CPU splits
    some operations over its threads)."""
    backend = jax_backend.get_backend()
    return (
        f"jax {JAX_RELEASE}, jaxlib {JAXLIB_RELEASE}, {backend.platform} "
        f"{backend.platform_version}, {_host_tag()}, {os.cpu_count()} CPUs"
    )


def _read_outputs(path: Path, key: str, tree: Any) -> Any:
    """The outputs kept at ``path`` for ``key``, as the pytree ``tree``; None where there
    are none to trust."""
    payload = _read_payload(path, key)
    if payload is None:
        return None
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as kept:
            leaves = [kept[f"arr_{i}"] for i in range(len(kept.files))]
    except (OSError, ValueError, EOFError, KeyError):
        return None
    if len(leaves) != tree.num_leaves:
        return None
    return tree_util.tree_unflatten(tree, [jax.device_put(x) for x in leaves])


def evict_outputs(folder: Path, budget: int) -> None:
    """Delete the programs' outputs kept in ``folder`` beyond ``budget`` bytes, least
    recently used (kept or read back) first.  Another run may be using the folder: a file
    it deletes or writes meanwhile is skipped, and an output deleted under a run is only
    computed again by it."""
    found: list[tuple[float, int, Path]] = []
    for path in folder.glob("*/*.outputs"):
        with contextlib.suppress(OSError):
            info = path.lstat()
            found.append((info.st_mtime, info.st_size, path))
    total = sum(size for _, size, _ in found)
    for _, size, path in sorted(found):
        if total <= budget:
            break
        with contextlib.suppress(OSError):
            path.unlink()
        total -= size


def _keep_outputs(path: Path, key: str, value: Any) -> None:
    """Write a program's outputs ``value`` to ``path`` if they are all numeric arrays."""
    leaves = [np.asarray(x) for x in tree_util.tree_leaves(value)]
    if any(x.dtype.kind not in "biufc" for x in leaves):
        return
    buffer = io.BytesIO()
    np.savez(buffer, *leaves)  # arr_0, arr_1, ...
    _keep_payload(path, key, buffer.getbuffer())


def _oracle_key(
    identity: str, label: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> str | None:
    """The key of the answer of the oracle ``identity`` names (see :func:`oracle_identity`)
    to ``(*args, **kwargs)``; ``None`` where it cannot have one (arguments other than
    numbers and arrays of numbers)."""
    digest = hashlib.sha256()
    for part in (label, identity, _library_versions()):
        digest.update(part.encode() + b"\0")
    for key, option in sorted(kwargs.items()):
        if not isinstance(option, int | float | str | None):
            return None
        digest.update(f"{key}={type(option).__name__}:{option!r}\0".encode())
    if not _digest_arrays(digest, args):
        return None
    return digest.hexdigest()


def _digest_arrays(digest: Any, values: Sequence[Any]) -> bool:
    """Add each value's dtype, shape and bytes to ``digest``; False where one is not a
    numeric array (a typed PRNG key, an object) and so has no key."""
    for value in values:
        try:
            array = np.asarray(value)
        except Exception:  # a typed PRNG key or another array without plain bytes
            return False
        if array.dtype.kind not in "biufc":
            return False
        digest.update(f"{array.dtype.str}{array.shape}\0".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return True


@functools.cache
def _sources_digest(top: str) -> str | None:
    """A digest of the Python sources of the top-level package (or module) ``top``: ``""``
    for the oracle libraries and Python's own modules (their versions are in the key),
    ``None`` where there are no files to read (an oracle defined at the interactive
    prompt)."""
    if top in _ORACLE_LIBRARIES or top in sys.stdlib_module_names or top == "builtins":
        return ""
    module = sys.modules.get(top)
    folders = getattr(module, "__path__", None)
    file = getattr(module, "__file__", None)
    if folders is not None:
        files = sorted(p for folder in folders for p in Path(folder).rglob("*.py"))
    elif isinstance(file, str):
        files = [Path(file)]
    else:
        return None
    digest = hashlib.sha256()
    try:
        for path in files:
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return None
    return digest.hexdigest()


@functools.cache
def _library_versions() -> str:
    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "-"

    libraries = ", ".join(f"{dist} {version(dist)}" for dist in _ORACLE_LIBRARIES)
    return f"Python {platform.python_version()}, {libraries}"
