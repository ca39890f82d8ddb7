"""A Budget's rules, ``report_usage``, and the usage a ``ChatAgent`` reports against the loopback
server (which counts tokens in words, as a real server reports them)."""

from __future__ import annotations

import re
from typing import Any

import httpx2
import pytest
import trio

from tests.library.virtual_time import run_virtual
from trio_supervisor import (
    Budget,
    OverBudget,
    Retry,
    Status,
    Supervisor,
    Trace,
    Usage,
    report_usage,
)
from trio_supervisor.agents import ChatAgent
from trio_supervisor.testing import devserver


def test_a_budget_bounds_something() -> None:
    with pytest.raises(ValueError, match=r"^a Budget bounds calls, tokens or cost: give at least"):
        Budget()
    with pytest.raises(ValueError, match=r"^tokens must be >= 0, got -1$"):
        Budget(tokens=-1)
    with pytest.raises(TypeError, match=r"^calls must be an int >= 0, got float 2.5$"):
        Budget(calls=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^cost must be a number >= 0"):
        Budget(cost=-0.5)
    with pytest.raises(TypeError, match=r"^reserve must be callable or None"):
        Budget(calls=1, reserve=3)  # type: ignore[arg-type]
    assert repr(Budget(tokens=10, name="t")) == (
        "Budget(tokens=10, name='t', spent=(calls=0, tokens=0, cost=0), held=0)"
    )


def test_a_tokens_budget_needs_a_worst_case_before_any_work() -> None:
    async def work(n: int) -> int:
        return n

    with pytest.raises(ValueError, match=r"^budget 'tokens' bounds tokens, so each attempt"):
        Supervisor(work, max_workers=2, meters=[Budget(tokens=10, name="tokens")])
    Supervisor(work, max_workers=2, meters=[Budget(calls=10)])  # one call each: known


def test_report_usage_outside_an_attempt_does_nothing_and_checks_its_figures() -> None:
    report_usage(input_tokens=3)  # no attempt watches: nothing to tell
    with pytest.raises(ValueError, match=r"^output_tokens must be >= 0, got -2$"):
        report_usage(output_tokens=-2)
    with pytest.raises(TypeError, match=r"^cost must be a number >= 0"):
        report_usage(cost="1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("figures", "error", "message"),
    [
        ({"output_tokens": -25}, ValueError, "output_tokens must be >= 0, got -25"),
        ({"calls": -1}, ValueError, "calls must be >= 0, got -1"),
        ({"input_tokens": 2.5}, TypeError, "input_tokens must be an int >= 0, got float 2.5"),
        ({"calls": True}, TypeError, "calls must be an int >= 0, got bool True"),
        ({"cost": -0.5}, ValueError, "cost must be a number >= 0, got -0.5"),
        ({"cost": float("inf")}, ValueError, "cost must be a number >= 0 and finite, got inf"),
        ({"cost": "1"}, TypeError, "cost must be a number >= 0, got str '1'"),
    ],
)
def test_a_usage_refuses_what_report_usage_refuses(
    figures: dict[str, Any], error: type[Exception], message: str
) -> None:
    """A worst case (from ``reserve=`` or a worker's ``worst_case``) below zero would let a budget
    overshoot: a Usage refuses it as it is made, as ``report_usage`` refuses a report."""
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        Usage(**figures)
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        report_usage(**figures)


def test_a_negative_worst_case_cannot_make_a_budget_overshoot() -> None:
    async def work(n: int) -> int:
        report_usage(output_tokens=5)
        return n

    async def main() -> Budget:
        budget = Budget(tokens=10, reserve=lambda n: Usage(output_tokens=-25))
        await Supervisor(work, max_workers=8, meters=[budget]).run(range(7))
        return budget

    with pytest.raises(ValueError, match=r"^output_tokens must be >= 0, got -25$"):
        run_virtual(main)


def test_usage_adds_up_and_a_cost_is_a_float() -> None:
    assert Usage(cost=1) + Usage(2, 3, 4, 0.5) == Usage(3, 3, 4, 1.5)
    assert isinstance(Usage(cost=1).cost, float)


def test_a_calls_budget_ends_the_slots_it_cannot_afford_in_plan_order() -> None:
    async def work(n: int) -> int:
        await trio.sleep(n)
        return n

    async def main() -> tuple[Any, Budget]:
        budget = Budget(calls=3, name="calls")
        aggregate = await Supervisor(work, max_workers=2, meters=[budget]).run([1, 2, 3, 4, 5])
        return aggregate, budget

    aggregate, budget = run_virtual(main)
    assert [r.status for r in aggregate] == [Status.OK] * 3 + [Status.OVER_BUDGET] * 2
    assert aggregate.degraded
    assert aggregate[3].error == (
        "OverBudget: budget 'calls' is spent: an attempt reserves 1 calls, 0 of 3 are left"
    )
    assert isinstance(aggregate[3].exception, OverBudget)
    assert aggregate[3].exception.budget is budget
    assert budget.spent == Usage(calls=3)


def test_an_attempt_waits_for_a_running_one_to_settle() -> None:
    async def work(n: int) -> float:
        await trio.sleep(1)
        report_usage(input_tokens=2)  # reserved 6, used 2: 4 given back
        return trio.current_time()

    async def main() -> Any:
        budget = Budget(tokens=10, reserve=lambda n: Usage(input_tokens=6))
        return await Supervisor(work, max_workers=4, meters=[budget]).run([0, 1, 2])

    aggregate = run_virtual(main)
    assert [r.output for r in aggregate] == [1.0, 2.0, 3.0]  # 6 + 6 > 10: one at a time


def test_a_retry_reserves_again_and_a_failure_is_charged_its_reservation() -> None:
    calls: list[int] = []

    async def work(n: int) -> int:
        calls.append(n)
        if len(calls) == 1:
            raise RuntimeError("flaky")  # reported nothing: charged its whole reservation
        report_usage(output_tokens=1)
        return n

    async def main() -> Budget:
        budget = Budget(tokens=100, reserve=lambda n: Usage(output_tokens=5))
        await Supervisor(work, max_workers=1, retry=Retry(attempts=2), meters=[budget]).run([7])
        return budget

    budget = run_virtual(main)
    assert budget.reservations == budget.settlements == 2
    assert budget.spent.tokens == 5 + 1


def test_a_budget_is_a_plain_meter_too() -> None:
    async def main() -> Budget:
        budget = Budget(calls=1)
        await budget.acquire()
        budget.release()
        return budget

    assert run_virtual(main).spent.calls == 1


def agent(**options: Any) -> ChatAgent:
    server = httpx2.ASGITransport(app=devserver.app(latency=(0, 0)))
    return ChatAgent("m", base_url="http://x/v1", api_key="k", transport=server, **options)


def test_the_loopback_server_counts_usage_in_words_and_honours_max_tokens() -> None:
    async def main() -> tuple[Any, Trace, Budget]:
        async with agent(max_tokens=3, price=(0.5, 1.0)) as chat:
            budget = Budget(tokens=1000, cost=1000.0)
            trace = Trace()
            supervisor = Supervisor(chat, max_workers=4, meters=[budget])
            aggregate = await supervisor.run(["one", "two words", "three more words"], trace=trace)
        return aggregate, trace, budget

    aggregate, trace, budget = run_virtual(main)
    assert [r.output for r in aggregate] == ["answer to: one", "answer to: two", "answer to: three"]
    used = [slot.spans[-1].usage for slot in trace.slots]
    assert used == [
        Usage(1, 1, 3, 1 * 0.5 + 3 * 1.0),
        Usage(1, 2, 3, 2 * 0.5 + 3 * 1.0),
        Usage(1, 3, 3, 3 * 0.5 + 3 * 1.0),
    ]
    assert trace.to_dict()["slots"][0]["spans"][0]["usage"] == {
        "calls": 1,
        "input_tokens": 1,
        "output_tokens": 3,
        "cost": 3.5,
    }
    assert budget.spent == Usage(3, 6, 9, 12.0)
    assert budget.outstanding == 0


def test_a_chat_agents_worst_case_bounds_what_the_server_counts() -> None:
    chat = agent(max_tokens=16, system="be brief")
    worst = chat.worst_case("a prompt of six words here")
    assert worst is not None
    assert worst.output_tokens == 16
    assert worst.input_tokens >= len(["be", "brief", "a", "prompt", "of", "six", "words", "here"])
    assert agent().worst_case("x") is None


def test_a_tokens_budget_refuses_a_chat_agent_without_max_tokens() -> None:
    async def main() -> None:
        async with agent() as chat:
            await Supervisor(chat, max_workers=1, meters=[Budget(tokens=10)]).run(["x"])

    with pytest.raises(ValueError, match=r"ChatAgent\(max_tokens=\.\.\.\)"):
        run_virtual(main)


def test_a_chat_error_answer_is_a_call_of_no_tokens() -> None:
    async def main() -> Budget:
        server = httpx2.ASGITransport(app=devserver.app(latency=(0, 0)))
        async with ChatAgent(
            "m", base_url="http://x/v1", api_key="k", transport=server, max_tokens=5
        ) as chat:
            budget = Budget(tokens=100)
            await Supervisor(chat, max_workers=1, meters=[budget]).run(["[500] boom"])
        return budget

    budget = run_virtual(main)
    assert budget.spent == Usage(calls=1)
