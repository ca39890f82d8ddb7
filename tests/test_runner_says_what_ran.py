"""The runner says what ran: titles and the serial figure follow the options given, ``--json``
holds every slot and option, conflicting options are refused, and a closed stdout ends it quietly.

The steps are picked by what their ``supervise`` accepts (retries, streaming), not by number, so
these laws hold whatever the steps are called.
"""

from __future__ import annotations

import inspect
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lessons._runner import (
    entry,
    load_step,
    main,
    steps,
)
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parent.parent
STEPS = steps()


def accepting(option: str) -> list[int]:
    """The steps whose ``supervise`` (or ``stream``) takes keyword option ``option``."""
    return [
        number
        for number, name in STEPS.items()
        if option in inspect.signature(entry(load_step(name))).parameters
    ]


STREAMING = [number for number, name in STEPS.items() if hasattr(load_step(name), "stream")]
RETRYING = accepting("attempts")
TIMING = min(accepting("worker_timeout"))  # a hung slot ends: a run that went on would end


def no_constant(name: str) -> None:
    raise AssertionError(f"--json printed {name}, which is not JSON")


def run_json(*argv: str) -> Any:
    """What ``python -m lessons <argv> --json`` prints, parsed as strict JSON."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", out)
        console = Console(file=io.StringIO(), width=100, color_system=None)
        assert main([*argv, "--json"], console=console) == 0
    return json.loads(out.getvalue(), parse_constant=no_constant)


def runs_of(*argv: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = run_json(*argv, "--virtual")["runs"]
    return runs


def slots_of(run: dict[str, Any]) -> list[dict[str, Any]]:
    slots: list[dict[str, Any]] = run["trace"]["slots"]
    return slots


# --- serial would take: the calls that ran, one after another -----------------------------------


@pytest.mark.parametrize("number", list(STEPS))
def test_serial_is_the_sum_of_every_attempt_that_ran(number: int) -> None:
    for run in runs_of(str(number)):
        spans = [span for slot in slots_of(run) for span in slot["spans"]]
        assert run["serial"] == sum(span["end"] - span["start"] for span in spans)


@pytest.mark.parametrize("number", RETRYING)
def test_serial_counts_each_retry(number: int) -> None:
    (run,) = runs_of(str(number), "--task", "a", "--flaky", "0:2", "--attempts", "3")
    assert len(slots_of(run)[0]["spans"]) == 3
    assert run["serial"] == 3 * SimulatedAgent(0).latency("a")


@pytest.mark.parametrize("number", STREAMING)
def test_serial_counts_only_what_ran_before_the_caller_left(number: int) -> None:
    task = "; ".join(f"r{index}" for index in range(10))
    argv = ("--task", task, "--workers", "1", "--window", "1", "--take", "2")
    (run,) = runs_of(str(number), *argv)
    agent = SimulatedAgent(0)
    assert run["serial"] == agent.latency("r0") + agent.latency("r1")
