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
import time
from pathlib import Path


def body(subtask: str) -> str:
    """Do what ``subtask`` names to this process, or answer with this process's id.

    ``exit``: ``os._exit(70)``; ``segfault``: read address 0 (no core file is written);
    ``kill``: ``SIGKILL`` to itself, as the kernel's out-of-memory killer sends; ``sys.exit``:
    ``sys.exit(3)``; ``fail``: raise ``ValueError``; ``allocate N``: hold N MiB for a moment;
    ``hang PATH``: write its pid to PATH, then sleep for 30 seconds. Anything else: ``pid <pid>``.
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
    if subtask.startswith("allocate "):
        held = bytearray(int(subtask.split()[1]) << 20)
        return f"held {len(held) >> 20} MiB in pid {os.getpid()}"
    if subtask.startswith("hang "):
        Path(subtask.split(maxsplit=1)[1]).write_text(str(os.getpid()))
        time.sleep(30)
    return f"pid {os.getpid()}"
