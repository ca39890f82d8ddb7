"""Supervisor.replan on named cases: the research demo's rounds, a static plan's blind spot, a
planner that fails, hangs or is interrupted, the ledger's settling rule, and bad options."""

from __future__ import annotations

import ast
import functools
import inspect
import re
from typing import Any

import pytest
import trio
import trio.testing

from tests.library.virtual_time import run_virtual
from trio_supervisor import (
    Aggregate,
    Answer,
    Batch,
    Done,
    Entry,
    Ledger,
    ReplanLimits,
    Round,
    Status,
    SubResult,
    Supervisor,
    _replan,
)
from trio_supervisor.testing import ScriptedPlanner, SimulatedAgent

TASK = "competitor pricing; customer reviews; inventory"
FOUND = "Acme undercuts our list price by 10%"


def research_agent() -> SimulatedAgent:
    """The demo's sub-agent: the reviews fail; the pricing result names a competitor."""
    return SimulatedAgent(0, fail={"customer reviews"}, outputs={"competitor pricing": FOUND})


def research_planner() -> ScriptedPlanner:
    return ScriptedPlanner(
        follow_ups={"Acme": ["Acme's discounts"]},
        reroutes={"reviews": ["customer reviews, from app stores"]},
    )


async def test_the_planner_follows_up_what_a_result_names_and_reroutes_a_failure(
    autojump_clock: trio.testing.MockClock,
) -> None:
    supervisor = Supervisor(research_agent(), max_workers=4)
    answer = await supervisor.replan(TASK, research_planner())
    rounds = answer.ledger.rounds
    assert [[entry.subtask for entry in done.entries] for done in rounds] == [
        ["competitor pricing", "customer reviews", "inventory"],
        ["Acme's discounts", "customer reviews, from app stores"],
    ]
    assert rounds[1].note == (
        "competitor pricing names Acme: follow it up; customer reviews failed: rerouted"
    )
    assert rounds[1].entries[1].replaces == (1, 1)
    assert (answer.ended_by, answer.degraded) == (None, False)
    assert answer.reason == "the planner is done after 2 rounds: every subtask has a result"
    assert answer.text == (
        f"competitor pricing: {FOUND}\n"
        "inventory: findings on inventory\n"
        "Acme's discounts: findings on Acme's discounts\n"
        "customer reviews, from app stores: findings on customer reviews, from app stores"
    )
    # the rounds follow one another, each as long as its slowest subtask
    ends = [entry.result.finished for entry in rounds[0].entries]
    assert rounds[0].finished == max(end for end in ends if end is not None)
    assert rounds[1].dispatched == rounds[0].finished


async def test_one_round_allowed_the_same_task_ends_degraded_with_an_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    supervisor = Supervisor(research_agent(), max_workers=4)
    answer = await supervisor.replan(TASK, research_planner(), limits=ReplanLimits(max_rounds=1))
    assert len(answer.ledger.rounds) == 1
    assert (answer.ended_by, answer.degraded) == ("max_rounds", True)
    assert answer.reason == "max_rounds (1) reached, the planner wanted more"
    assert answer.text == (
        f"competitor pricing: {FOUND}\n"
        "customer reviews: (missing: SubAgentError: sub-agent failed on 'customer reviews')\n"
        "inventory: findings on inventory\n"
        "(degraded: max_rounds (1) reached, the planner wanted more)"
    )


@pytest.mark.parametrize("max_workers", [1, 3])
async def test_a_static_plan_cannot_produce_the_follow_up_results(
    max_workers: int, autojump_clock: trio.testing.MockClock
) -> None:
    # the plain supervisor runs the plan it was given once: what a result names goes unasked
    supervisor = Supervisor(research_agent(), max_workers=max_workers)
    static = await supervisor.run(TASK)
    replanned = await supervisor.replan(TASK, research_planner())
    follow_ups = {"Acme's discounts", "customer reviews, from app stores"}
    assert follow_ups.isdisjoint(result.subtask for result in static)
    assert static.degraded
    assert follow_ups <= {entry.subtask for entry in replanned.ledger.entries}
    assert not replanned.degraded


