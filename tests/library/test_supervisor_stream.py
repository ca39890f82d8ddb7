"""Supervisor.stream: plan order as early as possible, bounded memory, clean early exits."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import (
    Behaviour,
    Script,
    behaviours,
    hang,
    live_tasks,
    odd_64ths,
    ok,
    plain_behaviours,
)
from tests.library.virtual_time import run_virtual
from trio_supervisor import Capacity, Retry, Status, SubResult, Supervisor, Trace


async def collect(supervisor: Supervisor[Any, str], subtasks: Any, **options: Any) -> list[Any]:
    """Every result the stream yields, each with the time it was yielded."""
    out = []
    async with supervisor.stream(subtasks, **options) as results:
        async for result in results:
            out.append((trio.current_time(), result))
    return out


@settings(max_examples=60, deadline=None)
@given(data=st.data(), k=st.integers(min_value=1, max_value=5))
def test_with_room_for_the_whole_plan_the_stream_yields_what_run_returns(
    data: st.DataObject, k: int
) -> None:
    timeout = data.draw(st.none() | odd_64ths, label="timeout")
    pool = plain_behaviours if timeout is None else behaviours
    plan_behaviours = data.draw(st.lists(pool, max_size=16), label="behaviours")
    n = len(plan_behaviours)

    # run and stream on separate clocks starting at 0, so their times compare exactly
    async def streamed() -> list[SubResult[int, str]]:
        supervisor = Supervisor(Script(plan_behaviours), max_workers=k, timeout=timeout)
        return [result for _, result in await collect(supervisor, range(n), window=max(k, n))]

    async def ran() -> list[SubResult[int, str]]:
        supervisor = Supervisor(Script(plan_behaviours), max_workers=k, timeout=timeout)
        return (await supervisor.run(range(n))).results

    assert run_virtual(streamed) == run_virtual(ran)


@settings(max_examples=60, deadline=None)
@given(
    plan_behaviours=st.lists(plain_behaviours, max_size=20),
    k=st.integers(min_value=1, max_value=5),
    extra=st.integers(min_value=0, max_value=4),
)
def test_each_result_is_yielded_as_soon_as_every_earlier_slot_is_done(
    plan_behaviours: list[Behaviour], k: int, extra: int
) -> None:
    script = Script(plan_behaviours)
    n = len(plan_behaviours)

    async def main() -> list[Any]:
        supervisor = Supervisor(script, max_workers=k)
        return await collect(supervisor, iter(range(n)), window=k + extra)

    streamed = run_virtual(main)
    assert [result.subtask for _, result in streamed] == list(range(n))
    done = 0.0
    for yielded, result in streamed:
        done = max(done, result.finished)
        assert yielded == done
    assert script.peak <= k


INDEXED = {"list": list, "tuple": tuple, "range": lambda slots: slots}
INDEXED_STREAMS = {  # a plan, its lanes, a window of k + extra, and the kind of indexed input
    "plan_behaviours": st.lists(plain_behaviours, max_size=20),
    "k": st.integers(min_value=1, max_value=4),
    "extra": st.integers(min_value=0, max_value=5),
    "kind": st.sampled_from(sorted(INDEXED)),
}


async def stream_twice(
    plan_behaviours: list[Behaviour], k: int, window: int, plan: Any, shared: int, traced: bool
) -> tuple[Any, ...]:
    """One stream of ``plan(range(n))`` (two, sharing one ``Capacity(shared)``, when
    ``shared``): what each yielded and when, what its worker saw, the peak of calls in flight
    across both, and the slots started beyond the window."""
    scripts = [Script(plan_behaviours), Script(plan_behaviours)]
    beyond: list[int] = []  # slots started past the window
    outs: list[list[tuple[float, SubResult[int, str]]]] = [[], []]
    meters = [Capacity(shared)] if shared else []
    in_flight = peak = 0

    async def one(index: int) -> None:
        script, out = scripts[index], outs[index]

        async def worker(subtask: int) -> str:
            nonlocal in_flight, peak
            if subtask >= len(out) + window:
                beyond.append(subtask)
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await script(subtask)
            finally:
                in_flight -= 1

        supervisor = Supervisor(worker, max_workers=k, meters=meters)
        trace = Trace() if traced else None
        async with supervisor.stream(
            plan(range(len(plan_behaviours))), window=window, trace=trace
        ) as results:
            async for result in results:
                out.append((trio.current_time(), result))

    with trio.fail_after(3600):  # a slot lost, or a lane never woken, fails: it does not hang
        async with trio.open_nursery() as nursery:
            for index in range(2 if shared else 1):
                nursery.start_soon(one, index)
    return outs, [(script.spans, script.calls) for script in scripts], peak, beyond


@settings(max_examples=80, deadline=None)
@given(**INDEXED_STREAMS, traced=st.booleans())
def test_an_indexed_input_streams_as_a_lazy_one_does(
    plan_behaviours: list[Behaviour], k: int, extra: int, kind: str, traced: bool
) -> None:
    """A list, tuple or range is not pulled by a task: its lanes take its slots a chunk at a
    time, as far as the window has room. What comes out is what a lazy iterator of the same
    subtasks gives: the same results at the same times, the worker called on the same slots at
    the same times, and no slot started beyond the window."""
    window = k + extra
    indexed = run_virtual(stream_twice, plan_behaviours, k, window, INDEXED[kind], 0, traced)
    lazy = run_virtual(stream_twice, plan_behaviours, k, window, iter, 0, traced)
    assert indexed == lazy
    assert indexed[3] == []


@settings(max_examples=60, deadline=None)
@given(**INDEXED_STREAMS, shared=st.integers(min_value=1, max_value=3))
def test_two_indexed_streams_on_one_capacity_keep_every_law(
    plan_behaviours: list[Behaviour], k: int, extra: int, kind: str, shared: int
) -> None:
    """Two streams of a list, tuple or range draw from one ``Capacity``: their lanes wait for a
    place and then look for a slot again. Each yields every slot once, in plan order, ended as
    its script says; the worker is called once a slot; at most ``shared`` calls run at once
    across both; no slot starts beyond its stream's window."""
    n = len(plan_behaviours)
    window = k + extra
    outs, seen, peak, beyond = run_virtual(
        stream_twice, plan_behaviours, k, window, INDEXED[kind], shared, False
    )
    for out, (_, calls) in zip(outs, seen, strict=True):
        assert [result.subtask for _, result in out] == list(range(n))
        assert [result.status for _, result in out] == [
            Status.OK if behaviour.outcome(1) == "ok" else Status.FAILED
            for behaviour in plan_behaviours
        ]
        assert calls == dict.fromkeys(range(n), 1)
    assert peak <= shared
    assert beyond == []


