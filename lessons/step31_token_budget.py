"""Step 31: a token budget. What the tree's leaves spend is reserved before each request.

What it adds: ``budget_tokens`` caps the tokens the tree's leaves spend, hedges included, with
one ``Budget`` that reserves each request's worst case (``worst_case``: its prompt and a reply of
``REPLY_TOKENS``) before it is sent and settles what its reply used after. Requests checked
against a shared limit before they start and charged after they end would overshoot it by the
width of the fan-out; reserved, they never do, and a leaf the budget can no longer afford ends
``over budget`` without a request.

What is still wrong: a reply's worst case is a guess (``REPLY_TOKENS``) unless the request
bounds it (``max_tokens``), and a reply is taken as text, whatever it says: step 32 holds each
reply to a contract.
"""

from __future__ import annotations

from lessons.step19_adaptive import stream as stream  # Part I's stream, kept (step 16 on)
from lessons.step22_llm_planner import open_planner
from lessons.step24_escalation import Escalated, digest, subtasks_of, supervisor
from lessons.step30_first_k import THROTTLE as THROTTLE
from lessons.step30_first_k import check_task as check_task
from lessons.step30_first_k import open_worker as open_worker  # unchanged since step 28
from lessons.step30_first_k import supervise_broken as supervise_broken
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

REPLY_TOKENS = 64  # the tokens a leaf's reply may take, at most, as a budget reserves them


def worst_case(leaf: str) -> Usage:
    """What a leaf's request may spend at worst, reserved before it is sent: its prompt (a token
    a character, the most it can be) and a reply of ``REPLY_TOKENS``."""
    return Usage(input_tokens=len(leaf) + 4, output_tokens=REPLY_TOKENS)


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
    strategy: Strategy = "one_for_one",
    hedge: float | str | None = None,
    need: int | None = None,
    budget_tokens: int | None = None,
    journal: Journal | None = None,
    run_id: str | None = None,
    trace: Trace | None = None,
) -> Answer[str, str]:
    check_task(task)  # a malformed company is refused before any work starts
    metered = supervisor(worker, max_workers=max_workers, rate=rate, adaptive=adaptive)
    leaves = Capacity(max_workers)  # one budget for every leaf worker of the tree
    shared = [leaves, *metered.meters]  # and one rate and adaptive limit for the tree
    restarts, within = (None, None) if intensity is None else intensity
    bound = Restarts(max_restarts=restarts, within=within, strategy=strategy)
    # step 31: one token budget for the tree's leaves, each request's worst case reserved
    budget = None if budget_tokens is None else Budget(tokens=budget_tokens, reserve=worst_case)

    async def research(company: str) -> str:
        child = supervisor(  # a child supervisor, as the chain builds one
            worker,
            max_workers=max_workers,
            worker_timeout=worker_timeout,
            attempts=attempts,
            backoff=backoff,
            seed=seed,
            # a leaf holds a place while it works; one token budget for the tree's leaves
            meters=shared if budget is None else [*shared, budget],
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
