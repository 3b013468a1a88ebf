"""``jext check``'s progress: a live line on a terminal, plain lines and heartbeats in a log."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import pytest

from jext._progress import CheckProgress, is_terminal
from jext.testing._report import CheckResult

CLEAR = "\r\x1b[K"
PLAN = [("demo.a", ["jit", "jvp"]), ("demo.b", ["jit", "jvp"])]
FAILED = CheckResult("jvp", "fail", "tangents differ\nat x = 1.5", 0.25)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def reporter(*, live: bool, verbosity: int = 0) -> tuple[CheckProgress, io.StringIO, Clock]:
    stream, clock = io.StringIO(), Clock()
    progress = CheckProgress(stream, live=live, verbosity=verbosity, heartbeat_s=5, clock=clock)
    progress.plan(PLAN)
    return progress, stream, clock


def test_a_log_gets_todays_line_per_check_and_each_failure_in_full() -> None:
    progress, stream, _ = reporter(live=False)
    progress("demo.a", CheckResult("jit", "pass"))
    progress("demo.a", FAILED)
    assert stream.getvalue().splitlines() == [
        "  demo.a: jit pass",
        "FAIL demo.a: jvp [max error 0.25]",
        "      tangents differ",
        "      at x = 1.5",
    ]
    assert CLEAR not in stream.getvalue()


def test_a_log_gets_a_heartbeat_naming_the_check_it_waits_for() -> None:
    progress, stream, clock = reporter(live=False)
    progress("demo.a", CheckResult("jit", "pass"))
    clock.now += 4.9
    progress.tick()
    assert stream.getvalue().count("\n") == 1  # not silent for long enough yet
    clock.now += 0.2
    progress.tick()
    assert stream.getvalue().splitlines()[-1] == (
        "  ... demo.a: jvp still running after 0:05 (1/4 checks done)"
    )
    clock.now += 3
    progress.tick()  # the heartbeat counts as output: the next comes 5 s after it
    assert stream.getvalue().count("\n") == 2


def test_the_wait_before_the_plan_says_the_plugins_load() -> None:
    stream, clock = io.StringIO(), Clock()
    log = CheckProgress(stream, live=False, heartbeat_s=5, clock=clock)
    clock.now += 6
    log.tick()
    assert stream.getvalue() == "  ... loading the plugins, 0:06 so far\n"
    stream, clock = io.StringIO(), Clock()
    terminal = CheckProgress(stream, live=True, clock=clock)
    clock.now += 2
    terminal.tick()
    assert stream.getvalue() == f"{CLEAR}loading the plugins  0:02"


def test_quiet_prints_only_failures_and_verbose_every_detail() -> None:
    quiet, stream, clock = reporter(live=False, verbosity=-1)
    quiet("demo.a", CheckResult("jit", "pass"))
    quiet("demo.a", FAILED)
    assert stream.getvalue().splitlines()[0] == "FAIL demo.a: jvp [max error 0.25]"
    assert "jit" not in stream.getvalue()
    clock.now += 6
    quiet.tick()  # a quiet log still gets its heartbeat: CI must see the run is alive
    assert "still running" in stream.getvalue()

    verbose, stream, _ = reporter(live=False, verbosity=1)
    verbose("demo.a", CheckResult("jit", "skip", "no float inputs", None))
    verbose("demo.a", CheckResult("jvp", "pass", "", 3.05e-5))
    assert stream.getvalue().splitlines() == [
        "  demo.a: jit skip: no float inputs",
        "  demo.a: jvp pass [max error 3.05e-05]",
    ]


def test_a_terminal_gets_one_rewritten_line_and_failures_above_it() -> None:
    progress, stream, clock = reporter(live=True)
    clock.now += 10
    progress("demo.a", CheckResult("jit", "pass"))
    clock.now += 10
    progress("demo.a", FAILED)
    progress.tick()
    text = stream.getvalue()
    assert "\n" not in text.split("FAIL")[0]  # no line per passing check
    # done/total, failures so far, elapsed, the estimate (20 s for 2 of 4) and what runs.
    assert text.endswith(f"{CLEAR}[2/4] 1 failed  0:20, ~0:20 left  demo.b: jit")
    assert f"{CLEAR}FAIL demo.a: jvp [max error 0.25]\n      tangents differ\n" in text
    assert "still running" not in text
    progress.__exit__(None, None, None)
    assert stream.getvalue().endswith(CLEAR)  # the line is gone before the summary


def test_quiet_on_a_terminal_prints_failures_without_a_live_line() -> None:
    progress, stream, clock = reporter(live=True, verbosity=-1)
    progress("demo.a", CheckResult("jit", "pass"))
    progress("demo.a", FAILED)
    clock.now += 60
    progress.tick()
    assert stream.getvalue().startswith("FAIL demo.a: jvp")
    assert CLEAR not in stream.getvalue() and "still running" not in stream.getvalue()


def test_an_item_reporting_fewer_checks_is_passed_over() -> None:
    progress, _, _ = reporter(live=False, verbosity=-1)
    progress("demo.a", CheckResult("examples", "fail", "raised ValueError"))
    progress("demo.b", CheckResult("jit", "pass"))
    assert progress._counts() == "3/4 checks done, 1 failed"


def test_is_terminal() -> None:
    assert not is_terminal(io.StringIO())
    read, write = os.openpty()
    try:
        with open(write, "w", closefd=False) as tty:
            assert is_terminal(tty)
    finally:
        os.close(read)
        os.close(write)


# `jext check` for real, on a plugin registered in code with a wrong JVP; its progress
# (stderr) goes to a pseudo-terminal or to a pipe.
SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import jext
    from jext._cli import main

    @jext.primitive("demo.twice")
    def twice(x, /):
        return 2.0 * x

    @twice.def_jvp
    def _wrong(primals, tangents):
        return twice(primals[0]), 3.0 * tangents[0]

    twice.def_examples(lambda: [jext.Example(np.linspace(-1, 1, 4, dtype=np.float32))])

    class Plugin:
        @jext.hookimpl
        def jext_register_primitives(self, registry):
            registry.add(twice)

    jext.register_plugin(Plugin(), "demo")
    sys.exit(main(["check", "demo.*", "--checks", "jit,jvp", "--no-cache", *sys.argv[1:]]))
    """
)


def _check_command(*args: str, tty: bool) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JEXT_")}
    env["JEXT_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.pop("TERM", None)
    command = [sys.executable, "-c", SCRIPT, *args]
    if not tty:
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        return result.returncode, result.stdout, result.stderr
    read, write = os.openpty()
    proc = subprocess.Popen(
        command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=write
    )
    os.close(write)
    chunks = []
    while True:
        try:
            data = os.read(read, 4096)
        except OSError:  # the pty is closed once the child exits
            break
        if not data:
            break
        chunks.append(data)
    os.close(read)
    stdout, _ = proc.communicate(timeout=120)
    return proc.returncode, stdout.decode(), b"".join(chunks).decode()


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_jext_check_reports_for_a_terminal_and_for_a_pipe(tty: bool) -> None:
    code, stdout, stderr = _check_command(tty=tty)
    assert code == 1
    assert "FAIL demo.twice: jvp" in stderr  # in full, while running
    assert "Failures:" in stdout and "1 failed" in stdout  # the summary, on stdout
    if tty:
        assert f"{CLEAR}[0/2]" in stderr and "demo.twice: jit pass" not in stderr
        assert stderr.endswith(CLEAR)
    else:
        assert CLEAR not in stderr
        assert stderr.splitlines()[0] == "  demo.twice: jit pass"
