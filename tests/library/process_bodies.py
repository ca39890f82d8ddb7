"""Sync functions that tests run in worker processes: each does one thing to its process.

They live apart from the tests so that a worker process, which imports a function's module to
unpickle it, imports only this (not pytest and the test's own imports).
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path


def body(subtask: str) -> str:
    """Do what ``subtask`` names to this process, or answer with this process's id.

    ``exit``: ``os._exit(70)``; ``segfault``: read address 0 (no core file is written);
    ``kill``: ``SIGKILL`` to itself, as the kernel's out-of-memory killer sends; ``sys.exit``:
    ``sys.exit(3)``; ``fail``: raise ``ValueError``; ``allocate N``: hold N MiB for a moment;
    ``hang PATH``: write its pid to PATH, then sleep for 30 seconds. What cannot be pickled:
    ``raise lock`` raises ``ValueError('boom')`` holding a lock, ``return lock`` returns a lock,
    ``raise from lock`` raises a plain ``ValueError`` from one holding a lock; ``raise two``
    raises a `TwoArgs`, which pickles but cannot be loaded; ``return unloadable`` returns what
    cannot be loaded.
    Anything else: ``pid <pid>``.
    """
    if subtask == "exit":
        os._exit(70)
    if subtask == "segfault":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        ctypes.string_at(0)
    if subtask == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if subtask == "sys.exit":
        sys.exit(3)
    if subtask == "fail":
        raise ValueError("fail was asked for")
    if subtask == "raise lock":
        raise holding_a_lock()
    if subtask == "return lock":
        return threading.Lock()  # type: ignore[return-value]  # what a careless body returns
    if subtask == "raise from lock":
        try:
            raise holding_a_lock()
        except ValueError as error:
            raise ValueError("raised from another") from error
    if subtask == "raise two":
        raise TwoArgs(1, 2)
    if subtask == "return unloadable":
        return Unloadable()  # type: ignore[return-value]
    if subtask.startswith("allocate "):
        held = bytearray(int(subtask.split()[1]) << 20)
        return f"held {len(held) >> 20} MiB in pid {os.getpid()}"
    if subtask.startswith("hang "):
        Path(subtask.split(maxsplit=1)[1]).write_text(str(os.getpid()))
        time.sleep(30)
    return f"pid {os.getpid()}"


def holding_a_lock() -> ValueError:
    """``ValueError('boom')`` with a lock as an attribute: an exception pickle cannot copy."""
    error = ValueError("boom")
    error.lock = threading.Lock()  # type: ignore[attr-defined]
    return error


class TwoArgs(Exception):
    """An exception whose ``__init__`` does not take its ``args``: pickle loads it by calling
    ``TwoArgs("1 is not above 2")``, which fails."""

    def __init__(self, low: int, high: int) -> None:
        super().__init__(f"{low} is not above {high}")


class Unloadable:
    """What pickles, and raises as it is loaded."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return refuse_to_load, ()


def refuse_to_load() -> None:
    raise RuntimeError("refused to load")
