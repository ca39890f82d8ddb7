"""Step 32 (step32_typed_replies), wrongly: each reply is held to its contract and asked again,
but ``budget_tokens`` still reserves step 31's guess, one request's worst case: a leaf that uses
its re-asks spends two more requests than it reserved, and the budget is overshot.

A deliberately wrong solution, kept with the tests: ``python -m lessons check 32`` must fail
on it.

Step 32: typed replies. Each leaf's reply is held to a contract, a pydantic model.

What it adds: a leaf's sub-agent is asked for a ``Finding`` (the subtask, a summary, how sure it
is), not for text: each request carries the model's JSON schema as its ``response_format`` and
``max_tokens=REPLY_TOKENS``, and every reply is validated, whatever the server claims (some
ignore the schema and answer prose). A reply that does not validate is asked again within the
attempt, told what was wrong, at most ``RETRIES`` times; past that the slot fails with its own
error, ``InvalidReply``, which is not retried. A slot's output is the ``Finding`` itself, and the
synthesis (step 24's ``digest``) reads its fields, never the words around them. The bound makes a
leaf's worst case exact (``worst_case``): its ``RETRIES + 1`` requests, each reply cut at
``REPLY_TOKENS`` by the request itself, so ``budget_tokens`` reserves each re-ask before it is
sent. On the loopback server a leaf named ``... prose k`` is answered in prose its first k times.

What is still wrong: the run itself is one process's, on one machine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lessons import step26_processes as step26
from lessons import step31_token_budget as step31
from lessons.step22_llm_planner import open_planner
from lessons.step24_escalation import Escalated, digest, subtasks_of, supervisor
from lessons.step31_token_budget import REPLY_TOKENS, THROTTLE
from lessons.step31_token_budget import check_task as check_task
from lessons.step31_token_budget import supervise_broken as supervise_broken
from trio_supervisor import (
    Aggregate,
    Answer,
    AwaitingApproval,
    Budget,
    Capacity,
    Durable,
    Hedge,
    Journal,
    ReplanLimits,
    Restarts,
    Status,
    Strategy,
    Trace,
    Usage,
    Worker,
)
from trio_supervisor.agents import Output
from trio_supervisor.testing import SimulatedAgent, devserver

RETRIES = 2  # step 32: a reply that does not validate is asked again at most this many times
PROSE = re.compile(r"\bprose (\d+)\b")  # "acme reviews prose 2": prose twice, then JSON


class Finding(BaseModel):
    """What a leaf must reply; the synthesis reads its fields, never the words around them."""

    model_config = ConfigDict(extra="forbid")

    subtask: str
    summary: str
    confidence: float = Field(ge=0, le=1)

    def __str__(self) -> str:
        return f"{self.summary} ({self.confidence:.0%} sure)"  # step 32: typed fields


CONTRACT = Output(Finding, retries=RETRIES)  # step 32: a reply is a Finding, or asked again


def worst_case(leaf: str) -> Usage:
    """What a leaf's request may spend at worst, as step 31 reserved it: one request."""
    return Usage(input_tokens=len(leaf) + 4, output_tokens=REPLY_TOKENS)


def analyse(call: tuple[str, Finding, bool]) -> Finding:
    """Step 26's body on a ``Finding``: its summary analysed, its other fields kept."""
    subtask, found, crash = call
    return found.model_copy(update={"summary": step26.analyse((subtask, found.summary, crash))})


def scripted(simulated: SimulatedAgent) -> Callable[[str], devserver.Script]:
    """``simulated`` answering a ``Finding`` in JSON, in prose first for a leaf ``... prose k``."""
    return devserver.mimic(
        simulated,
        reply=lambda leaf, said: json.dumps({"subtask": leaf, "summary": said, "confidence": 0.8}),
        prose=lambda leaf: 0 if (k := PROSE.search(leaf)) is None else int(k.group(1)),
    )


def open_worker(
    simulated: SimulatedAgent, **options: Any
) -> AbstractAsyncContextManager[Worker[str, Finding]]:
    """Step 31's leaf (step 28's gate, step 26's process), its sub-agent asked for a ``Finding``."""
    return step31.open_worker(
        simulated,
        script=scripted(simulated),  # on the loopback server, a Finding in JSON (or prose)
        body=analyse,  # step 26's analysis, of the Finding's summary
        output=CONTRACT,  # step 32: the contract, each reply validated, re-asked
        max_tokens=REPLY_TOKENS,  # step 32: the reply's worst case, now a bound
        **options,
    )


async def supervise(
    task: str,
    worker: Worker[str, Any],
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
    strategy: Strategy = "one_for_one",
    hedge: float | str | None = None,
    need: int | None = None,
    budget_tokens: int | None = None,
    journal: Journal | None = None,
    run_id: str | None = None,
    trace: Trace | None = None,
) -> Answer[str, str]:
    check_task(task)  # a malformed company is refused before any work starts
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
    restarts, within = (None, None) if intensity is None else intensity
    bound = Restarts(max_restarts=restarts, within=within, strategy=strategy)
    budget = None if budget_tokens is None else Budget(tokens=budget_tokens, reserve=worst_case)

    async def research(company: str) -> str:
        child = supervisor(  # a child supervisor, as the chain builds one
            worker,
            max_workers=max_workers,
            worker_timeout=worker_timeout,
            attempts=attempts,
            backoff=backoff,
            seed=seed,
            rate=rate,
            adaptive=adaptive,
            # a leaf holds a place while it works; one token budget for the tree's leaves
            meters=[leaves] if budget is None else [leaves, budget],
            restarts=bound,  # the child's own intensity and strategy
            hedge=None if hedge is None else Hedge(hedge, throttle=THROTTLE),  # step 29
        )
        nested = None if trace is None else trace.nest(company)  # drawn under it
        name = None if run_id is None else f"{run_id}/{company}"  # step 27: the child's own
        leaves_of = subtasks_of(company)
        first = None if need is None else min(need, len(leaves_of))  # step 30: first k of n
        durable = None if name is None else Durable(name, journal)  # journaled (step 27)
        aggregate = await child.run(leaves_of, trace=nested, durable=durable, need=first)
        if aggregate.gave_up is not None:  # escalation, the child's reason
            raise Escalated(f"{company.partition(':')[0]}: {aggregate.gave_up}")
        for result in aggregate.results:  # step 27: a company is final once its leaves are
            if result.status is Status.AWAITING_APPROVAL:  # a leaf parked: a resume runs it
                raise AwaitingApproval(str(result.error).removeprefix("AwaitingApproval: "))
        if first is not None:  # step 30: the leaves not needed are left out of the digest
            kept = [r for r in aggregate.results if r.status is not Status.CANCELLED]
            aggregate = Aggregate(kept, aggregate.gave_up, first)
        return digest(aggregate)

    parent = supervisor(research, max_workers=max_workers, attempts=1)  # step 22's parent
    async with open_planner(planner, endpoint, model) as deciding:
        return await parent.replan(
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
            # each decision and each round's results, kept (step 27)
            durable=None if run_id is None else Durable(run_id, journal),
        )


if __name__ == "__main__":
    from lessons._course.runner import main_for_step

    main_for_step(__file__)
