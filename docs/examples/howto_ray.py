"""Scale out with Ray: a sync function's calls as Ray tasks on a cluster, under a Supervisor.

``python docs/examples/howto_ray.py`` runs it on a local cluster started for the run (on
loopback only); ``python docs/examples/howto_ray.py auto`` on the cluster that ``ray start``
started, as a node of it. tests/docs/test_howto_ray.py runs it.
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

import ray
import trio

from trio_supervisor import Supervisor
from trio_supervisor.ray import RayWorker


# --8<-- [start:function]
class Score(NamedTuple):
    words: int
    longest: str
    pid: int  # the worker process that scored it
    node: str  # and its node


def score(text: str) -> Score:
    """CPU work on one subtask, run in one of the cluster's worker processes."""
    if text == "crash":
        os._exit(1)  # a hard crash: the process dies, as a segfault would end it
    if not text:
        raise ValueError("nothing to score")
    words = text.split()
    node = ray.get_runtime_context().get_node_id()
    return Score(len(words), max(words, key=len), os.getpid(), node)


# --8<-- [end:function]

PLAN = ["the quick brown fox", "jumps over", "", "crash", "the lazy dog", *["a b c"] * 59]


# --8<-- [start:run]
async def main(address: str | None = None) -> None:
    worker = RayWorker(score, address=address, num_cpus=1)  # 1 CPU of a node per task
    await worker.connect()  # connected (or started) before the run: no timeout counts it
    aggregate = await Supervisor(worker, max_workers=64, timeout=60).run(PLAN)
    for result in aggregate[:5]:
        if result.output is not None:
            print(f"{result.subtask!r}: {result.output.words} words, {result.output.longest!r}")
        else:
            print(f"{result.subtask!r}: {result.error}")
    scores = [result.output for result in aggregate if result.output is not None]
    pids = {output.pid for output in scores}
    nodes = {output.node for output in scores}
    print(f"{len(scores)} of {len(aggregate)} answered, in {len(pids)} worker processes", end="")
    print(f" on {len(nodes)} node(s); none in this process: {os.getpid() not in pids}")


# --8<-- [end:run]

if __name__ == "__main__":
    trio.run(main, sys.argv[1] if len(sys.argv) > 1 else None)
