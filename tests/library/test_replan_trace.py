"""Supervisor.replan records every round into one trace: each round's batch as the trace's next
slots, so its slots are the ledger's entries in order, retries kept on their own slot, a child
run nested under the slot whose attempt made it; round headings head the top run's rows only."""

from __future__ import annotations

import pytest
import trio
from rich.console import Console

from trio_supervisor import ReplanLimits, Retry, Status, Supervisor, Trace
from trio_supervisor.testing import ScriptedPlanner, SimulatedAgent
from trio_supervisor.timeline import render_timeline, timeline_rows

TASK = "pricing; reviews; inventory"
RULES = ScriptedPlanner(reroutes={"reviews": ["reviews, from app stores"]})


async def test_the_trace_holds_one_slot_per_ledger_entry_round_after_round(
    autojump_clock: object,
) -> None:
    agent = SimulatedAgent(0, fail={"reviews"}, flaky={"pricing": 1})
    trace = Trace()
    supervisor: Supervisor[str, str] = Supervisor(agent, max_workers=2, retry=Retry(attempts=2))
    answer = await supervisor.replan(TASK, RULES, trace=trace)
    entries = answer.ledger.entries
    assert [slot.subtask for slot in trace.slots] == [entry.subtask for entry in entries]
    assert [slot.slot for slot in trace.slots] == list(range(len(entries)))
    assert [len(slot.spans) for slot in trace.slots] == [2, 2, 1, 1]  # retries on their slot
    assert [slot.status for slot in trace.slots] == [entry.result.status for entry in entries]
    second = answer.ledger.rounds[1]
    assert trace.slots[3].planned == second.dispatched  # planned as its round starts
    assert trace.closed == trio.current_time()
    assert sorted(trace.completion_rank()) == [0, 1, 2, 3]


async def test_a_subtask_asked_again_in_a_later_round_gets_a_slot_of_its_own(
    autojump_clock: object,
) -> None:
    agent = SimulatedAgent(0, flaky={"b": 1})  # b fails once: the fresh plan asks it again
    trace = Trace()
    supervisor: Supervisor[str, str] = Supervisor(agent, max_workers=2)
    answer = await supervisor.replan(
        "a; b", ScriptedPlanner(), limits=ReplanLimits(max_stalls=0), trace=trace
    )
    assert [slot.subtask for slot in trace.slots] == ["a", "b", "b"]
    assert [slot.status for slot in trace.slots] == [Status.OK, Status.FAILED, Status.OK]
    assert not answer.degraded


async def test_a_child_run_nests_under_the_slot_whose_attempt_made_it(
    autojump_clock: object,
) -> None:
    trace = Trace()
    leaf = SimulatedAgent(0, flaky={"b.0": 1})

    async def company(subtask: str) -> str:
        child: Supervisor[str, str] = Supervisor(leaf, max_workers=2)
        aggregate = await child.run([f"{subtask}.0"], trace=trace.nest(subtask))
        if not aggregate.succeeded:
            raise RuntimeError("nothing found")
        return "found"

    supervisor: Supervisor[str, str] = Supervisor(company, max_workers=2)
    await supervisor.replan(
        "a; b", ScriptedPlanner(), limits=ReplanLimits(max_stalls=0), trace=trace
    )
    assert [slot.subtask for slot in trace.slots] == ["a", "b", "b"]
    children = [slot.child for slot in trace.slots]
    assert all(child is not None for child in children)
    assert [child.slots[0].status for child in children if child is not None] == [
        Status.OK,
        Status.FAILED,  # the first b's child, kept on the first b's slot
        Status.OK,
    ]
    rows = [(row.depth, row.label) for row in timeline_rows(trace)]
    assert rows == [(0, "a"), (1, "└ a.0"), (0, "b"), (1, "└ b.0"), (0, "b"), (1, "└ b.0")]


async def test_round_headings_head_the_top_runs_rows_never_a_childs(
    autojump_clock: object,
) -> None:
    trace = Trace(["x"])

    async def parent(subtask: str) -> str:
        child: Supervisor[str, str] = Supervisor(SimulatedAgent(0), max_workers=1)
        await child.run(["x.0", "x.1"], trace=trace.nest(subtask))
        return "ok"

    await Supervisor(parent, max_workers=1).run(["x"], trace=trace)
    console = Console(width=100, record=True, color_system=None)
    console.print(render_timeline(trace, sections={0: "round 1: the top", 1: "round 2: nope"}))
    text = console.export_text()
    assert text.count("round 1") == 1
    assert "round 2" not in text  # slot 1 is a child's, not the top run's


@pytest.mark.parametrize(
    ("trace", "error", "said"),
    [
        ("trace", TypeError, "trace must be a Trace or None, got str"),
        (None, ValueError, "this trace was made for another plan"),
    ],
)
async def test_a_trace_that_is_not_fresh_and_empty_is_refused(
    trace: object, error: type[Exception], said: str, autojump_clock: object
) -> None:
    given = Trace(["a"]) if trace is None else trace
    supervisor: Supervisor[str, str] = Supervisor(SimulatedAgent(0), max_workers=1)
    with pytest.raises(error, match=said):
        await supervisor.replan("a", ScriptedPlanner(), trace=given)  # type: ignore[arg-type]
