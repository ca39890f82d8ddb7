"""Cut the tail with a hedge: 100 sub-agent calls at once, one in a hundred a straggler, run
without and with ``Hedge``; the docs' how-to page shows this file, and
tests/docs/test_howto_hedging.py runs it.

``python docs/examples/howto_hedging.py`` prints each supervisor's slowest run and its extra
attempts (on virtual time: it takes a second of real time).
"""

from __future__ import annotations

import math
import random
from collections.abc import Awaitable, Callable

import trio
import trio.testing

from trio_supervisor import Hedge, Supervisor


# --8<-- [start:agent]
def agent_for(seed: int) -> Callable[[int], Awaitable[str]]:  # a sub-agent with a long tail
    calls: dict[int, int] = {}

    async def agent(question: int) -> str:
        calls[question] = calls.get(question, 0) + 1
        # drawn per question and call, not in the order trio happens to run the calls in
        draw = random.Random(f"{seed}/{question}/{calls[question]}")
        seconds = math.exp(draw.gauss(0.0, 0.25))  # about a second...
        if draw.random() < 0.01:
            seconds *= 10  # ...and one call in a hundred a straggler
        await trio.sleep(seconds)
        return f"answer {question}"

    return agent


# --8<-- [end:agent]


async def slowest_run(hedge: Hedge | None, runs: int = 50) -> tuple[float, float]:
    """The slowest of ``runs`` runs of 100 questions after a first one, and the hedges per
    question asked."""
    # --8<-- [start:hedge]
    supervisor = Supervisor(agent_for(seed=7), max_workers=100, hedge=hedge)
    # --8<-- [end:hedge]
    await supervisor.run(range(100))  # a first run: what the percentile learns from
    slowest, hedges = 0.0, 0
    for _ in range(runs):
        start = trio.current_time()
        aggregate = await supervisor.run(range(100))
        slowest = max(slowest, trio.current_time() - start)
        hedges += sum(result.hedges for result in aggregate)  # extra attempts of this run
    return slowest, hedges / (100 * runs)


async def main() -> dict[str, tuple[float, float]]:
    return {
        "no hedge": await slowest_run(None),
        # a second attempt for any call slower than 98% of the recent ones, for at most
        # a tenth more calls (the throttle)
        "Hedge('p98')": await slowest_run(Hedge("p98", throttle=0.1)),
    }


if __name__ == "__main__":
    results = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    for name, (slowest, extra) in results.items():
        print(f"{name}: slowest run {slowest:.2f}s, extra attempts {extra:.1%}")
