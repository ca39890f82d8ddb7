"""What a call sent to another process sends back, for both workers that send calls away
(``ProcessWorker`` and ``trio_supervisor.ray.RayWorker``), written once.

A call's output, or its exception, crosses back pickled. An exception goes back as itself when
it survives a pickle round trip; a chained exception that does not is cut off first, with a
note; one that cannot go back at all becomes an `UnpicklableError` naming it. A function that
calls ``sys.exit`` meant its process to end: that is a crash of its call, `WorkerCrashed`. This
module imports no pool and no cluster, so that either worker can use it alone.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from typing import TypeVar

S = TypeVar("S")
T = TypeVar("T")

PROCESS = "its process"
"""Where a ``ProcessWorker``'s call runs, as the messages say it."""


class WorkerCrashed(Exception):
    """The worker process running a call ended before the call returned or raised: it exited,
    or a signal killed it (a segfault, ``SIGKILL`` from the kernel's out-of-memory killer or an
    operator), or the function called ``sys.exit``. Only its slot fails; the pool replaces the
    process.

    ```pycon
    >>> import os
    >>> async def main():  # os._exit(3) ends the process that runs it
    ...     return await Supervisor(ProcessWorker(os._exit), max_workers=1).run([3])
    >>> (result,) = trio.run(main)
    >>> result.status, isinstance(result.exception, WorkerCrashed), result.exception.exitcode
    (<Status.FAILED: 'failed'>, True, 3)
    >>> result.error
    'WorkerCrashed: the worker process died: it exited with code 3'

    ```

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


class UnpicklableError(Exception):
    """What a call in a worker process raised or returned could not be pickled back to the
    supervisor's process; the message names it (its type, and an exception's message, taken in
    the worker process) and says why pickle refused it.

    ```pycon
    >>> import os
    >>> async def main():  # open() returns a file, which pickle cannot send back
    ...     return await Supervisor(ProcessWorker(open), max_workers=1).run([os.devnull])
    >>> (result,) = trio.run(main)
    >>> result.status, isinstance(result.exception, UnpicklableError)
    (<Status.FAILED: 'failed'>, True)
    >>> print(result.error)
    UnpicklableError: the worker returned a _io.TextIOWrapper, which could not be sent back ...

    ```

    Args:
      message: what could not be sent back, and why, as ``str()`` shows it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


def sent_back(call: Callable[[], object], dumps: Callable[[object], bytes], where: str) -> bytes:
    """What runs away from the supervisor: ``call()``, its output pickled by ``dumps`` there
    (the caller unpickles it); an exception goes back as itself if it can be pickled, else as
    an `UnpicklableError` that names it, saying it could not be sent back from ``where``."""
    try:
        output = call()
    except Exception as error:
        failure = sendable(error, dumps, where)
    else:
        try:
            return dumps(output)
        except Exception as error:
            failure = UnpicklableError(
                f"the worker returned a {type_name(output)}, which could not be sent back "
                f"from {where}: {error}"
            )
    raise failure  # raised outside the handler: it carries no context that cannot go back


def sendable(error: Exception, dumps: Callable[[object], bytes], where: str) -> Exception:
    """``error`` if it survives a pickle round trip, else an UnpicklableError naming it; a chained
    exception that does not is cut off first, and a note on ``error`` says what it was."""
    for link in reversed(_chain(error)):  # the deepest first: it is pickled with those above
        try:
            pickle.loads(dumps(link))
        except Exception as why:
            error.__cause__ = error.__context__ = None
            error.add_note(
                f"an exception chained to it, {described(link)}, could not be sent back from "
                f"{where} ({why}): the chain was cut off"
            )
            break
    try:  # loaded again, as it will be: an exception whose __init__ refuses its args fails here
        pickle.loads(dumps(error))
    except Exception as why:
        return UnpicklableError(
            f"the worker raised {described(error)}, which could not be sent back from "
            f"{where}: {why}"
        )
    return error


def _chain(error: BaseException) -> list[BaseException]:
    """Every exception ``error`` is chained to (its cause, its context, theirs...), once each."""
    seen = {id(error)}
    links: list[BaseException] = []
    todo = [error.__cause__, error.__context__]
    while todo:
        link = todo.pop(0)
        if link is None or id(link) in seen:
            continue
        seen.add(id(link))
        links.append(link)
        todo += [link.__cause__, link.__context__]
    return links


def called(function: Callable[[S], T], subtask: S, inside: str) -> T:
    """``function(subtask)``, run ``inside`` a process of its own (``"its worker process"``):
    a ``sys.exit`` there is a crash of this call, `WorkerCrashed`, not the end of the caller's
    program, where the ``SystemExit`` would otherwise be raised again. (No trio runs there:
    there is no cancellation to pass through.)"""
    try:
        return function(subtask)
    except SystemExit as exiting:
        code = exiting.code if isinstance(exiting.code, int) else None
        raise WorkerCrashed(
            f"the function called sys.exit({exiting.code!r}) in {inside}", code
        ) from None


def described(error: BaseException) -> str:
    """``error``'s type (with its module, unless a builtin) and message, never failing."""
    try:
        message = str(error)
    except Exception:
        message = "(its message cannot be shown)"
    return f"{type_name(error)}: {message}" if message else type_name(error)


def type_name(value: object) -> str:
    """``value``'s type, with its module unless a builtin: ``mylib.Parsed``."""
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def name_of(function: object) -> str:
    """A function as messages name it: its qualified name, or its repr."""
    return str(getattr(function, "__qualname__", None) or repr(function))


def check_function(
    function: object, dumps: Callable[[object], bytes], worker: str, runs: str, reaches: str
) -> None:
    """Refuse a ``function`` that a worker sending its calls away cannot run: one that is not
    callable, is async, or cannot be pickled with ``dumps`` (the messages name ``worker``, what it
    ``runs`` a call as, and where the function must ``reach``).

    Raises:
      TypeError: naming which, and what to give instead.
    """
    if not callable(function):
        raise TypeError(
            f"function must be a sync callable, got {type(function).__name__} {function!r}"
        )
    if inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004  # an object's async __call__
    ):
        raise TypeError(
            f"{worker} runs a sync function {runs}, and {name_of(function)} is async: make it "
            "a plain def, or use it as the supervisor's worker directly"
        )
    try:
        dumps(function)
    except Exception as error:
        raise TypeError(
            f"function must be picklable to reach {reaches} (a module-level function, or a "
            f"functools.partial of one), and {name_of(function)} is not: {error}"
        ) from None
