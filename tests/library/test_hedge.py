"""Hedged requests, case by case, on virtual time: the option's rules, who wins, what a failure,
a timeout, a retry, the capacity bound, the meters and the throttle do to a race, and how the
trace, the timeline and the result show it."""

from __future__ import annotations

import pickle
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

from tests.library.virtual_time import run_virtual
from trio_supervisor import (
    Backoff,
    Capacity,
    Durable,
    Hedge,
    Journal,
    Restarts,
    Retry,
    Status,
    SubResult,
    Supervisor,
    Trace,
    attempt_key,
)
from trio_supervisor.timeline import legend, render_svg, timeline_rows, trace_events


def scripted(script: dict[int, list[tuple[float, bool]]]) -> Callable[[int], Awaitable[int]]:
    """A worker whose call ``c`` of subtask ``s`` sleeps ``script[s][c][0]`` (the last entry
    repeats), then fails if ``script[s][c][1]`` is True; else returns ``s``. Default: 1s, ok."""
    calls: dict[int, int] = {}

    async def worker(subtask: int) -> int:
        call = calls.get(subtask, 0)
        calls[subtask] = call + 1
        steps = script.get(subtask, [(1.0, False)])
        latency, fails = steps[min(call, len(steps) - 1)]
        await trio.sleep(latency)
        if fails:
            raise RuntimeError(f"call {call} of {subtask} failed")
        return subtask

    return worker


def ten(script: dict[int, list[tuple[float, bool]]], **options: Any) -> tuple[Any, Trace, float]:
    """Run subtasks 0..9 (ten attempts at least: enough for the default throttle to allow one
    hedge) with ``script`` for the interesting ones."""

    async def main() -> tuple[Any, Trace, float]:
        trace = Trace()
        options.setdefault("max_workers", 20)
        supervisor = Supervisor(scripted(script), **options)
        aggregate = await supervisor.run(range(10), trace=trace)
        return aggregate, trace, trio.current_time()

    return run_virtual(main)


# --- the option's rules ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error", "words"),
    [
        ({"after": "p100"}, ValueError, "above p0 and below p100"),
        ({"after": "95"}, ValueError, "'pNN'"),
        ({"after": "p0"}, ValueError, "above p0"),
        ({"after": -1.0}, ValueError, ">= 0"),
        ({"after": float("nan")}, ValueError, ">= 0"),
        ({"after": float("inf")}, ValueError, "finite"),
        ({"after": True}, TypeError, "seconds"),
        ({"after": None}, TypeError, "seconds"),
        ({"max_extra": 0}, ValueError, "max_extra must be >= 1"),
        ({"max_extra": 1.5}, TypeError, "max_extra must be an int"),
        ({"window": 0}, ValueError, "window must be >= 1"),
        ({"throttle": 0}, ValueError, "(0, 1]"),
        ({"throttle": 1.5}, ValueError, "(0, 1]"),
        ({"throttle": "10%"}, TypeError, "fraction"),
        ({"after": "p99", "window": 50}, ValueError, "window must be >= 100 to know p99"),
        ({"after": "p99.9"}, ValueError, "window must be >= 1000"),
    ],
)
def test_a_hedge_states_its_rule_when_given_a_wrong_value(
    options: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as raised:
        Hedge(**options)
    assert words in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_hedge_shows_and_compares_its_settings() -> None:
    hedge = Hedge("p90", max_extra=2, throttle=0.05, window=50)
    assert repr(hedge) == "Hedge(after='p90', max_extra=2, throttle=0.05, window=50)"
    assert hedge == Hedge("p90", max_extra=2, throttle=0.05, window=50) != Hedge("p90")
    assert (hedge.quantile, hedge.known_after) == (90.0, 10)
    assert Hedge(0.5).after == 0.5
    assert Hedge(1).after == 1.0
    assert Hedge().known_after == 20
    assert Hedge(2).known_after == 0
    assert len({hedge, Hedge("p90", max_extra=2, throttle=0.05, window=50)}) == 1


async def answer(subtask: int) -> int:
    return subtask


def test_the_supervisor_takes_seconds_or_a_percentile_as_a_hedge() -> None:
    assert Supervisor(answer, max_workers=1, hedge=0.25).hedge == Hedge(after=0.25)
    assert Supervisor(answer, max_workers=1, hedge="p90").hedge == Hedge("p90")
    assert Supervisor(answer, max_workers=1).hedge is None
    shown = repr(Supervisor(answer, max_workers=1, hedge=Hedge(2.0)))
    assert shown.endswith(", hedge=Hedge(after=2.0, max_extra=1, throttle=0.1, window=100))")
    assert "hedge" not in repr(Supervisor(answer, max_workers=1))
    with pytest.raises(AttributeError):
        Supervisor(answer, max_workers=1).hedge = Hedge()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "error"), [(True, TypeError), ([1.0], TypeError), (-2, ValueError)]
)
def test_the_supervisor_refuses_a_wrong_hedge_before_any_work(
    value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=r"hedge must be|after must be"):
        Supervisor(answer, max_workers=1, hedge=value)  # type: ignore[arg-type]


