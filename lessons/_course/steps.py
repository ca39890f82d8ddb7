"""The course's steps: one record each, written out here, which everything else reads.

A [`Step`][lessons._course.steps.Step] says what a step module offers the runner, the laws and
the docs: what it exports, which keyword options its entry takes (and their defaults), whether it
streams, pulls its input lazily, re-plans, records its own trace, and what its worker hook
(``open_worker``, Part II's seam) takes. Nothing asks a step module what it can do; one test
(``tests/course/test_catalogue.py``) holds each record to its module.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import lessons

_STEP_NAME = re.compile(r"step(\d\d)_\w+")
PART_TWO = 16
"""The first step of Part II: from it on a step builds on the library's ``Supervisor`` and adds
one idea in a small file of its own, instead of growing the hand-written ``supervise`` of the
step before."""

REQUIRED = None
"""The default a record gives an option its step requires (``max_workers``)."""
INF = math.inf
NO_LIMIT = None
"""The default of a limit a step leaves off (a timeout, a deadline): no limit, as in the library."""
BACKOFF = (0.25, 4.0)


@dataclass(frozen=True)
class Step:
    """One step module, as the course uses it.

    ``options`` maps each keyword option of the step's entry (``supervise``, or ``stream`` for a
    step that streams) to its default (`REQUIRED` for one without); ``hook`` names the keywords
    its ``open_worker`` takes (``virtual``, ``max_workers``, ``endpoint``, ``model``, ``plan``,
    ``crash``, ``serving``), None for a step without one (its worker is the simulated sub-agent
    itself).
    """

    number: int
    name: str
    title: str
    entry: Literal["supervise", "stream"] = "supervise"
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    lazy: bool = False  # a stream that pulls its input one subtask at a time, as its window allows
    awaits: bool = False  # its input may be an async iterable too, awaited as it arrives
    replans: bool = False  # rounds: the plan is known only as the planner makes it
    records_trace: bool = False  # its supervise records its own run into a trace it is given
    synthesizes: bool = False  # it has ``synthesize(aggregate)``: the answer shown after a run
    hook: frozenset[str] | None = None
    check_task: str | None = None  # a function of the module that refuses a malformed task
    typed: bool = False  # its leaves' replies are held to a contract: a leaf "x prose k" is
    # answered in prose its first k times by the loopback server, then asked again (step 32)
    stream_options: Mapping[str, Any] | None = field(default=None, hash=False)
    """The options of its ``stream`` when its entry is ``supervise`` (from step 17 on, Part I's
    stream is kept beside it), None for one without (or whose entry it is)."""
    replaces: frozenset[str] = frozenset()
    """Options of an earlier step this one makes its entry do instead (step 11's stream hands
    the results over that step 10's ``on_result`` was given): no later step takes them."""

    @property
    def streams(self) -> bool:
        """Whether the step hands results over as a stream (its entry is ``stream``)."""
        return self.entry == "stream"

    @property
    def takes_crash(self) -> bool:
        """Whether its workers run in processes that ``--crash`` may end."""
        return self.hook is not None and "crash" in self.hook

    @property
    def journals(self) -> bool:
        """Whether its runs are journaled (``--journal``, ``--run-id``, ``--resume``)."""
        return "journal" in self.options

    @property
    def takes_endpoint(self) -> bool:
        """Whether its worker can be pointed at a server (``--endpoint``)."""
        return self.hook is not None and "endpoint" in self.hook

    @property
    def asks_endpoint(self) -> bool:
        """Whether a run of it may send requests to ``--endpoint``: its worker, or its planner."""
        return self.takes_endpoint or "endpoint" in self.options

    @property
    def keeps_stream(self) -> bool:
        """Whether the step hands results over as a stream, as its entry or beside it."""
        return self.streams or self.stream_options is not None

    def streamed(self, **options: Any) -> dict[str, Any]:
        """The ``options`` the step's ``stream`` takes (see `keeps_stream`)."""
        taken = self.options if self.stream_options is None else self.stream_options
        return {name: value for name, value in options.items() if name in taken}

    def takes(self, option: str) -> bool:
        """Whether the step's entry takes keyword option ``option``."""
        return option in self.options

    def accepted(self, **options: Any) -> dict[str, Any]:
        """The ``options`` the step's entry takes (a step before 6 takes no timeout, ...)."""
        return {name: value for name, value in options.items() if name in self.options}

    def load(self) -> ModuleType:
        """Import the step's module."""
        return load_step(self.name)


_TIMEOUT = {"max_workers": REQUIRED, "worker_timeout": NO_LIMIT}
_TIMED = {**_TIMEOUT, "deadline": NO_LIMIT}
_RETRIED = {**_TIMED, "attempts": 1, "backoff": BACKOFF, "seed": None}
_RESTARTED = {**_TIMED, "attempts": 1, "intensity": None, "backoff": BACKOFF, "seed": None}
_STREAMED = {"max_workers": REQUIRED, "window": None, **_RESTARTED}  # steps 13-16's stream
# Part II from step 17: step 16's knobs over HTTP sub-agents, which retry by default; its
# ``open_worker`` (kept to step 25) also takes how the loopback server serves (``serving``)
_HTTP_KNOBS = {**_RESTARTED, "attempts": 4}
# and step 16's stream, kept beside ``supervise`` through its supervisor: step 19's from 18 on
_HTTP_STREAMED = {**_STREAMED, "attempts": 4}
_ADAPTIVE = {**_HTTP_STREAMED, "rate": None, "adaptive": False}
_HTTP = frozenset({"virtual", "max_workers", "endpoint", "model"})
_HTTP_HOOK = _HTTP | {"serving"}
# Part II from step 20: rounds over step 19's HTTP sub-agents, its knobs kept
_KNOBS = {
    "max_workers": REQUIRED,
    "worker_timeout": NO_LIMIT,
    "attempts": 4,
    "intensity": None,
    "backoff": BACKOFF,
    "seed": None,
    "rate": None,
    "adaptive": False,
}
_ROUNDS = {**_KNOBS, "max_rounds": 5, "deadline": NO_LIMIT}  # the run's deadline kept (step 7)
_BUDGETS = {  # step 21's budgets come between max_rounds and the deadline, as its entry has them
    **_KNOBS,
    "max_rounds": 5,
    "max_subtasks": 20,
    "max_stalls": 2,
    "max_resets": 1,
    "deadline": NO_LIMIT,
}
_PLANNED = {**_BUDGETS, "planner": "scripted", "endpoint": None, "model": None}

STEPS: dict[int, Step] = {
    step.number: step
    for step in (
        Step(1, "step01_serial", "serial", synthesizes=True),
        Step(2, "step02_fan_out", "fan out", synthesizes=True),
        Step(
            3,
            "step03_capacity_limiter",
            "a capacity limiter",
            options={"max_workers": None},
            synthesizes=True,
        ),
        Step(
            4,
            "step04_ordered_slots",
            "ordered slots",
            options={"max_workers": None},
            synthesizes=True,
        ),
        Step(
            5,
            "step05_fault_isolation",
            "fault isolation",
            options={"max_workers": None},
            synthesizes=True,
        ),
        Step(6, "step06_worker_timeout", "a worker timeout", options=_TIMEOUT, synthesizes=True),
        Step(7, "step07_run_deadline", "a run deadline", options=_TIMED, synthesizes=True),
        Step(
            8,
            "step08_retries",
            "retries with full-jitter backoff",
            options=_RETRIED,
            synthesizes=True,
        ),
        Step(
            9,
            "step09_restart_intensity",
            "restart intensity",
            options=_RESTARTED,
            synthesizes=True,
        ),
        Step(
            10,
            "step10_hand_over",
            "a hand-over in plan order",
            options={**_RESTARTED, "on_result": None},
            synthesizes=True,
        ),
        Step(
            11,
            "step11_streaming",
            "ordered streaming",
            entry="stream",
            options=_RESTARTED,
            synthesizes=True,
            replaces=frozenset({"on_result"}),
        ),
        Step(
            12,
            "step12_leaving_early",
            "leaving early",
            entry="stream",
            options=_RESTARTED,
            synthesizes=True,
        ),
        Step(
            13,
            "step13_window",
            "a window over a list",
            entry="stream",
            options=_STREAMED,
            synthesizes=True,
        ),
        Step(
            14,
            "step14_lazy_input",
            "a lazy input",
            entry="stream",
            options=_STREAMED,
            lazy=True,
            synthesizes=True,
        ),
        Step(
            15,
            "step15_async_input",
            "an async input",
            entry="stream",
            options={"max_workers": REQUIRED, "window": None, **_RESTARTED},
            lazy=True,
            awaits=True,
            synthesizes=True,
        ),
        Step(
            16,
            "step16_library",
            "the library",
            entry="stream",
            options=_STREAMED,
            lazy=True,
            awaits=True,
            synthesizes=True,
        ),
        Step(
            17,
            "step17_http_subagents",
            "real sub-agents over HTTP",
            options=_HTTP_KNOBS,
            synthesizes=True,
            stream_options=_HTTP_STREAMED,
            hook=_HTTP_HOOK,
        ),
        Step(
            18,
            "step18_rate",
            "a rate limit",
            options={**_HTTP_KNOBS, "rate": None},
            synthesizes=True,
            stream_options={**_HTTP_STREAMED, "rate": None},
            hook=_HTTP_HOOK,
        ),
        Step(
            19,
            "step19_adaptive",
            "adaptive concurrency",
            options={**_HTTP_KNOBS, "rate": None, "adaptive": False},
            synthesizes=True,
            stream_options=_ADAPTIVE,
            hook=_HTTP_HOOK,
        ),
        Step(
            20,
            "step20_rounds",
            "re-planning rounds",
            options=_ROUNDS,
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP_HOOK,
        ),
        Step(
            21,
            "step21_budgets",
            "budgets, stalls and resets",
            options=_BUDGETS,
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP_HOOK,
        ),
        Step(
            22,
            "step22_llm_planner",
            "an LLM planner",
            options=_PLANNED,
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP_HOOK,
        ),
        Step(
            23,
            "step23_trees",
            "a tree of supervisors",
            options=_PLANNED,
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP_HOOK,
            check_task="check_task",
        ),
        Step(
            24,
            "step24_escalation",
            "escalation",
            options=_PLANNED,
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP_HOOK,
            check_task="check_task",
        ),
        Step(
            25,
            "step25_strategies",
            "restart strategies",
            options={**_PLANNED, "strategy": "one_for_one"},
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP_HOOK,
            check_task="check_task",
        ),
        Step(
            26,
            "step26_processes",
            "crashes a process contains",
            options={**_PLANNED, "strategy": "one_for_one"},
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
        ),
        Step(
            27,
            "step27_durable_runs",
            "durable runs",
            options={**_PLANNED, "strategy": "one_for_one", "journal": None, "run_id": None},
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
        ),
        Step(
            28,
            "step28_approval_gate",
            "an approval gate",
            options={**_PLANNED, "strategy": "one_for_one", "journal": None, "run_id": None},
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
        ),
        Step(
            29,
            "step29_hedging",
            "hedged requests",
            options={
                **_PLANNED,
                "strategy": "one_for_one",
                "hedge": None,
                "journal": None,
                "run_id": None,
            },
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
        ),
        Step(
            30,
            "step30_first_k",
            "the first k of n",
            options={
                **_PLANNED,
                "strategy": "one_for_one",
                "hedge": None,
                "need": None,
                "journal": None,
                "run_id": None,
            },
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
        ),
        Step(
            31,
            "step31_token_budget",
            "a token budget",
            options={
                **_PLANNED,
                "strategy": "one_for_one",
                "hedge": None,
                "need": None,
                "budget_tokens": None,
                "journal": None,
                "run_id": None,
            },
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
        ),
        Step(
            32,
            "step32_typed_replies",
            "typed replies",
            options={
                **_PLANNED,
                "strategy": "one_for_one",
                "hedge": None,
                "need": None,
                "budget_tokens": None,
                "journal": None,
                "run_id": None,
            },
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
            typed=True,
        ),
        Step(
            33,
            "step33_many_supervisors",
            "several supervisors on one run",
            options={
                **_PLANNED,
                "strategy": "one_for_one",
                "hedge": None,
                "need": None,
                "budget_tokens": None,
                "journal": None,
                "run_id": None,
                "lease": 30.0,
            },
            replans=True,
            stream_options=_ADAPTIVE,
            records_trace=True,
            hook=_HTTP | {"crash"},
            check_task="check_task",
            typed=True,
        ),
    )
}
"""Every step of the course, by number."""


def steps() -> dict[int, str]:
    """Step number -> module name of every step, in order."""
    return {number: step.name for number, step in STEPS.items()}


def previous(number: int) -> int | None:
    """The number of the step before step ``number`` in the course: the last step of the
    catalogue numbered below it (``number - 1`` once every step is written), None for the
    first."""
    earlier = [known for known in STEPS if known < number]
    return max(earlier) if earlier else None


def step(name: str | int) -> Step:
    """The record of step ``name`` (a module name, ``lessons.<name>``, or a number).

    Raises:
      KeyError: if no step has that name.
    """
    if isinstance(name, int):
        return STEPS[name]
    short = name.removeprefix("lessons.")
    for record in STEPS.values():
        if record.name == short:
            return record
    raise KeyError(f"no step is named {name!r}")


def load_step(name: str) -> ModuleType:
    """Import ``lessons.<name>``."""
    return importlib.import_module(f"lessons.{name}")


def step_path(name: str) -> Path:
    """The file of step ``name``: ``lessons/<name>.py``."""
    return Path(lessons.__file__).parent / f"{name}.py"


def step_number(name: str) -> int:
    """The number of step ``name`` (``step03_capacity_limiter`` -> 3)."""
    match = _STEP_NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"a step is named stepNN_<name>, got {name!r}")
    return int(match.group(1))


def part_two(name: str) -> bool:
    """Whether step ``name`` is in Part II (see `PART_TWO`)."""
    return step_number(name) >= PART_TWO
