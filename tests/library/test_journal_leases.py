"""Slot leases: several supervisors on one journaled run share its slots. Each slot's worker is
called once while every owner renews its leases; a slot whose owner stopped renewing (hung,
killed) is taken over only once its lease ran out; an owner whose lease was taken over stops
that attempt, and never records over the new owner. On virtual time, with two supervisors in
one trio run on one journal (a SQLite file, and a PostgreSQL database: the laws on virtual time
are part of the journal's conformance suite, run on both stores), and once with two real
processes, one killed with SIGKILL."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tests.library import lease_child
from tests.library.stores import Database
from trio_supervisor import Durable, Journal, SubResult, Supervisor

LEASE = 10.0
PLAN = list(range(6))


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


class Calls:
    """Every worker call: (slot, which supervisor, when), and how a slot's call behaves."""

    def __init__(self, hang: dict[tuple[str, int], float] | None = None) -> None:
        self.calls: list[tuple[int, str, float]] = []
        self.ended: list[tuple[int, str, float]] = []
        self.hang = hang or {}

    def worker(self, who: str) -> Any:
        async def worker(slot: int) -> str:
            self.calls.append((slot, who, trio.current_time()))
            await trio.sleep(self.hang.get((who, slot), 1 + slot % 3))
            self.ended.append((slot, who, trio.current_time()))
            return f"{who}-{slot}"

        return worker

    def per_slot(self) -> Counter[int]:
        return Counter(slot for slot, _, _ in self.calls)


