"""Step 2: fan out. A nursery starts one task per subtask, all at once.

What it adds: ``trio.open_nursery`` and ``start_soon``; the wall time falls from the sum of the
latencies to the longest one.

What is still wrong: results are appended as workers complete, so completion order leaks into
the result order; and one failing worker cancels all its siblings, so the whole run raises an
exception group and every finished result is lost.

Sample run (``python -m lessons 2 --virtual --task "inventory; reviews; pricing"``)::

    step02_fan_out · your task
    slot  subtask    timeline                      end             done #
       0  inventory  ████████████████████████████  ✓ ok 0.91s           3
       1  reviews    ████████████████████          ✓ ok 0.66s           2
       2  pricing    ██████████████████            ✓ ok 0.59s           1
                     0s                     0.91s
    results, in the order supervise returned them

      slot   subtask     result   output or error         done #
     ────────────────────────────────────────────────────────────
         2   pricing     ok       findings on pricing          1
         1   reviews     ok       findings on reviews          2
         0   inventory   ok       findings on inventory        3

    wall 0.91s · serial would take 2.16s · 3 ok, 0 failed

"""

from __future__ import annotations

import trio

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(task: str, worker: Worker[str, str]) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []

    async def run_one(subtask: str) -> None:
        output = await worker(subtask)
        results.append(SubResult(subtask, output=output))

    async with trio.open_nursery() as nursery:
        for subtask in decompose(task):
            nursery.start_soon(run_one, subtask)
    return Aggregate(results)


if __name__ == "__main__":
    from lessons._runner import main_for_step

    main_for_step(__file__)
