"""The fault catalogue of the ``jext`` command: what a user, the shell or the machine can do
wrong, and what each command does then.

Every such failure ends in one line on stderr naming its cause and an exit code apart from
"a check failed" (1): 2 bad usage or input, 3 the environment, 141 a closed standard
output (quietly).  A cache folder that is not safe or not usable is never a failure: one
warning line, and the checks run without it.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jext._cli import (
    EXIT_BROKEN_PIPE,
    EXIT_ENVIRONMENT,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    main,
)

#: One quick run of each command (``check``: one cheap check of one primitive).
COMMANDS: dict[str, list[str]] = {
    "list": ["list"],
    "list --json": ["list", "--json"],
    "check": ["check", "example.softplus", "--checks", "abstract_eval", "-q"],
    "check --json": ["check", "example.softplus", "--checks", "abstract_eval", "-q", "--json"],
    "stubgen --check": ["stubgen", "--check", "--out", "stubs"],
}

#: Bad usage or input of each command: exit 2 and one line naming the cause.
BAD_INPUT: dict[str, tuple[list[str], str]] = {
    "list: an unknown option": (["list", "--jsn"], "unrecognized arguments: --jsn"),
    "check: an unknown name": (["check", "example.nope", "-q"], "nothing registered is named"),
    "check: an empty --platforms": (["check", "--platforms", ""], "an empty list selects nothing"),
    "check: an empty --checks": (["check", "--checks", ","], "an empty list selects nothing"),
    "check: an unknown platform": (["check", "--platforms", "cpux"], "unknown platform 'cpux'"),
    "stubgen: an unknown plugin": (["stubgen", "--plugin", "nope"], "no plugin is named 'nope'"),
}


class _Failing(io.StringIO):
    """A standard output whose writes fail as ``error`` says."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error

    def flush(self) -> None:
        raise self.error


def _run(args: list[str], out: io.StringIO, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args, out=out)
    return code, capsys.readouterr().err


def _one_line(err: str, start: str) -> None:
    """``err`` is one line starting with ``start``, no traceback."""
    assert "Traceback" not in err, err
    assert err.startswith(start) and err.count("\n") == 1, err


# --- every command -----------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_a_closed_pipe_ends_quietly(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[1])  # stubs/ of the repository
    code, err = _run(COMMANDS[command], _Failing(BrokenPipeError(errno.EPIPE, "x")), capsys)
    assert (code, err) == (EXIT_BROKEN_PIPE, "")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_output_is_one_line_and_exit_3(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[1])
    full = OSError(errno.ENOSPC, "No space left on device")
    code, err = _run(COMMANDS[command], _Failing(full), capsys)
    assert code == EXIT_ENVIRONMENT
    name = " ".join(COMMANDS[command][:1])
    _one_line(err, f"jext {name}: No space left on device (writing standard output)")


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    args, cause = BAD_INPUT[case]
    code, err = _run(args, io.StringIO(), capsys)
    assert code == EXIT_USAGE
    assert "Traceback" not in err and cause in err.splitlines()[-1], err


def test_an_impossible_stubgen_output_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    code, err = _run(["stubgen", "--out", str(tmp_path / "file" / "x")], io.StringIO(), capsys)
    assert code == EXIT_ENVIRONMENT
    _one_line(err, "jext stubgen: cannot write the stubs: Not a directory")


