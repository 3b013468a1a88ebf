"""The folder where ``jext check`` keeps compiled programs between runs (JAX's persistent cache)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
from collections.abc import Iterator
from pathlib import Path

from jax.experimental.compilation_cache import compilation_cache

from jext._jax import config_value, set_config

__all__ = ["ENV_CACHE_DIR", "ENV_NO_CACHE", "compilation_cache_in", "default_cache_dir"]

ENV_CACHE_DIR = "JEXT_CACHE_DIR"
"""Where ``jext check`` keeps compiled programs (default: ``$XDG_CACHE_HOME/jext``)."""

ENV_NO_CACHE = "JEXT_NO_CACHE"
"""``1`` compiles everything afresh and writes nothing, as ``jext check --no-cache`` does."""

# Programs that compile faster than this are cheaper to compile again than to read back.
_MIN_COMPILE_S = 0.05


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


def _prepare(folder: Path) -> Path:
    """``folder``, made private to the user, with the markers that keep it out of version
    control and backups (as pytest's own cache folder has); the subfolder of this host."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for name, text in {
        ".gitignore": "# Created by jext check: compiled programs, safe to delete.\n*\n",
        "CACHEDIR.TAG": "Signature: 8a477f597d28d172789f06886806bc55\n# jext check's cache\n",
    }.items():
        marker = folder / name
        if not marker.exists():
            marker.write_text(text)
    host = folder / f"xla-{_host_tag()}"
    host.mkdir(exist_ok=True, mode=0o700)
    return host


@contextlib.contextmanager
def compilation_cache_in(folder: Path | None) -> Iterator[Path | None]:
    """Keep the programs compiled inside the block in ``folder`` (``None``: no cache), and
    read back those an earlier run compiled; yields the folder used.

    JAX's key for a program covers its HLO, the compile options and XLA flags, and the
    versions of jax, jaxlib and the backend, so a plugin changed since, or another JAX,
    compiles afresh.  JAX's settings are restored afterwards (``jext check`` runs in
    other programs' processes too, such as the test suite's).
    """
    if folder is None:
        yield None
        return
    host = _prepare(folder)
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
        set_config("jax_compilation_cache_dir", old_dir)
        set_config("jax_persistent_cache_min_compile_time_secs", old_min)
        compilation_cache.reset_cache()
