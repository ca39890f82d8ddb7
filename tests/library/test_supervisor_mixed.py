"""A random mix of failures, hangs, retries and a deadline: no subtask is lost or counted twice,
on either path a run takes (``PATHS``)."""

from __future__ import annotations

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.scripted_worker import (
    PATHS,
    Behaviour,
    Script,
    latencies,
    live_tasks,
    odd_64ths,
    odd_128ths,
)
from tests.library.virtual_time import run_virtual
from trio_supervisor import Aggregate, Backoff, Retry, Status, Supervisor, Trace
from trio_supervisor._retry import RetryOn
from trio_supervisor.testing import SubAgentError

ONE_BY_ONE = ("lanes", "intensity")
"""The paths where each slot restarts alone, so that ``model`` says where each one ends. Under
one_for_all and rest_for_one a failure restarts its siblings too, which then make calls of their
own (by design): there only the laws that hold whatever restarts a slot are checked."""

RETRY_ON: dict[str, tuple[RetryOn, bool, bool]] = {
    # name: (retry_on, retries failures, retries timeouts)
    "Exception": (Exception, True, True),
    "SubAgentError": (SubAgentError, True, False),
    "TooSlowError": (trio.TooSlowError, False, True),
    "KeyError": (KeyError, False, False),
}


def model(
    slot: int, behaviour: Behaviour, timeout: float | None, attempts: int, retry: str
) -> tuple[Status | None, str, int]:
    """Where a slot ends without a deadline: its status, output or error, and attempts used
    (status None: it hangs for good on that attempt)."""
    _, retries_failures, retries_timeouts = RETRY_ON[retry]
    for call in range(1, attempts + 1):
        outcome = behaviour.outcome(call)
        if outcome == "hang" and timeout is None:
            return None, "", call
        if outcome == "hang" or (timeout is not None and behaviour.seconds > timeout):
            status = Status.TIMED_OUT
            shown = f"TooSlowError: the attempt ran past its timeout of {timeout:g}s"
            retryable = retries_timeouts
        elif outcome == "fail":
            status = Status.FAILED
            shown = f"SubAgentError: slot {slot} failed on call {call}"
            retryable = retries_failures
        else:
            return Status.OK, f"output {slot}", call
        if not retryable or call == attempts:
            return status, shown, call
    raise AssertionError("unreachable")


@st.composite
def runs(draw: st.DrawFn) -> dict[str, object]:
    timeout = draw(st.none() | odd_64ths, label="timeout")
    deadline = draw(st.none() | odd_128ths, label="deadline")
    can_hang = timeout is not None or deadline is not None
    outcomes = st.sampled_from(["ok", "fail", "hang"] if can_hang else ["ok", "fail"])
    behaviour = st.builds(
        Behaviour, latencies, st.lists(outcomes, min_size=1, max_size=4).map(tuple)
    )
    if timeout is None and deadline is None:
        behaviour = behaviour.filter(lambda b: "hang" not in b.outcomes)
    return {
        "behaviours": draw(st.lists(behaviour, max_size=14), label="behaviours"),
        "k": draw(st.integers(min_value=1, max_value=5), label="k"),
        "timeout": timeout,
        "deadline": deadline,
        "attempts": draw(st.integers(min_value=1, max_value=4), label="attempts"),
        "retry": draw(st.sampled_from(sorted(RETRY_ON)), label="retry_on"),
        "initial": draw(st.sampled_from([0.0, 1 / 32, 0.25]), label="backoff initial"),
        "path": draw(st.sampled_from(list(PATHS)), label="path"),
    }


@settings(max_examples=120, deadline=None)
@given(runs())
def test_no_subtask_is_lost_or_counted_twice(run: dict[str, object]) -> None:
    behaviours: list[Behaviour] = run["behaviours"]  # type: ignore[assignment]
    timeout: float | None = run["timeout"]  # type: ignore[assignment]
    deadline: float | None = run["deadline"]  # type: ignore[assignment]
    attempts: int = run["attempts"]  # type: ignore[assignment]
    retry: str = run["retry"]  # type: ignore[assignment]
    path: str = run["path"]  # type: ignore[assignment]
    script = Script(behaviours)
    n = len(behaviours)
    supervisor = Supervisor(
        script,
        max_workers=run["k"],  # type: ignore[arg-type]
        timeout=timeout,
        retry=Retry(
            attempts=attempts,
            on=RETRY_ON[retry][0],
            backoff=Backoff(initial=run["initial"], maximum=1.0),  # type: ignore[arg-type]
        ),
        **PATHS[path],
    )
    trace_box: list[Trace] = []

    async def main() -> tuple[Aggregate[int, str], float, float]:
        start = trio.current_time()
        baseline = live_tasks()
        trace = Trace(range(n))
        trace_box.append(trace)
        aggregate = await supervisor.run(range(n), deadline=deadline, trace=trace)
        assert live_tasks() == baseline
        assert script.in_flight == 0
        return aggregate, start, trio.current_time() - start

    aggregate, start, wall = run_virtual(main)
    trace = trace_box[0]
    assert [result.subtask for result in aggregate.results] == list(range(n))
    assert sum(1 for result in aggregate.results if result.status in Status) == n
    assert aggregate.succeeded + aggregate.failed == n
    if deadline is not None:
        assert wall <= deadline
    for slot, (behaviour, result) in enumerate(zip(behaviours, aggregate.results, strict=True)):
        assert result.attempts == script.calls[slot]  # every call counted, none twice
        spans = trace.slots[slot].spans
        assert len(spans) == result.attempts
        assert all(span.end is not None for span in spans)  # the trace closed every span
        if result.status is Status.CANCELLED:
            assert deadline is not None
            assert result.finished in (None, start + deadline)
        else:
            assert result.finished is not None
            assert result.finished - start == spans[-1].end - trace.origin  # type: ignore[operator]
            assert result.started == spans[0].start
            assert spans[-1].status is result.status
        if path not in ONE_BY_ONE:
            continue
        status, shown, used = model(slot, behaviour, timeout, attempts, retry)
        if result.status is Status.CANCELLED:
            assert result.attempts <= used
        else:
            assert status is not None, "a slot hanging for good ended without the deadline"
            assert (result.status, result.attempts) == (status, used)
            assert (result.output if result.ok else result.error) == shown