def test_a_cut_short_stub_pyproject_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.jext-stubs]\nmade-from = { "jext" = ')
    code, err = _run(["stubgen", "--check", "--out", str(tmp_path)], io.StringIO(), capsys)
    assert code == EXIT_USAGE
    _one_line(err, f"jext stubgen: {tmp_path / 'pyproject.toml'} is not valid TOML")


def test_a_failed_check_is_exit_1_and_distinct(capsys: pytest.CaptureFixture[str]) -> None:
    """The one code that means "no": here, stubs that are out of date."""
    code, _ = _run(["stubgen", "--check", "--out", "/nonexistent"], io.StringIO(), capsys)
    assert code == EXIT_FAILED
    assert len({EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_ENVIRONMENT, EXIT_BROKEN_PIPE}) == 5


def _jext(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "jext", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.parametrize("command", ["list --json", "check"])
def test_a_pipe_the_reader_closed_ends_quietly_in_a_real_process(command: str) -> None:
    """``jext list --json | head -1``: no BrokenPipeError traceback, none at exit either
    (Python flushes standard output once more as it exits)."""
    with _jext(*COMMANDS[command]) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # the reader is gone before the first write
        err = process.stderr.read().decode()
        assert process.wait(timeout=300) == EXIT_BROKEN_PIPE, err
    # Nothing of jext's or Python's (JAX may have its own say on some machines).
    for noise in ("jext", "Traceback", "BrokenPipe", "Broken pipe", "Exception ignored"):
        assert noise not in err, err


# --- the cache folder ----------------------------------------------------------------------------


def _check_with_cache(
    folder: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    args = [*COMMANDS["check"], "--cache-dir", str(folder), *extra]
    return _run(args, io.StringIO(), capsys)


def _runs_without(folder: Path, cause: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _check_with_cache(folder, capsys)
    assert code == EXIT_OK
    _one_line(err, f"jext check: warning: not using the cache folder {folder}: {cause}")
    assert err.rstrip().endswith("; running without it")


def test_a_cache_folder_others_can_write_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    folder.chmod(0o777)
    _runs_without(folder, "it is writable by others (mode 0777", capsys)


def test_a_cache_folder_of_another_user(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    if os.getuid() == 0:
        os.chown(folder, 65534, 65534)  # nobody
    else:
        monkeypatch.setattr(os, "getuid", lambda: os.stat(folder).st_uid + 1)
    _runs_without(folder, "it is owned by uid", capsys)


def test_a_linked_cache_folder_or_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    _runs_without(tmp_path / "link", "it is a symbolic link", capsys)
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    (folder / "CACHEDIR.TAG").symlink_to(tmp_path / "planted")
    _runs_without(folder, "its CACHEDIR.TAG is a symbolic link", capsys)
    assert not (tmp_path / "planted").exists()


def test_a_cache_folder_under_a_regular_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("")
    _runs_without(tmp_path / "file" / "cache", "cannot create it: Not a directory", capsys)


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """``folder`` read-only, even to root (the immutable attribute), or skip."""
    if os.getuid() != 0:
        folder.chmod(0o500)
        try:
            yield
        finally:
            folder.chmod(0o700)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], check=False).returncode:
        pytest.skip("root, and no immutable attribute to make a folder read-only")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def test_a_read_only_cache_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    with _read_only(folder):
        _runs_without(folder, "cannot write in it", capsys)


def test_a_corrupted_cache_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every kept file garbled (compiled programs included): the same report, no traceback."""
    folder = tmp_path / "cache"
    assert _check_with_cache(folder, capsys, "--checks", "jit,lowering")[0] == EXIT_OK
    kept = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
    for path in kept:
        data = bytearray(path.read_bytes())
        data[len(data) // 2 :] = bytes(len(data) - len(data) // 2)
        path.write_bytes(bytes(data))
    code, err = _check_with_cache(folder, capsys, "--checks", "jit,lowering")
    assert code == EXIT_OK and "Traceback" not in err, err


def test_a_full_disk(tmp_path: Path) -> None:
    """``RLIMIT_FSIZE=0``: every write fails as on a full disk (EFBIG; Python ignores
    SIGXFSZ).  The check runs without the cache and says so in one line."""
    folder = tmp_path / "cache"
    args = [*COMMANDS["check"], "--cache-dir", str(folder)]
    code = (
        "import resource, runpy, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))\n"
        f"sys.argv = ['jext', *{args!r}]\n"
        "runpy.run_module('jext', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    out, err = done.stdout, done.stderr
    assert done.returncode == EXIT_OK, err
    assert "Traceback" not in err, err
    ours = "".join(line for line in err.splitlines(keepends=True) if line.startswith("jext"))
    _one_line(ours, f"jext check: warning: not using the cache folder {folder}: cannot write in it")
    assert "1 passed, 0 failed" in out
