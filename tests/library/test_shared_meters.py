"""Limits shared across processes: a ``Capacity`` or a ``RateLimit`` given ``shared=`` keeps its
count in the run's journal, for every supervisor on its database. On virtual time, each
"process" a supervisor with a meter and a journal of its own (``writer="inline"``, on trio's
clock) on one database, run on both stores (the ``database`` fixture: part of the journal's
conformance suite): the bound is never exceeded; a holder that stops renewing loses its places
after one lease, and one that renews keeps them; a shared rate limit spaces every start; places
are given back on every exit path; a shared meter without a journal is refused before any
work. Real processes killed with SIGKILL meet it in ``test_journal_kill_laws.py``."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tests.library.stores import Database
from tests.library.test_replan import research_planner
from trio_supervisor import Capacity, Durable, Journal, RateLimit, Retry, Supervisor
from trio_supervisor._meters import POLL_MOST

LEASE = 10.0


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


class Held:
    """The worker calls running at once, across every supervisor of the test, and the most."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.starts: list[float] = []

    def worker(self, seconds: float = 1.0, fail_every: int = 0) -> Any:
        async def worker(slot: int) -> int:
            self.now += 1
            self.most = max(self.most, self.now)
            self.starts.append(trio.current_time())
            try:
                await trio.sleep(seconds * (1 + slot % 3))
                if fail_every and slot % fail_every == 0:
                    raise ValueError(f"slot {slot}")
            finally:
                self.now -= 1
            return slot

        return worker


def places(database: Database) -> int:
    return int(database.query("SELECT count(*) FROM places")[0][0])


def test_a_shared_capacity_bounds_every_supervisor_on_the_database_together(
    database: Database,
) -> None:
    """Three supervisors, each with its own capacity and journal (three processes, as far as
    the database can tell), 6 lanes each, on a capacity of 4 shared by name: at most 4 calls at
    once, all told; every slot done, a failing attempt's place given back like the others."""
    held = Held()

    async def main() -> list[Any]:
        out: list[Any] = []

        async def one(n: int) -> None:
            journal = Journal(database.target, writer="inline", lease=LEASE)
            supervisor = Supervisor(
                held.worker(fail_every=7),
                max_workers=6,
                retry=Retry(attempts=2),
                meters=[Capacity(4, shared="endpoint-a")],
            )
            out.append(await supervisor.run(range(30), durable=Durable(f"run-{n}", journal)))
            journal.close()

        async with trio.open_nursery() as nursery:
            for n in range(3):
                nursery.start_soon(one, n)
        return out

    aggregates = virtual(main)
    assert held.most == 4
    assert [a.succeeded for a in aggregates] == [30 - 5] * 3  # 0, 7, 14, 21, 28 fail twice
    assert len(held.starts) == 3 * (30 + 5)
    assert places(database) == 0  # every place given back


def test_a_stream_and_a_run_share_one_capacity_through_their_journals(database: Database) -> None:
    """A stream's lanes hold the places of a shared capacity as a run's do: together, at most
    its size."""
    held = Held()

    async def main() -> int:
        streamed = 0
        a = Journal(database.target, writer="inline", lease=LEASE)
        b = Journal(database.target, writer="inline", lease=LEASE)

        async def run() -> None:
            supervisor = Supervisor(
                held.worker(), max_workers=4, meters=[Capacity(3, shared="endpoint-a")]
            )
            await supervisor.run(range(12), durable=Durable("run", a))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            supervisor = Supervisor(
                held.worker(), max_workers=4, meters=[Capacity(3, shared="endpoint-a")]
            )
            async with supervisor.stream(range(12), durable=Durable("stream", b)) as results:
                async for _ in results:
                    streamed += 1
        a.close()
        b.close()
        return streamed

    assert virtual(main) == 12
    assert held.most == 3
    assert len(held.starts) == 24
    assert places(database) == 0


def test_a_holder_that_stops_renewing_loses_its_places_after_one_lease(database: Database) -> None:
    """A peer took every place and stopped renewing (hung, or killed on another host): the
    first attempt here starts once their lease ran out, within one poll of it."""
    held = Held()

    async def main() -> None:
        journal = Journal(database.target, writer="inline", lease=LEASE)
        for n in range(3):
            assert await journal.take_place("endpoint-a", f"peer:{n}", "elsewhere:1:dead", 3)
        supervisor = Supervisor(
            held.worker(), max_workers=3, meters=[Capacity(3, shared="endpoint-a")]
        )
        await supervisor.run([0, 3, 6], durable=Durable("after-the-peer", journal))
        journal.close()

    virtual(main)
    assert held.most == 3
    assert all(LEASE <= start <= LEASE + POLL_MOST for start in held.starts), held.starts


