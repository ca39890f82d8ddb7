"""Step 26: crashes a process contains. A leaf's reply is analysed in a worker process, and a
crash there fails that leaf alone: the child supervisor, its parent and the rounds go on.

The step before, given the same body run in its own process, dies whole with nothing returned;
step 26 returns every other leaf's result. Both run in a child Python (one of them is meant to
die), on trio's real clock, against the real loopback server; the rest is on virtual time, where
the crash is raised as ``ProcessWorker`` reports one.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from lessons import step26_processes as step26
from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json
from tools.docs import dispatch
from trio_supervisor.processes import crash_reason

ROOT = Path(__file__).resolve().parents[2]
CRASHED = f"WorkerCrashed: {crash_reason(step26.CRASH)}"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}

# Runs the step before step 26 on one company on real time, the body (step 26's) crashing on
# "acme b", called in this process: the step before has no worker process to run it in.
SCRIPT = """
import json, sys
import trio
from lessons import step26_processes as step26
from lessons._course.steps import load_step
from trio_supervisor.testing import SimulatedAgent

step = load_step(sys.argv[1])
agent = SimulatedAgent(latencies={"acme a": 0.1, "acme b": 0.05, "acme c": 0.2})

async def main():
    async with step.open_worker(agent, virtual=False, max_workers=3) as http:
        async def worker(subtask):
            return step26.analyse((subtask, await http(subtask), subtask == "acme b"))
        answer = await step.supervise("acme: a, b, c", worker, max_workers=3)
    print(json.dumps([entry.result.output for entry in answer.ledger.entries]))

trio.run(main)
"""


def run_in_child(step: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, step],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("step", cases(laws.A_CRASH_FAILS_ITS_LEAF_ALONE))
def test_a_leaf_whose_body_crashes_fails_its_own_slot_alone(step: ModuleType) -> None:
    laws.A_CRASH_FAILS_ITS_LEAF_ALONE.verify(step)


@pytest.mark.parametrize("step", cases(laws.A_CRASH_IN_A_REAL_PROCESS_SPARES_THE_RUN))
def test_a_crash_in_a_real_worker_process_spares_the_run(step: ModuleType) -> None:
    laws.A_CRASH_IN_A_REAL_PROCESS_SPARES_THE_RUN.verify(step)


@pytest.mark.parametrize("step", cases(laws.A_CUT_LEAF_ENDS_ITS_CALL))
def test_a_leaf_cut_by_its_timeout_or_a_cancelled_run_has_its_call_ended(
    step: ModuleType,
) -> None:
    laws.A_CUT_LEAF_ENDS_ITS_CALL.verify(step)


def test_the_step_before_dies_whole_on_a_crash_and_step_26_returns_every_other_leaf() -> None:
    """Step 26's half is the law's own real-process run (``laws.crashing_child``), which
    test_a_crash_in_a_real_worker_process_spares_the_run makes on step 26 and holds to the
    same ledger (acme b missing, acme a and c answered): here the step before, on the same
    body, dies whole."""
    before = run_in_child("step25_strategies")
    assert (before.returncode, before.stdout) == (step26.CRASH, "")  # nothing returned


def test_the_demo_crashes_one_leaf_and_the_tree_goes_on() -> None:
    crashed, _ = run_json(26)
    acme = crashed["trace"]["slots"][0]["child"]["slots"]
    leaves = [slot["subtask"] for slot in acme]
    assert leaves == ["acme competitor pricing", "acme reviews crashing"]
    assert acme[1]["spans"][-1]["error"] == CRASHED
    assert [span["status"] for span in acme[1]["spans"]] == ["failed"]  # a crash is not retried
    assert crashed["replan"]["ledger"][-1]["subtask"] == "competitor discounts"  # rounds go on


def test_crash_names_its_first_step_and_the_player_offers_it_only_there(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["24", "--virtual", "--crash", "1"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert "--crash needs a step whose workers run in worker processes (26 on)" in (
        capsys.readouterr().err
    )
    assert "crashes" in [s.key for s in dispatch.scenarios("step26_processes")]
    assert "crashes" not in [s.key for s in dispatch.scenarios("step25_strategies")]
