"""Leases: several supervisors on one journaled run share its slots, each slot run by one.

A [`Keeper`][trio_supervisor._engine.leases.Keeper] is one supervisor's side of it, for one run
(a task in the run's nursery beside the timer). It claims the run's slots in the journal ahead
of its lanes, a few at a time in plan order (one transaction, and one lease row, each time; the
first claim on the run's trip to begin it), far enough ahead that its lanes do not wait for the
next claim, and hands its lanes only the slots it claimed; it renews its leases every third of a
lease while they run; a slot another supervisor holds is set aside and tried again when that
lease runs out (or sooner, every third of a lease: its holder may finish it, and its result is
then taken from the journal, as a resumed run's is). A slot whose lease it lost (renewed too
late: another took it over) has its attempt cancelled, and its result, if it comes anyway, is
not journaled: the row's write is conditional on the lease (``_journal.py``).

The lanes see it only through their feed (``take``, ``ready``, ``more``) and through
``holding``, which names the lane each attempt of a leased slot runs on (its scope is
cancelled if the lease is lost); a run without leases (no
journal, or a journal given ``lease=None``) has none, and pays nothing.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import trio

from .._contract import SubResult, revised
from .._identity import RunName, covers
from .._trace import Trace
from .attempt import Running

CLAIMED, HELD, DONE = "claimed", "held", "done"  # what a claim of a slot found (the journal's)
RENEWALS = 3  # a lease is renewed this many times per its length
POLL = 0.05  # seconds before a slot another holds is first looked at again (then doubled)
FIRST = 2  # slots claimed ahead at first, as a multiple of the lanes
GROWTH = 16  # the most slots claimed ahead, as a multiple of the first claim's
AHEAD = 4  # slots claimed ahead, as a multiple of those the lanes take while a claim is out


class Keeper:
    """One supervisor's leases of one run's slots ``todo`` (in plan order): what its lanes take
    (the slots it claimed), and the task that claims, renews and takes over.

    Args:
      run: the run's name, whose ``claim``, ``renew`` and ``release`` reach its journal.
      plan: the run's subtasks.
      todo: the slots without a result yet, in plan order.
      done: where a slot another supervisor finished puts its journaled result.
      trace: records such a slot as journaled (or None).
      lanes: how many lanes take slots: the keeper claims twice as many ahead at first, at
        least 4.
      since: unix time from which a failure journaled is a peer's (when the run began); now
        when None.
    """

    def __init__(
        self,
        run: RunName,
        plan: Sequence[Any],
        todo: Sequence[int],
        done: Callable[[int, SubResult[Any, Any]], None],
        trace: Trace | None,
        lanes: int,
        since: float | None = None,
    ) -> None:
        assert run.lease is not None
        self.run = run
        self.plan = plan
        self.length = run.lease
        self.every = run.lease / RENEWALS
        # how long a slot another holds is set aside: POLL at first, doubled each time every
        # slot looked at again was still held, up to a renewal's period; POLL again once one
        # was not (its holder is done with it, or gone)
        self.poll = min(POLL, self.every)
        # how many slots it claims ahead of its lanes: twice as many as they are at first,
        # four times more each time they ran out of slots while more were to be claimed (fast
        # workers take a claim's slots before the next claim is back), up to GROWTH times that
        # (a claim costs one row, however many slots it takes)
        self.chunk = max(4, FIRST * lanes)
        self.most = GROWTH * self.chunk
        self.starved = False  # the lanes ran out of claimed slots since the last claim
        # and, claim by claim, so many ahead that the next claim is back before the lanes take
        # half of them, at the pace they took slots since the last claim (real time only: on a
        # virtual clock a claim takes none)
        self.taken = 0  # slots the lanes took
        self.paced = (trio.current_time(), 0)  # trio time of the last claim, slots taken then
        # a failure journaled after this is a peer's, final
        self.since = time.time() if since is None else since
        self.done = done
        self.trace = trace
        # invariant: every slot of todo is in exactly one of fresh, deferred, queue or held
        # (queue is a part of held) until it is settled; left counts those not settled
        self.fresh: deque[int] = deque(todo)  # never claimed yet, in plan order
        self.deferred: dict[int, float] = {}  # held by another: trio time to try again
        self.queue: deque[int] = deque()  # claimed, not taken by a lane yet
        self.held: set[int] = set()  # claimed, not settled (its result not put)
        self.running: dict[int, Running] = {}  # the lanes of the attempts running, by slot
        self.left = len(todo)
        self._changed = trio.Event()  # queue got a slot, or nothing is left
        self._wake = trio.Event()  # the lanes want more claimed

    # -- what the lanes call ---------------------------------------------------------------------

    def take(self) -> tuple[int, Any] | None:
        """The next slot claimed for this supervisor, and its subtask; None if none is now."""
        queue = self.queue
        if not queue:
            return None
        slot = queue.popleft()
        self.taken += 1
        if len(queue) * 2 < self.chunk:
            self._wake.set()
        return slot, self.plan[slot]

    def ready(self) -> bool:
        """Whether ``take`` would give a slot now."""
        return bool(self.queue)

    async def more(self) -> bool:
        """Wait until a slot is claimed for this supervisor (True), or every slot is settled
        (False)."""
        while not self.queue:
            if not self.left:
                return False
            if self.fresh:
                self.starved = True
            self._wake.set()
            if self._changed.is_set():
                self._changed = trio.Event()
            await self._changed.wait()
        return True

    def settled(self, slot: int) -> None:
        """Slot ``slot``'s final result was put (and journaled, under its lease)."""
        if slot in self.held:
            self.held.discard(slot)
            self._settle()

    def holding(self, slot: int, running: Running) -> bool:
        """Whether ``slot``'s lease is held still (if not, another supervisor runs it: no
        attempt starts); while its attempt runs, a loss of the lease cancels ``running``'s
        scope (its lane's: one per lane, not one per attempt, which would cost a fast slot
        more than its journaling)."""
        if slot not in self.held:
            return False
        self.running[slot] = running
        return True

    def let_go(self, slot: int) -> None:
        """The attempt of ``slot`` is over: a loss of its lease no longer cancels its lane."""
        self.running.pop(slot, None)

    def lost(self, slot: int) -> bool:
        """Whether ``slot``'s lease is lost (not held, and not settled by this supervisor)."""
        return slot not in self.held

    # -- the keeper's task -----------------------------------------------------------------------

    def _settle(self) -> None:
        self.left -= 1
        if not self.left:
            self._changed.set()

    async def claim(self) -> None:
        """Claim what the lanes will take next: slots set aside whose time came, then fresh
        ones, in plan order, up to ``chunk`` ahead."""
        now = trio.current_time()
        if self.starved:
            self.starved = False
            self.chunk = min(4 * self.chunk, self.most)
        room = self.chunk - len(self.queue)
        if room <= 0:
            return
        due = sorted(slot for slot, at in self.deferred.items() if at <= now)[:room]
        wanted = due + list(itertools.islice(self.fresh, room - len(due)))  # not fresh[i]: O(i)
        if not wanted:
            return
        for slot in due:
            del self.deferred[slot]
        for _ in range(len(wanted) - len(due)):
            self.fresh.popleft()
        kinds = await self.run.claim(wanted, self.since)
        self._pace(now, trio.current_time() - now)
        self._claimed(due, kinds, now)

    def first(self, wanted: Sequence[int], kinds: list[tuple[int, str, Any]]) -> None:
        """Take the first claim, made as the run began (``DurableRun.begin_leased``): of the
        slots ``wanted``, the first of those to do, what it found (``kinds``)."""
        for slot in wanted:
            assert self.fresh[0] == slot, "the first claim is of the first slots to do"
            self.fresh.popleft()
        self._claimed([], kinds, trio.current_time())

    def _claimed(self, due: list[int], kinds: list[tuple[int, str, Any]], now: float) -> None:
        """Put what a claim at ``now`` found (``kinds``) where it goes: a slot claimed in the
        queue, one held set aside, one done settled; ``due``: the slots it looked at again."""
        if due:  # looked at again: still held, all of them (wait longer), or not
            rechecked = set(due)
            held = all(kind == HELD for slot, kind, _ in kinds if slot in rechecked)
            self.poll = min(2 * self.poll, self.every) if held else min(POLL, self.every)
        for slot, kind, found in kinds:
            if kind == CLAIMED:
                self.held.add(slot)
                self.queue.append(slot)
            elif kind == HELD:  # again when its lease runs out, or sooner: it may be done
                self.deferred[slot] = now + min(max(found, 0.0), self.poll)
            else:
                self.done(slot, revised(found, subtask=self.plan[slot]))
                if self.trace is not None:
                    self.trace.journaled(slot)
                self._settle()
        if self.queue:
            self._changed.set()

    def _pace(self, now: float, took: float) -> None:
        """Claim ``AHEAD`` times as many slots as the lanes take while a claim is out (it
        took ``took`` seconds at ``now``), up to ``most``."""
        then, taken = self.paced
        if now > then and took > 0:
            rate = (self.taken - taken) / (now - then)
            self.chunk = min(self.most, max(self.chunk, math.ceil(AHEAD * rate * took)))
        self.paced = (now, self.taken)

    async def renew(self) -> None:
        """Renew the leases held; a slot whose lease was lost is given up: its attempt is
        cancelled, and it is set aside to be read back once its new owner is done."""
        still = covers(await self.run.renew())
        lost = {slot for slot in self.held if not still(slot)}
        if not lost:
            return
        now = trio.current_time()
        for slot in lost:
            self.held.discard(slot)
            self.deferred[slot] = now
            running = self.running.pop(slot, None)
            if running is not None:  # its attempt runs now: it is the one its lane's scope cuts
                assert running.scope is not None
                running.scope.cancel()
        self.queue = deque(slot for slot in self.queue if slot not in lost)

    async def keep(self) -> None:
        """The keeper's task, until every slot is settled: claim while the lanes have fewer
        than ``chunk`` slots claimed ahead and some slot may be claimed (a fresh one, or one
        set aside whose time came); renew every third of a lease; else sleep until a lane
        takes a slot, the next renewal, or a set-aside slot's time."""
        renewal = trio.current_time() + self.every
        while self.left:
            await self.claim()
            if trio.current_time() >= renewal:
                await self.renew()
                renewal = trio.current_time() + self.every
            if len(self.queue) < self.chunk and (self.fresh or self._due()):
                await trio.lowlevel.checkpoint()
                continue
            wake = renewal if self.held else math.inf
            if len(self.queue) < self.chunk:  # a full queue claims nothing, due or not
                wake = min(wake, min(self.deferred.values(), default=math.inf))
            with trio.move_on_at(wake):
                await self._wake.wait()
            self._wake = trio.Event()

    def _due(self) -> bool:
        now = trio.current_time()
        return any(at <= now for at in self.deferred.values())

    def release(self) -> None:
        """Give up every lease left (the run ends, well or not), without waiting: another
        supervisor, or a resume, may take those slots once what this run journaled is
        committed."""
        self.run.release()
