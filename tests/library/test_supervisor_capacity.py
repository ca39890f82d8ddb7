"""The capacity bound is the supervisor's: all its runs and streams together run at most
``max_workers`` workers, and a shared [`Capacity`] bounds several supervisors together."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import Script, ok
from tests.library.virtual_time import run_virtual
from trio_supervisor import Capacity, Restarts, Status, Supervisor


class Spy:
    """A worker that counts the calls in flight, at most, across every run that uses it."""

    def __init__(self, latency: float = 0.25) -> None:
        self.latency = latency
        self.running = 0
        self.most = 0
        self.starts: dict[object, float] = {}

    async def __call__(self, subtask: object) -> object:
        self.running += 1
        self.most = max(self.most, self.running)
        self.starts[subtask] = trio.current_time()
        try:
            await trio.sleep(self.latency)
        finally:
            self.running -= 1
        return subtask


async def consume(supervisor: Supervisor[object, object], plan: list[object]) -> None:
    async with supervisor.stream(plan) as results:
        async for _ in results:
            pass


@settings(max_examples=60)
@given(
    k=st.integers(1, 4),
    calls=st.lists(st.tuples(st.booleans(), st.integers(1, 9)), min_size=1, max_size=5),
)
def test_all_runs_and_streams_of_a_supervisor_together_run_at_most_k_workers(
    k: int, calls: list[tuple[bool, int]]
) -> None:
    async def main() -> int:
        spy = Spy()
        supervisor: Supervisor[object, object] = Supervisor(spy, max_workers=k)
        async with trio.open_nursery() as nursery:
            for call, (streamed, size) in enumerate(calls):
                plan: list[object] = [(call, slot) for slot in range(size)]
                if streamed:
                    nursery.start_soon(consume, supervisor, plan)
                else:
                    nursery.start_soon(supervisor.run, plan)
        assert supervisor._engine.places.in_use == 0  # every place was given back
        return spy.most

    most = run_virtual(main)
    assert most <= k
    assert most == min(k, sum(size for _, size in calls))  # the bound is reached, not undercut


@settings(max_examples=40)
@given(
    limit=st.integers(1, 4),
    ks=st.lists(st.integers(1, 4), min_size=2, max_size=4),
    size=st.integers(1, 8),
)
def test_supervisors_sharing_a_capacity_run_at_most_its_limit_together(
    limit: int, ks: list[int], size: int
) -> None:
    async def main() -> int:
        spy = Spy()
        shared = Capacity(limit)
        async with trio.open_nursery() as nursery:
            for index, k in enumerate(ks):
                supervisor: Supervisor[object, object] = Supervisor(
                    spy, max_workers=k, meters=[shared]
                )
                nursery.start_soon(supervisor.run, [(index, slot) for slot in range(size)])
        assert shared.in_use == 0
        return spy.most

    most = run_virtual(main)
    assert most == min(limit, sum(min(k, size) for k in ks))


async def test_concurrent_runs_take_turns_for_the_places(autojump_clock: object) -> None:
    """A short run started while a long one holds every place starts as soon as one place is
    given back, not when the long run ends."""
    spy = Spy(latency=1.0)
    supervisor: Supervisor[object, object] = Supervisor(spy, max_workers=2)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(supervisor.run, [("long", slot) for slot in range(10)])
        await trio.sleep(0.5)
        short = await supervisor.run([("short", 0)])
    assert short.results[0].status is Status.OK
    assert spy.starts[("short", 0)] == 1.0  # at the first place freed, of a run 5s long


async def test_a_per_call_bound_lets_concurrent_runs_exceed_k(autojump_clock: object) -> None:
    """The flaw the shared bound fixes: a limiter made per call (as a supervisor's runs had one
    each) lets three concurrent runs of K=2 reach 6 workers at once."""
    spy = Spy()

    async def run_per_call(plan: list[tuple[int, int]]) -> None:
        limiter = trio.CapacityLimiter(2)  # per call

        async def one(subtask: object) -> None:
            async with limiter:
                await spy(subtask)

        async with trio.open_nursery() as nursery:
            for subtask in plan:
                nursery.start_soon(one, subtask)

    async with trio.open_nursery() as nursery:
        for call in range(3):
            nursery.start_soon(run_per_call, [(call, slot) for slot in range(4)])
    assert spy.most == 6


async def test_a_cancelled_run_gives_its_places_back(autojump_clock: object) -> None:
    spy = Spy(latency=10.0)
    supervisor: Supervisor[object, object] = Supervisor(spy, max_workers=2)
    with trio.move_on_after(1.0):
        await supervisor.run(list(range(5)))
    assert supervisor._engine.places.in_use == 0
    aggregate = await supervisor.run(["after"])  # nothing is held: it runs at once
    assert aggregate.results[0].started == 1.0


async def test_an_idle_stream_holds_no_place(autojump_clock: object) -> None:
    """A stream whose input has nothing yet gives its worker's place back while it waits, so a
    run of the same supervisor is not held up by it."""
    spy = Spy()
    supervisor: Supervisor[object, object] = Supervisor(spy, max_workers=1)

    async def feed() -> AsyncIterator[str]:
        yield "first"
        await trio.sleep_forever()

    finished = []
    with trio.move_on_after(100.0):  # a guard: the run waits forever if the stream keeps it
        async with supervisor.stream(feed()) as results:
            async for _ in results:
                aggregate = await supervisor.run(["run"])
                finished.append(aggregate.results[0].finished)
                break
    assert finished == [0.5]


@settings(max_examples=40)
@given(
    k=st.integers(1, 4),
    sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    strategy=st.sampled_from(["one_for_all", "rest_for_one"]),
)
def test_restarting_runs_share_the_bound_with_every_other_run(
    k: int, sizes: list[int], strategy: str
) -> None:
    """A run with a restart strategy takes a place per attempt, from the same budgets: its
    supervisor's own, across its concurrent runs, and a capacity shared with a plain one."""

    async def main() -> int:
        spy = Spy()
        shared = Capacity(k)
        plain: Supervisor[object, object] = Supervisor(spy, max_workers=k, meters=[shared])
        restarting: Supervisor[object, object] = Supervisor(
            spy,
            max_workers=k,
            meters=[shared],
            restarts=Restarts(strategy=strategy),  # type: ignore[arg-type]
        )
        async with trio.open_nursery() as nursery:
            for call, size in enumerate(sizes):
                plan: list[object] = [(call, slot) for slot in range(size)]
                nursery.start_soon((restarting if call % 2 else plain).run, plan)
        return spy.most

    most = run_virtual(main)
    assert most == min(k, sum(sizes))


