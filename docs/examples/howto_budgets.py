"""Cap a run's tokens without overshoot: a ``Budget`` of tokens shared by every attempt of a wide
fan-out of chat calls, against the loopback server (which counts tokens as a real one reports
them). docs/how-to/budgets.md shows it; tests/docs/test_howto_budgets.py runs it."""

from __future__ import annotations

import httpx2
import trio
import trio.testing

from trio_supervisor import Budget, Retry, Status, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing import devserver

QUESTIONS = [f"summarise chapter {n} of the report in a few words" for n in range(1, 41)]


# --8<-- [start:budget]
async def main() -> dict[str, object]:
    server = httpx2.ASGITransport(app=devserver.app(latency=(0.2, 1.0)))
    budget = Budget(tokens=600, name="report tokens")
    async with ChatAgent(
        "m",
        base_url="http://loopback/v1",
        api_key="k",
        transport=server,
        max_tokens=64,  # each reply's bound: what makes an attempt's worst case known
    ) as agent:
        supervisor = Supervisor(agent, max_workers=16, retry=Retry(on=TRANSIENT), meters=[budget])
        aggregate = await supervisor.run(QUESTIONS)
    # --8<-- [end:budget]
    # --8<-- [start:read]
    over = [result for result in aggregate if result.status is Status.OVER_BUDGET]
    return {
        "answered": aggregate.succeeded,
        "over budget": len(over),
        "spent tokens": budget.spent.tokens,
        "limit": budget.tokens,
        "first refusal": over[0].error if over else None,
        "in plan order": [result.subtask for result in aggregate] == QUESTIONS,
    }
    # --8<-- [end:read]


if __name__ == "__main__":
    print(trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0)))