def test_a_holder_that_renews_keeps_its_places_past_one_lease(database: Database) -> None:
    """Supervisor A's attempts run three leases long, holding both places, renewed: B's wait
    until A's end, not until A's first lease would have run out."""
    held = Held()
    ends: dict[str, float] = {}

    async def main() -> None:
        async def one(who: str, seconds: float, late: float) -> None:
            await trio.sleep(late)
            journal = Journal(database.target, writer="inline", lease=LEASE)
            supervisor = Supervisor(
                held.worker(seconds), max_workers=2, meters=[Capacity(2, shared="endpoint-a")]
            )
            await supervisor.run([0, 3], durable=Durable(who, journal))
            ends[who] = trio.current_time()
            journal.close()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "a", 3 * LEASE, 0.0)
            nursery.start_soon(one, "b", 1.0, 1.0)

    virtual(main)
    assert held.most == 2
    assert ends["a"] == 3 * LEASE
    b_starts = held.starts[2:]
    assert all(3 * LEASE <= start <= 3 * LEASE + POLL_MOST for start in b_starts), b_starts


def test_a_waiter_cancelled_takes_no_place_and_a_place_is_given_back_on_cancellation(
    database: Database,
) -> None:
    """A run cut by its deadline while attempts hold places and others wait: no place is left
    held, and a run after it takes every place at once."""
    held = Held()

    async def main() -> float:
        journal = Journal(database.target, writer="inline", lease=LEASE)
        capacity = Capacity(2, shared="endpoint-a")
        supervisor = Supervisor(held.worker(5.0), max_workers=4, meters=[capacity])
        await supervisor.run(range(8), durable=Durable("cut", journal), deadline=2.0)
        assert places(database) == 0
        began = trio.current_time()
        await supervisor.run([0, 3], durable=Durable("after", journal))
        journal.close()
        return began

    began = virtual(main)
    assert held.starts[-2:] == [began, began]
    assert held.most == 2


def test_a_shared_rate_limit_spaces_the_starts_of_every_supervisor_on_the_database(
    database: Database,
) -> None:
    """Two supervisors with a rate limit of 2 a second (a burst of 2) shared by name: in any
    window of T seconds at most 2 + 2T attempts start, all told."""
    held = Held()

    async def main() -> None:
        async def one(n: int) -> None:
            journal = Journal(database.target, writer="inline", lease=LEASE)
            limit = RateLimit(2, burst=2, shared="endpoint-a")
            supervisor = Supervisor(held.worker(0.1), max_workers=4, meters=[limit])
            await supervisor.run(range(10), durable=Durable(f"rate-{n}", journal))
            journal.close()

        async with trio.open_nursery() as nursery:
            for n in range(2):
                nursery.start_soon(one, n)

    virtual(main)
    starts = sorted(held.starts)
    assert len(starts) == 20
    for i, first in enumerate(starts):
        for j in range(i, len(starts)):
            assert j - i + 1 <= 2 + 2 * (starts[j] - first) + 1e-6, (i, j, starts)
    assert starts[-1] == pytest.approx((20 - 2) / 2)  # no slower than the limit either


@pytest.mark.parametrize(
    "meter",
    [Capacity(2, shared="endpoint-a"), RateLimit(1, shared="endpoint-a")],
    ids=["capacity", "rate"],
)
def test_a_shared_meter_on_a_run_without_a_journal_is_refused_before_any_work(
    meter: Any,
) -> None:
    called = []

    async def worker(n: Any) -> Any:
        called.append(n)
        return n

    supervisor = Supervisor(worker, max_workers=2, meters=[meter])

    async def main() -> None:
        for durable in (None, Durable("named-only")):
            with pytest.raises(ValueError, match=r"durable=Durable\(run_id, Journal\(path\)\)"):
                await supervisor.run([1, 2], durable=durable)
            with pytest.raises(ValueError, match="keeps its count in the run's journal"):
                supervisor.stream([1, 2], durable=durable)
            with pytest.raises(ValueError, match="keeps its count in the run's journal"):
                await supervisor.replan("a task", research_planner(), durable=durable)

    trio.run(main)
    assert called == []


@pytest.mark.parametrize("bad", ["", 3, b"x"])
def test_a_shared_name_must_be_a_non_empty_str(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="shared must be a non-empty str"):
        Capacity(2, shared=bad)
    with pytest.raises((TypeError, ValueError), match="shared must be a non-empty str"):
        RateLimit(1, shared=bad)