async def test_an_idle_stream_holds_no_place_of_a_shared_capacity(autojump_clock: object) -> None:
    spy = Spy()
    shared = Capacity(1)
    streaming: Supervisor[object, object] = Supervisor(spy, max_workers=1, meters=[shared])
    running: Supervisor[object, object] = Supervisor(spy, max_workers=1, meters=[shared])

    async def feed() -> AsyncIterator[str]:
        yield "first"
        await trio.sleep_forever()

    finished = []
    with trio.move_on_after(100.0):  # a guard: the run waits forever if the stream keeps it
        async with streaming.stream(feed()) as results:
            async for _ in results:
                aggregate = await running.run(["run"])
                finished.append(aggregate.results[0].finished)
                break
    assert finished == [0.5]
    assert shared.in_use == 0


async def test_a_lowered_shared_capacity_starts_no_worker_until_fewer_than_its_limit_run(
    autojump_clock: object,
) -> None:
    """A shared ``Capacity`` among the meters whose limit goes from 6 to 2 while a run goes on:
    the six attempts running finish, and from then on at most two run at once."""
    shared = Capacity(6)
    script = Script([ok(32)] * 24)  # 1 s each
    supervisor = Supervisor(script, max_workers=6, meters=[shared])

    async def lower() -> None:
        await trio.sleep(0.5)
        shared.limit = 2

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lower)
        aggregate = await supervisor.run(range(24))
    assert all(result.ok for result in aggregate.results)
    starts = sorted(start for spans in script.spans.values() for start, _ in spans)
    assert starts[:6] == [0.0] * 6  # the first six started under the old limit
    later = [spans[0] for spans in script.spans.values() if spans[0][0] >= 1.0]
    for instant in {start for start, _ in later}:
        running = [1 for start, end in later if start <= instant < (end or 0)]
        assert len(running) <= 2, f"{len(running)} workers at t={instant}"
    assert trio.current_time() == 1.0 + 18 / 2  # the other 18 slots, two at a time


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_run_whose_slots_are_done_returns_at_once_beside_a_long_run(
    streamed: bool, autojump_clock: object
) -> None:
    """A one-slot run sharing a supervisor with a long run returns when its slot is done: its
    worker, with nothing left to take, does not wait for a place again."""
    script = Script([ok(64)] + [ok(32)] * 100)
    supervisor = Supervisor(script, max_workers=1)
    returned: list[float] = []

    async def short() -> None:
        if streamed:
            async with supervisor.stream([0]) as results:
                assert [result.ok async for result in results] == [True]
        else:
            assert (await supervisor.run([0])).results[0].ok
        returned.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(short)
        await trio.lowlevel.checkpoint()
        nursery.start_soon(supervisor.run, range(1, 101))
    assert returned == [script.spans[0][0][1]]  # when its one slot was done


async def test_a_run_gives_a_full_shared_capacity_to_an_attempt_that_waits_for_it_as_a_meter(
    autojump_clock: object,
) -> None:
    # each attempt takes the place in turn: the waiter gets it when the run's first attempt ends
    shared = Capacity(1)
    spy = Spy(latency=1.0)
    metered: Supervisor[object, object] = Supervisor(spy, max_workers=1, meters=[shared])
    holding: Supervisor[object, object] = Supervisor(spy, max_workers=1, meters=[shared])
    async with trio.open_nursery() as nursery:
        nursery.start_soon(holding.run, list(range(5)))
        await trio.sleep(0.5)  # the run holds the one place, in its first slot
        aggregate = await metered.run(["metered"])
    assert aggregate.results[0].ok
    assert spy.starts["metered"] == 1.0  # the place at the end of the run's first slot
    assert spy.starts[1] == 2.0  # and the run's next slot after it