# --- who wins -------------------------------------------------------------------------------


def test_a_straggler_is_hedged_and_the_hedge_wins() -> None:
    aggregate, trace, wall = ten({3: [(10.0, False), (1.0, False)]}, hedge=Hedge(2.0))
    assert wall == 3.0  # the hedge started at 2 and took 1s; the straggler was cut then
    result = aggregate[3]
    assert (result.output, result.status, result.attempts, result.hedges) == (3, Status.OK, 2, 1)
    assert (result.started, result.finished) == (0.0, 3.0)
    primary, hedge = trace.slots[3].spans
    assert (primary.start, primary.end, primary.status, primary.lost) == (
        0.0,
        3.0,
        Status.CANCELLED,
        True,
    )
    assert (hedge.start, hedge.end, hedge.status, hedge.hedge, hedge.lost) == (
        2.0,
        3.0,
        Status.OK,
        True,
        False,
    )
    assert trace.slots[3].status is Status.OK
    assert trace.slots[3].ended == 3.0
    assert all(r.hedges == 0 and r.attempts == 1 for i, r in enumerate(aggregate) if i != 3)
    spans = trace.to_dict()["slots"][3]["spans"]
    assert (spans[0]["lost"], spans[1]["hedge"]) == (True, True)
    assert "hedge" not in trace.to_dict()["slots"][0]["spans"][0]


def test_the_first_attempt_may_still_win_and_the_hedge_is_cancelled() -> None:
    aggregate, trace, wall = ten({3: [(2.5, False), (5.0, False)]}, hedge=Hedge(2.0))
    assert wall == 2.5
    assert (aggregate[3].attempts, aggregate[3].hedges) == (2, 1)
    primary, hedge = trace.slots[3].spans
    assert (primary.status, primary.lost, hedge.status, hedge.lost) == (
        Status.OK,
        False,
        Status.CANCELLED,
        True,
    )
    assert hedge.end == 2.5
    assert trace.slots[3].status is Status.OK


def test_no_hedge_for_an_attempt_done_before_the_delay() -> None:
    aggregate, trace, wall = ten({}, hedge=Hedge(2.0))
    assert wall == 1.0
    assert [len(slot.spans) for slot in trace.slots] == [1] * 10
    assert sum(r.hedges for r in aggregate) == 0


def test_a_failure_of_one_attempt_leaves_the_other_running() -> None:
    # the first attempt fails at 4, after its hedge started at 2; the hedge succeeds at 5
    aggregate, trace, wall = ten({3: [(4.0, True), (3.0, False)]}, hedge=Hedge(2.0))
    assert wall == 5.0
    assert (aggregate[3].status, aggregate[3].output, aggregate[3].attempts) == (Status.OK, 3, 2)
    primary, hedge = trace.slots[3].spans
    assert (primary.status, primary.end, hedge.status, hedge.end) == (
        Status.FAILED,
        4.0,
        Status.OK,
        5.0,
    )
    assert trace.slots[3].status is Status.OK


def test_when_every_attempt_fails_the_last_failure_is_the_slots() -> None:
    script = {3: [(3.0, True), (2.0, True)]}  # fails at 3; its hedge (from 2) fails at 4
    aggregate, trace, _ = ten(script, hedge=Hedge(2.0))
    result = aggregate[3]
    assert result.status is Status.FAILED
    assert result.error == "RuntimeError: call 1 of 3 failed"
    assert (result.attempts, result.hedges, result.finished) == (2, 1, 4.0)
    assert [span.status for span in trace.slots[3].spans] == [Status.FAILED, Status.FAILED]
    assert trace.slots[3].status is Status.FAILED
    assert trace.slots[3].ended == 4.0


def test_a_failed_race_counts_as_one_failure_for_the_retry_policy() -> None:
    script = {3: [(3.0, True), (3.0, True), (1.0, False)]}
    aggregate, trace, _ = ten(
        script, hedge=Hedge(2.0), retry=Retry(attempts=2, backoff=Backoff(initial=0, maximum=0))
    )
    result = aggregate[3]
    assert (result.status, result.attempts, result.hedges) == (Status.OK, 3, 1)
    assert [span.hedge for span in trace.slots[3].spans] == [False, True, False]
    assert result.finished == 5.0 + 1.0  # the race failed at 5 (2 + 3), the retry took 1s


