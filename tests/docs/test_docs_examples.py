"""The code the docs show from docs/examples/ runs, and does what the pages say it does."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

import trio
import trio.testing

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_trio_cancels_again_at_every_checkpoint_asyncio_delivers_once() -> None:
    cancellation = example("cancellation")
    clock = trio.testing.MockClock(autojump_threshold=0)
    assert trio.run(cancellation.trio_side, clock=clock) == [
        "Cancelled where it waited",
        "Cancelled again at the next checkpoint",
    ]
    assert asyncio.run(cancellation.asyncio_side()) == [
        "CancelledError where it waited",
        "the next await ran",
        "the task ended cancelled",
    ]


def virtual() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0)


def test_start_returns_once_the_server_reports_its_port_and_the_connection_is_echoed() -> None:
    assert trio.run(example("start").main, clock=virtual()) == b"hello"


def test_the_callers_error_comes_out_grouped_unless_the_manager_keeps_it_out_of_its_nursery() -> (
    None
):
    groups = example("groups")
    caught = groups.what_the_caller_catches
    assert trio.run(caught, groups.ticking, clock=virtual()) == (
        "ExceptionGroup of [KeyError('2 ticks')]"
    )
    assert trio.run(caught, groups.ticking_bare, clock=virtual()) == "KeyError('2 ticks')"


def test_a_cancelled_process_call_kills_its_process_a_cancelled_thread_runs_on() -> None:
    parallel = example("parallel")
    assert trio.run(parallel.in_a_process, clock=virtual()) == {
        "ran elsewhere": True,
        "cancelled at": 5.0,  # virtual: the hour-long call is never waited for
        "killed": True,
        "next call, new process": True,
    }
    abandoned = {"cancelled": True, "thread still running": True}
    assert trio.run(parallel.in_a_trio_thread, clock=virtual()) == abandoned
    assert asyncio.run(parallel.in_an_asyncio_thread()) == abandoned


def test_the_same_anyio_code_runs_on_trio_and_on_asyncio() -> None:
    ask_both = example("anyio_on_trio").ask_both
    replies = {"a": "echo: a", "b": "echo: b"}
    assert trio.run(ask_both, ["a", "b"]) == {"loop": "trio", "replies": replies}
    assert asyncio.run(ask_both(["a", "b"])) == {"loop": "asyncio", "replies": replies}