async def test_the_first_result_arrives_when_slot_zero_is_done(autojump_clock: Any) -> None:
    script = Script([ok(32), ok(1), ok(2), ok(3)])
    start = trio.current_time()
    supervisor = Supervisor(script, max_workers=4)
    async with supervisor.stream(range(4)) as results:
        first = await anext(results)
        assert (first.subtask, trio.current_time() - start) == (0, 1.0)
        assert [result.subtask async for result in results] == [1, 2, 3]
        assert trio.current_time() - start == 1.0  # the others were waiting, already done


class Counted:
    """A lazy input of a million subtasks that counts how many were pulled."""

    def __init__(self) -> None:
        self.pulled = 0

    def __iter__(self) -> Iterator[int]:
        for i in range(10**6):
            self.pulled = i + 1
            yield i

    async def __aiter__(self) -> AsyncIterator[int]:
        for i in range(10**6):
            self.pulled = i + 1
            yield i


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("k", "window"), [(4, None), (8, 8), (3, 20)])
async def test_a_million_lazy_subtasks_stay_within_the_window(
    autojump_clock: Any, kind: str, k: int, window: int | None
) -> None:
    source = Counted()
    bound = 4 * k if window is None else window
    script = Script([Behaviour(1 + i % 7, ("fail",) if i % 5 == 0 else ("ok",)) for i in range(40)])

    async def worker(subtask: int) -> str:
        check()
        try:
            return await script(subtask % 40)
        finally:
            check()

    yielded = 0
    baseline = live_tasks()

    def check() -> None:
        in_window = source.pulled - yielded  # pulled but not yet yielded
        assert in_window <= bound
        assert script.in_flight <= k
        assert in_window - script.in_flight >= 0  # the rest are finished, waiting their turn
        assert live_tasks() <= baseline + 1 + k  # the one task that pulls, and the workers

    supervisor = Supervisor(worker, max_workers=k)
    subtasks = iter(source) if kind == "sync" else aiter(source)
    async with supervisor.stream(subtasks, window=window) as results:
        async for result in results:
            assert result.subtask == yielded
            yielded += 1
            check()
            if yielded == 500:
                break
    assert live_tasks() == baseline
    assert script.in_flight == 0
    assert 500 <= source.pulled <= 500 + bound
    # the input is pulled ahead of the workers only within the window: what was pulled and
    # never ran when the body left is within it (and no worker was called on it)
    assert source.pulled - bound <= sum(script.calls.values()) <= source.pulled


async def test_a_slow_head_stalls_admission_once_the_window_is_full(autojump_clock: Any) -> None:
    script = Script([hang()] + [ok(1)] * 20)
    pulled = 0

    def source() -> Iterator[int]:
        nonlocal pulled
        for i in range(21):
            pulled = i + 1
            yield i

    with trio.move_on_after(10):
        async with Supervisor(script, max_workers=2).stream(source(), window=5) as results:
            async for _ in results:
                pytest.fail("nothing can be yielded before the hung head")
    assert pulled == 5  # the head and the four behind it; then the line stalls
    assert sum(script.calls.values()) == 5