def test_a_slot_gets_at_most_max_extra_hedges_over_all_its_attempts() -> None:
    script = {3: [(3.0, True), (3.0, True), (5.0, False), (1.0, False)]}
    aggregate, trace, _ = ten(
        script,
        hedge=Hedge(2.0, throttle=1.0),
        retry=Retry(attempts=2, backoff=Backoff(initial=0, maximum=0)),
    )
    assert aggregate[3].hedges == 1  # its retry ran alone: the slot had had its hedge
    assert [span.hedge for span in trace.slots[3].spans] == [False, True, False]


def test_hedges_start_every_after_seconds_up_to_max_extra() -> None:
    script = {3: [(10.0, False), (10.0, False), (10.0, False), (1.0, False)]}
    aggregate, trace, wall = ten(script, hedge=Hedge(2.0, max_extra=3, throttle=1.0))
    assert [span.start for span in trace.slots[3].spans] == [0.0, 2.0, 4.0, 6.0]
    assert (aggregate[3].hedges, aggregate[3].attempts, wall) == (3, 4, 7.0)
    assert [span.lost for span in trace.slots[3].spans] == [True, True, True, False]
    rows = timeline_rows(trace)
    assert [bar.hedge for bar in rows[3].bars if bar.kind == "running"] == [0, 1, 2, 3]


# --- the bounds -------------------------------------------------------------------------------


def test_the_throttle_refuses_a_hedge_in_a_small_run() -> None:
    async def main() -> Any:
        supervisor = Supervisor(scripted({0: [(10.0, False), (1.0, False)]}), max_workers=4)
        hedged = Supervisor(supervisor.worker, max_workers=4, hedge=Hedge(2.0))  # throttle 0.1
        return await hedged.run(range(3))

    aggregate = run_virtual(main)
    assert aggregate[0].hedges == 0  # one hedge in four attempts is more than a tenth
    assert aggregate[0].finished == 10.0


def test_a_hedge_waits_for_a_place_under_max_workers() -> None:
    # two workers, two slots: the hedge of slot 0 gets a place only when slot 1 ends at 3
    async def main() -> tuple[Any, Trace]:
        trace = Trace()
        script = {0: [(10.0, False), (1.0, False)], 1: [(3.0, False)]}
        supervisor = Supervisor(scripted(script), max_workers=2, hedge=Hedge(2.0, throttle=1.0))
        return await supervisor.run(range(2), trace=trace), trace

    aggregate, trace = run_virtual(main)
    assert [span.start for span in trace.slots[0].spans] == [0.0, 3.0]
    assert aggregate[0].finished == 4.0


def test_a_hedge_that_never_gets_a_place_is_no_attempt() -> None:
    async def main() -> Any:
        supervisor = Supervisor(
            scripted({0: [(5.0, False)]}), max_workers=1, hedge=Hedge(1.0, throttle=1.0)
        )
        return await supervisor.run([0])

    aggregate = run_virtual(main)
    assert (aggregate[0].attempts, aggregate[0].hedges, aggregate[0].finished) == (1, 0, 5.0)


def test_a_hedge_waits_on_the_meters() -> None:
    meter = Capacity(1)  # one attempt at a time, for the meters' sake

    async def main() -> tuple[Any, Trace]:
        trace = Trace()
        script = {0: [(10.0, False), (1.0, False)]}
        supervisor = Supervisor(
            scripted(script), max_workers=4, meters=[meter], hedge=Hedge(2.0, throttle=1.0)
        )
        return await supervisor.run([0], trace=trace), trace

    aggregate, trace = run_virtual(main)
    assert len(trace.slots[0].spans) == 1  # the hedge waited on the meter: never called
    assert aggregate[0].finished == 10.0
    assert meter.in_use == 0


def test_adaptive_is_told_each_attempts_outcome_from_its_own_task() -> None:
    from trio_supervisor import Adaptive

    adaptive = Adaptive(8, start=4, latency=False)  # the rule whose every success counts

    async def main() -> Any:
        script = {3: [(3.0, True), (1.0, False)]}
        supervisor = Supervisor(
            scripted(script), max_workers=8, meters=[adaptive], hedge=Hedge(2.0, throttle=1.0)
        )
        return await supervisor.run(range(4))

    aggregate = run_virtual(main)
    assert aggregate[3].ok
    assert aggregate[3].hedges == 1
    assert adaptive.in_use == 0
    assert adaptive.limit > 4  # its successes, the hedge's included, raised it