class Stuck(Journal):
    """A journal whose supervisor stops renewing its leases (hung), from ``after`` (trio time)
    on, for ``hung`` seconds (forever when None)."""

    def __init__(self, *args: Any, after: float = 0.0, hung: float | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.after = after
        self.hung = hung

    async def renew(
        self, run: tuple[str, int], owner: str, lease: float | None = None
    ) -> list[tuple[int, int]]:
        if trio.current_time() >= self.after:
            if self.hung is None:
                await trio.sleep_forever()
            await trio.sleep(self.hung)
            self.hung = 0.0  # once
        return await super().renew(run, owner, lease)


async def two(
    calls: Calls,
    a: Journal,
    b: Journal,
    late: float = 1.0,
    plan: list[int] = PLAN,
    limit: float | None = None,
) -> dict[str, Any]:
    """Supervisors ``a`` and ``b`` on one run of ``plan``, ``b`` started ``late`` (each
    attempt timed out after ``limit``, if not None)."""
    out: dict[str, Any] = {}

    async def go(who: str, journal: Journal, wait: float) -> None:
        await trio.sleep(wait)
        supervisor = Supervisor(calls.worker(who), max_workers=3, timeout=limit)
        out[who] = await supervisor.run(plan, durable=Durable("shared", journal))
        out[f"{who} ended"] = trio.current_time()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(go, "a", a, 0.0)
        nursery.start_soon(go, "b", b, late)
    a.close()
    b.close()
    return out


def rows(database: Database) -> dict[int, tuple[str, str]]:
    """Each slot's journaled output and owner."""
    return {
        slot: (json.loads(output), owner)
        for slot, output, owner in database.query("SELECT slot, output, owner FROM results")
    }


def test_two_supervisors_on_one_run_call_each_slots_worker_once(database: Database) -> None:
    path = database.target
    calls = Calls()

    async def main() -> dict[str, Any]:
        a = Journal(path, writer="inline", lease=LEASE)
        b = Journal(path, writer="inline", lease=LEASE)
        return await two(calls, a, b, late=0.0, plan=list(range(40)))

    out = virtual(main)
    assert calls.per_slot() == dict.fromkeys(range(40), 1)
    assert {who for _, who, _ in calls.calls} == {"a", "b"}  # the work is shared
    kept = rows(database)
    assert [r.output for r in out["a"]] == [kept[slot][0] for slot in range(40)]
    assert out["a"] == out["b"]  # each gives every slot's result, the other's too


def test_a_hung_owners_slot_is_taken_over_only_once_its_lease_ran_out_and_never_overwritten(
    database: Database,
) -> None:
    """``a`` claims every slot at 0 and never renews; its slot 0 hangs for 15 s. ``b`` waits
    for ``a``'s lease of slot 0 to run out (at 10 s), runs it, and journals it; ``a``'s late
    result is not written over ``b``'s."""
    path = database.target
    calls = Calls(hang={("a", 0): 15.0})

    async def main() -> dict[str, Any]:
        a = Stuck(path, writer="inline", lease=LEASE, flush="each")
        b = Journal(path, writer="inline", lease=LEASE, flush="each")
        return await two(calls, a, b)

    out = virtual(main)
    assert calls.per_slot() == {0: 2, **dict.fromkeys(PLAN[1:], 1)}
    (taken,) = [when for slot, who, when in calls.calls if who == "b" and slot == 0]
    assert taken >= LEASE  # not before a's lease of it ran out
    assert all(who == "a" for slot, who, _ in calls.calls if slot)  # the others: a's alone
    kept = rows(database)
    assert kept[0][0] == "b-0"  # a's result, come at 15 s, did not overwrite b's
    assert ("a", 15.0) in {(who, when) for slot, who, when in calls.ended if slot == 0}
    assert out["b"][0].output == "b-0"
    assert [r.output for r in out["b"]] == [kept[slot][0] for slot in PLAN]


def test_an_owner_that_finds_its_lease_lost_stops_the_attempt_and_reads_the_new_owners_result(
    database: Database,
) -> None:
    """``a``'s renewals stall from 3 s for 9 s: its lease of slot 0 (whose worker runs 30 s),
    claimed at 0, runs out at 10 s and ``b`` takes it over; ``a``'s renewal, done at last,
    finds it lost, cancels its attempt, and its run gives back ``b``'s result."""
    path = database.target
    calls = Calls(hang={("a", 0): 30.0})

    async def main() -> dict[str, Any]:
        a = Stuck(path, writer="inline", lease=LEASE, after=3.0, hung=9.0, flush="each")
        b = Journal(path, writer="inline", lease=LEASE, flush="each")
        return await two(calls, a, b)

    out = virtual(main)
    assert calls.per_slot() == {0: 2, **dict.fromkeys(PLAN[1:], 1)}
    assert not [when for slot, who, when in calls.ended if (slot, who) == (0, "a")]  # stopped
    (taken,) = [when for slot, who, when in calls.calls if (slot, who) == (0, "b")]
    assert taken >= LEASE  # a's lease of it, claimed at 0 and never renewed in time
    assert out["a ended"] < 30.0  # a did not wait its worker out
    assert rows(database)[0][0] == "b-0"
    assert out["a"][0].output == out["b"][0].output == "b-0"
    assert out["a"] == out["b"]


class Shielded(Calls):
    """Calls whose supervisor ``a`` runs slot 0 shielded from cancellation: told its lease is
    lost, the attempt goes on to its end and returns (as a worker that swallows ``Cancelled``
    does)."""

    def worker(self, who: str) -> Any:
        inner = super().worker(who)

        async def worker(slot: int) -> str:
            if (who, slot) != ("a", 0):
                return str(await inner(slot))
            with trio.CancelScope(shield=True):
                output = str(await inner(slot))
            return output

        return worker


@pytest.mark.parametrize("timeout", [None, 100.0])
def test_a_lost_attempt_that_comes_back_anyway_is_dropped_and_its_lane_goes_on(
    database: Database, timeout: float | None
) -> None:
    """As above, but ``a``'s attempt of slot 0 does not stop when its lease is lost (shielded):
    its result, come at 30 s, is not ``a``'s (``b``'s is, read from the journal), no slot after
    it on that lane is cut by the lost lease's cancellation, and with a timer running none is
    said to time out."""
    path = database.target
    calls = Shielded(hang={("a", 0): 30.0})

    async def main() -> dict[str, Any]:
        a = Stuck(path, writer="inline", lease=LEASE, after=3.0, hung=9.0, flush="each")
        b = Journal(path, writer="inline", lease=LEASE, flush="each")
        return await two(calls, a, b, plan=list(range(12)), limit=timeout)

    out = virtual(main)
    assert calls.per_slot() == {0: 2, **dict.fromkeys(range(1, 12), 1)}
    assert [when for slot, who, when in calls.ended if (slot, who) == (0, "a")] == [30.0]
    assert rows(database)[0][0] == "b-0"
    assert all(r.status.value == "ok" for r in out["a"])
    assert out["a"] == out["b"]


def test_one_supervisor_with_leases_or_without_gives_the_same_results(tmp_path: Path) -> None:
    calls = Calls()

    async def main(lease: float | None, name: str) -> Any:
        with Journal(tmp_path / name, writer="inline", lease=lease) as journal:
            supervisor = Supervisor(calls.worker("a"), max_workers=2)
            aggregate = await supervisor.run(PLAN, durable=Durable("r", journal))
            return aggregate, trio.current_time()

    assert virtual(main, LEASE, "leased.db") == virtual(main, None, "plain.db")
    with sqlite3.connect(tmp_path / "leased.db") as conn:  # every lease given up as the run ends
        assert conn.execute("SELECT count(*) FROM leases").fetchone() == (0,)
    conn.close()


def test_a_lease_must_be_a_positive_number_of_seconds(tmp_path: Path) -> None:
    for bad in (0, -1, "30", True):
        with pytest.raises(ValueError, match="lease must be a positive number of seconds"):
            Journal(tmp_path / "runs.db", lease=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_two_processes_on_one_run_one_killed_every_slot_done_once_but_the_killed_ones(
    tmp_path: Path,
) -> None:
    """Two processes run one SQLite run; one is killed with SIGKILL part way. The other
    finishes every slot, with the outcome of a run never killed; a slot's worker is called a
    second time only if the killed process had called it and its result was not journaled."""
    db = tmp_path / "runs.db"
    logs = [tmp_path / f"calls-{n}.log" for n in range(2)]
    children = []
    try:
        children += [lease_child.spawn(str(db), log) for log in logs]  # both opened the journal
        for child in children:  # both start at one instant
            lease_child.go(child)
        victim, survivor = children
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == f"called {lease_child.KILL_AFTER}"
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=60)
        out, err = survivor.communicate(timeout=120)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate(timeout=10)
    assert survivor.returncode == 0, err
    assert json.loads(out.splitlines()[-1]) == lease_child.expected()
    killed, lived = (
        Counter(call.slot for call in lease_child.calls([log]) if call.kind == "S") for log in logs
    )
    assert killed, "the killed process ran no slot"
    with sqlite3.connect(db) as conn:
        owners = dict(conn.execute("SELECT slot, owner FROM results"))
    conn.close()
    assert sorted(owners) == list(range(lease_child.SLOTS))  # every slot journaled, once
    pid = f":{victim.pid}:"
    for slot in range(lease_child.SLOTS):
        calls = killed[slot] + lived[slot]
        attempts = lease_child.attempts(slot)
        if killed[slot] and lived[slot]:  # run again: the killed one's result never journaled
            assert pid not in owners[slot]
            assert lived[slot] == attempts
        else:
            assert calls == attempts, slot  # each attempt's call made once


def test_a_claim_is_one_lease_row_and_a_takeover_keeps_the_rest_of_the_batch_its_owners(
    database: Database,
) -> None:
    """``a`` claims ten slots: one row. While it holds them ``b`` is refused each; once they
    ran out, ``b`` takes over two, which split ``a``'s row around them: ``a``'s renewal finds
    it holds the other eight still, and of its late results only theirs are journaled."""
    path = database.target
    run = ("r", 0)

    async def main() -> Any:
        a = Journal(path, writer="inline", lease=LEASE, flush="each")
        b = Journal(path, writer="inline", lease=LEASE, flush="each")
        await a.begin(run, list(range(10)))
        claimed = await a.claim(run, range(10), "a", 0.0)
        leases = database.query("SELECT first_slot, last_slot, owner FROM leases")
        refused = await b.claim(run, range(10), "b", 0.0)
        await trio.sleep(LEASE + 1)  # a's leases run out, never renewed
        taken = await b.claim(run, [2, 3], "b", 0.0)
        split = sorted(database.query("SELECT first_slot, last_slot, owner FROM leases"))
        still = await a.renew(run, "a")
        for slot in (2, 5):
            a.record(run, slot, SubResult(slot, output=f"a-{slot}"), "a", leased=True)
        await a.committed()
        a.close()
        b.close()
        return claimed, leases, refused, taken, split, still

    claimed, leases, refused, taken, split, still = virtual(main)
    assert [kind for _, kind, _ in claimed] == ["claimed"] * 10
    assert leases == [(0, 9, "a")]  # one row for the ten
    assert [kind for _, kind, _ in refused] == ["held"] * 10
    assert [(slot, kind) for slot, kind, _ in taken] == [(2, "claimed"), (3, "claimed")]
    assert split == [(0, 1, "a"), (2, 3, "b"), (4, 9, "a")]
    assert sorted(still) == [(0, 1), (4, 9)]
    assert rows(database) == {5: ("a-5", "a")}  # slot 2 is b's now: a's result of it dropped


def test_a_durable_runs_own_lease_shares_its_slots_on_a_journal_without_leases(
    database: Database,
) -> None:
    """The lease is the run's (``Durable(lease=)``): two supervisors given it share the run's
    slots on journals opened without leases, and ``lease=None`` leaves a leasing journal's run
    unshared."""
    calls = Calls()

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        a = Journal(database.target, writer="inline", lease=None)
        b = Journal(database.target, writer="inline", lease=None)

        async def go(who: str, journal: Journal) -> None:
            supervisor = Supervisor(calls.worker(who), max_workers=3)
            durable = Durable("shared", journal, lease=LEASE)
            out[who] = await supervisor.run(list(range(20)), durable=durable)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(go, "a", a)
            nursery.start_soon(go, "b", b)
        a.close()
        b.close()

        async def alone(slot: int) -> int:  # what the journal holds while its slot runs
            out["c leases"] = database.query("SELECT count(*) FROM leases")
            return slot

        with Journal(database.target, writer="inline") as c:  # leasing, but not this run
            supervisor = Supervisor(alone, max_workers=3)
            await supervisor.run([0], durable=Durable("leased", c))
            out["leased leases"] = out["c leases"]
            await supervisor.run([0], durable=Durable("alone", c, lease=None))
        return out

    out = virtual(main)
    assert calls.per_slot() == dict.fromkeys(range(20), 1)
    assert {who for _, who, _ in calls.calls} == {"a", "b"}
    assert out["a"] == out["b"]
    assert out["leased leases"] == [(1,)]  # the journal's lease, left out of the Durable
    assert out["c leases"] == [(0,)]  # lease=None: no claim


def test_a_durable_lease_must_be_a_positive_number_of_seconds_or_none() -> None:
    journal = Journal(":memory:", writer="inline")
    for bad in (0, -1, "30", True, float("nan")):
        with pytest.raises(ValueError, match=r"^Durable lease must be a positive number") as caught:
            Durable("r", journal, lease=bad)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)
    assert repr(Durable("r")) == "Durable(run_id='r', journal=None)"
    assert Durable("r", journal, lease=5).lease == 5.0
    assert "lease=5.0" in repr(Durable("r", journal, lease=5))
    journal.close()


def test_the_slots_a_resume_claims_around_those_done_are_one_lease_row(database: Database) -> None:
    """Slots 1, 3 and 5 are journaled: a claim of the others, 0 to 9, is one row over them all
    (a slot done is no one's)."""
    run = ("r", 0)

    async def main() -> Any:
        with Journal(database.target, writer="inline", lease=LEASE, flush="each") as journal:
            await journal.begin(run, list(range(10)))
            for slot in (1, 3, 5):
                journal.record(run, slot, SubResult(slot, output=slot))
            await journal.committed()
            return await journal.claim(run, [0, 2, 4, 6, 7, 8, 9], "a", 0.0)

    claimed = virtual(main)
    assert {kind for _, kind, _ in claimed} == {"claimed"}
    assert database.query("SELECT first_slot, last_slot, owner FROM leases") == [(0, 9, "a")]