async def test_a_timed_out_head_releases_the_line(autojump_clock: Any) -> None:
    script = Script([hang()] + [ok(1)] * 9)
    start = trio.current_time()
    streamed = await collect(Supervisor(script, max_workers=2, timeout=1.5), range(10), window=3)
    assert [result.status for _, result in streamed] == [Status.TIMED_OUT] + [Status.OK] * 9
    assert streamed[0][0] - start == 1.5


async def test_leaving_the_body_early_cancels_the_rest(autojump_clock: Any) -> None:
    script = Script([ok(1)] + [hang()] * 5)
    baseline = live_tasks()
    start = trio.current_time()
    async with Supervisor(script, max_workers=3).stream(range(6)) as results:
        async for result in results:
            assert result.subtask == 0
            break
    assert trio.current_time() - start == 1 / 32
    # every hung worker started was cancelled: the two started at once, and slot 3 if it was
    # pulled at the very instant slot 0 ended, before the body left
    assert script.cancelled == sum(script.calls.values()) - 1 >= 2
    assert live_tasks() == baseline


async def test_an_exception_in_the_body_leaves_the_block_unwrapped(autojump_clock: Any) -> None:
    script = Script([ok(1)] + [hang()] * 3)
    baseline = live_tasks()

    async def give_up() -> None:
        async with Supervisor(script, max_workers=4).stream(range(4)) as results:
            async for _ in results:
                raise ValueError("the consumer gave up")

    with pytest.raises(ValueError, match=r"^the consumer gave up$"):
        await give_up()
    assert script.cancelled == 3
    assert live_tasks() == baseline


async def test_cancelling_the_stream_from_outside_passes_through(autojump_clock: Any) -> None:
    script = Script([hang()] * 3)
    with trio.move_on_after(2) as scope:
        await collect(Supervisor(script, max_workers=3), range(3))
    assert scope.cancelled_caught
    assert script.cancelled == 3


async def test_an_input_error_comes_out_after_the_results_before_it(autojump_clock: Any) -> None:
    def source() -> Iterator[int]:
        yield from range(3)
        raise LookupError("the input broke")

    script = Script([ok(4), ok(1), ok(2)])
    seen = []

    async def consume() -> None:
        async with Supervisor(script, max_workers=2).stream(source()) as results:
            async for result in results:
                seen.append(result.subtask)

    with pytest.raises(LookupError, match=r"^the input broke$"):
        await consume()
    assert seen == [0, 1, 2]


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
async def test_keyboard_interrupt_in_a_worker_ends_the_stream(
    autojump_clock: Any, exc_type: type[BaseException]
) -> None:
    async def worker(subtask: int) -> str:
        await trio.sleep(0.25)
        raise exc_type("stop")

    with pytest.raises(exc_type) as raised:  # bare, not in an exception group
        await collect(Supervisor(worker, max_workers=2), range(4))
    assert type(raised.value) is exc_type


async def test_a_str_is_decomposed_and_traced(autojump_clock: Any) -> None:
    async def echo(subtask: str) -> str:
        await trio.sleep(len(subtask) / 32)
        return subtask.upper()

    trace = Trace()
    streamed = await collect(Supervisor(echo, max_workers=2), "ab; c; defg", trace=trace)
    assert [result.output for _, result in streamed] == ["AB", "C", "DEFG"]
    assert [slot.subtask for slot in trace.slots] == ["ab", "c", "defg"]
    assert [slot.status for slot in trace.slots] == [Status.OK] * 3
    assert trace.closed is not None


async def test_retries_in_a_stream_count_every_attempt(autojump_clock: Any) -> None:
    script = Script([Behaviour(1, ("fail", "fail", "ok")), Behaviour(1, ("fail",)), ok(1)])
    streamed = await collect(Supervisor(script, max_workers=2, retry=Retry(attempts=3)), range(3))
    assert [(result.status, result.attempts) for _, result in streamed] == [
        (Status.OK, 3),
        (Status.FAILED, 3),
        (Status.OK, 1),
    ]
    assert [script.calls[slot] for slot in range(3)] == [3, 3, 1]


async def test_a_stream_is_entered_once_and_iterated_inside(autojump_clock: Any) -> None:
    stream = Supervisor(Script([ok(1)]), max_workers=1).stream([0])
    async with stream as results:
        assert [result.subtask async for result in results] == [0]
    with pytest.raises(RuntimeError, match=r"^iterate a stream inside its `async with` block$"):
        await anext(results)
    with pytest.raises(RuntimeError, match=r"^this stream was already entered: call "):
        async with stream:
            pass


async def test_an_endless_input_is_fine(autojump_clock: Any) -> None:
    async def double(subtask: int) -> int:
        await trio.sleep(1 / 32)
        return 2 * subtask

    outputs = []
    async with Supervisor(double, max_workers=3).stream(itertools.count()) as results:
        async for result in results:
            outputs.append(result.output)
            if len(outputs) == 10:
                break
    assert outputs == list(range(0, 20, 2))
