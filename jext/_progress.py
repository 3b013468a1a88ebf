"""What ``jext check`` prints while it runs: a live line on a terminal, plain lines in a log."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TextIO

if TYPE_CHECKING:
    from types import TracebackType

    from jext.testing._report import CheckResult

__all__ = ["HEARTBEAT_S", "CheckProgress", "is_terminal"]

HEARTBEAT_S: Final = 5.0
"""In a log, the longest silence: a check that takes longer gets a line saying what runs."""
_REFRESH_S: Final = 0.5  # how often the live line's clock moves
_CLEAR: Final = "\r\x1b[K"  # back to the line's start, erase it


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands a carriage return and an erase."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
    return tty and os.environ.get("TERM", "") != "dumb"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _failure(name: str, result: CheckResult) -> str:
    """A failure in full: the check, its largest error and every line of its message."""
    err = f" [max error {result.max_error:.3g}]" if result.max_error is not None else ""
    message = result.message.replace("\n", "\n      ")
    return f"FAIL {name}: {result.check}{err}\n      {message}".rstrip()


class CheckProgress:
    """Reports checks as they finish; use as the ``progress`` and ``plan`` of ``run_checks``.

    ``live`` (a terminal): one line, rewritten in place, with done/total, failures so far,
    the elapsed time, an estimate of the time left and what runs now; each failure is
    printed in full above it as it comes.  Otherwise (a log, a pipe) one line per check,
    a failure's message in full below its line, and a heartbeat line naming the check
    waited for whenever nothing was printed for ``heartbeat_s``.  ``verbosity`` is
    pytest's: -1 prints only failures (and, in a log, heartbeats; on a terminal no live
    line), 1 every check with its largest error and message (on a terminal above the line).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        live: bool,
        verbosity: int = 0,
        heartbeat_s: float = HEARTBEAT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._terminal = live
        self._live = live and verbosity >= 0
        self._verbosity = verbosity
        self._heartbeat_s = heartbeat_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._expected: list[tuple[str, str]] = []  # (name, check) in the order they report
        self._planned = False
        self._position = 0  # of the next expected check in _expected
        self._failed = 0
        self._start = clock()
        self._last_output = self._start
        self._line_shown = False

    # --- the callbacks run_checks takes ----------------------------------------------

    def plan(self, items: Sequence[tuple[str, Sequence[str]]]) -> None:
        """The items and their checks, in the order their results will come."""
        with self._lock:
            self._expected = [(name, check) for name, checks in items for check in checks]
            self._planned = True
            self._draw()

    def __call__(self, name: str, result: CheckResult) -> None:
        """One check's result."""
        with self._lock:
            self._advance(name, result.check)
            failed = result.status == "fail"
            self._failed += failed
            if failed:
                self._print(_failure(name, result))
            elif self._verbosity > 0:
                self._print(self._verbose_line(name, result))
            elif self._verbosity == 0 and not self._live:
                self._print(f"  {name}: {result.check} {result.status}")
            self._draw()

    # --- running ------------------------------------------------------------------------

    def __enter__(self) -> CheckProgress:
        self._start = self._last_output = self._clock()
        self._ticker = threading.Thread(target=self._tick_until_stopped, daemon=True)
        self._ticker.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        with self._lock:
            self._erase()
            self._stream.flush()

    def tick(self) -> None:
        """Move the live line's clock, or print a heartbeat after ``heartbeat_s`` of silence."""
        with self._lock:
            if self._live:
                self._draw()
            elif not self._terminal and self._clock() - self._last_output >= self._heartbeat_s:
                elapsed = _clock(self._clock() - self._start)
                if self._planned:
                    self._print(
                        f"  ... {self._waiting_for()}still running after {elapsed}"
                        f" ({self._counts()})"
                    )
                else:
                    self._print(f"  ... loading the plugins, {elapsed} so far")

    def _tick_until_stopped(self) -> None:
        if self._terminal and not self._live:
            return  # -q on a terminal: nothing moves between failures
        interval = _REFRESH_S if self._live else min(_REFRESH_S, self._heartbeat_s / 4)
        while not self._stop.wait(interval):
            self.tick()

    # --- output (under the lock) -----------------------------------------------------

    def _advance(self, name: str, check: str) -> None:
        # Results come in plan order; an item that reports fewer checks (its examples
        # failed to build) is passed over.
        for k in range(self._position, len(self._expected)):
            if self._expected[k] == (name, check):
                self._position = k + 1
                return

    def _waiting_for(self) -> str:
        if self._position < len(self._expected):
            name, check = self._expected[self._position]
            return f"{name}: {check} "
        return ""

    def _counts(self) -> str:
        total = max(len(self._expected), self._position)
        failed = f", {self._failed} failed" if self._failed else ""
        return f"{self._position}/{total} checks done{failed}"

    def _verbose_line(self, name: str, result: CheckResult) -> str:
        err = f" [max error {result.max_error:.3g}]" if result.max_error is not None else ""
        message = f": {result.message}" if result.message else ""
        return f"  {name}: {result.check} {result.status}{err}{message}"

    def _print(self, text: str) -> None:
        self._erase()
        print(text, file=self._stream, flush=True)
        self._last_output = self._clock()

    def _erase(self) -> None:
        if self._line_shown:
            self._stream.write(_CLEAR)
            self._line_shown = False

    def _draw(self) -> None:
        if not self._live:
            return
        elapsed = self._clock() - self._start
        total = max(len(self._expected), self._position)
        left = ""
        if 0 < self._position < total:
            left = f", ~{_clock(elapsed / self._position * (total - self._position))} left"
        failed = f" {self._failed} failed " if self._failed else " "
        line = (
            f"[{self._position:>{len(str(total))}}/{total}]{failed} {_clock(elapsed)}{left}  "
            f"{self._waiting_for()}"
            if self._planned
            else f"loading the plugins  {_clock(elapsed)}"
        ).rstrip()
        self._stream.write(_CLEAR + line[: self._width() - 1])
        self._stream.flush()
        self._line_shown = True

    def _width(self) -> int:
        # A line longer than the terminal wraps, and a carriage return then rewrites only
        # its last part.
        try:
            return os.get_terminal_size(self._stream.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            return 80
