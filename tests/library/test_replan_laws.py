"""The laws of a re-planning run (``Supervisor.replan``), over random planners, latencies and
failures, on virtual time.

A random planner plays a drawn script of moves, one per call (first, next and fresh alike): a
batch of new or repeated subtasks (some replacing earlier entries, some saying the last round
made no progress), done, an exception, garbage, or a call that never returns. Whatever it does,
the run must end within its budgets with an answer, keep every dispatched subtask in the ledger
exactly once and in its batch's order, never run more than ``max_workers`` at once, and count
stalls as the model below does.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.virtual_time import run_virtual
from trio_supervisor import Answer, Batch, Done, Ledger, ReplanLimits, Supervisor


class PlannerBroke(Exception):
    """What the random planner raises when its script says so."""


@dataclass(frozen=True)
class Move:
    kind: str  # "batch", "done", "raise", "garbage", "bad-replaces", "hang"
    size: int = 0
    repeat: bool = False  # the batch repeats the ledger's first subtasks instead of new ones
    replace: tuple[int, ...] = ()  # picks, modulo the ledger's size, of entries to replace
    progress: bool = True


moves = st.one_of(
    st.builds(
        Move,
        st.just("batch"),
        st.integers(0, 6),
        st.booleans(),
        st.lists(st.integers(0, 99), max_size=2).map(tuple),
        st.booleans(),
    ),
    st.builds(Move, st.sampled_from(["done", "raise", "garbage", "bad-replaces", "hang"])),
)


@dataclass
class RandomPlanner:
    """A planner that plays ``script``, one move per call; past its end, it is done."""

    script: list[Move]
    calls: list[bool] = field(default_factory=list)  # each call's ``fresh``
    batches: list[tuple[str, ...] | None] = field(default_factory=list)  # per call: its batch
    progress: list[bool | None] = field(default_factory=list)  # per call: its batch's word
    made: int = 0

    async def first(self, task: str) -> Any:
        return await self.decide(Ledger(task), fresh=False)

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Any:
        return await self.decide(ledger, fresh=fresh)

    async def decide(self, ledger: Ledger[str, str], *, fresh: bool) -> Any:
        self.calls.append(fresh)
        self.batches.append(None)
        self.progress.append(None)
        await trio.sleep(0.25)  # a planner takes time too
        move = self.script[len(self.calls) - 1] if len(self.calls) <= len(self.script) else None
        if move is None or move.kind == "done":
            return Done(note="script over")
        if move.kind == "raise":
            raise PlannerBroke("the script said so")
        if move.kind == "garbage":
            return {"subtasks": ["not", "a", "Batch"]}
        if move.kind == "bad-replaces":
            return Batch(["x"], replaces={0: (99, 0)})
        if move.kind == "hang":
            await trio.sleep_forever()
        entries = ledger.entries
        if move.repeat and entries:
            subtasks = [entries[i % len(entries)].subtask for i in range(move.size)]
        else:
            subtasks = [f"t{self.made + i}" for i in range(move.size)]
            self.made += move.size
        replaces = {}
        if entries and subtasks:
            for n, pick in enumerate(move.replace):
                replaces[n % len(subtasks)] = entries[pick % len(entries)].key
        self.batches[-1] = tuple(subtasks)
        self.progress[-1] = move.progress
        return Batch(
            subtasks, note=f"move {len(self.calls)}", replaces=replaces, progress=move.progress
        )


@dataclass
class Worker:
    """A worker whose latency and failure per subtask are drawn, counting what runs at once."""

    latency: dict[str, int]
    fails: set[str]
    calls: list[str] = field(default_factory=list)
    running: int = 0
    peak: int = 0

    async def __call__(self, subtask: str) -> str:
        self.calls.append(subtask)
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await trio.sleep(self.latency.get(subtask, 3) / 4)
        finally:
            self.running -= 1
        if subtask in self.fails:
            raise RuntimeError(f"{subtask} failed")
        return f"out {subtask}"


def calls_of(answer: Answer[str, str]) -> list[int]:
    """The planner call each round's batch came from: round 1's is the first call; each later
    one the call after the previous round's, or, for a fresh plan, the fresh call after that."""
    found: list[int] = []
    for done in answer.ledger.rounds:
        found.append(0 if not found else found[-1] + (2 if done.fresh else 1))
    return found


