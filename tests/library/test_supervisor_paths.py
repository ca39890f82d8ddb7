"""One attempt, whatever path a run takes: what each attempt promises (its meters told, its span,
its wait before a retry) holds on the lanes and on the restarting path alike, and what is the
restarting path's own (a slot taken by several restarts) follows its own law.

All on virtual time.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import PATHS, Behaviour, Script
from tests.library.virtual_time import run_virtual
from trio_supervisor import Adaptive, Backoff, Retry, Status, Supervisor, Trace

NO_WAIT = Backoff(initial=0, maximum=0)


class Asked(Exception):
    """A failure that says how long to wait before a retry, as a 429's Retry-After does."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"slow down: retry in {wait:g}s")
        self.retry_after = wait


class Refusing:
    """Fails the first ``refusals`` calls of each subtask with `Asked`, after 1/32 s each."""

    def __init__(self, refusals: int, wait: float) -> None:
        self.refusals = refusals
        self.wait = wait
        self.calls: defaultdict[int, int] = defaultdict(int)

    async def __call__(self, subtask: int) -> str:
        self.calls[subtask] += 1
        await trio.sleep(1 / 32)
        if self.calls[subtask] <= self.refusals:
            raise Asked(self.wait)
        return f"output {subtask}"


class Observing:
    """A meter that keeps what it is told of each attempt."""

    def __init__(self) -> None:
        self.told: list[str | None] = []

    async def acquire(self) -> None:
        await trio.lowlevel.checkpoint()

    def release(self) -> None:
        pass

    def observe(self, failure: Exception | None) -> None:
        self.told.append(None if failure is None else type(failure).__name__)


@pytest.mark.parametrize("path", PATHS)
async def test_the_meters_that_observe_are_told_every_attempt(
    path: str, autojump_clock: object
) -> None:
    observing = Observing()
    adaptive = Adaptive(8, start=8)
    supervisor = Supervisor(
        Refusing(2, 0.25),
        max_workers=1,
        retry=Retry(attempts=3, backoff=NO_WAIT),
        meters=[observing, adaptive],
        **PATHS[path],
    )
    aggregate = await supervisor.run([0])
    assert aggregate.results[0].ok
    assert observing.told == ["Asked", "Asked", None]
    assert adaptive.decreases >= 1  # a 429 shrinks an adaptive limit, on every path
    assert adaptive.limit < 8


@pytest.mark.parametrize("path", PATHS)
async def test_a_failed_attempts_span_keeps_its_error_and_the_wait_it_asked_for(
    path: str, autojump_clock: object
) -> None:
    supervisor = Supervisor(
        Refusing(1, 0.25), max_workers=1, retry=Retry(attempts=2, backoff=NO_WAIT), **PATHS[path]
    )
    trace = Trace([0])
    await supervisor.run([0], trace=trace)
    first, second = trace.slots[0].spans
    assert (first.status, first.error, first.retry_after) == (
        Status.FAILED,
        "Asked: slow down: retry in 0.25s",
        0.25,
    )
    assert (second.status, second.error, second.retry_after) == (Status.OK, None, None)
    assert first.end is not None
    assert second.start == first.end + 0.25  # the retry came when the server asked


@pytest.mark.parametrize("path", PATHS)
async def test_a_wait_past_the_deadline_fails_the_slot_at_once_saying_so(
    path: str, autojump_clock: object
) -> None:
    supervisor = Supervisor(
        Refusing(1, 10.0), max_workers=1, retry=Retry(attempts=3, backoff=NO_WAIT), **PATHS[path]
    )
    aggregate = await supervisor.run([0], deadline=2.0)
    (result,) = aggregate.results
    assert result.status is Status.FAILED
    assert result.error == (
        "TooSlowError: Asked: slow down: retry in 10s; the server asked to wait 10s before a "
        "retry, but the run's deadline is 1.96875s away: the slot ends now instead of sleeping "
        "past it"
    )
    assert isinstance(result.exception, trio.TooSlowError)
    assert isinstance(result.exception.__cause__, Asked)
    assert (result.attempts, result.finished) == (1, 1 / 32)
    assert trio.current_time() == 1 / 32  # the run returned then, not at its deadline


