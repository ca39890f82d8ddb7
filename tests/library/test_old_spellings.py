"""The options' old spellings: each is refused before any work, in one line naming the new one."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest
import trio

from trio_supervisor import (
    Backoff,
    Capacity,
    Durable,
    Hedge,
    ReplanLimits,
    Retry,
    Supervisor,
)
from trio_supervisor.testing import ScriptedPlanner

SUPERVISOR = "Supervisor(worker, max_workers=..., {})"
RUN = "supervisor.run(plan, {})"
STREAM = "supervisor.stream(subtasks, {})"
REPLAN = "supervisor.replan(task, planner, {})"
JOURNAL = object()  # a journal, as the message shows one it cannot write back: by its name


class Worker:
    def __init__(self) -> None:
        self.calls: list[object] = []

    async def __call__(self, subtask: object) -> object:
        self.calls.append(subtask)
        return subtask


OLD: list[tuple[str, dict[str, Any], str]] = [
    (
        "Supervisor",
        {"attempts": 3},
        "attempts= is now part of retry=: " + SUPERVISOR.format("retry=Retry(attempts=3)"),
    ),
    (
        "Supervisor",
        {"retry_on": (KeyError, ValueError)},
        "retry_on= is now part of retry=: "
        + SUPERVISOR.format("retry=Retry(on=(KeyError, ValueError))"),
    ),
    (
        "Supervisor",
        {"retry_on": KeyError},
        "retry_on= is now part of retry=: " + SUPERVISOR.format("retry=Retry(on=KeyError)"),
    ),
    (
        "Supervisor",
        {"backoff": Backoff(0.5, 2.0)},
        "backoff= is now part of retry=: "
        + SUPERVISOR.format("retry=Retry(backoff=Backoff(initial=0.5, maximum=2.0, base=2.0))"),
    ),
    (
        "Supervisor",
        {"seed": 7},
        "seed= is now part of retry=: " + SUPERVISOR.format("retry=Retry(seed=7)"),
    ),
    (
        "Supervisor",
        {"seed": 7, "attempts": 2},
        "attempts= and seed= are now part of retry=: "
        + SUPERVISOR.format("retry=Retry(attempts=2, seed=7)"),
    ),
    (
        "Supervisor",
        {"capacity": Capacity(2)},
        "capacity= is gone: give a shared Capacity as one of meters=[...] (each attempt holds "
        "one of its places): Supervisor(worker, max_workers=..., meters=[capacity])",
    ),
    (
        "run",
        {"run_id": "r1"},
        "run_id= is now part of durable=: " + RUN.format("durable=Durable(run_id='r1')"),
    ),
    (
        "run",
        {"journal": JOURNAL, "run_id": "r1"},
        "run_id= and journal= are now part of durable=: "
        + RUN.format("durable=Durable(run_id='r1', journal=journal)"),
    ),
    (
        "run",
        {"journal": JOURNAL},
        "journal= is now part of durable=: " + RUN.format("durable=Durable(journal=journal)"),
    ),
    (
        "run",
        {"round": 2},
        "round= is no option of Supervisor.run: rounds are set by Supervisor.replan, which runs "
        "each round's batch under its number",
    ),
    (
        "stream",
        {"run_id": "s"},
        "run_id= is now part of durable=: " + STREAM.format("durable=Durable(run_id='s')"),
    ),
    (
        "stream",
        {"journal": JOURNAL, "run_id": "s"},
        "run_id= and journal= are now part of durable=: "
        + STREAM.format("durable=Durable(run_id='s', journal=journal)"),
    ),
    *[
        (
            "replan",
            {name: 5},
            f"{name}= is now part of limits=: " + REPLAN.format(f"limits=ReplanLimits({name}=5)"),
        )
        for name in ("max_rounds", "max_subtasks", "max_stalls", "max_resets")
    ],
    (
        "replan",
        {"max_resets": 0, "max_rounds": 4},
        "max_rounds= and max_resets= are now part of limits=: "
        + REPLAN.format("limits=ReplanLimits(max_rounds=4, max_resets=0)"),
    ),
    (
        "replan",
        {"run_id": "p", "journal": JOURNAL},
        "run_id= and journal= are now part of durable=: "
        + REPLAN.format("durable=Durable(run_id='p', journal=journal)"),
    ),
]


@pytest.mark.parametrize(("where", "options", "message"), OLD)
def test_an_old_spelling_is_refused_before_any_work_naming_the_new_one(
    where: str, options: dict[str, Any], message: str
) -> None:
    worker = Worker()

    async def call() -> None:
        if where == "Supervisor":
            Supervisor(worker, max_workers=1, **options)
            return
        supervisor = Supervisor(worker, max_workers=1)
        if where == "run":
            await supervisor.run([1], **options)
        elif where == "stream":
            supervisor.stream([1], **options)
        else:
            await supervisor.replan("a; b", ScriptedPlanner(), **options)  # type: ignore[arg-type]

    async def main() -> None:
        with pytest.raises(TypeError) as raised:
            await call()
        assert str(raised.value) == message
        assert "\n" not in message

    trio.run(main)
    assert worker.calls == []


def test_the_signatures_show_the_policies_and_not_the_old_spellings() -> None:
    keywords: dict[str, Any] = {
        "Supervisor": Supervisor.__init__,
        "run": Supervisor.run,
        "stream": Supervisor.stream,
        "replan": Supervisor.replan,
    }
    found = {
        name: [
            parameter.name
            for parameter in inspect.signature(function).parameters.values()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
        ]
        for name, function in keywords.items()
    }
    assert found == {
        "Supervisor": ["max_workers", "timeout", "retry", "meters", "restarts", "spans", "hedge"],
        "run": ["deadline", "trace", "durable", "need"],
        "stream": ["window", "trace", "durable"],
        "replan": ["limits", "deadline", "trace", "durable"],
    }
    assert sum(map(len, found.values())) == 18  # down from 28


@pytest.mark.parametrize(
    "policy",
    [Retry(), Durable("r"), ReplanLimits(), Hedge(2.0), Backoff()],
    ids=lambda policy: type(policy).__name__,
)
def test_a_policy_is_a_frozen_value(policy: object) -> None:
    assert dataclasses.is_dataclass(policy)
    field = dataclasses.fields(policy)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(policy, field, None)
    assert policy == dataclasses.replace(policy)  # type: ignore[type-var]
    assert hash(policy) == hash(dataclasses.replace(policy))  # type: ignore[type-var]
