"""A task is cancelled, catches the cancellation and awaits once more: Trio cancels it again at
that second checkpoint (level-triggered: the scope stays cancelled), asyncio lets the second await
run (edge-triggered: the cancellation was delivered once). tests/docs/test_docs_examples.py
runs both."""

from __future__ import annotations

import asyncio

import trio
import trio.testing


async def trio_side() -> list[str]:
    seen: list[str] = []

    async def task() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            seen.append("Cancelled where it waited")
            try:
                await trio.sleep(1)  # another checkpoint, still inside the cancelled scope
                seen.append("the next await ran")
            except trio.Cancelled:
                seen.append("Cancelled again at the next checkpoint")
            raise

    async with trio.open_nursery() as nursery:
        nursery.start_soon(task)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    return seen


async def asyncio_side() -> list[str]:
    seen: list[str] = []

    async def task() -> None:
        try:
            await asyncio.Event().wait()  # never set: waits until cancelled
        except asyncio.CancelledError:
            seen.append("CancelledError where it waited")
            try:
                await asyncio.sleep(0)  # another await
                seen.append("the next await ran")
            except asyncio.CancelledError:
                seen.append("CancelledError again at the next await")
            raise

    running = asyncio.create_task(task())
    await asyncio.sleep(0)  # let it start and wait
    running.cancel()
    try:
        await running
    except asyncio.CancelledError:
        seen.append("the task ended cancelled")
    return seen