class Failing:
    """A planner whose first batch is fine and whose every later decision is ``decision``
    (raised, when it is an exception)."""

    def __init__(self, decision: Any) -> None:
        self.decision = decision

    async def first(self, task: str) -> Batch[str]:
        return Batch(["a", "b"])

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Any:
        if isinstance(self.decision, BaseException):
            raise self.decision
        if callable(self.decision):  # the decision is made, or refused, as the planner runs
            return self.decision()
        return self.decision


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (ValueError("no idea"), "the planner raised ValueError: no idea"),
        (["c", "d"], "the planner returned list, not a Batch or a Done"),
        (None, "the planner returned NoneType, not a Batch or a Done"),
        (
            Batch(["c"], replaces={0: (7, 0)}),
            "the planner's batch replaces (7, 0), which is no (round, index) of the ledger",
        ),
        (
            lambda: Batch(["c"], replaces={3: (1, 0)}),
            "the planner raised ValueError: a Batch's replaces has the index 3, not one of its "
            "1 subtasks",
        ),
        (
            lambda: Batch(["c"], replaces={0: ["1", 0]}),  # type: ignore[dict-item]
            "the planner raised TypeError: a Batch replaces an entry named by (round, index), "
            "two ints from 1 and 0, got ['1', 0]",
        ),
        (
            lambda: Batch(["c"], replaces={0: (1, 0, 2)}),  # type: ignore[dict-item]
            "the planner raised TypeError: a Batch replaces an entry named by (round, index), "
            "two ints from 1 and 0, got (1, 0, 2)",
        ),
        (
            lambda: Batch(["c"], replaces={0: (True, 0)}),
            "the planner raised TypeError: a Batch replaces an entry named by (round, index), "
            "two ints from 1 and 0, got (True, 0)",
        ),
        (
            lambda: Batch(["c"], replaces={"0": (1, 0)}),  # type: ignore[dict-item]
            "the planner raised ValueError: a Batch's replaces has the index '0', not one of "
            "its 1 subtasks",
        ),
        (
            lambda: Batch(["c"], progress="no"),  # type: ignore[arg-type]
            "the planner raised TypeError: a Batch's progress must be True or False, got str",
        ),
        (
            lambda: Done(answer=123),  # type: ignore[arg-type]
            "the planner raised TypeError: a Done's answer must be a str or None, got int",
        ),
    ],
)
def test_a_planner_that_raises_or_returns_garbage_is_a_recorded_stall_named_in_the_answer(
    decision: Any, said: str
) -> None:
    supervisor = Supervisor(SimulatedAgent(0), max_workers=2)
    replan = functools.partial(
        supervisor.replan, "t", Failing(decision), limits=ReplanLimits(max_stalls=1)
    )
    answer = run_virtual(replan)
    rounds = answer.ledger.rounds
    # stalls counted 0, 1, 2 (a fresh plan), 1, 2 (a fresh plan), 1, 2 (no fresh plan left)
    assert [done.error for done in rounds] == [None, *[said] * 6]
    assert [done.stalled for done in rounds] == [False, *[True] * 6]
    assert [done.fresh for done in rounds] == [False, False, False, True, False, True, False]
    assert all(done.entries == () for done in rounds[1:])
    assert answer.ended_by == "max_stalls"
    assert answer.reason == (
        "more than max_stalls (1) stalled rounds, after max_resets (2) fresh plans; "
        f"the planner's last failure: {said}"
    )
    assert answer.text.startswith("a: findings on a\nb: findings on b\n(degraded: ")


class Hanging:
    async def first(self, task: str) -> Batch[str]:
        return Batch(["a", "b"])

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Done:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_planner_that_never_returns_is_ended_by_the_deadline_with_an_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    supervisor = Supervisor(SimulatedAgent(0, latencies={"a": 1, "b": 2}), max_workers=2)
    start = trio.current_time()
    answer = await supervisor.replan("t", Hanging(), deadline=5)
    assert trio.current_time() - start == 5
    assert (answer.ended_by, answer.degraded) == ("deadline", True)
    assert answer.reason == "the run's deadline of 5s expired while the planner decided"
    assert answer.text == (
        "a: findings on a\nb: findings on b\n"
        "(degraded: the run's deadline of 5s expired while the planner decided)"
    )


async def test_the_deadline_cancels_a_round_that_runs_and_keeps_it_in_the_ledger(
    autojump_clock: trio.testing.MockClock,
) -> None:
    supervisor = Supervisor(SimulatedAgent(0, latencies={"a": 1}, hang={"b"}), max_workers=2)
    answer = await supervisor.replan("t", Hanging(), deadline=3)
    [done] = answer.ledger.rounds
    assert [entry.result.status for entry in done.entries] == [Status.OK, Status.CANCELLED]
    assert answer.reason == "the run's deadline of 3s expired during round 1"
    assert answer.text.splitlines()[1] == (
        "b: (missing: Cancelled: the run's deadline of 3s expired before it finished)"
    )


class Interrupting:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def first(self, task: str) -> Batch[str]:
        raise self.error

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Done:
        return Done()


