"""The laws of steps 1-5, each on virtual time, and the flaws of the naive steps, shown: each law
of a step fails, strictly, on the step before it.

The laws' own code is in ``lessons/_course/laws.py``: ``python -m lessons check`` runs
the same properties on a reader's code.
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

import pytest
import trio
from hypothesis import find, settings

from lessons._course import laws
from lessons._course.steps import load_step, step, steps
from tests.course.step_laws import (
    Spy,
    cases,
    exact_latencies,
    list_schedule,
    plan_of,
    run_virtual,
    spy_for,
    task_of,
)
from trio_supervisor import Aggregate

STEPS = {number: load_step(name) for number, name in steps().items() if number <= 5}
S1, S2, S3, S4, S5 = (STEPS[n] for n in range(1, 6))
LIMITED = (S3, S4, S5)  # the steps that take max_workers


def ids(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[1]


def supervise(module: ModuleType, plan: list[str], spy: Spy, k: int | None) -> Any:
    """Run ``module`` on ``plan``, with ``max_workers=k`` where it takes a bound."""
    options = {} if k is None else step(module.__name__).accepted(max_workers=k)

    async def timed() -> tuple[Aggregate[str, str], float]:
        start = trio.current_time()
        aggregate = await module.supervise(task_of(plan), spy, **options)
        return aggregate, trio.current_time() - start

    return run_virtual(timed)


def order(aggregate: Aggregate[str, str]) -> list[str]:
    return [result.subtask for result in aggregate.results]


# --- plan order ---------------------------------------------------------------------------------


@pytest.mark.parametrize("step", cases(laws.PLAN_ORDER), ids=ids)
def test_results_in_plan_order_for_every_permutation(step: ModuleType) -> None:
    laws.PLAN_ORDER.verify(step)


@pytest.mark.parametrize("step", [S2, S3], ids=ids)
def test_hypothesis_finds_completion_order_leaking_into_result_order(step: ModuleType) -> None:
    def leaks(latencies: list[float]) -> bool:
        plan, spy = spy_for(latencies)
        aggregate, _ = supervise(step, plan, spy, None if step is S2 else 2)
        return order(aggregate) != plan

    example = find(exact_latencies(), leaks, settings=settings(database=None, max_examples=500))
    # the smallest leak: two subtasks, the first slower than the second
    assert len(example) == 2
    assert example[0] > example[1]


# --- wall time ----------------------------------------------------------------------------------


@pytest.mark.parametrize("step", cases(laws.SERIAL_WALL_TIME), ids=ids)
def test_serial_wall_time_is_the_sum_of_latencies(step: ModuleType) -> None:
    laws.SERIAL_WALL_TIME.verify(step)


@pytest.mark.parametrize("step", cases(laws.FAN_OUT_WALL_TIME), ids=ids)
def test_fan_out_wall_time_is_the_longest_latency(step: ModuleType) -> None:
    laws.FAN_OUT_WALL_TIME.verify(step)


@pytest.mark.parametrize("step", cases(laws.GREEDY_MAKESPAN), ids=ids)
def test_wall_time_is_the_greedy_makespan_in_plan_order(step: ModuleType) -> None:
    laws.GREEDY_MAKESPAN.verify(step)


# --- the capacity bound -------------------------------------------------------------------------


@pytest.mark.parametrize("step", cases(laws.BOUNDED), ids=ids)
def test_at_most_k_in_flight_and_exactly_min_k_n_at_the_peak(step: ModuleType) -> None:
    laws.BOUNDED.verify(step)


def test_fan_out_has_no_bound_every_worker_runs_at_once() -> None:
    plan, spy = spy_for([1.0] * 1 + [2.0] * 11)
    supervise(S2, plan, spy, None)
    assert spy.max_running == len(plan)


@pytest.mark.parametrize("step", cases(laws.MAX_WORKERS_REFUSED), ids=ids)
def test_max_workers_below_one_is_refused_before_any_work(step: ModuleType) -> None:
    laws.MAX_WORKERS_REFUSED.verify(step)


# --- failures -----------------------------------------------------------------------------------


async def test_serial_first_failure_ends_the_run_and_nothing_after_it_runs(
    autojump_clock: trio.testing.MockClock,
) -> None:
    plan, spy = spy_for([1.0, 2.0, 3.0, 4.0], fail=[1])
    with pytest.raises(ValueError, match=r"^s1 failed$"):
        await S1.supervise(task_of(plan), spy)
    assert spy.started == ["s0", "s1"]
    assert trio.current_time() == 3.0


@pytest.mark.parametrize("step", [S2, S3, S4], ids=ids)
async def test_one_failure_cancels_the_siblings_and_raises_a_group(
    step: ModuleType, autojump_clock: trio.testing.MockClock
) -> None:
    plan, spy = spy_for([4.0, 1.0, 4.0], fail=[1])
    options = {} if step is S2 else {"max_workers": 3}
    with pytest.RaisesGroup(pytest.RaisesExc(ValueError, match=r"^s1 failed$")):
        await step.supervise(task_of(plan), spy, **options)
    assert sorted(spy.cancelled) == ["s0", "s2"]
    assert trio.current_time() == 1.0


@pytest.mark.parametrize("step", cases(laws.FAILURES_ISOLATED), ids=ids)
def test_exactly_the_failing_slots_carry_errors(step: ModuleType) -> None:
    laws.FAILURES_ISOLATED.verify(step)


@pytest.mark.parametrize("step", list(STEPS.values()), ids=ids)
def test_synthesize_arrives_with_the_plan_and_never_changes(step: ModuleType) -> None:
    assert inspect.getsource(step.synthesize) == inspect.getsource(S1.synthesize)


def test_synthesize_merges_in_plan_order_and_flags_a_degraded_answer() -> None:
    plan, spy = spy_for([3.0, 1.0, 2.0], fail=[1])
    aggregate, _ = supervise(S5, plan, spy, 3)
    assert S1.synthesize(aggregate).splitlines() == [
        "s0: out:s0",
        "s1: (missing: ValueError: s1 failed)",
        "s2: out:s2",
        "(degraded: 1 of 3 subtasks failed)",
    ]
    plan, spy = spy_for([3.0, 1.0])
    aggregate, _ = supervise(S5, plan, spy, 3)
    assert "degraded" not in S5.synthesize(aggregate)


# --- cancellation passes through ----------------------------------------------------------------


async def test_keyboard_interrupt_from_a_worker_propagates(
    autojump_clock: trio.testing.MockClock,
) -> None:
    plan, spy = spy_for([2.0, 1.0, 2.0], fail=[1])
    spy.exc = KeyboardInterrupt
    with pytest.RaisesGroup(KeyboardInterrupt):
        await S5.supervise(task_of(plan), spy, max_workers=3)


async def test_an_enclosing_cancel_scope_cancels_the_run_and_is_not_swallowed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    plan, spy = spy_for([10.0, 1.0, 10.0, 10.0])
    returned = False
    with trio.move_on_after(5) as scope:
        await S5.supervise(task_of(plan), spy, max_workers=2)
        returned = True
    assert scope.cancelled_caught
    assert not returned
    assert trio.current_time() == 5.0
    assert sorted(spy.cancelled) == ["s0", "s2"]  # in flight at the cancel; s3 never started
    assert spy.started == ["s0", "s1", "s2"]


@pytest.mark.parametrize("step", cases(laws.CANCELLATION_PASSES_THROUGH), ids=ids)
def test_cancellation_passes_through_every_step_that_isolates_failures(step: ModuleType) -> None:
    laws.CANCELLATION_PASSES_THROUGH.verify(step)


def test_plan_of_helpers_agree() -> None:
    assert plan_of(3) == ["s0", "s1", "s2"]
    assert list_schedule([3.0, 1.0, 1.0, 1.0], 2).makespan == 3.0


def test_the_list_of_steps_shows_no_rest_markup() -> None:
    """``python -m lessons``: each step's line is text, its literals in the terminal's style,
    never the docstring's reST (two backticks)."""
    import io

    from rich.console import Console

    from lessons._course.runner import main

    out = io.StringIO()
    assert main([], console=Console(file=out, width=200, color_system=None)) == 0
    listed = out.getvalue()
    assert "`" not in listed
    assert "Step 3: a capacity limiter. At most max_workers workers run at once." in listed
