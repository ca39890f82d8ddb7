"""How a run or a stream ends, written once for both: what its tasks raised comes out as one
exception where it is one, what it journaled before an error is sent to be committed, and its
trace is closed, however it ends."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ._journal import DurableRun
from ._trace import Trace


def sole(group: BaseExceptionGroup[Any]) -> BaseException:
    """The exception a run or a stream raises for ``group``: its only exception, bare, when it
    holds just one (a `KeyboardInterrupt` from a worker, say), else the group itself.

    Trio gathers what a nursery's tasks raise into an exception group, and the ``Cancelled`` of
    the run's own scopes is absorbed by them first; so when one exception is all that is left,
    ``except KeyboardInterrupt:`` around the program should see it, as it would without the
    supervisor. The same `KeyboardInterrupt` or `SystemExit` raised by several tasks at once (of
    one type and the same message: every worker process of a program whose main module starts
    its run unguarded says so at once) is one event, and comes out as one. This is the one place
    the library takes an exception out of a group.
    """
    found: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            found.append(current)
    first = found[0]
    if len(found) == 1:
        return first
    if isinstance(first, KeyboardInterrupt | SystemExit) and all(
        type(other) is type(first) and other.args == first.args for other in found
    ):
        return first
    return group


@contextlib.contextmanager
def ending(trace: Trace | None, durable: DurableRun | None) -> Iterator[None]:
    """Around the nursery of a run or a stream: an exception of its tasks (``Cancelled`` aside)
    comes out as [`sole`][trio_supervisor._ending.sole] makes it, after what was journaled
    before it is sent to be committed; however it ends, the trace's open spans end and it is
    closed. The commit of a run that ends well is waited for after (``DurableRun.done``)."""
    try:
        try:
            yield
        except* (KeyboardInterrupt, SystemExit, Exception) as group:
            if durable is not None:
                durable.kick()  # what was journaled before the error is committed
            raise sole(group) from None
    finally:
        if trace is not None:
            trace.end_open()
            trace.close()
