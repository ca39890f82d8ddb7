"""Failures cost what successes cost: a failed slot keeps its exception, not the worker's frames."""

from __future__ import annotations

import gc
import itertools
import weakref
from typing import Any

import pytest
import trio
import trio.testing

from trio_supervisor import Backoff, Retry, Status, Supervisor


class Bulky:
    """Stands for what a real worker holds in its locals: a response, a buffer, a model output."""

    def __init__(self) -> None:
        self.payload = list(range(10_000))


class Failure(ValueError):
    """What the worker raises (a subclass, so that a weak reference can watch it)."""


class HoldsItsLocals:
    """A worker that fails while a local of its frame holds the only reference to a Bulky."""

    def __init__(self) -> None:
        self.held: list[weakref.ref[Bulky]] = []

    async def __call__(self, subtask: int) -> int:
        bulky = Bulky()
        self.held.append(weakref.ref(bulky))
        await trio.sleep(1 / 32)
        raise Failure(f"failed on {subtask} holding {len(bulky.payload)} items")

    def alive(self) -> int:
        return sum(ref() is not None for ref in self.held)


@pytest.mark.parametrize("attempts", [1, 3])
@pytest.mark.parametrize("per_attempt", [None, 10.0])
async def test_a_failed_slot_keeps_its_exception_but_not_the_workers_locals(
    autojump_clock: Any, attempts: int, per_attempt: float | None
) -> None:
    worker = HoldsItsLocals()
    supervisor = Supervisor(
        worker,
        max_workers=2,
        retry=Retry(attempts=attempts, backoff=Backoff(0, 0)),
        timeout=per_attempt,
    )
    aggregate = await supervisor.run(range(4))
    gc.collect()
    assert len(worker.held) == 4 * attempts
    for slot, result in enumerate(aggregate.results):
        assert result.status is Status.FAILED
        assert isinstance(result.exception, Failure)  # kept: users inspect and re-raise it
        assert str(result.exception) == f"failed on {slot} holding 10000 items"
    assert worker.alive() == 0  # but the worker's frames no longer hold its locals


@pytest.mark.parametrize("attempts", [2, 3])
async def test_retries_leave_no_reference_cycles(autojump_clock: Any, attempts: int) -> None:
    """With the cycle collector off, what a failed slot held is freed by reference counting
    alone, or never: a cycle through an exception, its traceback and the retrier keeps it."""
    worker = HoldsItsLocals()
    supervisor = Supervisor(
        worker, max_workers=2, retry=Retry(attempts=attempts, backoff=Backoff(0, 0))
    )
    gc.collect()
    gc.disable()
    try:
        aggregate = await supervisor.run(range(4))
        assert len(worker.held) == 4 * attempts
        assert worker.alive() == 0
        exceptions = [weakref.ref(result.exception) for result in aggregate.results]
        assert all(ref() is not None for ref in exceptions)
        del aggregate
        assert all(ref() is None for ref in exceptions)  # freed with the aggregate: no cycle
    finally:
        gc.enable()


class Unreadable(Exception):
    """An exception whose message cannot be read: its ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no message here")


async def test_an_exception_whose_str_fails_is_described_by_its_type(autojump_clock: Any) -> None:
    async def worker(subtask: int) -> int:
        await trio.sleep(1 / 32)
        if subtask == 1:
            raise Unreadable
        return subtask

    aggregate = await Supervisor(worker, max_workers=2).run(range(3))
    ok_0, unreadable, ok_2 = aggregate.results
    assert (ok_0.output, ok_2.output) == (0, 2)
    assert unreadable.status is Status.FAILED
    assert unreadable.error is not None
    assert unreadable.error.startswith("Unreadable")
    assert "could not be read" in unreadable.error
    assert isinstance(unreadable.exception, Unreadable)


async def test_an_unreadable_exception_inside_a_group_is_described_too(
    autojump_clock: Any,
) -> None:
    async def worker(subtask: int) -> int:
        raise ExceptionGroup("from the worker's nursery", [Unreadable(), KeyError("k")])

    result = (await Supervisor(worker, max_workers=1).run([0])).results[0]
    assert result.status is Status.FAILED
    assert result.error is not None
    assert "Unreadable" in result.error
    assert "could not be read" in result.error
    assert "KeyError" in result.error


@pytest.mark.parametrize("fails", [False, True], ids=["after a success", "after a failure"])
async def test_a_slot_taken_straight_on_starts_at_the_instant_the_last_one_ended(
    fails: bool, autojump_clock: trio.testing.MockClock
) -> None:
    """On one lane, a slot taken as the last one ends, with nothing run in between, starts at
    that very instant: its start is the last result's end, the same value, the clock not read
    again, after a failure for good as after a success (a failed slot keeps one instant of its
    own, as a successful one does, not two)."""

    async def work(subtask: int) -> int:
        await trio.sleep(1)
        if fails:
            raise Failure(f"subtask {subtask}")
        return subtask

    supervisor = Supervisor(work, max_workers=1, retry=Retry(attempts=2, backoff=Backoff(0, 0)))
    results = (await supervisor.run(range(4))).results
    assert {result.status for result in results} == {Status.FAILED if fails else Status.OK}
    for before, after in itertools.pairwise(results):
        assert after.started is before.finished
