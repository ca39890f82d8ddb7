"""A sync function as a worker that runs each call in a worker process, so that a hard crash
(``os._exit``, a segfault, a kill) fails that call alone.

The processes are ``trio_parallel``'s pool of spawned Python processes, reused from call to call:
a call cancelled while it runs kills its process (``kill_on_cancel``), a process that died is
reported as ``BrokenWorkerError`` and replaced, and a `trio.CapacityLimiter` bounds how many run
at once. What a call returns or raises is pickled in its process by this module's wrapper, so
that what cannot be pickled is named there, where it is known.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import pickle
import resource
import signal
import sys
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

from ._sending import (
    PROCESS,
    UnpicklableError,
    WorkerCrashed,
    called,
    check_function,
    name_of,
    sent_back,
)

S = TypeVar("S")
T = TypeVar("T")

_MIB = 1 << 20
_UNBOUNDED = contextlib.nullcontext()  # a limiter that never waits: the supervisor bounds calls
# What multiprocessing says when a process it is starting tries to start one of its own: the
# program's main module, imported again there, started a run outside `if __name__ == ...`.
_BOOTSTRAPPING = "has finished its bootstrapping phase"
_UNGUARDED = 78  # EX_CONFIG: how such a worker process ends, quietly, for the parent to say why


def _serializer() -> Callable[[Any], bytes]:
    """What trio_parallel pickles a job with: cloudpickle where it is installed, else pickle."""
    try:
        module = importlib.import_module("cloudpickle")
    except ImportError:
        module = importlib.import_module("pickle")
    dumps: Callable[..., bytes] = module.dumps
    return functools.partial(dumps, protocol=pickle.HIGHEST_PROTOCOL)


_dumps = _serializer()


def crash_reason(exitcode: int | None) -> str:
    """What [`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed] says of a process that
    ended with ``exitcode`` (negative: killed by that signal).

    ```pycon
    >>> crash_reason(-9)
    'the worker process died: killed by SIGKILL (Killed)'
    >>> crash_reason(3)
    'the worker process died: it exited with code 3'
    >>> crash_reason(None)
    'the worker process died: its exit code is not known'

    ```

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


def _in_worker_process(function: Callable[[S], T], memory_limit: int | None, subtask: S) -> bytes:
    """What runs in the worker process: ``function(subtask)``, sent back (see ``sent_back``)."""
    return sent_back(functools.partial(_limited, function, memory_limit, subtask), _dumps, PROCESS)


def _loaded(function: object) -> None:
    """What a warming call runs: nothing; unpickling ``function`` imported its module."""


def _limited(function: Callable[[S], T], memory_limit: int | None, subtask: S) -> T:
    """``function(subtask)``, under the memory limit if there is one (and with the process's
    own limit put back after it, for the pool's next call)."""
    if memory_limit is None:
        return called(function, subtask, "its worker process")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_limit if hard == resource.RLIM_INFINITY else min(memory_limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        return called(function, subtask, "its worker process")
    except MemoryError as error:
        raise MemoryError(
            f"the call needed more memory than its worker process may have: address space "
            f"limited to {memory_limit / _MIB:g} MiB (memory_limit={memory_limit})"
        ) from error
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class ProcessWorker(Generic[S, T]):
    """A sync function as a worker for a [`Supervisor`][trio_supervisor.Supervisor]: each call
    runs ``function(subtask)`` in a worker process, so a crash there fails only that call.

    ```python
    import trio
    from trio_supervisor import Supervisor
    from trio_supervisor.processes import ProcessWorker

    def measure(text: str) -> int:  # module level: it is pickled to the worker process
        return len(text)

    async def main() -> None:
        worker = ProcessWorker(measure)
        await worker.warm(2)  # the processes start before the run, not in its timeouts
        aggregate = await Supervisor(worker, max_workers=2, timeout=5).run(["a", "bb"])
        print([result.output for result in aggregate])

    if __name__ == "__main__":  # each worker process imports this module again
        trio.run(main)
    ```

    A process that dies during a call (``os._exit``, a segfault in a C extension, a signal)
    fails that call with [`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed], naming the
    exit code or signal, and the pool replaces it. An `Exception` the function raises comes back
    as itself; one that pickle cannot send back, or such an output, comes back as
    [`UnpicklableError`][trio_supervisor.processes.UnpicklableError] naming it. A cancelled call
    (a ``timeout``, a ``deadline``, a cancelled run) kills its process, so a hung function never
    outlives its timeout.

    The processes are ``trio_parallel``'s default pool, shared by every ``ProcessWorker``,
    reused from call to call and ended when the program exits. Each one, spawned, imports the
    program's main module again: the code that starts a run must be under
    ``if __name__ == "__main__":`` (without it the run ends with `SystemExit` saying so). A
    process's start is waited for by the first call through it, unless
    [`warm`][trio_supervisor.processes.ProcessWorker.warm] started it. The function, its
    subtask and its output cross by pickle: use a module-level function, or a
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
        check_function(
            function, _serializer(), "ProcessWorker", "in a worker process", "a worker process"
        )
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
            f"ProcessWorker({name_of(self._function)}, memory_limit={self._memory_limit!r}, "
            f"limiter={self._limiter!r})"
        )

    async def warm(self, processes: int) -> None:
        """Start worker processes until ``processes`` of them are idle in the pool, each with
        the function's module imported, and wait until each has answered: the calls of a run
        after it find them started, so that no timeout counts a process's start.

        Args:
          processes: how many; the run's ``max_workers`` is enough (``limiter`` does not bound
            them).

        Raises:
          WorkerCrashed: if a process died as it started.
          SystemExit: if the program's main module starts a run outside
            ``if __name__ == "__main__":`` (each process it started would run it again).
          TypeError: if ``processes`` is not an int.
          ValueError: if ``processes`` is < 1.
          Exception: what loading the function raised in a process (an `ImportError` of its
            module, say), the first one only.
        """
        if isinstance(processes, bool) or not isinstance(processes, int):
            raise TypeError(
                f"processes must be an int, got {type(processes).__name__} {processes!r}"
            )
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        failures: list[Exception] = []

        async def answer() -> None:
            try:  # all at once, so that each call takes a process of its own
                await _run_sync(_loaded, self._function, limiter=_UNBOUNDED)
            except Exception as error:
                failures.append(error)

        async with trio.open_nursery() as nursery:
            for _ in range(processes):
                nursery.start_soon(answer)
        if failures:  # the first, bare: the others are the same failure
            first = failures[0]
            if isinstance(first, trio_parallel.BrokenWorkerError):
                raise await _died(first) from first
            raise first

    async def __call__(self, subtask: S) -> T:
        """Run ``function(subtask)`` in a worker process and return what it returns.

        Raises:
          WorkerCrashed: if the process died before the call returned.
          UnpicklableError: if what the call raised or returned could not be sent back.
          SystemExit: if the program's main module starts a run outside
            ``if __name__ == "__main__":``.
          Exception: whatever the function raised, as itself.
        """
        try:
            sent = await _run_sync(
                _in_worker_process,
                self._function,
                self._memory_limit,
                subtask,
                limiter=_UNBOUNDED if self._limiter is None else self._limiter,
            )
        except trio_parallel.BrokenWorkerError as error:
            raise await _died(error) from error
        try:
            output: T = pickle.loads(sent)
        except Exception as error:
            raise UnpicklableError(
                f"what the worker returned could not be loaded in this process: {error}"
            ) from error
        return output


