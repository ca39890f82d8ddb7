"""Budgets that reserve before they spend, as laws on virtual time.

- The spent total never exceeds the budget, at any fan-out width from 1 to 256, for random
  usages below their reservations; check-then-spend (what peers do) does overshoot, and the
  same law catches it.
- Every reservation is settled exactly once, with what its attempt reported or, when it
  reported nothing, its whole reservation: for attempts that succeed, fail, time out, are
  retried, hedged (the winner and the loser each) or are cut short by the deadline, on both
  paths a run takes.
- One budget shared by two supervisors at once and by a ``replan`` holds for all of them, and
  the replan's answer names it when it ended the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.benchmark_scripts import load
from tests.library.scripted_worker import PATHS
from tests.library.virtual_time import run_virtual
from trio_supervisor import (
    Batch,
    Budget,
    Done,
    Hedge,
    Ledger,
    ReplanLimits,
    Retry,
    Status,
    Supervisor,
    Usage,
    report_usage,
)

R = TypeVar("R")


def bounded(main: Callable[[], Awaitable[R]]) -> R:
    """Run ``main`` on virtual time, failing (not hanging) if its tasks wait on each other for
    ever: a reservation never settled leaves its waiters parked, and the clock jumps to this
    bound."""

    async def within() -> R:
        with trio.fail_after(100_000):
            return await main()

    return run_virtual(within)


def overshoot(spent: float, limit: float) -> float:
    """The law's measure: what was spent beyond the limit (0 when the law holds)."""
    return max(0.0, spent - limit)


@st.composite
def fan_outs(draw: st.DrawFn) -> dict[str, Any]:
    width = draw(st.integers(1, 256))
    slots = draw(st.integers(1, 2 * width))
    worst = draw(st.lists(st.integers(1, 64), min_size=slots, max_size=slots))
    used = [draw(st.integers(0, bound)) for bound in worst]  # below each reservation
    latency = draw(st.lists(st.integers(1, 64), min_size=slots, max_size=slots))
    limit = draw(st.integers(0, sum(worst)))
    calls = draw(st.none() | st.integers(0, slots))
    return {
        "width": width,
        "worst": worst,
        "used": used,
        "latency": [n / 32 for n in latency],
        "limit": limit,
        "calls": calls,
    }


