"""Step 6: timeouts and deadlines. A hung worker loses its slot; a late run returns what it has.

What it adds: each worker runs under ``trio.fail_after(worker_timeout)`` *inside its own
task*. When it runs past its timeout, Trio cancels it, its slot is marked ``TIMED_OUT``, its
capacity token goes back and the next subtask starts. The scope has to be inside the task: a
cancel scope only covers code that runs inside it, in the task that entered it, and ``with
trio.fail_after(worker_timeout): nursery.start_soon(run_one, slot, subtask)`` exits as soon as the
task is *scheduled*; the worker then runs under the nursery's scope, and that timeout times
nothing. Around the whole run, ``trio.move_on_after(deadline)`` cancels every worker still running
(and stops dispatching) when the deadline passes, and the run returns instead of raising: finished
slots keep their results, the rest are marked ``CANCELLED`` (``attempts`` 0 if they never
started), and ``synthesize`` flags the answer as degraded. Nothing outlives the call: the nursery
waits for every cancelled worker to unwind before ``supervise`` returns.

What is still wrong: every failure is final, though most failures of a remote sub-agent are
transient (a rate limit, a dropped connection) and would succeed if tried again a little later.

Sample run (``python -m lessons 6 --virtual --workers 2 --hang 1 --timeout 1.25
--task "inventory; reviews; pricing"``)::

    step06_timeouts · your task, max_workers=2, worker_timeout=1.25
    slot  subtask    timeline                      end                done #
       0  inventory  █████████████████             ✓ ok 0.91s              1
       1  reviews    ███████████████████████       ⏱ timed out 1.25s       2
       2  pricing    ················████████████  ✓ ok 1.50s              3
                     0s                     1.50s
    results, in the order supervise returned them

      slot   subtask     result      output or error                     done #
     ───────────────────────────────────────────────────────────────────────────
         0   inventory   ok          findings on inventory                    1
         1   reviews     timed out   timed out: no result within 1.25s        2
         2   pricing     ok          findings on pricing                      3

    answer
    inventory: findings on inventory
    reviews: (missing: timed out: no result within 1.25s)
    pricing: findings on pricing
    (degraded: 1 of 3 subtasks failed)
    wall 1.50s · serial would take 2.75s · 2 ok, 1 failed

"""

from __future__ import annotations

import math

import trio

from trio_supervisor import Aggregate, Status, SubResult, Worker, decompose


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float = math.inf,
    deadline: float = math.inf,
) -> Aggregate[str, str]:
    if not worker_timeout > 0:  # also refuses NaN
        raise ValueError(f"worker_timeout must be > 0 seconds, got {worker_timeout}")
    if not deadline > 0:
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    plan = decompose(task)
    results: list[SubResult[str, str] | None] = [None] * len(plan)
    calls = [0] * len(plan)  # how many times each slot's worker was called
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)

    async def run_one(slot: int, subtask: str) -> None:
        calls[slot] += 1
        try:
            with trio.fail_after(worker_timeout):  # in the worker's own task: times it alone
                output = await worker(subtask)
            results[slot] = SubResult(subtask, output=output)
        except trio.TooSlowError:
            error = f"timed out: no result within {worker_timeout:g}s"
            results[slot] = SubResult(subtask, error=error, status=Status.TIMED_OUT)
        except Exception as exc:
            results[slot] = SubResult.from_exception(subtask, exc)
        finally:
            limiter.release_on_behalf_of(slot)

    with trio.move_on_after(deadline):  # cancels whatever still runs or waits, then returns
        async with trio.open_nursery() as nursery:
            for slot, subtask in enumerate(plan):
                await limiter.acquire_on_behalf_of(slot)
                nursery.start_soon(run_one, slot, subtask)
    cut_short = f"cancelled: the run's deadline of {deadline:g}s passed first"
    return Aggregate(
        [
            SubResult(subtask, error=cut_short, status=Status.CANCELLED, attempts=calls[slot])
            if result is None
            else result
            for slot, (subtask, result) in enumerate(zip(plan, results, strict=True))
        ]
    )


def synthesize(aggregate: Aggregate[str, str]) -> str:
    lines = []
    for result in aggregate.results:
        answer = result.output if result.ok else f"(missing: {result.error})"
        lines.append(f"{result.subtask}: {answer}")
    if aggregate.degraded:
        lines.append(f"(degraded: {aggregate.failed} of {len(aggregate.results)} subtasks failed)")
    return "\n".join(lines)


if __name__ == "__main__":
    from lessons._runner import main_for_step

    main_for_step(__file__)
