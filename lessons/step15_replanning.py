"""Step 15: re-planning. A planner reads what came back and decides the next parallel batch.

What it adds: the plan is made in rounds. ``Supervisor.replan`` asks a planner for a batch, runs
it in parallel under ``max_workers`` (fanned back in plan order), puts every result in a ledger
(its round, its place in the batch), and the planner reads the ledger: done, or the next batch.
Its rules here follow up what a result names (pricing names a competitor: ask about it) and
reroute a failed subtask (the reviews, from the app stores); a round with nothing new is a
stall. Budgets end what the planner does not: ``max_rounds``, ``max_subtasks``, ``max_stalls``
(past it, a fresh plan), ``deadline``; the run always answers, degraded and naming the budget
when one ended it. ``planner="llm"`` asks a chat model for JSON against a schema instead.

What is still wrong: the workers are one flat level. A subtask that is itself a whole task (look
into the competitor, research of its own) cannot have a supervisor and a planner of its own:
every batch runs on this one supervisor, under its one capacity bound.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from trio_supervisor import Answer, Planner, Supervisor, Worker
from trio_supervisor.agents import ChatPlanner
from trio_supervisor.testing import ScriptedPlanner
from trio_supervisor.testing.devserver import serve

RULES = ScriptedPlanner(
    follow_ups={"Acme": ["Acme's discounts"]},  # step 15: a result names a competitor: ask
    reroutes={"reviews": ["customer reviews, from app stores", "customer reviews, from forums"]},
)  # step 15: a failed "reviews" subtask is rerouted to another source, in turn
LOOPBACK_KEY = "loopback"  # the loopback server checks no key, and the SDK needs one


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    max_rounds: int = 5,
    max_subtasks: int = 20,
    max_stalls: int = 2,
    deadline: float = math.inf,
    planner: str = "scripted",
    endpoint: str | None = None,
    model: str | None = None,
) -> Answer[str, str]:
    supervisor = Supervisor(worker, max_workers=max_workers)
    async with open_planner(planner, endpoint, model) as chosen:
        return await supervisor.replan(  # step 15: rounds, until done or out of budget
            task,
            chosen,
            max_rounds=max_rounds,  # step 15: the budgets: past any, a degraded answer
            max_subtasks=max_subtasks,
            max_stalls=max_stalls,
            deadline=None if math.isinf(deadline) else deadline,
        )


@asynccontextmanager
async def open_planner(
    kind: str, endpoint: str | None, model: str | None
) -> AsyncIterator[Planner[str, str]]:
    """The scripted planner (the rules above), or a chat model asked as JSON: at ``endpoint``
    (its key from ``OPENAI_API_KEY``), or the loopback server on 127.0.0.1 playing the rules."""
    if kind == "scripted":
        yield RULES
        return
    if kind != "llm":
        raise ValueError(f"planner must be 'scripted' or 'llm', got {kind!r}")
    if endpoint is not None:
        async with ChatPlanner(model or "", base_url=endpoint) as chat:  # step 15: JSON, checked
            yield chat
        return
    async with trio.open_nursery() as nursery:
        # step 15: the loopback server plays the planner model, deciding by the same rules
        url = await nursery.start(lambda task_status: serve(planner=RULES, task_status=task_status))
        async with ChatPlanner("planner", base_url=url, api_key=LOOPBACK_KEY) as chat:
            yield chat
        nursery.cancel_scope.cancel()  # the run is over: stop serving


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