def stalled(answer: Answer[str, str], planner: RandomPlanner) -> list[bool]:
    """Each round but the last, stalled or not, by the rule: no subtask succeeded that had not
    succeeded before, or the planner's next batch said the round made no progress."""
    verdicts = []
    succeeded: set[str] = set()
    for done, call in zip(answer.ledger.rounds[:-1], calls_of(answer), strict=False):
        new = {entry.subtask for entry in done.entries if entry.result.ok} - succeeded
        succeeded |= new
        verdicts.append(not new or planner.progress[call + 1] is False)
    return verdicts


def expected_fresh(verdicts: list[bool], max_stalls: int, max_resets: int) -> list[bool]:
    """Which rounds should be fresh plans, by the counting rule: up one on a stalled round, down
    one (not below 0) on progress, a fresh plan once past ``max_stalls`` (and the count back to
    0), at most ``max_resets`` times."""
    fresh = [False]
    stalls = resets = 0
    for verdict in verdicts:
        stalls = stalls + 1 if verdict else max(0, stalls - 1)
        if stalls > max_stalls and resets < max_resets:
            resets += 1
            stalls = 0
            fresh.append(True)
        else:
            fresh.append(False)
    return fresh


@settings(max_examples=300, deadline=None)
@given(
    script=st.lists(moves, max_size=12),
    latencies=st.dictionaries(st.sampled_from([f"t{i}" for i in range(40)]), st.integers(1, 12)),
    fails=st.sets(st.sampled_from([f"t{i}" for i in range(40)])),
    max_workers=st.integers(1, 4),
    max_rounds=st.integers(1, 8),
    max_subtasks=st.integers(1, 30),
    max_stalls=st.integers(0, 3),
    max_resets=st.integers(0, 2),
    deadline=st.none() | st.integers(1, 80).map(lambda k: k / 4 + 1 / 8),
)
def test_a_replanning_run_ends_within_its_budgets_with_an_answer_and_a_whole_ledger(
    script: list[Move],
    latencies: dict[str, int],
    fails: set[str],
    max_workers: int,
    max_rounds: int,
    max_subtasks: int,
    max_stalls: int,
    max_resets: int,
    deadline: float | None,
) -> None:
    if deadline is None:  # without a deadline, nothing ends a planner that never returns
        script = [move for move in script if move.kind != "hang"]
    planner = RandomPlanner(script)
    worker = Worker(latencies, fails)
    supervisor = Supervisor(worker, max_workers=max_workers)

    async def main() -> tuple[Answer[str, str], float]:
        start = trio.current_time()
        answer = await supervisor.replan(
            "the task",
            planner,
            limits=ReplanLimits(
                max_rounds=max_rounds,
                max_subtasks=max_subtasks,
                max_stalls=max_stalls,
                max_resets=max_resets,
            ),
            deadline=deadline,
        )
        return answer, trio.current_time() - start

    answer, wall = run_virtual(main)
    ledger = answer.ledger
    rounds = ledger.rounds
    # within its budgets, and by its deadline
    assert len(rounds) <= max_rounds
    assert len(ledger) <= max_subtasks
    if deadline is not None:
        assert wall <= deadline
    # every dispatched subtask is in the ledger once, where it ran; nothing ran outside it
    ran = Counter(entry.subtask for entry in ledger.entries if entry.result.attempts > 0)
    assert Counter(worker.calls) == ran
    for done in rounds:
        assert [entry.key for entry in done.entries] == [
            (done.number, index) for index in range(len(done.entries))
        ]
    # each round's results in its batch's order: the batch's first subtasks (the budget may cut
    # its tail), in order. Round 1's batch is the first call's; each later one the next call's,
    # or, for a fresh plan, the fresh call's that followed it.
    for done, call in zip(rounds, calls_of(answer), strict=True):
        batch = planner.batches[call]
        if done.error is None:
            assert batch is not None
            assert tuple(entry.subtask for entry in done.entries) == batch[: len(done.entries)]
        else:
            assert batch is None
            assert done.entries == ()
    assert worker.peak <= max_workers
    # always an answer, degraded exactly when a budget ended the run or a failure is unsettled
    assert isinstance(answer.text, str)
    assert answer.degraded == (answer.ended_by is not None or bool(ledger.unsettled()))
    assert answer.degraded == ("(degraded: " in answer.text)
    if answer.ended_by is None:
        assert answer.reason.startswith("the planner is done")
    # a round is a stall when nothing new succeeded (a failed planner's round too) or by the
    # planner's word; the stall count goes up on a stall and down by one on progress; past
    # max_stalls a fresh plan, at most max_resets times
    verdicts = stalled(answer, planner)
    assert [done.stalled for done in rounds[:-1]] == verdicts
    fresh = expected_fresh(verdicts, max_stalls, max_resets)
    assert [done.fresh for done in rounds] == fresh[: len(rounds)]


