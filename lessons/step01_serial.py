"""Step 1: serial. The plan runs one subtask after another.

What it adds: a plan (``decompose``) and a loop that awaits each worker in turn; results come
back in plan order because nothing ever runs at the same time.

What is still wrong: the wall time is the sum of every latency, and the first failure ends the
run: the exception escapes and no subtask after it runs.

Sample run (``python -m lessons 1 --virtual --task "inventory; reviews; pricing"``)::

    step01_serial · your task
    slot  subtask    timeline                      end             done #
       0  inventory  ████████████                  ✓ ok 0.91s           1
       1  reviews    ···········█████████          ✓ ok 1.56s           2
       2  pricing    ····················████████  ✓ ok 2.16s           3
                     0s                     2.16s
    results, in the order supervise returned them

      slot   subtask     result   output or error         done #
     ────────────────────────────────────────────────────────────
         0   inventory   ok       findings on inventory        1
         1   reviews     ok       findings on reviews          2
         2   pricing     ok       findings on pricing          3

    wall 2.16s · serial would take 2.16s · 3 ok, 0 failed

"""

from __future__ import annotations

from trio_supervisor import Aggregate, SubResult, Worker, decompose


async def supervise(task: str, worker: Worker[str, str]) -> Aggregate[str, str]:
    results: list[SubResult[str, str]] = []

    async def run_one(subtask: str) -> None:
        output = await worker(subtask)
        results.append(SubResult(subtask, output=output))

    for subtask in decompose(task):
        await run_one(subtask)
    return Aggregate(results)


if __name__ == "__main__":
    from lessons._runner import main_for_step

    main_for_step(__file__)
