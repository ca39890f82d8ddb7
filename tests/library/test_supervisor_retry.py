"""Supervisor retries: attempts, full-jitter backoff on virtual time, and what is retried, on
either path a run takes (``PATHS``: the lanes, and the restarting path with a bound or a
strategy). A single slot restarts alone whatever the strategy, so most tests here have one."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import PATHS, Behaviour, Script, latencies
from tests.library.virtual_time import run_virtual
from trio_supervisor import Aggregate, Backoff, Retry, Status, Supervisor, Trace
from trio_supervisor.testing import SubAgentError

backoffs = st.builds(
    Backoff,
    initial=st.sampled_from([0.0, 1 / 32, 0.25, 1.0]),
    maximum=st.sampled_from([1.0, 2.0, 8.0]),
    base=st.sampled_from([1.0, 2.0, 3.0]),
)


@settings(max_examples=100, deadline=None)
@given(
    failures=st.integers(min_value=0, max_value=4),
    attempts=st.integers(min_value=1, max_value=6),
    latency=latencies,
    backoff=backoffs,
    path=st.sampled_from(list(PATHS)),
)
def test_a_worker_failing_k_times_succeeds_on_attempt_k_plus_1_within_the_backoff_bounds(
    failures: int, attempts: int, latency: int, backoff: Backoff, path: str
) -> None:
    script = Script([Behaviour(latency, ("fail",) * failures + ("ok",))])
    supervisor = Supervisor(
        script, max_workers=1, retry=Retry(attempts=attempts, backoff=backoff), **PATHS[path]
    )

    async def main() -> Aggregate[int, str]:
        return await supervisor.run([0], trace=Trace([0]))

    result = run_virtual(main).results[0]
    if attempts > failures:
        assert (result.status, result.output, result.attempts) == (
            Status.OK,
            "output 0",
            failures + 1,
        )
    else:
        assert (result.status, result.error, result.attempts) == (
            Status.FAILED,
            f"SubAgentError: slot 0 failed on call {attempts}",
            attempts,
        )
    assert script.calls[0] == result.attempts
    spans = script.spans[0]
    for failure, ((_, ended), (started, _)) in enumerate(itertools.pairwise(spans), start=1):
        assert ended is not None
        assert 0 <= started - ended <= backoff.bound(failure)
    assert (result.started, result.finished) == (spans[0][0], spans[-1][1])


# one_for_all and rest_for_one are left out by design: there the first failure's restart takes
# its siblings, which then wait out its wait with it
@pytest.mark.parametrize("path", ["lanes", "intensity"])
async def test_the_backoff_is_jittered_across_slots(autojump_clock: Any, path: str) -> None:
    script = Script([Behaviour(1, ("fail", "ok"))] * 20)
    backoff = Backoff(initial=1.0, maximum=1.0)
    supervisor = Supervisor(
        script, max_workers=20, retry=Retry(attempts=2, backoff=backoff), **PATHS[path]
    )
    await supervisor.run(range(20))
    waits = {spans[1][0] - spans[0][1] for spans in script.spans.values()}  # type: ignore[operator]
    assert len(waits) > 1, "every slot waited the same time: no jitter"
    assert all(0 <= wait <= 1.0 for wait in waits)


ON_EVERY_PATH = pytest.mark.parametrize("path", PATHS)


@ON_EVERY_PATH
async def test_an_exception_outside_retry_on_is_not_retried(autojump_clock: Any, path: str) -> None:
    script = Script([Behaviour(1, ("fail", "ok"))])
    supervisor = Supervisor(
        script, max_workers=1, retry=Retry(attempts=5, on=KeyError), **PATHS[path]
    )
    result = (await supervisor.run([0])).results[0]
    assert (result.status, result.attempts) == (Status.FAILED, 1)
    assert script.calls[0] == 1


@ON_EVERY_PATH
async def test_a_timed_out_attempt_is_retried_as_a_too_slow_error(
    autojump_clock: Any, path: str
) -> None:
    script = Script([Behaviour(4, ("hang", "ok"))])
    trace = Trace([0])
    supervisor = Supervisor(
        script,
        max_workers=1,
        timeout=0.5,
        retry=Retry(attempts=2, backoff=Backoff(initial=0)),
        **PATHS[path],
    )
    start = trio.current_time()
    result = (await supervisor.run([0], trace=trace)).results[0]
    assert (result.status, result.attempts) == (Status.OK, 2)
    assert trio.current_time() - start == 0.5 + 4 / 32
    assert [span.status for span in trace.slots[0].spans] == [Status.TIMED_OUT, Status.OK]


@ON_EVERY_PATH
async def test_a_timeout_outside_retry_on_is_not_retried(autojump_clock: Any, path: str) -> None:
    script = Script([Behaviour(4, ("hang", "ok"))])
    supervisor = Supervisor(
        script, max_workers=1, timeout=0.5, retry=Retry(attempts=3, on=SubAgentError), **PATHS[path]
    )
    result = (await supervisor.run([0])).results[0]
    assert (result.status, result.attempts) == (Status.TIMED_OUT, 1)
    assert result.error == "TooSlowError: the attempt ran past its timeout of 0.5s"


@ON_EVERY_PATH
@pytest.mark.parametrize(
    ("raised", "retried"),
    [
        (ExceptionGroup("all retryable", [SubAgentError("a"), SubAgentError("b")]), True),
        (ExceptionGroup("one is not", [SubAgentError("a"), KeyError("b")]), False),
    ],
)
async def test_an_exception_group_is_retried_only_when_all_of_it_is_allowed(
    autojump_clock: Any, raised: ExceptionGroup[Exception], retried: bool, path: str
) -> None:
    calls = 0

    async def worker(subtask: str) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise raised
        return subtask

    supervisor = Supervisor(
        worker, max_workers=1, retry=Retry(attempts=2, on=SubAgentError), **PATHS[path]
    )
    result = (await supervisor.run(["x"])).results[0]
    assert result.ok is retried
    assert calls == (2 if retried else 1)


@ON_EVERY_PATH
async def test_cancellation_during_a_backoff_wait_passes_through(
    autojump_clock: Any, path: str
) -> None:
    script = Script([Behaviour(1, ("fail",))])
    supervisor = Supervisor(
        script,
        max_workers=1,
        retry=Retry(attempts=3, backoff=Backoff(8, 8, 1), seed=0),
        **PATHS[path],
    )
    # the first attempt fails at 1/32 s, then the slot waits up to 8 s (this seed: over 0.01 s)
    with trio.move_on_after(1 / 32 + 0.01) as scope:
        await supervisor.run([0])
    assert scope.cancelled_caught
    assert script.calls[0] == 1  # cancelled while it waited for its second attempt


@ON_EVERY_PATH
async def test_a_waiting_retry_holds_no_place(autojump_clock: Any, path: str) -> None:
    """On every path a slot waiting out its backoff holds no place: with one worker and slot 0
    waiting to retry, slot 1 takes the place at once, as the course's law says (steps 8 on);
    under one_for_all and rest_for_one slot 0's restart takes slot 1 too, and slot 1 starts
    again after it."""
    script = Script([Behaviour(1, ("fail", "ok")), Behaviour(1)])
    backoff = Backoff(initial=1.0, maximum=1.0, base=1.0)
    supervisor = Supervisor(
        script, max_workers=1, retry=Retry(attempts=2, backoff=backoff), **PATHS[path]
    )
    start = trio.current_time()
    first, second = (await supervisor.run([0, 1])).results
    assert (first.status, first.attempts, second.status, second.attempts) == (
        Status.OK,
        2,
        Status.OK,
        1,
    )
    assert first.finished is not None
    if path in ("one_for_all", "rest_for_one"):
        assert second.started is not None
        assert second.started >= first.finished - 1 / 32
    else:
        assert second.started == start + 1 / 32  # as slot 0's first attempt failed


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"initial": -1}, ValueError, "Backoff initial must be a number >= 0, got -1"),
        ({"maximum": "5"}, TypeError, "Backoff maximum must be a number >= 0, got str '5'"),
        ({"base": 0.5}, ValueError, "Backoff base must be a number >= 1, got 0.5"),
        ({"base": -2}, ValueError, "Backoff base must be a number >= 1, got -2"),
        (
            {"initial": 2, "maximum": 1},
            ValueError,
            "Backoff needs initial <= maximum, got initial=2, maximum=1",
        ),
    ],
)
def test_a_bad_backoff_is_refused(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}$"):
        Backoff(**kwargs)


def test_the_backoff_bound_grows_geometrically_up_to_the_maximum() -> None:
    backoff = Backoff(initial=0.5, maximum=3, base=2)
    assert [backoff.bound(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3, 3]
    assert Backoff(initial=1, maximum=10, base=10).bound(10**6) == 10
    with pytest.raises(ValueError, match=r"^failures must be >= 1, got 0$"):
        backoff.bound(0)