def test_keyboard_interrupt_from_the_planner_comes_out_bare() -> None:
    supervisor = Supervisor(SimulatedAgent(0), max_workers=2)
    with pytest.raises(KeyboardInterrupt, match=r"^stop$"):
        run_virtual(supervisor.replan, "t", Interrupting(KeyboardInterrupt("stop")))


async def test_cancelling_a_run_cancels_its_planner_and_returns_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    supervisor = Supervisor(SimulatedAgent(0), max_workers=2)
    answers: list[Answer[str, str]] = []
    with trio.move_on_after(4) as scope:
        answers.append(await supervisor.replan("t", Hanging()))
    assert scope.cancelled_caught
    assert answers == []


def test_a_failure_is_settled_by_a_successful_replacement_even_down_a_chain() -> None:
    ledger: Ledger[str, str] = Ledger("t")
    failed = SubResult[str, str]("x", error="E")
    ok = SubResult[str, str]("y", output="Y")
    entries = [
        Entry(1, 0, failed),
        Entry(2, 0, failed, replaces=(1, 0)),
        Entry(3, 0, ok, replaces=(2, 0)),
        Entry(3, 1, failed),
    ]
    for number in (1, 2, 3):
        chosen = tuple(entry for entry in entries if entry.round == number)
        ledger.record(Round(number, "", chosen, 0.0, 0.0, 0.0))
    assert [ledger.settled(entry) for entry in ledger.entries] == [True, True, True, False]
    assert ledger.unsettled() == [entries[3]]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"limits": 3},
            TypeError,
            "limits must be a ReplanLimits (ReplanLimits(max_rounds=..., max_subtasks=..., "
            "max_stalls=..., max_resets=...)), got int 3",
        ),
        ({"deadline": 0}, ValueError, "deadline must be a positive number, got 0"),
        ({"task": ["a"]}, TypeError, "task must be a str (what the planner reads), got list"),
        (
            {"planner": object()},
            TypeError,
            "planner must have async first(task) and next(task, ledger, *, fresh) methods "
            "(see trio_supervisor.Planner), got object",
        ),
    ],
)
async def test_bad_options_are_refused_before_the_planner_is_asked(
    options: dict[str, Any],
    error: type[Exception],
    message: str,
    autojump_clock: trio.testing.MockClock,
) -> None:
    asked: list[str] = []

    class Spy(ScriptedPlanner):
        async def first(self, task: str) -> Batch[str] | Done:
            asked.append(task)
            return await super().first(task)

    given: dict[str, Any] = {"task": "a; b", "planner": Spy(), **options}
    supervisor = Supervisor(SimulatedAgent(0), max_workers=2)
    with pytest.raises(error, match="^" + re.escape(message)):
        await supervisor.replan(given.pop("task"), given.pop("planner"), **given)
    assert asked == []


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_rounds": 0}, ValueError, "ReplanLimits max_rounds must be >= 1, got 0"),
        ({"max_subtasks": 0}, ValueError, "ReplanLimits max_subtasks must be >= 1, got 0"),
        ({"max_stalls": -1}, ValueError, "ReplanLimits max_stalls must be >= 0, got -1"),
        (
            {"max_resets": 1.5},
            TypeError,
            "ReplanLimits max_resets must be an int >= 0, got float 1.5",
        ),
    ],
)
def test_bad_limits_are_refused_when_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match="^" + re.escape(message) + "$"):
        ReplanLimits(**options)


def test_a_batch_and_a_scripted_planner_refuse_a_str_where_subtasks_go() -> None:
    with pytest.raises(TypeError, match=re.escape("a Batch's subtasks must be a sequence")):
        Batch("a; b")
    with pytest.raises(TypeError, match=re.escape("follow_ups['Acme'] must be a sequence")):
        ScriptedPlanner(follow_ups={"Acme": "Acme's discounts"})


class Rerouting:
    """A planner that reroutes each round's failure to a fresh subtask, ``rounds`` times in
    all, each standing in for the one before; then it is done."""

    def __init__(self, rounds: int, *, as_json: bool = False) -> None:
        self.rounds = rounds
        self.as_json = as_json  # name the entry replaced by a list, as parsed JSON does

    async def first(self, task: str) -> Batch[int]:
        return Batch([1])

    async def next(self, task: str, ledger: Ledger[int, str], *, fresh: bool) -> Any:
        last = ledger.rounds[-1]
        if last.number >= self.rounds:
            return Done(note="rerouted to the end")
        key: Any = list(last.entries[0].key) if self.as_json else last.entries[0].key
        return Batch([last.number + 1], replaces={0: key})


