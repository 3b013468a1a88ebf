"""The folder where ``jext check`` keeps what it computed between runs: compiled programs
(JAX's persistent cache) and the values of slow oracles."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from jax.experimental.compilation_cache import compilation_cache

from jext._jax import config_value, set_config

__all__ = ["ENV_CACHE_DIR", "ENV_NO_CACHE", "cached_oracle", "check_cache_in", "default_cache_dir"]

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


def default_cache_dir() -> Path:
    """``$JEXT_CACHE_DIR``, else ``jext`` in the user's cache folder (``$XDG_CACHE_HOME``,
    else ``~/.cache``).

    JAX runs what it reads back from this folder, so it is the user's own, not the current
    directory (which may be shared, such as /tmp).
    """
    given = os.environ.get(ENV_CACHE_DIR)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "jext"


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


def _prepare(folder: Path) -> tuple[Path, Path]:
    """``folder``, made private to the user, with the markers that keep it out of version
    control and backups (as pytest's own cache folder has); this host's subfolders for
    compiled programs and for oracle values (NumPy and SciPy pick code by processor too)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name, text in {
        ".gitignore": "# Created by jext check: compiled programs, safe to delete.\n*\n",
        "CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n# jext check's cache\n",
    }.items():
        marker = folder / name
        if not marker.exists():
            marker.write_text(text)
    tag = _host_tag()
    subfolders = folder / f"xla-{tag}", folder / f"oracle-{tag}"
    for sub in subfolders:
        sub.mkdir(exist_ok=True, mode=0o700)
    return subfolders


@contextlib.contextmanager
def check_cache_in(folder: Path | None) -> Iterator[Path | None]:
    """Keep the programs compiled and the slow oracles' values computed inside the block
    in ``folder`` (``None``: no cache), and read back those an earlier run kept; yields the
    subfolder JAX compiles into.

    JAX's key for a program covers its HLO, the compile options and XLA flags, and the
    versions of jax, jaxlib and the backend, so a plugin changed since, or another JAX,
    compiles afresh (oracle values: see :func:`cached_oracle`).  JAX's settings are
    restored afterwards (``jext check`` runs in other programs' processes too, such as the
    test suite's).
    """
    if folder is None:
        yield None
        return
    host, oracles = _prepare(folder)
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
        set_config("jax_compilation_cache_dir", old_dir)
        set_config("jax_persistent_cache_min_compile_time_secs", old_min)
        compilation_cache.reset_cache()


def cached_oracle(oracle: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``oracle``, answering from the cache folder of the enclosing :func:`check_cache_in`
    block what an earlier run asked it; ``oracle`` itself outside such a block.

    An answer is kept when it is one numeric array that took ``oracle`` at least
    ``_MIN_ORACLE_S`` to give (so SciPy's fast functions are simply called again).  Its key
    covers ``label`` (what ``oracle`` is the oracle of: one factory's oracles share a
    qualified name), ``oracle``'s qualified name, the source files of the package that
    defines it (all of them: its helpers may live in other modules), the versions of
    Python, NumPy, SciPy and mpmath, and the arguments' dtypes, shapes and bytes.  An
    oracle built on another library that changes without its package changing keeps
    stale values: ``--no-cache`` or deleting the folder starts afresh.
    """
    folder = _oracle_folder.path
    if folder is None:
        return oracle

    @functools.wraps(oracle)
    def answer(*args: Any, **kwargs: Any) -> Any:
        key = _oracle_key(oracle, label, args, kwargs)
        if key is None:
            return oracle(*args, **kwargs)
        kept = folder / key[:2] / f"{key}.npy"
        # A file cut short by a run that was killed, or not there: ask the oracle.
        with contextlib.suppress(OSError, ValueError, EOFError):
            return np.load(kept, allow_pickle=False)
        start = time.perf_counter()
        value = oracle(*args, **kwargs)
        if time.perf_counter() - start >= _MIN_ORACLE_S:
            _keep(kept, value)
        return value

    return answer


def _keep(path: Path, value: Any) -> None:
    """Write ``value`` to ``path`` if it is one numeric array, whole or not at all (another
    run may read the folder meanwhile)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biufc":
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True, mode=0o700)
        part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")
        with open(part, "wb") as out:
            np.save(out, value, allow_pickle=False)
        os.replace(part, path)


def _oracle_key(
    oracle: Callable[..., Any], label: str, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> str | None:
    """The key of ``oracle(*args, **kwargs)``'s answer; ``None`` where it cannot have one
    (arguments other than numbers and arrays of numbers, an oracle without source files)."""
    module = getattr(oracle, "__module__", None)
    if not isinstance(module, str):
        return None
    sources = _sources_digest(module.partition(".")[0])
    if sources is None:
        return None
    name = getattr(oracle, "__qualname__", None) or getattr(oracle, "__name__", "")
    digest = hashlib.sha256()
    for part in (label, f"{module}.{name}", sources, _library_versions()):
        digest.update(part.encode() + b"\0")
    for key, option in sorted(kwargs.items()):
        if not isinstance(option, int | float | str | None):
            return None
        digest.update(f"{key}={option!r}\0".encode())
    for arg in args:
        array = np.asarray(arg)
        if array.dtype.kind not in "biufc":
            return None
        digest.update(f"{array.dtype.str}{array.shape}\0".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


@functools.cache
def _sources_digest(top: str) -> str | None:
    """A digest of the Python sources of the top-level package (or module) ``top``: ``""``
    for the oracle libraries (their versions are in the key), ``None`` where there are no
    files to read (an oracle defined at the interactive prompt)."""
    if top in _ORACLE_LIBRARIES:
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
