"""Step 20: re-planning rounds over step 19's HTTP sub-agents. Its demos follow up the competitor
and reroute the reviews, ``--max-rounds 1`` ends degraded with an answer, the trace holds one
slot per ledger entry round after round, and no step before asks what the results call for.

All on virtual time.
"""

from __future__ import annotations

import io
import json
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.arguments import parser
from lessons._course.demos import STEP_DEMOS
from lessons._course.runner import main
from lessons._course.running import run_demo
from lessons._course.showing import round_sections
from tests.course.step_laws import cases

FOLLOW_UP = "competitor discounts"
REROUTED = "customer reviews, from app stores"


def run_json(step: int, *argv: str) -> list[dict[str, Any]]:
    """``python -m lessons <step> <argv> --virtual --json``: the runs."""
    buffer = io.StringIO()
    console = Console(file=io.StringIO(), width=100, color_system=None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", buffer)
        assert main([str(step), *argv, "--virtual", "--json"], console=console) == 0
    runs: list[dict[str, Any]] = json.loads(buffer.getvalue())["runs"]
    return runs


@pytest.mark.parametrize("step", cases(laws.ASKS_WHAT_THE_RESULTS_CALL_FOR))
def test_a_replanning_run_asks_each_follow_up_and_reroute_once_each_in_the_ledger_once(
    step: ModuleType,
) -> None:
    laws.ASKS_WHAT_THE_RESULTS_CALL_FOR.verify(step)


@pytest.mark.parametrize("step", cases(laws.EVERY_DISPATCHED_SUBTASK_IN_THE_LEDGER_ONCE))
def test_every_dispatched_subtask_is_in_the_ledger_once_and_the_trace_holds_one_slot_each(
    step: ModuleType,
) -> None:
    laws.EVERY_DISPATCHED_SUBTASK_IN_THE_LEDGER_ONCE.verify(step)


def test_the_demo_follows_up_the_competitor_and_reroutes_the_reviews_then_is_done() -> None:
    replanned, one_round = run_json(20)
    plan = replanned["replan"]
    assert [
        (entry["round"], entry["index"], entry["subtask"], entry["status"])
        for entry in plan["ledger"]
    ] == [
        (1, 0, "competitor pricing", "ok"),
        (1, 1, "customer reviews", "failed"),
        (1, 2, "inventory", "ok"),
        (2, 0, FOLLOW_UP, "ok"),
        (2, 1, REROUTED, "ok"),
    ]
    assert plan["ledger"][4]["replaces"] == [1, 1]
    assert (plan["ended_by"], plan["degraded"]) == (None, False)
    # the reviews request was answered 500 on each of step 19's four attempts, over HTTP
    reviews = replanned["trace"]["slots"][1]
    assert [span["status"] for span in reviews["spans"]] == ["failed"] * 4
    assert "500 Internal Server Error" in reviews["spans"][0]["error"]
    # a superstep: round 2 starts when the last result of round 1 is in
    round_two = [slot for slot in replanned["trace"]["slots"] if slot["slot"] >= 3]
    assert min(slot["planned"] for slot in round_two) == plan["rounds"][0]["finished"]
    assert one_round["replan"]["ended_by"] == "max_rounds"


def test_max_rounds_1_ends_degraded_after_one_round_with_an_answer() -> None:
    for run in run_json(20, "--max-rounds", "1"):
        plan = run["replan"]
        assert len(plan["rounds"]) == 1
        assert (plan["ended_by"], plan["degraded"]) == ("max_rounds", True)
        assert run["answer"].endswith(
            "\n(degraded: max_rounds (1) reached, the planner wanted more)"
        )


def test_the_trace_has_one_slot_per_ledger_entry_and_the_rounds_head_them() -> None:
    run = run_demo("step20_rounds", STEP_DEMOS[20][0], parser().parse_args(["20", "--virtual"]))
    assert run.trace is not None
    assert run.replanned is not None
    assert [slot.subtask for slot in run.trace.slots] == [
        entry.subtask for entry in run.replanned.ledger.entries
    ]
    assert list(round_sections(run)) == [0, 3]