@settings(max_examples=100, deadline=None)
@given(fresh_after=st.integers(0, 3), max_resets=st.integers(0, 2))
def test_past_max_stalls_and_max_resets_the_run_ends_by_max_stalls_naming_the_planners_failure(
    fresh_after: int, max_resets: int
) -> None:
    planner = RandomPlanner([Move("raise")] * 50)
    supervisor = Supervisor(Worker({}, set()), max_workers=2)

    async def main() -> Answer[str, str]:
        return await supervisor.replan(
            "t",
            planner,
            limits=ReplanLimits(max_rounds=50, max_stalls=fresh_after, max_resets=max_resets),
        )

    answer = run_virtual(main)
    assert answer.ended_by == "max_stalls"
    assert answer.degraded
    assert "the planner raised PlannerBroke: the script said so" in answer.reason
    # each failed round stalls: past max_stalls (fresh_after + 1 stalls), a fresh plan
    assert planner.calls.count(True) == max_resets
    assert len(answer.ledger.rounds) == (max_resets + 1) * (fresh_after + 1)
    assert all(
        done.error == "the planner raised PlannerBroke: the script said so"
        for done in answer.ledger.rounds
    )


class Sequenced:
    """A planner that says, round after round, whether the round before made progress: each
    batch is one new subtask (which succeeds), with ``progress`` as the script says."""

    def __init__(self, words: list[bool]) -> None:
        self.words = words
        self.fresh: list[int] = []  # the calls that asked for a fresh plan

    async def first(self, task: str) -> Batch[str]:
        return Batch(["s0"])

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Batch[str] | Done:
        if fresh:
            self.fresh.append(len(ledger.rounds))
            return Batch([f"fresh{len(ledger.rounds)}"])
        if len(ledger.rounds) > len(self.words):
            return Done()
        return Batch([f"s{len(ledger.rounds)}"], progress=self.words[len(ledger.rounds) - 1])


def test_progress_takes_one_off_the_stall_count_rather_than_clearing_it() -> None:
    # stall, stall, progress, stall, stall: counted 1, 2, 1, 2, 3, so past max_stalls=2 after
    # the fifth round (a count cleared by progress would stand at 2)
    planner = Sequenced([False, False, True, False, False, True])
    supervisor = Supervisor(Worker({}, set()), max_workers=2)
    answer = run_virtual(
        functools.partial(supervisor.replan, "t", planner, limits=ReplanLimits(max_stalls=2))
    )
    assert planner.fresh == [5]
    assert [done.fresh for done in answer.ledger.rounds] == [False] * 5 + [True, False]
    assert answer.ended_by is None


def test_a_batch_past_max_subtasks_is_dispatched_as_far_as_it_fits_and_ends_the_run() -> None:
    planner = RandomPlanner([Move("batch", 5), Move("batch", 1)])
    supervisor = Supervisor(Worker({}, set()), max_workers=2)
    answer = run_virtual(
        functools.partial(supervisor.replan, "t", planner, limits=ReplanLimits(max_subtasks=3))
    )
    assert [entry.subtask for entry in answer.ledger.entries] == ["t0", "t1", "t2"]
    assert planner.calls == [False]  # not asked again: its plan could not be followed
    assert answer.ended_by == "max_subtasks"
    assert answer.reason == "max_subtasks (3) reached in round 1, 2 of its subtasks not dispatched"
    assert answer.text.endswith(f"\n(degraded: {answer.reason})")
