"""Adaptive's latency rule, as laws on virtual time: against simulated endpoints that queue
(``B`` at once, the rest waiting their turn), that keep gaining throughput with concurrency,
and that refuse; and against the loopback server's batching and sequential serving."""

from __future__ import annotations

import statistics

import httpx2
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_supervisor import Adaptive, Retry, Supervisor, report_latency
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing.devserver import Serving, app


class Refused(Exception):
    retry_after = 0.1


class Queueing:
    """An endpoint that works on ``slots`` requests at once (each ``latency`` seconds), queues
    the rest in order, and (with ``refuse``) answers a refusal past that many in flight."""

    def __init__(self, slots: int, latency: float = 1.0, *, refuse: bool = False) -> None:
        self.slots = trio.Semaphore(slots)
        self.latency = latency
        self.refuse = refuse
        self.bound = slots
        self.in_flight = 0

    async def __call__(self, subtask: int) -> int:
        if self.refuse and self.in_flight >= self.bound:
            raise Refused
        self.in_flight += 1
        try:
            async with self.slots:
                await trio.sleep(self.latency)
        finally:
            self.in_flight -= 1
        return subtask


class Watched(Adaptive):
    """An Adaptive that records its limit after each outcome it observes."""

    def __init__(self, *args: object, **options: object) -> None:
        super().__init__(*args, **options)  # type: ignore[arg-type]
        self.limits: list[int] = []

    def observe(self, failure: Exception | None) -> None:
        before = self.limit
        super().observe(failure)
        if failure is not None and before > self.floor and self.decreases:
            assert self.limit <= before  # a refusal never raises it
        self.limits.append(self.limit)


def run(worker: Queueing, adaptive: Adaptive, n: int) -> float:
    async def main() -> float:
        sup = Supervisor(
            worker, max_workers=adaptive.ceiling, meters=[adaptive], retry=Retry(attempts=50)
        )
        aggregate = await sup.run(range(n))
        assert aggregate.succeeded == n  # nothing lost
        return trio.current_time()

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@settings(max_examples=12, deadline=None)
@given(slots=st.sampled_from([1, 2, 4, 8, 16, 32, 64]), ceiling=st.sampled_from([64, 256]))
def test_against_a_queueing_endpoint_the_limit_settles_near_what_it_works_on(
    slots: int, ceiling: int
) -> None:
    """Past the first rounds, the limit stays within [B / 2, 5 B] of an endpoint that works on
    B at once (clipped to the ceiling), and never leaves [floor, ceiling]."""
    adaptive = Watched(ceiling, latency=True)
    run(Queueing(slots), adaptive, 40 * max(slots, 8))
    assert all(1 <= limit <= ceiling for limit in adaptive.limits)
    late = adaptive.limits[len(adaptive.limits) // 2 :]
    settled = statistics.median(late)
    assert slots / 2 <= settled <= min(ceiling, 5 * slots), (slots, settled)


@settings(max_examples=6, deadline=None)
@given(ceiling=st.sampled_from([16, 64, 256, 1000]), latency=st.sampled_from([0.01, 1.0, 30.0]))
def test_against_an_endpoint_that_keeps_gaining_the_limit_reaches_the_ceiling(
    ceiling: int, latency: float
) -> None:
    """Every request takes the same time however many run: the limit reaches the ceiling
    within three rounds of answers, however long an answer takes."""
    adaptive = Watched(ceiling, latency=True)
    took = run(Queueing(ceiling, latency), adaptive, 4 * ceiling)
    assert adaptive.limit == ceiling
    assert took <= 7 * latency


@settings(max_examples=8, deadline=None)
@given(bound=st.sampled_from([2, 5, 12, 40]))
def test_a_refusal_always_decreases_the_limit(bound: int) -> None:
    """Against an endpoint that refuses past ``bound`` in flight, each refusal of an attempt
    let in since the last decrease lowers the limit (``Watched`` checks it never rises on
    one), and the limit ends at or under the bound."""
    adaptive = Watched(64, start=64, latency=True)
    run(Queueing(bound, refuse=True), adaptive, 30 * bound)
    assert adaptive.decreases >= 1
    assert adaptive.limits[-1] <= bound * 2


def test_a_run_never_waits_on_the_limit_while_the_endpoint_is_idle() -> None:
    """While the endpoint has nothing in flight, no attempt waits for a place: the time both
    hold is nothing (the bound: zero, checked at every instant the run wakes)."""
    endpoint = Queueing(4)
    adaptive = Adaptive(64, latency=True)
    idle_and_waiting = 0.0

    async def main() -> None:
        nonlocal idle_and_waiting

        async def watch() -> None:
            nonlocal idle_and_waiting
            while True:
                before = trio.current_time()
                waiting = adaptive._capacity.waiting  # a test may look inside
                await trio.sleep(0.01)
                if endpoint.in_flight == 0 and waiting:
                    idle_and_waiting += trio.current_time() - before

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch)
            await Supervisor(endpoint, max_workers=64, meters=[adaptive]).run(range(300))
            nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert idle_and_waiting == 0


def test_a_reported_latency_is_read_in_place_of_the_attempts_time() -> None:
    async def worker(subtask: int) -> int:
        await trio.sleep(5)
        report_latency(0.25)
        return subtask

    adaptive = Adaptive(8, latency=True)
    trio.run(
        Supervisor(worker, max_workers=8, meters=[adaptive]).run,
        [1, 2],
        clock=trio.testing.MockClock(autojump_threshold=0),
    )
    assert adaptive.no_load == 0.25
    report_latency(1.0)  # outside an attempt: nothing to tell, no error
    with pytest.raises(ValueError, match="seconds must be a positive number"):
        report_latency(0)


@pytest.mark.parametrize(
    ("serving", "low", "high"),
    [(Serving("sequential"), 1, 2), (Serving("batching", batch=16), 8, 64)],
)
async def test_through_the_loopback_server_the_limit_finds_its_batch(
    autojump_clock: trio.testing.MockClock, serving: Serving, low: int, high: int
) -> None:
    via = httpx2.ASGITransport(app=app(latency=(0.5, 0.5), serving=serving))
    adaptive = Adaptive(256, latency=True)
    async with ChatAgent(
        "m", base_url="http://x/v1", api_key="k", transport=via, request_timeout=None
    ) as agent:
        sup = Supervisor(agent, max_workers=256, meters=[adaptive], retry=Retry(on=TRANSIENT))
        aggregate = await sup.run([f"q{i}" for i in range(300)])
    assert aggregate.succeeded == 300
    assert low <= adaptive.limit <= high