@settings(max_examples=40, deadline=None)
@given(
    path=st.sampled_from(list(PATHS)),
    asked=st.integers(min_value=0, max_value=64).map(lambda n: n / 16),
    initial=st.sampled_from([0.0, 0.5, 2.0]),
    maximum=st.sampled_from([2.0, 4.0]),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_a_retry_never_starts_sooner_than_the_server_asked(
    path: str, asked: float, initial: float, maximum: float, seed: int
) -> None:
    """Whatever the jitter draws, the wait after a failure that asks ``asked`` seconds is at
    least that, and at most the longer of it and the backoff's bound."""
    backoff = Backoff(initial=initial, maximum=maximum)
    supervisor = Supervisor(
        Refusing(2, asked),
        max_workers=1,
        retry=Retry(attempts=3, backoff=backoff, seed=seed),
        **PATHS[path],
    )

    async def main() -> Trace:
        trace = Trace([0])
        await supervisor.run([0], trace=trace)
        return trace

    spans = run_virtual(main).slots[0].spans
    assert [span.status for span in spans] == [Status.FAILED, Status.FAILED, Status.OK]
    for failure, (ended, retried) in enumerate(itertools.pairwise(spans), start=1):
        assert ended.end is not None
        assert ended.retry_after == asked
        # as the engine sleeps: until the end plus the wait (a difference would round)
        assert ended.end + asked <= retried.start <= ended.end + max(asked, backoff.bound(failure))


class Hanging:
    """Hangs on the first call of each subtask (until its timeout), then answers after 1/32 s."""

    def __init__(self) -> None:
        self.calls: defaultdict[int, int] = defaultdict(int)

    async def __call__(self, subtask: int) -> str:
        self.calls[subtask] += 1
        if self.calls[subtask] == 1:
            await trio.sleep_forever()
        await trio.sleep(1 / 32)
        return f"output {subtask}"


@pytest.mark.parametrize("path", PATHS)
async def test_a_timed_out_attempt_ends_timed_out_and_is_not_observed(
    path: str, autojump_clock: object
) -> None:
    """Its span ends TIMED_OUT at its timeout, a slot's last one ends it TIMED_OUT with the
    timeout's error, and the meters that observe are told only of the attempts that ended on
    their own (a timeout says nothing of the server)."""
    observing = Observing()
    supervisor = Supervisor(
        Hanging(),
        max_workers=1,
        timeout=0.5,
        retry=Retry(attempts=2, backoff=NO_WAIT),
        meters=[observing],
        **PATHS[path],
    )
    trace = Trace([0])
    (result,) = await supervisor.run([0], trace=trace)
    assert (result.status, result.attempts) == (Status.OK, 2)
    first, second = trace.slots[0].spans
    assert (first.status, second.status) == (Status.TIMED_OUT, Status.OK)
    assert (first.start, first.end, second.start) == (0, 0.5, 0.5)
    assert observing.told == [None]
    once = Supervisor(Script([Behaviour(1, ("hang",))]), max_workers=1, timeout=0.5, **PATHS[path])
    (result,) = await once.run([0])
    assert (result.status, result.error) == (
        Status.TIMED_OUT,
        "TooSlowError: the attempt ran past its timeout of 0.5s",
    )


class Timed:
    """Each subtask takes ``latencies[subtask]`` and fails, asking ``asks[subtask]``, on its
    first call; every call's start is kept."""

    def __init__(self, latencies: dict[int, float], asks: dict[int, float]) -> None:
        self.latencies = latencies
        self.asks = asks
        self.starts: defaultdict[int, list[float]] = defaultdict(list)

    async def __call__(self, subtask: int) -> int:
        self.starts[subtask].append(trio.current_time())
        await trio.sleep(self.latencies[subtask])
        if subtask in self.asks and len(self.starts[subtask]) == 1:
            raise Asked(self.asks[subtask])
        return subtask


async def test_a_slot_taken_by_several_restarts_waits_for_the_latest(
    autojump_clock: Any,
) -> None:
    """Under rest_for_one, slot 2 fails at t=1 asking 2 s (it alone restarts, at t=3), then
    slot 1 fails at t=2 asking 10 s, which takes slot 2 again: slot 2 must wait for t=12 with
    slot 1, not rerun at t=3 from slot 1's stale state."""
    worker = Timed({0: 0.5, 1: 2.0, 2: 1.0}, {2: 2.0, 1: 10.0})
    supervisor = Supervisor(
        worker, max_workers=3, retry=Retry(attempts=2, backoff=NO_WAIT), **PATHS["rest_for_one"]
    )
    aggregate = await supervisor.run([0, 1, 2])
    assert all(result.ok for result in aggregate.results)
    assert worker.starts[1] == [0.0, 12.0]
    assert worker.starts[2][0] == 0.0
    assert worker.starts[2][-1] >= 12.0  # after the latest restart that took it
    assert worker.starts[2] == [0.0, 12.0]  # and it did not rerun meanwhile
