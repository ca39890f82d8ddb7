"""Each step's grader against deliberately wrong solutions: ``python -m lessons check N`` fails on
every module in ``tests/course/wrong/`` (step N's ``supervise`` with one plausible mistake), and
tells the law that catches it with its counterexample. That the check passes on the step itself,
and fails on the step before and on the untouched starter, is in ``test_exercises.py``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lessons._course import laws
from lessons._course.laws import Law
from tests.course.test_exercises import PART_ONE, assert_told, run

WRONG = Path(__file__).parent / "wrong"
GRADED = PART_ONE  # every step of Part I with an exercise: 2 to the lazy input

CAUGHT_BY: dict[str, Law] = {
    "step02_awaits_each_worker": laws.FAN_OUT_WALL_TIME,
    "step02_nursery_per_subtask": laws.FAN_OUT_WALL_TIME,
    "step03_acquires_inside_the_task": laws.GREEDY_MAKESPAN,
    "step03_releases_after_start_soon": laws.BOUNDED,
    "step04_slot_by_completion": laws.PLAN_ORDER,
    "step04_waits_for_earlier_slots_holding_the_token": laws.GREEDY_MAKESPAN,
    "step05_catches_base_exception": laws.CANCELLATION_PASSES_THROUGH,
    "step05_catches_in_the_nurserys_caller": laws.FAILURES_ISOLATED,
    "step06_timeout_around_start_soon": laws.HUNG_WORKER_FREES_ITS_SLOT,
    "step06_timeout_around_the_nursery": laws.HUNG_WORKER_FREES_ITS_SLOT,
    "step07_deadline_raises": laws.DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK,
    "step07_deadline_only_on_admission": laws.DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK,
    "step08_sleeps_holding_the_token": laws.A_WAITING_RETRY_HOLDS_NO_TOKEN,
    "step08_one_attempt_too_many": laws.SUCCEEDS_WHEN_ATTEMPTS_EXCEED_FAILURES,
    "step08_unseeded_jitter": laws.WAITS_ARE_SEEDED_DRAWS,
    "step09_one_restart_too_many": laws.AT_MOST_R_RESTARTS_IN_T,
    "step09_gives_up_without_cancelling": laws.GIVES_UP_PAST_THE_INTENSITY,
    "step10_completion_order": laws.HANDED_OVER_AS_SOON_AS_POSSIBLE,
    "step10_polls_for_each_slot": laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0,
    "step11_cancels_only_the_workers": laws.LEAVING_EARLY_CANCELS_THE_REST,
    "step11_closes_the_channel_instead": laws.LEAVING_EARLY_CANCELS_THE_REST,
    "step12_releases_the_place_when_dispatched": laws.HELD_TO_THE_WINDOW,
    "step12_window_counts_only_running_workers": laws.HELD_TO_THE_WINDOW,
    "step13_pulls_before_the_window_has_room": laws.A_LAZY_MILLION_IS_HELD,
    "step13_reads_the_whole_input_first": laws.A_LAZY_MILLION_IS_HELD,
}
"""Each wrong solution, and the law its mistake breaks (it may break others too)."""


def test_every_wrong_solution_is_tested_and_every_step_has_at_least_two() -> None:
    kept = {path.stem for path in WRONG.glob("step*.py")}
    assert kept == set(CAUGHT_BY)
    counted = Counter(int(name[4:6]) for name in kept)
    assert {number: counted[number] for number in GRADED if counted[number] < 2} == {}
    for name, law in CAUGHT_BY.items():
        assert int(name[4:6]) in law.steps, name


@pytest.mark.parametrize("name", sorted(CAUGHT_BY))
def test_check_fails_on_a_wrong_solution_and_tells_the_law_it_breaks(name: str) -> None:
    number = int(name[4:6])
    status, out = run("check", str(number), str(WRONG / f"{name}.py"))
    assert_told(out, CAUGHT_BY[name])
    assert status == 1
