"""How a command of the course ends early, and cleanly: on ``SIGTERM`` as on Ctrl-C, and when its
output has nowhere to go.

``SIGTERM`` (what ``kill``, a service manager or a CI runner's timeout sends) is made Ctrl-C's
``KeyboardInterrupt`` (`terminations`): the run is cancelled, a child process and its workers are
killed, temporary folders are removed, and the command says ``terminated``. Left to its default,
the signal would end the process at once, its children still running and its scratch files left.

Its output goes through `Stdout`, which turns any failure to write (the reader left: ``| head``;
the disk is full: ``> /dev/full``; no stdout at all: ``>&-``) into `OutputLost`, one exception
the command ends on quietly, with a non-zero status, rather than the many it could raise
anywhere (``BrokenPipeError``, ``OSError``, and ``AttributeError`` on a ``sys.stdout`` of None).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, TextIO, TypeVar

E = TypeVar("E", bound=BaseException)


class OutputLost(Exception):
    """stdout takes no more of the command's output: its reader left, its disk is full, or it
    is closed. ``quiet`` when there is nothing to say (a reader that left wanted no more)."""

    def __init__(self, why: str, quiet: bool = False) -> None:
        super().__init__(why)
        self.quiet = quiet


class Stdout(io.TextIOBase, TextIO):
    """``stream`` (the process's stdout, None when it is closed) whose every failed write or
    flush raises `OutputLost`."""

    def __init__(self, stream: TextIO | None) -> None:
        super().__init__()
        self.stream = stream

    def _stream(self) -> TextIO:
        if self.stream is None:
            raise OutputLost("cannot write to stdout: it is closed")
        return self.stream

    def write(self, text: str) -> int:
        try:
            return self._stream().write(text)
        except (OSError, ValueError) as exc:  # ValueError: written to after it was closed
            raise output_lost(exc) from None

    def flush(self) -> None:
        try:
            self._stream().flush()
        except (OSError, ValueError) as exc:
            raise output_lost(exc) from None

    def isatty(self) -> bool:
        try:
            return self.stream is not None and self.stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self._stream().fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the stream's, as rich reads it
        return getattr(self.stream, "encoding", None) or "utf-8"


def output_lost(exc: BaseException) -> OutputLost:
    """``exc``, raised writing to stdout, as `OutputLost`: quiet for a reader that left."""
    if isinstance(exc, BrokenPipeError) or getattr(exc, "errno", None) == errno.EPIPE:
        return OutputLost("stdout was closed by its reader", quiet=True)
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return OutputLost(f"cannot write to stdout: {why}")


def leaves(group: BaseExceptionGroup[Any], kind: type[E]) -> list[E]:
    """The exceptions of type ``kind`` in ``group`` and the groups it holds, in order."""
    found: list[E] = []
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            found += leaves(exc, kind)
        elif isinstance(exc, kind):
            found.append(exc)
    return found


def quieten(stdout: Stdout) -> None:
    """Point the process's stdout at ``os.devnull``, so that what is still buffered for it
    cannot fail again when the interpreter flushes it at exit (the signal module's recipe for
    a reader that left, "Note on SIGPIPE"). Nothing to do for a stdout with no descriptor."""
    try:
        descriptor = stdout.fileno()
    except (OutputLost, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def say(line: str) -> None:
    """Write ``line`` to stderr, if stderr can take it (it may be closed, or full, too)."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(line, file=sys.stderr or io.StringIO(), flush=True)


TERMINATED = 128 + signal.SIGTERM
"""The exit status of a command ended by ``SIGTERM``, as a shell reports a process it ended."""


@contextlib.contextmanager
def terminations() -> Iterator[list[int]]:
    """Within the block, ``SIGTERM`` is Ctrl-C: the interrupt's own handler is called (trio's,
    inside ``trio.run``, which raises ``KeyboardInterrupt`` where it is safe to), and the
    signal is added to the yielded list, which says the interrupt was a termination.

    Only the main thread may set a signal's handler: elsewhere the block changes nothing."""
    received: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if not callable(handler):  # Ctrl-C is ignored (SIG_IGN), or left to the system
            raise KeyboardInterrupt
        handler(signal.SIGINT, frame)  # raises KeyboardInterrupt, now or at trio's next checkpoint

    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def leaving() -> None:
    """Say the command is done: what is left is the interpreter's exit, where worker processes
    (step 26 on) end gracefully, a second or two that trio-parallel waits out in an exit
    handler. Ctrl-C is ignored from here on: it would break into that wait with a traceback,
    and leave the workers to end by themselves. For a process's entry point only (never a
    call in a program that goes on)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
