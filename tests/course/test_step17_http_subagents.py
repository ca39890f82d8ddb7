"""Step 17: the worker is a chat endpoint across HTTP, and only what may pass is retried.

The laws run on virtual time: against fake workers raising the agent's own error classes, and
against the loopback server's app in this process (``httpx2.ASGITransport``), as the runner and
the docs run the step with ``--virtual``. Step 16, which retries whatever fails, breaks the
step's law (a strict xfail); step 15, whose own backoff decides a wait, undercuts a 429's
``Retry-After``, which the library (step 16 on) never does.
"""

from __future__ import annotations

import io
import json
from types import ModuleType
from typing import Any

import pytest
import trio
from rich.console import Console

from lessons import step16_library, step17_http_subagents
from lessons._course import laws
from lessons._course.demos import Demo
from lessons._course.runner import main
from lessons._course.running import Run, run_step
from tests.course.step_laws import cases
from trio_supervisor import Status, decompose
from trio_supervisor.testing import SimulatedAgent

STEP16, STEP17 = step16_library, step17_http_subagents
UNDERCUT = "step 15's flaw: its backoff draw decides the wait, whatever the server asked"


@pytest.mark.parametrize("step", cases(laws.A_RETRY_WAITS_OUT_ITS_RETRY_AFTER))
def test_a_retry_never_starts_before_the_retry_after_a_429_asked_for(step: ModuleType) -> None:
    laws.A_RETRY_WAITS_OUT_ITS_RETRY_AFTER.verify(step)


@pytest.mark.parametrize("step", cases(laws.ONLY_TRANSIENT_FAILURES_ARE_RETRIED))
def test_only_transient_failures_are_retried_and_each_by_the_supervisor_alone(
    step: ModuleType,
) -> None:
    laws.ONLY_TRANSIENT_FAILURES_ARE_RETRIED.verify(step)


# --- through the loopback server, in this process, on virtual time -----------------------------


def run_through_server(task: str, agent: SimulatedAgent, **options: Any) -> Run:
    """Step 17 on ``task`` as the runner runs it with ``--virtual``: the loopback server's app
    in this process, scripted by ``agent``, each call traced."""
    run = Run("step17_http_subagents", Demo("law", task), decompose(task), options)
    trio.run(run_step, STEP17, run, agent, clock=trio.testing.MockClock(autojump_threshold=0))
    assert run.error is None, run.error
    return run


@pytest.mark.parametrize("step", cases(laws.THROUGH_A_SERVER_EACH_SUBTASK_IS_ANSWERED_ONCE))
def test_through_a_server_over_its_limit_every_subtask_is_answered_once_and_no_wait_undercut(
    step: ModuleType,
) -> None:
    laws.THROUGH_A_SERVER_EACH_SUBTASK_IS_ANSWERED_ONCE.verify(step)


def test_the_demo_shows_each_429_its_retry_after_wait_and_its_retry() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, highlight=False)
    assert main(["17", "--virtual"], console=console) == 0
    printed = out.getvalue()
    assert "╌ told to wait: the wait a 429's Retry-After asked for" in printed
    assert (
        "slot  2  RateLimited: 429 Too Many Requests · Retry-After 0.625s · retried at" in printed
    )
    assert "slot  1  TransientError: 500 Internal Server Error · retried at" in printed
    assert "✗╌" in printed  # a failed attempt, then the wait it was told


def test_json_keeps_each_failed_attempts_error_and_the_wait_it_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    assert main(["17", "--virtual", "--json"], console=Console(file=io.StringIO())) == 0
    first = json.loads(out.getvalue())["runs"][0]
    spans = [span for slot in first["trace"]["slots"] for span in slot["spans"]]
    asked = [span for span in spans if span["retry_after"] is not None]
    assert asked
    assert all(span["error"].startswith("RateLimited: 429") for span in asked)
    assert all(span["error"] is None for span in spans if span["status"] == "ok")
    assert first["options"]["attempts"] == 4
    assert "rate" not in first["options"]  # step 18's


def test_a_hung_request_is_cut_by_the_timeout_and_tried_again() -> None:
    agent = SimulatedAgent(0, hang={"b"})
    run = run_through_server("a; b", agent, max_workers=2, worker_timeout=1.5, attempts=3)
    assert run.aggregate is not None
    assert run.trace is not None
    reviews = run.aggregate.results[1]
    assert (reviews.status, reviews.attempts) == (Status.TIMED_OUT, 3)
    took = [span.end - span.start for span in run.trace.slots[1].spans if span.end is not None]
    assert took == pytest.approx([1.5] * 3, abs=1e-9)  # jittered starts: not whole 1/32 s
