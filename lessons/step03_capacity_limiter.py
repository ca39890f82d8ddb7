"""Step 3: a capacity limiter. At most ``max_workers`` workers exist at once.

What it adds: a ``trio.CapacityLimiter``. The supervisor acquires a token *before* it spawns a
task (on behalf of the slot, since another task gives it back), so at most ``max_workers`` worker
tasks are alive at any instant and subtasks are dispatched in plan order; the worker's task
releases the token when it ends, however it ends.

What is still wrong: results are still appended in completion order, and one failure still
sinks the whole batch.

Sample run (``python -m lessons 3 --virtual --workers 2 --task "inventory; reviews; pricing"``)::

    step03_capacity_limiter · your task, max_workers=2
    slot  subtask    timeline                      end             done #
       0  inventory  ████████████████████          ✓ ok 0.91s           2
       1  reviews    ███████████████               ✓ ok 0.66s           1
       2  pricing    ··············██████████████  ✓ ok 1.25s           3
                     0s                     1.25s
    results, in the order supervise returned them

      slot   subtask     result   output or error         done #
     ────────────────────────────────────────────────────────────
         1   reviews     ok       findings on reviews          1
         0   inventory   ok       findings on inventory        2
         2   pricing     ok       findings on pricing          3

    wall 1.25s · serial would take 2.16s · 3 ok, 0 failed

"""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(
    task: str, worker: Worker[str, str], *, max_workers: int
) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)

    async def run_one(slot: int, subtask: str) -> None:
        try:
            output = await worker(subtask)
            results.append(SubResult(subtask, output=output))
        finally:
            limiter.release_on_behalf_of(slot)

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(decompose(task)):
            await limiter.acquire_on_behalf_of(slot)
            nursery.start_soon(run_one, slot, subtask)
    return Aggregate(results)


if __name__ == "__main__":
    from lessons._runner import main_for_step

    main_for_step(__file__)
