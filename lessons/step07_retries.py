"""Step 7: retries and restart strategies. A failed slot is tried again, within limits.

What it adds: a failed attempt (an exception or a timeout) is restarted while its slot has been
called fewer than ``attempts`` times. Before a restart the supervisor waits a backoff with *full
jitter*: after a slot's ``n``-th call the wait is drawn uniformly from ``[0, min(most, first *
2**(n - 1))]`` (``backoff=(first, most)``), so the bound doubles and gives a struggling endpoint
room, and the draw spreads the retries of many slots instead of sending them back in lockstep.
The draws come from ``random.Random(seed)``, so a run can be replayed. A slot gives its capacity
token back while it waits. The restart *intensity*, after Erlang/OTP's supervisors, bounds the
whole run: at most ``R`` restarts within any ``T`` seconds (``intensity=(R, T)``); one more and the
supervisor gives up: it cancels whatever still runs and marks every unfinished slot failed.

Which slots restart with the failed one is the ``strategy``, also after OTP:

- ``one_for_one``: only the failed slot. For independent subtasks, like the pricing, reviews and
  inventory of one company: the default.
- ``one_for_all``: every slot, finished or not: a failure cancels them all and the whole plan
  reruns, so every result comes from one consistent attempt. For subtasks that must agree, like
  the sections of a report on a live dashboard: a section retried later would describe other
  numbers than the sections written before it.
- ``rest_for_one``: the failed slot and every later one in plan order; earlier slots go on. For
  plans whose later subtasks build on earlier ones, like chapters translated in order with a
  glossary each chapter's agent extends: a failed chapter spoils the glossary the later chapters
  used, not the earlier ones.

Each attempt runs under its own cancel scope, inside its task, so a restart cancels exactly the
attempts it restarts. A task Trio has already woken finishes its step even if its scope is
cancelled meanwhile, so what was cancelled is checked, not assumed: an attempt's result counts
only while it is its slot's current attempt, and a dispatcher replaced just as it got a capacity
token gives it back. A strategy may call a slot more than ``attempts`` times when its siblings
fail; ``attempts`` caps the restarts a slot's own failures ask for. Retry
libraries (tenacity, stamina) retry one call at a time; here a restart moves siblings, counts
against a run-wide intensity and gives back a capacity token, so the loop is the supervisor's own.

What is still wrong: the caller gets nothing until the last slot is done, and the whole plan and
all its results are held in memory, so a plan of unknown length cannot be run at all.

Sample run (``python -m lessons 7 --virtual --workers 2 --flaky 1:2 --attempts 3
--task "inventory; reviews; pricing"``)::

    step07_retries · your task, max_workers=2, attempts=3, strategy=one_for_one, seed=0
    slot  subtask    timeline                      end             done #
       0  inventory  ██████████                    ✓ ok 0.91s           1
       1  reviews    ███████··███████····████████  ✓ ok 2.60s           3
       2  pricing    ·······██████                 ✓ ok 1.25s           2
                     0s                     2.60s
    results, in the order supervise returned them

      slot   subtask     result   output or error         done #
     ────────────────────────────────────────────────────────────
         0   inventory   ok       findings on inventory        1
         1   reviews     ok       findings on reviews          3
         2   pricing     ok       findings on pricing          2

    answer
    inventory: findings on inventory
    reviews: findings on reviews
    pricing: findings on pricing
    wall 2.60s · serial would take 3.47s · 3 ok, 0 failed

"""

from __future__ import annotations

import math
import random
from collections import deque
from typing import Literal

import trio

from trio_supervisor import Aggregate, Status, SubResult, Worker, decompose

Strategy = Literal["one_for_one", "one_for_all", "rest_for_one"]
STRATEGIES: tuple[Strategy, ...] = ("one_for_one", "one_for_all", "rest_for_one")