def test_the_timeout_bounds_the_race_from_its_first_attempt() -> None:
    script = {3: [(10.0, False), (10.0, False)]}
    aggregate, trace, _ = ten(script, hedge=Hedge(2.0), timeout=5.0)
    result = aggregate[3]
    assert (result.status, result.attempts, result.hedges, result.finished) == (
        Status.TIMED_OUT,
        2,
        1,
        5.0,
    )
    assert [(span.status, span.end) for span in trace.slots[3].spans] == [
        (Status.TIMED_OUT, 5.0),
        (Status.TIMED_OUT, 5.0),
    ]
    assert trace.slots[3].status is Status.TIMED_OUT


def test_a_race_won_at_the_instant_of_the_timeout_timed_out() -> None:
    script = {3: [(10.0, False), (3.0, False)]}  # the hedge ends at 2 + 3 = 5: the timeout
    aggregate, trace, _ = ten(script, hedge=Hedge(2.0), timeout=5.0)
    assert aggregate[3].status is Status.TIMED_OUT
    assert trace.slots[3].spans[1].status is Status.TIMED_OUT


def test_a_deadline_cuts_every_attempt_of_a_race() -> None:
    script = {3: [(10.0, False), (10.0, False)]}

    async def main() -> tuple[Any, Trace]:
        trace = Trace()
        supervisor = Supervisor(scripted(script), max_workers=20, hedge=Hedge(2.0))
        return await supervisor.run(range(10), trace=trace, deadline=4.0), trace

    aggregate, trace = run_virtual(main)
    assert aggregate[3].status is Status.CANCELLED
    assert (aggregate[3].attempts, aggregate[3].hedges) == (2, 1)
    assert [span.status for span in trace.slots[3].spans] == [Status.CANCELLED] * 2
    assert not any(span.lost for span in trace.slots[3].spans)


# --- the percentile ---------------------------------------------------------------------------


def test_a_percentile_hedges_only_once_it_knows_enough_durations() -> None:
    async def main() -> list[Trace]:
        durations = iter([1.0] * 9 + [2.0] + [5.0])
        traces = []

        async def worker(subtask: int) -> int:
            await trio.sleep(next(durations, 1.0))
            return subtask

        supervisor = Supervisor(worker, max_workers=2, hedge=Hedge("p90", throttle=1.0))
        for index in range(11):
            trace = Trace()
            await supervisor.run([index], trace=trace)
            traces.append(trace)
        return traces

    traces = run_virtual(main)
    assert all(len(trace.slots[0].spans) == 1 for trace in traces[:10])
    # ten known (p90 of 1.0 x9 and 2.0 is 1.0): the 5s attempt is hedged after 1s
    assert [span.start - traces[10].origin for span in traces[10].slots[0].spans] == [0.0, 1.0]


# --- every path -------------------------------------------------------------------------------


def test_a_stream_hedges() -> None:
    async def main() -> list[SubResult[int, int]]:
        supervisor = Supervisor(
            scripted({3: [(10.0, False), (1.0, False)]}), max_workers=20, hedge=Hedge(2.0)
        )
        async with supervisor.stream(range(10)) as results:
            got = [result async for result in results]
        return got

    results = run_virtual(main)
    assert (results[3].hedges, results[3].finished) == (1, 3.0)


def test_the_restarting_path_hedges() -> None:
    aggregate, trace, wall = ten(
        {3: [(10.0, False), (1.0, False)]},
        hedge=Hedge(2.0),
        restarts=Restarts(max_restarts=2, within=10.0),
    )
    assert (aggregate[3].hedges, aggregate[3].finished, wall) == (1, 3.0, 3.0)
    assert [span.lost for span in trace.slots[3].spans] == [True, False]


def test_a_hedge_has_its_own_attempt_key_and_a_journal_keeps_the_result_once(
    tmp_path: Any,
) -> None:
    keys: list[tuple[str, float]] = []
    calls = {"n": 0}

    async def worker(subtask: int) -> int:
        keys.append((str(attempt_key()), trio.current_time()))
        if subtask == 3:
            calls["n"] += 1
            await trio.sleep(10.0 if calls["n"] == 1 else 1.0)
        else:
            await trio.sleep(1.0)
        keys.append((str(attempt_key()), trio.current_time()))  # read again, after the hedge
        return subtask

    async def main() -> tuple[Any, Any]:
        with Journal(tmp_path / "runs.db") as journal:
            supervisor = Supervisor(worker, max_workers=20, hedge=Hedge(2.0))
            first = await supervisor.run(range(10), durable=Durable("r", journal))
            again = await supervisor.run(range(10), durable=Durable("r", journal))
        return first, again

    first, again = run_virtual(main)
    assert ("r/0/3/1", 0.0) in keys
    assert ("r/0/3/2", 2.0) in keys
    assert ("r/0/3/2", 3.0) in keys
    assert not any(key == "r/0/3/2" and time == 0.0 for key, time in keys)
    assert [r.output for r in again] == list(range(10))
    assert again[3].attempts == first[3].attempts == 2


