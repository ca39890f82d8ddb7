"""Step 27: durable runs. The run is journaled, so a supervisor killed part way resumes with what
it had finished: the resumed run ends as a run never killed does, and its finished slots are not
run again. The step before takes no journal at all.

On virtual time the kill is simulated in this process (the run cancelled at an instant it cannot
see coming, its journal closed as a crash leaves it); one test kills a real child Python with
``SIGKILL`` and resumes in a fresh one.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from lessons import step27_durable_runs as step27
from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases, run_virtual
from tests.course.test_step20_rounds import run_json
from tools.docs import dispatch
from trio_supervisor import Journal
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


@pytest.mark.parametrize("step", cases(laws.RESUME_AFTER_A_CRASH_EQUALS_A_RUN))
def test_a_run_killed_at_any_instant_resumes_to_the_run_never_killed(step: ModuleType) -> None:
    laws.RESUME_AFTER_A_CRASH_EQUALS_A_RUN.verify(step)


def test_a_finished_run_resumed_runs_nothing_again(tmp_path: Path) -> None:
    agent = SimulatedAgent(0)

    async def main() -> tuple[str, str]:
        with Journal(tmp_path / "runs.db", writer="inline") as journal:
            first = await step27.supervise(
                laws.RESEARCHED, agent, max_workers=2, journal=journal, run_id="r"
            )
            calls = sum(agent.calls.values())
            again = await step27.supervise(
                laws.RESEARCHED, agent, max_workers=2, journal=journal, run_id="r"
            )
            assert sum(agent.calls.values()) == calls  # every slot came from the journal
            return first.text, again.text

    first, again = run_virtual(main)
    assert first == again


def test_another_task_under_the_same_run_id_is_refused_before_any_work(tmp_path: Path) -> None:
    agent = SimulatedAgent(0)

    async def main() -> None:
        with Journal(tmp_path / "runs.db", writer="inline") as journal:
            await step27.supervise("a; b", agent, max_workers=2, journal=journal, run_id="r")
            calls = sum(agent.calls.values())
            with pytest.raises(ValueError, match="journaled for another task"):
                await step27.supervise("a; c", agent, max_workers=2, journal=journal, run_id="r")
            assert sum(agent.calls.values()) == calls

    run_virtual(main)


def test_the_demo_is_killed_then_resumed_and_draws_what_came_from_the_journal() -> None:
    killed, tree = run_json(27)
    assert killed["killed_at"] == 1.0
    assert killed["committed_at_kill"] >= 1
    slots = killed["trace"]["slots"]
    assert [slot.get("journaled", False) for slot in slots][:1] == [True]
    assert not any(slot.get("journaled", False) for slot in slots[3:])  # round 2 ran after
    kept = [slot for slot in tree["trace"]["slots"] if slot.get("journaled")]
    assert [slot["subtask"] for slot in kept] == ["acme: pricing, reviews"]
    assert tree["aggregate"]["results"][0]["status"] == "ok"


def test_the_player_offers_a_kill_on_the_journaling_step_only() -> None:
    assert "killed" in [s.key for s in dispatch.scenarios("step27_durable_runs")]
    assert "killed" not in [s.key for s in dispatch.scenarios("step26_processes")]


# A journaled run of step 27 on real time, one flat company of many leaves, its progress printed
# as each leaf's result is committed; argv[1] is the journal's file.
SCRIPT = """
import sys
import trio
from lessons import step27_durable_runs as step27
from trio_supervisor import Journal
from trio_supervisor.testing import SimulatedAgent

TASK = "c: " + ", ".join(f"leaf {n:02}" for n in range(12))

async def main():
    agent = SimulatedAgent(latencies={f"c leaf {n:02}": 0.05 for n in range(12)})

    async def worker(subtask):
        output = await agent(subtask)
        print("done", subtask, flush=True)
        return output

    with Journal(sys.argv[1], flush="each") as journal:
        answer = await step27.supervise(TASK, worker, max_workers=1, journal=journal, run_id="r")
    print("answer", answer.text.replace(chr(10), " | "), flush=True)

trio.run(main)
"""


def child(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ENV,
    )


def test_a_supervisor_killed_with_sigkill_resumes_in_a_fresh_process(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first = child(path)
    assert first.stdout is not None
    done: list[str] = []
    deadline = time.monotonic() + 60
    while len(done) < 4 and time.monotonic() < deadline:
        line = first.stdout.readline()
        if line.startswith("done"):
            done.append(line.split(" ", 1)[1].strip())
    first.send_signal(signal.SIGKILL)  # no cleanup, no flush: the process is gone
    first.communicate(timeout=30)  # its pipes read to their end and closed
    assert first.returncode == -signal.SIGKILL
    assert len(done) >= 4
    second = child(path)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    again = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("done")]
    assert not set(again) & set(done[:3])  # committed before the kill: not run again
    answer = [line for line in out.splitlines() if line.startswith("answer")]
    assert answer
    assert all(f"leaf {n:02}: findings" in answer[0] for n in range(12))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        leaves = conn.execute("SELECT status FROM results WHERE run_id LIKE 'r/%'").fetchall()
    assert leaves == [("ok",)] * 12  # each leaf journaled once


def test_the_timeline_draws_a_slot_from_the_journal_as_such() -> None:
    out = io.StringIO()
    assert main(["27", "--virtual"], console=Console(file=out, width=120, color_system=None)) == 0
    text = out.getvalue()
    assert "↺ ok, journaled" in text
    assert "↺ from the journal (a resumed run did not run it again)" in text  # the legend
    assert "the supervisor was killed at 1.00s (simulated in this process" in text


def test_the_kill_and_the_resume_count_the_same_results() -> None:
    """What the kill left committed is what the resume takes from the journal (its timeline's
    ↺ rows): a company's result counts once, not once more for each of its leaves."""
    out = io.StringIO()
    assert main(["27", "--virtual"], console=Console(file=out, width=400, color_system=None)) == 0
    said = [line for line in out.getvalue().splitlines() if "killed at" in line]
    assert len(said) == 2
    for line in said:
        match = re.search(r"with (\d+) results? committed.*: (\d+) slots? from the journal", line)
        assert match is not None, line
        assert match[1] == match[2], line
