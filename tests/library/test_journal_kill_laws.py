"""The laws of several supervisors on one run, under real kills: four processes share one
1,000-slot run and a ``Capacity`` shared through the journal, while random ones are killed with
SIGKILL and restarted, on each store (a SQLite file, and a PostgreSQL database on the session's
loopback server: the ``database`` fixture). Each worker call is logged by its process (slot,
process, start and end: ``lease_child``), and the test keeps when each victim died and the
leases it held then. The laws:

- every slot finished, its OK row written once, by a process that called its worker;
- a slot's worker called by a second process only after its first owner's lease expired (the
  first owner was killed, and its lease, as the database held it at the kill, ran out), or,
  where the first owner lived (a process starved on a loaded machine renews too late and loses
  its lease, as the step-33 page says), with the first owner's result not journaled unless it
  called the slot again later (a call that ends after its lease was lost is not journaled);
- the shared capacity never exceeded: at no instant more calls in flight, every process
  together, than its size (a killed process's calls end when it dies);
- every process that was not killed ends with the aggregate of a run never killed.

A victim is left unreaped (a zombie) until the end, so that its leases are waited out, not
taken over at once as a process known gone; bounded: a lease of 2 s, calls of 10 to 30 ms,
at most ``KILLS`` kills, a hard timeout."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.library import lease_child
from tests.library.stores import Database

PROCESSES = 4
SLOTS = 1000
CAPACITY = 6
LEASE = 2.0
PAUSE = 0.01
KILLS = 6
TIMEOUT = 240.0  # seconds the whole test may take


class Victim:
    """A process killed: its pid, when it died, and the leases it held then (slot: expiry)."""

    def __init__(self, child: subprocess.Popen[str], database: Database) -> None:
        child.send_signal(signal.SIGKILL)
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, and not reaped
        self.child = child
        self.pid = child.pid
        self.died = time.time()
        self.leases: dict[int, float] = {
            slot: expires
            for first, last, expires in database.query(
                "SELECT first_slot, last_slot, expires FROM leases WHERE owner LIKE ?",
                (f"%:{child.pid}:%",),
            )
            for slot in range(first, last + 1)
        }


def run_killing(database: Database, folder: Path, seed: int) -> tuple[list[Any], list[Victim]]:
    """The run, four processes at a time, a random one killed and restarted every 0.3 to 1.2 s
    while they run, at most ``KILLS`` times: what the processes never killed said, and the
    victims."""
    rng = random.Random(seed)
    logs = iter(folder / f"calls-{n}.log" for n in range(PROCESSES + KILLS))
    deadline = time.monotonic() + TIMEOUT

    def start() -> subprocess.Popen[str]:
        child = lease_child.spawn(database.target, next(logs), SLOTS, CAPACITY, LEASE, PAUSE)
        lease_child.go(child)
        return child

    children: list[subprocess.Popen[str]] = []
    victims: list[Victim] = []
    try:
        children += [start() for _ in range(PROCESSES)]
        while len(victims) < KILLS:
            time.sleep(rng.uniform(0.3, 1.2))
            running = [child for child in children if child.poll() is None]
            if not running:
                break
            victim = Victim(rng.choice(running), database)
            victims.append(victim)
            children.remove(victim.child)
            children.append(start())
        said = []
        for child in children:
            out, err = child.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert child.returncode == 0, err
            said.append(json.loads(out.splitlines()[-1]))
    finally:
        for child in [*children, *(victim.child for victim in victims)]:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=10)
    return said, victims


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_processes_killed_at_random_and_restarted_keep_every_law_of_a_shared_run(
    database: Database, tmp_path: Path
) -> None:
    seed = int(os.environ.get("KILL_LAWS_SEED", random.randrange(2**32)))
    said, victims = run_killing(database, tmp_path, seed)
    note = f"seed {seed} (KILL_LAWS_SEED={seed} runs it again), {len(victims)} kills"
    assert victims, note
    never_killed = lease_child.expected(SLOTS)
    assert all(outcome == never_killed for outcome in said), note

    calls = lease_child.calls(sorted(tmp_path.glob("calls-*.log")))
    died = {victim.pid: victim for victim in victims}
    # every slot finished, its OK row written once, by a process that called it
    rows = database.query("SELECT slot, status, owner FROM results")
    assert sorted(slot for slot, _, _ in rows) == list(range(SLOTS)), note
    assert {status for _, status, _ in rows} == {"ok"}, note
    callers: dict[int, list[lease_child.Call]] = {}
    for call in calls:
        if call.kind == "S":
            callers.setdefault(call.slot, []).append(call)
    writer = {slot: int(owner.rsplit(":", 2)[1]) for slot, _, owner in rows}
    for slot, pid in writer.items():
        assert pid in {call.pid for call in callers[slot]}, (slot, note)
    # a second process called a slot only after its first owner's lease expired
    taken_over = late = 0
    for slot, started in callers.items():
        for before, after in itertools.pairwise(started):
            if before.pid == after.pid:
                continue  # a retry of the same owner
            taken_over += 1
            victim = died.get(before.pid)
            if victim is None:  # its owner lived, and renewed its lease too late
                late += 1
                again = any(c.pid == before.pid and c.at > after.at for c in started)
                assert writer[slot] != before.pid or again, (slot, after.pid, note)
                continue
            assert after.at >= victim.died, (slot, note)
            assert after.at >= victim.leases.get(slot, victim.died), (slot, note)
    # the shared capacity never exceeded: calls in flight, a victim's ending at its death
    events = [(call.at, 1 if call.kind == "S" else -1) for call in calls]
    open_calls = Counter((call.slot, call.pid) for call in calls if call.kind == "S")
    open_calls.subtract((call.slot, call.pid) for call in calls if call.kind == "E")
    for (_, pid), left in open_calls.items():
        assert left in (0, 1), (pid, note)
        if left:  # a call its process never ended: it was killed in it
            assert pid in died, (pid, note)
            events.append((died[pid].died, -1))
    in_flight = most = 0
    for _, step in sorted(events):  # at one instant, an end before a start
        in_flight += step
        most = max(most, in_flight)
    assert most <= CAPACITY, note
    print(
        f"{note}, {taken_over} slots taken over ({late} from a live owner that renewed late), "
        f"at most {most} calls at once"
    )
