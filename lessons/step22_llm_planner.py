"""Step 22: an LLM planner. A chat model decides each next batch, as JSON the run checks.

What it adds: ``planner="llm"`` asks a chat model for each decision through the library's
``ChatPlanner``: the system prompt carries the JSON schema of a reply, the user message the task
and the ledger as JSON; a reply that does not validate is asked again with what was wrong, and
after three requests the decision fails, which costs its round (a stall), never the run. With
``--endpoint`` the model is yours (its key from ``OPENAI_API_KEY``); without it the loopback
server plays the planner model, deciding by the same rules as step 20's scripted planner, served
in this process through the client's transport: the same run, on real or virtual time.

What is still wrong: the workers are one flat level. A subtask that is itself a whole task
(research a company: its pricing, its reviews) cannot have a supervisor of its own: every batch
runs on this one supervisor, and the planner plans every leaf itself.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step21_budgets import RULES as RULES
from lessons.step21_budgets import open_worker as open_worker  # unchanged since step 18
from lessons.step21_budgets import supervisor as supervisor
from trio_supervisor import Answer, Planner, ReplanLimits, Trace, Worker
from trio_supervisor.agents import ChatPlanner
from trio_supervisor.testing import devserver

LOOPBACK_KEY = "loopback"  # the loopback server checks no key, and the SDK needs one


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float | None = None,
    attempts: int = 4,
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
    rate: float | None = None,
    adaptive: bool = False,
    max_rounds: int = 5,
    max_subtasks: int = 20,
    max_stalls: int = 2,
    max_resets: int = 1,
    deadline: float | None = None,
    planner: str = "scripted",
    endpoint: str | None = None,
    model: str | None = None,
    trace: Trace | None = None,
) -> Answer[str, str]:
    chosen = supervisor(
        worker,
        max_workers=max_workers,
        worker_timeout=worker_timeout,
        attempts=attempts,
        intensity=intensity,
        backoff=backoff,
        seed=seed,
        rate=rate,
        adaptive=adaptive,
    )
    async with open_planner(planner, endpoint, model) as deciding:  # step 22: who decides
        return await chosen.replan(
            task,
            deciding,
            limits=ReplanLimits(
                max_rounds=max_rounds,
                max_subtasks=max_subtasks,
                max_stalls=max_stalls,
                max_resets=max_resets,
            ),
            deadline=deadline,
            trace=trace,
        )


@asynccontextmanager
async def open_planner(
    kind: str, endpoint: str | None, model: str | None
) -> AsyncIterator[Planner[str, str]]:
    """The scripted planner (step 20's rules), or a chat model asked for JSON: at ``endpoint``,
    or the loopback server playing the rules, in this process."""
    if kind not in ("scripted", "llm"):
        raise ValueError(f"planner must be 'scripted' or 'llm', got {kind!r}")
    if kind == "scripted":
        yield RULES
        return
    if endpoint is not None:  # step 22: a model of yours; its key never shown
        async with ChatPlanner(model or "", base_url=endpoint) as chat:
            yield chat
        return
    app = devserver.app(planner=RULES)  # step 22: the loopback model decides by the rules
    async with ChatPlanner(
        "planner",
        base_url="http://loopback/v1",
        api_key=LOOPBACK_KEY,
        transport=httpx2.ASGITransport(app=app),  # step 22: no socket: any clock will do
    ) as chat:
        yield chat


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
