"""A sync body run in another process by trio-parallel, where a cancelled call kills its
process; and a sync body run in a thread, by Trio or by asyncio's ``run_in_executor``, where a
cancelled await leaves the thread running, since nothing can stop a thread from outside.
tests/docs/test_docs_examples.py runs them."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import trio
import trio_parallel


async def in_a_process() -> dict[str, object]:
    """Run on a MockClock: the hour-long call is cancelled at virtual second 5, at once."""
    async with trio_parallel.open_worker_context() as context:
        first = await context.run_sync(os.getpid)  # the body runs in a process of its own
        with trio.move_on_after(5) as scope:
            # an hour of blocking work in that process; cancelled, the process is killed
            await context.run_sync(time.sleep, 3600, kill_on_cancel=True)
        try:
            os.kill(first, 0)  # signal 0: only asks whether the process exists
            killed = False
        except ProcessLookupError:
            killed = True
        cancelled_at = trio.current_time()
        second = await context.run_sync(os.getpid)  # a new process takes the next call
    return {
        "ran elsewhere": first != os.getpid(),
        "cancelled at": cancelled_at if scope.cancelled_caught else None,
        "killed": killed,
        "next call, new process": second != first,
    }


class Blocking:
    """A sync body that blocks until ``release`` is set: nothing outside a thread can stop it."""

    def __init__(self) -> None:
        self.started, self.release, self.finished = (threading.Event() for _ in range(3))

    def __call__(self) -> str:
        self.started.set()
        self.release.wait()
        self.finished.set()
        return "done"

    def still_running(self) -> bool:
        """Wait until the body has started; say whether it is still running, then let it end."""
        self.started.wait()
        running = not self.finished.is_set()
        self.release.set()
        self.finished.wait()
        return running


async def in_a_trio_thread() -> dict[str, object]:
    body = Blocking()
    with trio.move_on_after(5) as scope:
        # abandon_on_cancel: stop waiting when cancelled (without it, Trio waits for the
        # thread to return, and so the cancellation waits too)
        await trio.to_thread.run_sync(body, abandon_on_cancel=True)
    return {"cancelled": scope.cancelled_caught, "thread still running": body.still_running()}


async def in_an_asyncio_thread() -> dict[str, object]:
    body = Blocking()
    call = asyncio.get_running_loop().run_in_executor(None, body)
    await asyncio.to_thread(body.started.wait)
    call.cancel()  # cancels the future asyncio awaits, not the call running in the thread
    return {"cancelled": call.cancelled(), "thread still running": body.still_running()}