def test_a_result_with_hedges_pickles_and_shows_them() -> None:
    result: SubResult[int, int] = SubResult(3, output=3, attempts=2, hedges=1)
    assert pickle.loads(pickle.dumps(result)) == result
    assert pickle.loads(pickle.dumps(result)).hedges == 1
    assert repr(result).endswith("hedges=1)")
    assert "hedges" not in repr(SubResult(3, output=3))
    assert result != SubResult(3, output=3, attempts=2)


# --- the pictures -----------------------------------------------------------------------------


def test_the_timeline_draws_a_hedge_on_a_line_of_its_own() -> None:
    from rich.console import Console

    from trio_supervisor.timeline import render_timeline

    _, trace, _ = ten({3: [(10.0, False), (1.0, False)]}, hedge=Hedge(2.0))
    rows = timeline_rows(trace)
    running = [bar for bar in rows[3].bars if bar.kind == "running"]
    assert [(bar.hedge, bar.lost, bar.status) for bar in running] == [
        (0, True, Status.CANCELLED),
        (1, False, Status.OK),
    ]
    assert ("▓", "hedge: another attempt of the slot, on the line under it") in legend(rows)
    assert not any("hedge" in words for _, words in legend(timeline_rows(ten({})[1])))
    console = Console(width=120, record=True, color_system=None)
    console.print(render_timeline(trace))
    text = console.export_text()
    lines = text.splitlines()
    at = next(index for index, line in enumerate(lines) if line.strip().startswith("3 "))
    assert "⊘" in lines[at]
    assert "✓ ok 3.00s" in lines[at]
    assert "└ hedge" in lines[at + 1]
    assert "▓" in lines[at + 1]
    assert "✓" in lines[at + 1]
    svg = render_svg(trace)
    assert svg.count('class="ts-bar ts-hedge ts-ok"') == 1
    assert "hedge: another attempt of the slot (lower bar)" in svg
    assert "lost, another attempt won" in svg
    events = [event for event in trace_events(trace) if event.get("ph") == "X"]
    hedges = [event for event in events if event["name"].startswith("hedge")]
    assert [(event["name"], event["args"]["lost"]) for event in hedges] == [("hedge 2", False)]
    assert not any(event["name"] == "retry" and event["args"]["slot"] == 3 for event in events)


def test_no_hedge_no_cost_the_engine_has_no_hedging() -> None:
    supervisor = Supervisor(answer, max_workers=1)
    assert supervisor._engine.hedging is None
    assert Supervisor(answer, max_workers=1, hedge=1.0)._engine.hedging is not None


def test_a_worker_whose_call_returns_no_awaitable_is_refused_bare_when_hedged() -> None:
    def sync(subtask: int) -> int:
        return subtask

    async def main() -> None:
        await Supervisor(sync, max_workers=2, hedge=1.0).run([1])  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="must return an awaitable"):
        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


# --- the tail benchmark, at a tiny size (nothing timed) ---------------------------------------


def test_the_tail_benchmark_measures_both_contenders_on_the_same_draws() -> None:
    from tests.library.benchmark_scripts import load

    tail = load("tail")
    plain, first, hedges = tail.simulated(8, 1, None)
    hedged, first_hedged, extra = tail.simulated(8, 1, tail.HEDGE)
    assert len(plain) == len(hedged) == 8
    assert first == first_hedged == 8 * tail.SLOTS
    assert hedges == 0 < extra <= 0.1 * (first_hedged + extra)
    assert max(hedged) < max(plain)  # a straggler in eight runs, overtaken
    assert tail.latency(1, 0, 3, 0) == tail.latency(1, 0, 3, 0)  # the same draw for each
    rows = [
        tail.summary(name, "s", spans, first, n)
        for name, spans, n in (("no hedge", plain, 0), ("hedge", hedged, extra))
    ]
    target = tail.judged(*rows)
    assert target["p99_cut"] == 1 - rows[1]["p99"] / rows[0]["p99"]
    assert isinstance(tail.budget_rows(), list)