async def _run_sync(function: Callable[..., bytes | None], *args: Any, limiter: Any) -> Any:
    """``trio_parallel.run_sync``, killing the process on cancellation.

    In a worker process that multiprocessing is still starting (it imports the program's main
    module again, and that module's unguarded code started a run), no process can start: this
    process ends at once, quietly, with the exit code that tells the parent why.
    """
    try:
        return await trio_parallel.run_sync(function, *args, kill_on_cancel=True, limiter=limiter)
    except trio_parallel.BrokenWorkerError:
        raise
    except RuntimeError as error:
        if _BOOTSTRAPPING in str(error):
            os._exit(_UNGUARDED)  # nothing more of the program may run here
        raise


async def _died(error: trio_parallel.BrokenWorkerError) -> BaseException:
    """What a call raises for a process that died: WorkerCrashed naming how, or SystemExit for
    a process that found the program's main module unguarded.

    A process whose end the pool saw before the operating system reported its exit code is
    waited for, in a thread (never on the trio loop) and for a second at most, so that the
    error can say how it died."""
    process = error.args[-1] if error.args else None
    exitcode = getattr(process, "exitcode", None)
    join = getattr(process, "join", None)
    if exitcode is None and callable(join):
        with trio.move_on_after(1.0):
            await trio.to_thread.run_sync(join, 1.0, abandon_on_cancel=True)
        exitcode = getattr(process, "exitcode", None)
    if exitcode == _UNGUARDED:
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        where = "" if main is None else f" ({main})"
        return SystemExit(
            "ProcessWorker cannot start its worker processes: each imports the program's main "
            f"module{where} again, as multiprocessing does with spawn, and its code started the "
            'run there again: put the code that starts the run under if __name__ == "__main__":'
        )
    return WorkerCrashed(crash_reason(exitcode), exitcode)