async def supervise(
    task: str,
    worker: Worker[str, str],
    *,
    max_workers: int,
    worker_timeout: float = math.inf,
    deadline: float = math.inf,
    attempts: int = 1,
    strategy: Strategy = "one_for_one",
    intensity: tuple[int, float] | None = None,
    backoff: tuple[float, float] = (0.25, 4.0),
    seed: int | None = None,
) -> Aggregate[str, str]:
    if not worker_timeout > 0:  # also refuses NaN
        raise ValueError(f"worker_timeout must be > 0 seconds, got {worker_timeout}")
    if not deadline > 0:
        raise ValueError(f"deadline must be > 0 seconds, got {deadline}")
    if not attempts >= 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if intensity is not None and not (intensity[0] >= 0 and intensity[1] > 0):
        raise ValueError(f"intensity must be (R >= 0 restarts, T > 0 seconds), got {intensity}")
    if not 0 <= backoff[0] <= backoff[1]:
        raise ValueError(f"backoff must be (first, most) with 0 <= first <= most, got {backoff}")
    max_restarts, period = intensity if intensity is not None else (math.inf, math.inf)
    plan = decompose(task)
    results: list[SubResult[str, str] | None] = [None] * len(plan)
    calls = [0] * len(plan)  # how many times each slot's worker was called
    if max_workers < 1:  # a limiter with no token admits nobody: the run would never end
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    limiter = trio.CapacityLimiter(max_workers)
    running: dict[int, trio.CancelScope] = {}  # slot -> the scope of its current attempt
    restarts: deque[float] = deque()  # when each restart of the last `period` seconds happened
    jitter = random.Random(seed)
    dispatcher = trio.CancelScope()  # the dispatcher in charge of the plan's later slots
    gave_up = False

    async def run_one(slot: int, subtask: str, token: object) -> None:
        calls[slot] += 1
        with trio.CancelScope() as scope:  # a restart of its siblings may cancel this attempt
            running[slot] = scope
            try:
                with trio.fail_after(worker_timeout):  # in the worker's own task: times it alone
                    output = await worker(subtask)
                result = SubResult(subtask, output=output, attempts=calls[slot])
            except trio.TooSlowError:
                error = f"timed out: no result within {worker_timeout:g}s"
                result = SubResult(
                    subtask, error=error, status=Status.TIMED_OUT, attempts=calls[slot]
                )
            except Exception as exc:
                result = SubResult.from_exception(subtask, exc, attempts=calls[slot])
            finally:
                limiter.release_on_behalf_of(token)
        if running.get(slot) is not scope:  # a restart cancelled or superseded this attempt
            return
        del running[slot]
        results[slot] = result
        if not result.ok and calls[slot] < attempts:
            restart(slot)

    def restart(slot: int) -> None:
        nonlocal dispatcher, gave_up
        now = trio.current_time()
        while restarts and restarts[0] <= now - period:
            restarts.popleft()
        if len(restarts) >= max_restarts:  # past the restart intensity: give up on the run
            gave_up = True
            nursery.cancel_scope.cancel()
            return
        restarts.append(now)
        first, stop = {
            "one_for_one": (slot, slot + 1),
            "one_for_all": (0, len(plan)),
            "rest_for_one": (slot, len(plan)),
        }[strategy]
        for sibling in range(first, stop):
            results[sibling] = None
            if sibling in running:
                running.pop(sibling).cancel()
        bound = min(backoff[1], backoff[0] * 2.0 ** min(calls[slot] - 1, 64))
        scope = trio.CancelScope()
        if strategy != "one_for_one":  # the new dispatcher takes over every slot from `first` on
            dispatcher.cancel()
            dispatcher = scope
        nursery.start_soon(dispatch, range(first, stop), jitter.uniform(0, bound), scope)

    async def dispatch(slots: range, wait: float, scope: trio.CancelScope) -> None:
        with scope:
            await trio.sleep(wait)
            for slot in slots:
                token = object()  # one borrower per attempt: a cancelled one may still hold its own
                await limiter.acquire_on_behalf_of(token)
                if scope.cancel_called:  # replaced by a restart just as it got its token
                    limiter.release_on_behalf_of(token)
                    return
                nursery.start_soon(run_one, slot, plan[slot], token)

    with trio.move_on_after(deadline):  # cancels whatever still runs or waits, then returns
        async with trio.open_nursery() as nursery:
            nursery.start_soon(dispatch, range(len(plan)), 0, dispatcher)
    cut_short = f"cancelled: the run's deadline of {deadline:g}s passed first"
    if gave_up:  # past the restart intensity: every slot that did not finish failed
        cut_short = f"gave up: more than {max_restarts} restarts within {period:g}s"
    return Aggregate(
        [
            SubResult(
                subtask,
                error=cut_short,
                status=Status.FAILED if gave_up else Status.CANCELLED,
                attempts=calls[slot],
            )
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