def reserved_run(case: dict[str, Any]) -> tuple[Budget, list[Any], list[int]]:
    worst, used, latency = case["worst"], case["used"], case["latency"]
    called: list[int] = []

    async def work(slot: int) -> int:
        called.append(slot)
        await trio.sleep(latency[slot])
        report_usage(input_tokens=used[slot] // 2, output_tokens=used[slot] - used[slot] // 2)
        return slot

    async def main() -> tuple[Budget, list[Any], list[int]]:
        budget = Budget(
            tokens=case["limit"],
            calls=case["calls"],
            reserve=lambda slot: Usage(input_tokens=worst[slot]),
        )
        supervisor = Supervisor(work, max_workers=case["width"], meters=[budget])
        aggregate = await supervisor.run(range(len(worst)))
        return budget, aggregate.results, called

    return bounded(main)


@settings(max_examples=60, deadline=None)
@given(fan_outs())
def test_the_spent_total_never_exceeds_the_budget_at_any_width(case: dict[str, Any]) -> None:
    budget, results, called = reserved_run(case)
    assert overshoot(budget.spent.tokens, case["limit"]) == 0
    if case["calls"] is not None:
        assert overshoot(budget.spent.calls, case["calls"]) == 0
        assert len(called) <= case["calls"]
    assert [result.subtask for result in results] == list(range(len(case["worst"])))
    assert {result.status for result in results} <= {Status.OK, Status.OVER_BUDGET}
    for slot, result in enumerate(results):  # an over-budget slot's worker never ran
        assert (result.status is Status.OK) == (slot in called)
        if result.status is Status.OVER_BUDGET:
            assert result.attempts == 0
            assert "budget 'budget' is spent" in str(result.error)
    assert budget.spent.tokens == sum(case["used"][slot] for slot in called)
    assert budget.outstanding == 0
    assert budget.held == Usage(0)


def test_a_budget_that_affords_everything_runs_everything_at_full_width() -> None:
    case = {
        "width": 8,
        "worst": [10] * 16,
        "used": [5] * 16,
        "latency": [1.0] * 16,
        "limit": 160,
        "calls": None,
    }

    budget, results, _called = reserved_run(case)
    assert all(result.ok for result in results)
    assert budget.spent.tokens == 80


def test_check_then_spend_overshoots_and_the_law_catches_it() -> None:
    bench = load("budget")
    calls = bench.workload(8)
    limit = 150 * 8
    naive_spent, _ = run_virtual(bench.naive_run, 8, calls, limit)
    reserved_spent, _ = run_virtual(bench.reserved_run, 8, calls, limit)
    assert overshoot(naive_spent, limit) > 0  # the law fails on what peers do
    assert overshoot(reserved_spent, limit) == 0


def test_the_benchmark_rows_show_overshoot_only_for_check_then_spend() -> None:
    rows = load("budget").overshoot_rows(widths=(8, 32))
    assert [row["width"] for row in rows] == [8, 32]
    for row in rows:
        assert row["reserved_overshoot"] == 0
        assert row["naive_overshoot"] > 0
        assert row["reserved_spent"] <= row["limit_tokens"] < row["naive_spent"]


class Recording(Budget):
    """A budget that keeps every reservation and settlement it made, to check them."""

    def __init__(self, **limits: Any) -> None:
        super().__init__(**limits)
        self.made: list[Any] = []
        self.charged: list[tuple[Any, Usage | None]] = []

    async def reserve(self, subtask: Any, worker: Any = None) -> Any:
        hold = await super().reserve(subtask, worker)
        self.made.append(hold)
        return hold

    def settle(self, hold: Any, used: Usage | None) -> None:
        self.charged.append((hold, used))
        super().settle(hold, used)


@st.composite
def troubled_runs(draw: st.DrawFn) -> dict[str, Any]:
    slots = draw(st.integers(1, 24))
    kinds = draw(
        st.lists(st.sampled_from(["ok", "fail", "hang", "slow"]), min_size=slots, max_size=slots)
    )
    reports = draw(st.lists(st.booleans(), min_size=slots, max_size=slots))
    return {
        "kinds": kinds,
        "reports": reports,
        "width": draw(st.integers(1, 8)),
        "attempts": draw(st.integers(1, 3)),
        "deadline": draw(st.sampled_from([None, 37 / 64, 101 / 64, 301 / 64])),
        "limit": draw(st.integers(slots, 6 * slots)),
        "path": draw(st.sampled_from(sorted(PATHS))),
        # a hedge: a second attempt of a slow one, reserving and settling as any attempt does
        "hedge": draw(st.sampled_from([None, Hedge(1 / 8, max_extra=2, throttle=1.0)])),
    }


@settings(max_examples=80, deadline=None)
@given(troubled_runs())
def test_every_reservation_is_settled_exactly_once(case: dict[str, Any]) -> None:
    kinds, reports = case["kinds"], case["reports"]
    calls: list[int] = []

    async def work(slot: int) -> int:
        calls.append(slot)
        if reports[slot]:  # reported before its end: what it is charged, whatever happens
            report_usage(input_tokens=1)
        kind = kinds[slot]
        if kind == "hang":
            await trio.sleep_forever()
        await trio.sleep(1 / 32 if kind != "slow" else 3)
        if kind == "fail":
            raise RuntimeError("failed")
        return slot

    async def main() -> tuple[Recording, list[Any]]:
        budget = Recording(tokens=case["limit"], reserve=lambda slot: Usage(input_tokens=3))
        supervisor = Supervisor(
            work,
            max_workers=case["width"],
            timeout=33 / 64,
            retry=Retry(attempts=case["attempts"]),
            meters=[budget],
            hedge=case["hedge"],
            **PATHS[case["path"]],
        )
        aggregate = await supervisor.run(range(len(kinds)), deadline=case["deadline"])
        return budget, aggregate.results

    budget, results = bounded(main)
    held = [id(hold) for hold, _ in budget.charged]
    assert sorted(held) == sorted(id(hold) for hold in budget.made)  # each settled, once
    assert len(set(held)) == len(held)
    assert budget.outstanding == 0
    assert budget.reservations == budget.settlements
    assert len(budget.made) == len(calls)  # one reservation per worker call
    expected = sum(1 if reports[slot] else 3 for slot in calls)  # reported, or all of it
    assert budget.spent.tokens == expected <= case["limit"]
    assert sum(result.attempts for result in results) == len(calls)


def test_a_settlement_is_made_once() -> None:
    async def main() -> None:
        budget = Budget(calls=2)
        hold = await budget.reserve("x")
        budget.settle(hold, None)
        with pytest.raises(RuntimeError, match=r"^budget 'budget': a reservation is settled once$"):
            budget.settle(hold, None)
        assert budget.spent.calls == 1

    bounded(main)


def test_one_budget_holds_across_two_supervisors_and_a_replan() -> None:
    cost = 7  # each call's worst case, and what it uses

    async def work(subtask: str) -> str:
        await trio.sleep(1)
        report_usage(output_tokens=cost)
        return subtask

    class Endless:
        async def first(self, task: str) -> Batch[str] | Done:
            return Batch([f"{task}.{i}" for i in range(4)])

        async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Batch[str]:
            return Batch([f"{task}.{len(ledger)}.{i}" for i in range(4)])

    async def main() -> tuple[Budget, Any, list[Any]]:
        budget = Budget(
            tokens=100, name="shared", reserve=lambda subtask: Usage(output_tokens=cost)
        )
        one = Supervisor(work, max_workers=3, meters=[budget])
        two = Supervisor(work, max_workers=5, meters=[budget])
        runs: list[Any] = []
        answers: list[Any] = []

        async def batch(supervisor: Supervisor[str, str], name: str) -> None:
            runs.append(await supervisor.run([f"{name}{i}" for i in range(6)]))

        async def planned() -> None:
            answers.append(await one.replan("plan", Endless(), limits=ReplanLimits(max_rounds=50)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(batch, one, "a")
            nursery.start_soon(batch, two, "b")
            nursery.start_soon(planned)
        return budget, answers[0], runs

    budget, answer, runs = bounded(main)
    assert budget.spent.tokens <= 100
    assert budget.spent.tokens == 7 * 14  # 14 calls of 7 fit in 100, and every one ran
    assert budget.outstanding == 0
    assert answer.ended_by == "budget"
    assert answer.degraded
    assert "budget 'shared' is spent" in answer.reason
    ran = sum(r.ok for run in runs for r in run) + sum(e.result.ok for e in answer.ledger.entries)
    assert ran == 14


@st.composite
def hedged_runs(draw: st.DrawFn) -> dict[str, Any]:
    slots = draw(st.integers(1, 16))
    return {
        # per slot, each call's latency in 1/8 s (the last repeats): stragglers get hedges
        "latency": draw(
            st.lists(
                st.lists(st.integers(1, 40), min_size=1, max_size=3),
                min_size=slots,
                max_size=slots,
            )
        ),
        "reports": draw(st.lists(st.booleans(), min_size=slots, max_size=slots)),
        "width": draw(st.integers(1, 8)),
        "attempts": draw(st.integers(1, 2)),
        "timeout": draw(st.sampled_from([None, 3.0])),
        # a tight budget: hedges wait for a reservation, and get one as their race is decided
        "limit": draw(st.integers(0, 8 * slots)),
        "hedge": Hedge(
            draw(st.sampled_from([1 / 8, 1 / 2, 1.0])),
            max_extra=draw(st.integers(1, 3)),
            throttle=draw(st.sampled_from([0.1, 0.25, 1.0])),
        ),
        "path": draw(st.sampled_from(sorted(PATHS))),
    }


@settings(max_examples=80, deadline=None)
@given(hedged_runs())
def test_nothing_that_calls_no_worker_spends(case: dict[str, Any]) -> None:
    """A budget's spent total is the sum over the attempts that called the worker (what each
    reported, or its whole reservation): a hedge the throttle refused, or whose race was decided
    while it waited, spends nothing."""
    latency, reports = case["latency"], case["reports"]
    calls: list[int] = []

    async def work(slot: int) -> int:
        call = calls.count(slot)
        calls.append(slot)
        if reports[slot]:
            report_usage(input_tokens=1)
        times = latency[slot]
        await trio.sleep(times[min(call, len(times) - 1)] / 8)
        return slot

    async def main() -> tuple[Budget, list[Any]]:
        budget = Budget(
            tokens=case["limit"], calls=case["limit"], reserve=lambda slot: Usage(input_tokens=3)
        )
        supervisor = Supervisor(
            work,
            max_workers=case["width"],
            retry=Retry(attempts=case["attempts"]),
            timeout=case["timeout"],
            meters=[budget],
            hedge=case["hedge"],
            **PATHS[case["path"]],
        )
        aggregate = await supervisor.run(range(len(latency)))
        return budget, aggregate.results

    budget, results = bounded(main)
    assert budget.spent.calls == len(calls)
    assert budget.spent.tokens == sum(1 if reports[slot] else 3 for slot in calls)
    assert sum(result.attempts for result in results) == len(calls)
    assert budget.outstanding == 0


def test_a_hedge_the_throttle_refuses_spends_nothing() -> None:
    """Eleven calls spend eleven: the three hedges the throttle refused as they were about to
    start are not charged, and a shared token budget still has what they did not use."""
    calls = 0

    async def work(n: int) -> int:
        nonlocal calls
        calls += 1
        await trio.sleep(10 if n % 3 == 0 else 1)
        return n

    async def main() -> Budget:
        budget = Budget(calls=100)
        hedge = Hedge(after=2.0, max_extra=2, throttle=0.1)
        await Supervisor(work, max_workers=20, hedge=hedge, meters=[budget]).run(range(10))
        return budget

    budget = bounded(main)
    assert calls == 11
    assert budget.spent == Usage(calls=11)
