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
from lessons._course.steps import PART_TWO
from tests.course.test_exercises import PART_ONE, assert_told, run, sparing

WRONG = Path(__file__).parent / "wrong"
GRADED = (
    PART_ONE  # every step of Part I with an exercise: 2 to the lazy input (Part II: at least one)
)

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
    "step10_hands_over_each_as_it_completes": laws.HANDED_OVER_AS_SOON_AS_POSSIBLE,
    "step10_hands_over_after_the_run": laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0,
    "step11_completion_order": laws.HANDED_OVER_AS_SOON_AS_POSSIBLE,
    "step11_polls_for_each_slot": laws.FIRST_RESULT_ARRIVES_WITH_SLOT_0,
    "step12_cancels_only_the_workers": laws.LEAVING_EARLY_CANCELS_THE_REST,
    "step12_closes_the_channel_instead": laws.LEAVING_EARLY_CANCELS_THE_REST,
    "step13_releases_the_place_when_dispatched": laws.HELD_TO_THE_WINDOW,
    "step13_window_counts_only_running_workers": laws.HELD_TO_THE_WINDOW,
    "step14_pulls_before_the_window_has_room": laws.A_LAZY_MILLION_IS_HELD,
    "step14_reads_the_whole_input_first": laws.A_LAZY_MILLION_IS_HELD,
    "step15_reads_the_async_input_whole_first": laws.AN_ASYNC_INPUT_IS_AWAITED,
    "step15_awaits_the_input_before_the_window_has_room": laws.AN_ASYNC_INPUT_IS_AWAITED,
    "step02_returns_before_the_results_come": laws.EVERY_SUBTASK_ANSWERED,
    "step04_sorts_results_by_name": laws.PLAN_ORDER,
    "step08_never_retries_a_timeout": laws.TRANSIENT_FAILURE_RETRIED,
    "step09_never_forgets_a_restart": laws.OLD_RESTARTS_ARE_FORGOTTEN,
    "step16_drops_the_seed": laws.WAITS_ARE_SEEDED_DRAWS,
    "step17_never_retries_a_timeout": laws.ONLY_TRANSIENT_FAILURES_ARE_RETRIED,
    "step19_takes_adaptive_but_ignores_it": laws.ADAPTIVE_ENDS_THE_429S,
    "step19_reads_refusals_but_not_latency": laws.ADAPTIVE_HOLDS_A_QUEUE_TO_ONE,
    "step21_keeps_the_default_stalls_and_subtasks": laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN,
    "step22_llm_quietly_plans_by_the_rules": laws.A_PLANNER_THAT_FAILS_COSTS_ROUNDS,
    "step25_ignores_the_strategy": laws.A_STRATEGY_RESTARTS_WHAT_IT_NAMES,
    "step27_ignores_the_journal": laws.RESUME_AFTER_A_CRASH_EQUALS_A_RUN,
    "step27_children_share_the_run_id": laws.RESUME_AFTER_A_CRASH_EQUALS_A_RUN,
    "step28_refunds_then_asks": laws.A_PARKED_SLOT_IS_FINISHED_BY_ITS_APPROVAL,
    "step26_starts_a_pool_but_analyses_here": laws.A_CRASH_IN_A_REAL_PROCESS_SPARES_THE_RUN,
    "step31_checks_the_budget_after_the_call": laws.THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET,
    "step32_never_asks_again": laws.A_REPLY_IS_HELD_TO_ITS_CONTRACT,
    "step32_keeps_one_requests_worst_case": laws.A_REPLY_IS_HELD_TO_ITS_CONTRACT,
    "step33_never_leases": laws.ONE_RUN_MANY_SUPERVISORS,
    "step33_a_run_id_of_its_own": laws.ONE_RUN_MANY_SUPERVISORS,
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
    with sparing([CAUGHT_BY[name]]):
        status, out = run("check", str(number), str(WRONG / f"{name}.py"))
    assert_told(out, CAUGHT_BY[name], part_two=number >= PART_TWO)
    assert status == 1


RIGHT = Path(__file__).parent / "right"


@pytest.mark.parametrize("name", sorted(path.stem for path in RIGHT.glob("step*.py")))
def test_check_passes_on_a_right_solution_the_course_words_or_builds_otherwise(name: str) -> None:
    """A correct answer that is not the course's own (a generator per slot, an error worded
    its own way) keeps every law: a law holds a step to its idea, not to one way of writing it."""
    number = int(name[4:6])
    status, out = run("check", str(number), str(RIGHT / f"{name}.py"))
    assert out.splitlines()[-1].endswith(" laws passed"), out
    assert "FAILED" not in out, out
    assert status == 0
