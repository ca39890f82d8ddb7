"""Step 21: budgets, stalls and resets. A hung sub-agent is answered for by the deadline, a
stalled run gets a fresh plan, and every budget reaches the run from the command line and is
named by the answer it ends.

All on virtual time.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from lessons._course import laws
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json


@pytest.mark.parametrize("step", cases(laws.ANSWERS_BY_ITS_DEADLINE))
def test_a_replanning_run_with_a_hung_sub_agent_answers_by_its_deadline_naming_it(
    step: ModuleType,
) -> None:
    laws.ANSWERS_BY_ITS_DEADLINE.verify(step)


@pytest.mark.parametrize("step", cases(laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN))
def test_a_replanning_run_ends_by_the_budget_it_was_given_naming_it(step: ModuleType) -> None:
    laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN.verify(step)


@pytest.mark.parametrize("step", cases(laws.STALLS_ARE_COUNTED_UP_AND_DOWN))
def test_stalls_are_counted_up_on_a_stall_and_down_on_progress(step: ModuleType) -> None:
    laws.STALLS_ARE_COUNTED_UP_AND_DOWN.verify(step)


def test_a_stall_asks_for_a_fresh_plan_which_finds_what_was_missing() -> None:
    stalled, hung = run_json(21)
    rounds = stalled["replan"]["rounds"]
    assert [(done["fresh"], done["stalled"]) for done in rounds] == [
        (False, False),
        (False, True),  # it brought a result, but the planner had nothing new: a stall
        (True, False),
    ]
    assert [entry["subtask"] for entry in stalled["replan"]["ledger"]][-1] == "supplier risk"
    assert stalled["replan"]["ended_by"] is None
    assert (hung["replan"]["ended_by"], hung["replan"]["degraded"]) == ("deadline", True)
    assert hung["trace"]["wall"] == 3.0


@pytest.mark.parametrize(
    ("argv", "ended_by", "reason"),
    [
        (
            ["--max-subtasks", "2"],
            "max_subtasks",
            "max_subtasks (2) reached in round 1, 1 of its subtasks not dispatched",
        ),
        (
            ["--max-stalls", "0", "--max-resets", "0"],
            "max_stalls",
            "more than max_stalls (0) stalled rounds, after max_resets (0) fresh plans",
        ),
        (["--deadline", "0.5"], "deadline", "the run's deadline of 0.5s expired during round 1"),
    ],
)
def test_each_budget_reaches_the_run_from_the_command_line_and_names_its_end(
    argv: list[str], ended_by: str, reason: str
) -> None:
    (run,) = run_json(21, "--task", "a; b failing; c", *argv)
    assert (run["replan"]["ended_by"], run["replan"]["reason"]) == (ended_by, reason)
    assert run["answer"].endswith(f"(degraded: {reason})")


def test_a_slot_the_deadline_cut_in_a_later_round_names_the_runs_deadline_as_the_answer_does() -> (
    None
):
    """Round 2 starts at 4.1 s of a 4.5 s deadline: its slots are cut when the run's deadline
    expires, and each says the figure the answer says, not what was left of it (0.4 s)."""
    task = "competitor pricing; customer reviews; inventory"
    (run,) = run_json(21, "--task", task, "--fail", "1", "--deadline", "4.5")
    assert run["replan"]["reason"] == "the run's deadline of 4.5s expired during round 2"
    cut = [entry["error"] for entry in run["replan"]["ledger"] if entry["status"] == "cancelled"]
    assert cut
    assert all(error.startswith("Cancelled: the run's deadline of 4.5s expired") for error in cut)
