"""Step 32: typed replies. Each leaf's reply is held to a ``Finding``: validated, asked again
with what was wrong at most ``RETRIES`` times, then failed with ``InvalidReply``; its reply cut
at ``max_tokens``, so a budget reserves an attempt's exact worst case. The step before takes
whatever text comes back."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from lessons import step32_typed_replies as step32
from lessons._course import laws
from lessons._course.running import leaf_spans, reasked
from tests.course.step_laws import cases, run_virtual
from tests.course.test_step20_rounds import run_json
from trio_supervisor import Status, Trace
from trio_supervisor.agents import ChatAgent, InvalidReply
from trio_supervisor.testing import SimulatedAgent


@pytest.mark.parametrize("step", cases(laws.A_REPLY_IS_HELD_TO_ITS_CONTRACT))
def test_a_reply_is_held_to_its_contract(step: ModuleType) -> None:
    laws.A_REPLY_IS_HELD_TO_ITS_CONTRACT.verify(step)


def test_the_course_bound_is_the_steps_and_its_worst_case_the_librarys() -> None:
    assert step32.RETRIES == step32.CONTRACT.retries == laws.REASKS
    leaf = "acme news prose 3"
    agent = ChatAgent(
        "m", base_url="http://x/v1", api_key="k", output=step32.CONTRACT, max_tokens=64
    )
    assert step32.worst_case(leaf) == agent.worst_case(leaf)  # what the agent itself reserves


def test_a_leaf_is_a_finding_and_past_the_bound_its_own_error() -> None:
    async def main() -> tuple[Any, Any]:
        agent = SimulatedAgent(0)
        async with step32.open_worker(agent, virtual=True, max_workers=1) as worker:
            found = await worker("acme pricing prose 2")
            with pytest.raises(InvalidReply) as caught:
                await worker("acme news prose 3")
        return found, caught.value

    found, error = run_virtual(main)
    assert found == step32.Finding(
        subtask="acme pricing prose 2", summary="findings on acme pricing prose 2", confidence=0.8
    )
    assert error.replies == step32.RETRIES + 1
    assert "the reply is not JSON" in error.problem


def test_the_worst_case_bounds_what_a_leaf_of_three_requests_spends() -> None:
    """The leaf that uses its every re-ask spends no more than `worst_case` reserves for it."""
    leaf = "acme news prose 3"

    async def main() -> Trace:
        trace = Trace()
        agent = SimulatedAgent(0)
        async with step32.open_worker(agent, virtual=True, max_workers=1) as worker:
            await step32.supervise(
                f"acme: {leaf.removeprefix('acme ')}",
                worker,
                max_workers=1,
                trace=trace,
                budget_tokens=100_000,
            )
        return trace

    trace = run_virtual(main)
    found = reasked(trace)  # each round that asked the company again: one attempt each
    assert found
    for subtask, requests, error in found:
        assert (subtask, requests) == (leaf, 3)
        assert error is not None
        assert error.startswith("InvalidReply")
    worst = step32.worst_case(leaf)
    spent = [span.usage for span in leaf_spans(trace) if span.usage is not None]
    assert len(spent) == len(found)
    for used in spent:
        assert used.calls == worst.calls
        assert used.input_tokens <= worst.input_tokens
        assert used.output_tokens <= worst.output_tokens


def leaves(run: dict[str, Any], company: int) -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = run["trace"]["slots"][company]["child"]["slots"]
    return children


def test_the_demos_ask_again_once_and_fail_past_the_bound() -> None:
    typed, budgeted = run_json(32)
    reviews = leaves(typed, 0)[1]  # acme reviews prose 1: asked twice, then ok
    assert reviews["spans"][-1]["status"] == Status.OK.value
    assert reviews["spans"][-1]["usage"]["calls"] == 2
    news = leaves(typed, 1)[1]  # globex news prose 3: three replies, none valid
    assert news["spans"][-1]["status"] == Status.FAILED.value
    assert news["spans"][-1]["error"].startswith("InvalidReply: 3 replies")
    assert "(80% sure)" in typed["answer"]  # the synthesis reads the Finding's fields
    assert "globex news prose 3: missing" in typed["answer"]
    # a budget that pays for one leaf's worst case: the others end over budget, sending nothing
    ended = [slot["spans"][-1]["status"] for slot in leaves(budgeted, 0)]
    assert ended == [Status.OK.value, Status.OVER_BUDGET.value, Status.OVER_BUDGET.value]


def test_step_32_keeps_step_31s_names_for_the_step_after() -> None:
    from lessons import step31_token_budget as step31

    for name in ("supervise", "open_worker", "check_task", "supervise_broken", "worst_case"):
        assert callable(getattr(step32, name)), name
    assert step32.REPLY_TOKENS == step31.REPLY_TOKENS
