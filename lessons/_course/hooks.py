"""A step's worker, as its ``open_worker`` makes it for one run (see ``running``'s doc: Part
II's seam), in a module of its own so that both the runner and the killed child of the durable
demo (``killing``) make it the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import ModuleType
from typing import Any, Protocol

import trio
import trio.testing

from lessons._course.demos import Demo
from lessons._course.steps import step
from trio_supervisor.testing import SimulatedAgent


class Ran(Protocol):
    """What of a run (``running.Run``) its worker is made from."""

    demo: Demo
    plan: list[str]
    options: dict[str, Any]
    endpoint: str | None
    model: str | None


@asynccontextmanager
async def worker_of(
    module: ModuleType, run: Ran, agent: SimulatedAgent
) -> AsyncIterator[Callable[[Any], Any]]:
    """The worker of a run of step ``module``: what its ``open_worker`` yields, made from
    ``agent``, or ``agent`` itself for a step without one."""
    hook = step(module.__name__).hook
    if hook is None:
        yield agent
        return
    given = {
        "virtual": isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock),
        "max_workers": run.options.get("max_workers", 1),
        "endpoint": run.endpoint,
        "model": run.model,
        "plan": list(run.plan),
        "crash": {run.plan[slot] for slot in run.demo.crash},
        "serving": run.demo.serving,
    }
    chosen = {name: value for name, value in given.items() if name in hook}
    async with module.open_worker(agent, **chosen) as worker:
        yield worker