def test_a_chain_of_ten_thousand_reroutes_ends_with_an_answer() -> None:
    """Each round reroutes the previous round's failure; the last one succeeds and so settles
    every entry of the chain: a whole answer, with no depth limit (it was RecursionError after
    about 500 rounds)."""
    rounds = 10_000

    async def worker(n: int) -> str:
        if n < rounds:
            raise ValueError(f"source {n} is down")
        return "found it"

    supervisor = Supervisor(worker, max_workers=1)
    replan = functools.partial(
        supervisor.replan,
        "t",
        Rerouting(rounds),
        limits=ReplanLimits(max_rounds=rounds, max_subtasks=rounds, max_stalls=rounds),
    )
    answer = run_virtual(replan)
    assert (answer.degraded, answer.ended_by) == (False, None)
    assert answer.text == f"{rounds}: found it"
    assert len(answer.ledger) == rounds
    assert answer.ledger.unsettled() == []


def test_a_planners_json_pair_is_taken_as_the_entry_it_names() -> None:
    """``replaces={0: [1, 0]}`` (what a planner that parses JSON produces) is the entry
    ``(1, 0)``: it settles it."""

    async def worker(n: int) -> str:
        if n == 1:
            raise ValueError("down")
        return "found"

    supervisor = Supervisor(worker, max_workers=1)
    answer = run_virtual(supervisor.replan, "t", Rerouting(2, as_json=True))
    assert answer.ledger.rounds[1].entries[0].replaces == (1, 0)
    assert (answer.degraded, answer.text) == (False, "2: found")
    parsed: Any = {0: [1, 0]}
    assert Batch([2], replaces=parsed) == Batch([2], replaces={0: (1, 0)})


def test_a_batch_cannot_be_changed_once_the_run_has_checked_it() -> None:
    batch = Batch(["a"], replaces={0: (1, 0)})
    with pytest.raises(TypeError):
        batch.replaces[0] = [7, 7]  # type: ignore[index]


def test_a_ledger_settles_a_chain_of_ten_thousand_entries_without_recursion() -> None:
    ledger: Ledger[int, str] = Ledger("t")
    failed = SubResult[int, str](0, error="E")
    for number in range(1, 10_001):
        replaces = None if number == 1 else (number - 1, 0)
        result = failed if number < 10_000 else SubResult[int, str](number, output="Y")
        ledger.record(Round(number, "", (Entry(number, 0, result, replaces),), 0, 0, 0))
    assert ledger.settled(ledger.entry((1, 0)))
    assert ledger.unsettled() == []


class Recorded:
    """Not a Supervisor: anything that can run a batch can run a re-planning run."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []

    async def __call__(
        self, task: Any, /, *, deadline: float | None = None, trace: Any = None, run: Any = None
    ) -> Aggregate[int, str]:
        batch = list(task)
        self.batches.append(batch)
        return Aggregate([SubResult(n, output=f"ran {n}") for n in batch])


def test_replan_runs_with_anything_that_runs_a_batch_and_imports_no_supervisor() -> None:
    runner = Recorded()
    answer = run_virtual(functools.partial(_replan.replan, runner, "t", Rerouting(3), **BUDGETS))
    assert runner.batches == [[1], [2], [3]]
    assert answer.text == "1: ran 1\n2: ran 2\n3: ran 3"
    tree = ast.parse(inspect.getsource(_replan))
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not imported & {"_supervisor", "_run"}


BUDGETS: dict[str, Any] = {"limits": ReplanLimits(), "deadline": None}


def test_a_ledger_records_the_next_round_or_the_latest_again_and_refuses_the_rest() -> None:
    ledger: Ledger[str, str] = Ledger("t")
    first = Round(1, "", (Entry(1, 0, SubResult[str, str]("a", output="A")),), 0.0, 0.0, 0.0)
    with pytest.raises(
        ValueError, match=r"^the ledger has 0 rounds: record round 1 \(the next\), not 2$"
    ):
        ledger.record(Round(2, "", (), 0.0, 0.0, 0.0))
    ledger.record(first)
    ledger.record(Round(1, "", first.entries, 0.0, 0.0, 0.0, stalled=True))  # learnt later
    assert ledger.rounds[0].stalled is True
    assert len(ledger) == 1  # its entries count once
    with pytest.raises(ValueError, match=r"^round 1 is recorded again with other entries"):
        ledger.record(Round(1, "", (), 0.0, 0.0, 0.0))
    with pytest.raises(
        ValueError, match=r"record round 2 \(the next\) or 1 \(the latest again\), not 5"
    ):
        ledger.record(Round(5, "", (), 0.0, 0.0, 0.0))
    with pytest.raises(TypeError, match=r"^the ledger records a Round, got tuple$"):
        ledger.record((2, "", (), 0.0, 0.0, 0.0))  # type: ignore[arg-type]
    assert [done.number for done in ledger.rounds] == [1]
