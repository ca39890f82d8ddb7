"""A sync function as a worker that runs each call in a worker process, so that a hard crash
(``os._exit``, a segfault, a kill) fails that call alone.

The processes are ``trio_parallel``'s: a pool of spawned Python processes, reused from call to
call, that ``trio_parallel.run_sync`` hands a pickled function and its argument to. It is used
rather than a hand-written pool because it already does what a supervisor needs and is easy to
get wrong: a call cancelled while it runs kills its process (``kill_on_cancel``), a process
that died is reported as ``BrokenWorkerError`` and replaced, and a `trio.CapacityLimiter`
bounds how many processes run at once.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import resource
import signal
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import trio

try:
    import trio_parallel
except ImportError as error:  # pragma: no cover - exercised by a test that hides trio_parallel
    missing = (error.name or "a module").split(".")[0]
    raise ImportError(
        f"trio_supervisor.processes needs the 'processes' extra ({missing} is missing): "
        "pip install 'trio-supervisor[processes]'"
    ) from error

S = TypeVar("S")
T = TypeVar("T")

_MIB = 1 << 20
_UNBOUNDED = contextlib.nullcontext()  # a limiter that never waits: the supervisor bounds calls


def _serializer() -> Callable[[Any], bytes]:
    """What trio_parallel pickles a job with: cloudpickle where it is installed, else pickle."""
    try:
        module = importlib.import_module("cloudpickle")
    except ImportError:
        module = importlib.import_module("pickle")
    dumps: Callable[[Any], bytes] = module.dumps
    return dumps


class WorkerCrashed(Exception):
    """The worker process running a call ended before the call returned or raised: it exited,
    or a signal killed it (a segfault, ``SIGKILL`` from the kernel's out-of-memory killer or an
    operator), or the function called ``sys.exit``.

    Args:
      message: what happened, as ``str()`` shows it.
      exitcode: the process's exit code (a signal is its negated number, as
        `multiprocessing.Process.exitcode` gives it), or the code given to ``sys.exit``; None
        where it is not known.
    """

    def __init__(self, message: str, exitcode: int | None = None) -> None:
        super().__init__(message, exitcode)
        self.exitcode = exitcode

    def __str__(self) -> str:
        return str(self.args[0])


def crash_reason(exitcode: int | None) -> str:
    """What [`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed] says of a process that
    ended with ``exitcode`` (negative: killed by that signal).

    Args:
      exitcode: as `multiprocessing.Process.exitcode` gives it, None where it is not known.

    Returns:
      One line, e.g. ``the worker process died: killed by SIGSEGV (Segmentation fault)``.
    """
    if exitcode is None:
        how = "its exit code is not known"
    elif exitcode < 0:
        try:
            number = signal.Signals(-exitcode)
        except ValueError:
            how = f"killed by signal {-exitcode}"
        else:
            how = f"killed by {number.name} ({signal.strsignal(number)})"
    else:
        how = f"it exited with code {exitcode}"
    return f"the worker process died: {how}"


def _in_worker_process(function: Callable[[S], T], memory_limit: int | None, subtask: S) -> T:
    """What runs in the worker process: ``function(subtask)``, under the memory limit if there
    is one (and with the process's own limit put back after it, for the pool's next call)."""
    if memory_limit is None:
        return _call(function, subtask)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_limit if hard == resource.RLIM_INFINITY else min(memory_limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        return _call(function, subtask)
    except MemoryError as error:
        raise MemoryError(
            f"the call needed more memory than its worker process may have: address space "
            f"limited to {memory_limit / _MIB:g} MiB (memory_limit={memory_limit})"
        ) from error
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _call(function: Callable[[S], T], subtask: S) -> T:
    try:
        return function(subtask)
    except SystemExit as exiting:
        # The function meant its own process to end. Sent back as it is, the SystemExit would
        # be raised in the supervisor's process and end the caller's program: it is a crash of
        # that call instead. (No trio runs here: there is no cancellation to pass through.)
        code = exiting.code if isinstance(exiting.code, int) else None
        raise WorkerCrashed(
            f"the function called sys.exit({exiting.code!r}) in its worker process", code
        ) from None


class ProcessWorker(Generic[S, T]):
    """A sync function as a worker for a [`Supervisor`][trio_supervisor.Supervisor]: each call
    runs ``function(subtask)`` in a worker process, so a crash there fails only that call.

    A process that dies while it runs a call (``os._exit``, a segfault in a C extension, a
    signal) fails the call with [`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed] naming
    the exit code or signal; the pool replaces the process, and the other calls run on. An
    `Exception` the function raises comes back as itself (pickled across), and so is an
    ordinary failure of its slot. A call that is cancelled while it runs (a supervisor's
    ``timeout`` or ``deadline``, a cancelled run) kills its process with ``SIGKILL`` and raises
    ``trio.Cancelled``, so a hung function never outlives its timeout.

    The processes are ``trio_parallel``'s default pool: spawned on first use (each one imports
    the function's module; the call that waits for it counts that time, half a second or more),
    reused from call to call, and ended when the program exits. The function and its subtask
    cross to the process by pickle, and its output back: use a module-level function, or a
    ``functools.partial`` of one.

    Args:
      function: a sync callable taking one subtask, picklable.
      memory_limit: bytes of address space each call's process may have (``RLIMIT_AS``, the
        interpreter included: give it at least 100 MiB); an allocation past it fails in that
        process, where Python raises `MemoryError`, which fails the slot (a C extension that
        cannot handle it may abort the process: a crash, contained the same). None for no
        limit.
      limiter: bounds how many of these calls run in processes at once, across every
        supervisor using it (``trio_parallel.current_default_worker_limiter()`` gives one
        process per CPU, for CPU-bound functions); None for no bound here: the supervisor's
        ``max_workers`` bounds the calls, one process each. A call waits for the limiter inside
        its attempt, so a ``timeout`` counts that wait.

    Raises:
      TypeError: if ``function`` is not callable, is an ``async def`` function, or cannot be
        pickled; or an option has the wrong type.
      ValueError: if ``memory_limit`` is < 1.
    """

    __slots__ = ("_function", "_limiter", "_memory_limit")

    def __init__(
        self,
        function: Callable[[S], T],
        *,
        memory_limit: int | None = None,
        limiter: trio.CapacityLimiter | None = None,
    ) -> None:
        if not callable(function):
            raise TypeError(
                f"function must be a sync callable, got {type(function).__name__} {function!r}"
            )
        if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004  # an object's async __call__
        ):
            raise TypeError(
                f"ProcessWorker runs a sync function in a worker process, and "
                f"{_name(function)} is async: make it a plain def, or use it as the "
                "supervisor's worker directly"
            )
        try:
            _serializer()(function)
        except Exception as error:
            raise TypeError(
                f"function must be picklable to reach a worker process (a module-level "
                f"function, or a functools.partial of one), and {_name(function)} is not: "
                f"{error}"
            ) from None
        if memory_limit is not None:
            if isinstance(memory_limit, bool) or not isinstance(memory_limit, int):
                raise TypeError(
                    "memory_limit must be an int number of bytes or None, "
                    f"got {type(memory_limit).__name__} {memory_limit!r}"
                )
            if memory_limit < 1:
                raise ValueError(f"memory_limit must be >= 1 byte, got {memory_limit}")
        if limiter is not None and not isinstance(limiter, trio.CapacityLimiter):
            raise TypeError(
                f"limiter must be a trio.CapacityLimiter or None, got {type(limiter).__name__}"
            )
        self._function = function
        self._memory_limit = memory_limit
        self._limiter = limiter

    @property
    def function(self) -> Callable[[S], T]:
        """The sync function each call runs in a worker process."""
        return self._function

    @property
    def memory_limit(self) -> int | None:
        """Bytes of address space a call's process may have, or None."""
        return self._memory_limit

    @property
    def limiter(self) -> trio.CapacityLimiter | None:
        """What bounds the calls running in processes at once; None: only the supervisor."""
        return self._limiter

    def __repr__(self) -> str:
        return (
            f"ProcessWorker({_name(self._function)}, memory_limit={self._memory_limit!r}, "
            f"limiter={self._limiter!r})"
        )

    async def __call__(self, subtask: S) -> T:
        """Run ``function(subtask)`` in a worker process and return what it returns.

        Raises:
          WorkerCrashed: if the process died before the call returned.
          Exception: whatever the function raised, as itself.
        """
        try:
            output: T = await trio_parallel.run_sync(
                _in_worker_process,
                self._function,
                self._memory_limit,
                subtask,
                kill_on_cancel=True,
                limiter=_UNBOUNDED if self._limiter is None else self._limiter,
            )
        except trio_parallel.BrokenWorkerError as error:
            process = error.args[-1] if error.args else None
            exitcode = getattr(process, "exitcode", None)
            raise WorkerCrashed(crash_reason(exitcode), exitcode) from error
        return output


def _name(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))
