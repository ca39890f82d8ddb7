"""Step 17: a crash in a worker's body kills one worker process, not the run.

The step before it, given a body that ends its process, dies whole with nothing returned; step
14, with the same body, returns every other slot's result. Both run in a child Python (one of
them is meant to die), on trio's real clock; the demos run on virtual time, where the crash is
simulated as ``ProcessWorker`` reports one, and a real run says the same of every slot.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from rich.console import Console

from lessons import step17_processes as step17
from lessons._course.arguments import parser
from lessons._course.demos import Demo, changed_title, demos
from lessons._course.runner import main
from lessons._course.running import Run as CourseRun
from lessons._course.running import run_step
from lessons._course.steps import load_step, steps
from tools.docs import dispatch
from trio_supervisor import decompose
from trio_supervisor.processes import crash_reason
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parents[2]
BEFORE = max(number for number in steps() if number < 17)
CRASHED = f"WorkerCrashed: {crash_reason(step17.CRASH)}"
# a child Python imports this checkout's library and course, wherever the installed one points
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}

# Runs step argv[1] on "a; b; c" in this process, its worker's body ending its process on "b":
# called here by a plain async worker (argv[2] == "here") or through step 17's open_worker.
SCRIPT = """
import json, sys
import trio
from lessons import step17_processes as step17
from lessons._course.steps import load_step, step as record
from trio_supervisor.testing import SimulatedAgent

step = load_step(sys.argv[1])
agent = SimulatedAgent(latencies={"a": 0.1, "b": 0.05, "c": 0.2})

async def here(subtask):
    return step17.research((subtask, 0.05, "crash" if subtask == "b" else "ok"))

options = record(sys.argv[1]).accepted(max_workers=2)

async def main():
    if sys.argv[2] == "here":
        aggregate = await step.supervise("a; b; c", here, **options)
    else:
        async with step17.open_worker(agent, crash={"b"}) as worker:
            aggregate = await step.supervise("a; b; c", worker, **options)
    print(json.dumps([[r.subtask, r.output, r.error] for r in aggregate.results]))

trio.run(main)
"""


def run_in_child(step: str, where: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, step, where],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
        timeout=60,
        check=False,
    )


def test_the_step_before_dies_whole_on_a_crash_and_step_14_returns_every_other_slot() -> None:
    before = run_in_child(steps()[BEFORE], "here")
    assert (before.returncode, before.stdout) == (step17.CRASH, "")  # nothing returned
    done = run_in_child("step17_processes", "in a worker process")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        ["a", "findings on a", None],
        ["b", None, CRASHED],
        ["c", "findings on c", None],
    ]


def test_the_readme_line_on_real_time_shows_the_crash_the_timeout_and_the_rest_ok() -> None:
    # the processes are started before the run, so that no timeout counts their start
    (line,) = (line for line in (ROOT / "README.md").read_text().splitlines() if " 17 --" in line)
    _, module, lessons, *argv = line.split()
    assert (module, lessons) == ("-m", "lessons")
    done = subprocess.run(
        [sys.executable, "-m", "lessons", *argv, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=ENV,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    crash, hang = argv[argv.index("--crash") + 1], argv[argv.index("--hang") + 1]
    assert (crash, hang) == ("2", "1")
    timed_out = "TooSlowError: the attempt ran past its timeout of 2s"
    failed = "SubAgentError: sub-agent failed on 'supplier risk'"  # the first demo's, kept
    assert [[(status, error) for status, _, error in outcomes(run)] for run in runs(done)] == [
        [
            ("ok", None),
            ("timed out", timed_out),
            ("failed", CRASHED),
            ("failed", failed),
            ("ok", None),
        ],
        [("ok", None), ("timed out", timed_out), ("failed", CRASHED), ("ok", None), ("ok", None)],
    ]


def runs(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(done.stdout)["runs"]
    return found


def run_json(*argv: str) -> list[dict[str, Any]]:
    """What ``python -m lessons <argv> --json`` prints, run in this process."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", out)
        assert main([*argv, "--json"], console=Console(file=io.StringIO())) == 0
    runs: list[dict[str, Any]] = json.loads(out.getvalue())["runs"]
    return runs


def outcomes(run: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    return [(r["status"], r["output"], r["error"]) for r in run["aggregate"]["results"]]


def test_a_real_run_with_processes_says_what_the_virtual_run_says_of_every_slot() -> None:
    argv = ("17", "--task", "a; b; c", "--crash", "1", "--fail", "2")
    (real,) = run_json(*argv)
    (virtual,) = run_json(*argv, "--virtual")
    assert (
        outcomes(real)
        == outcomes(virtual)
        == [
            ("ok", "findings on a", None),
            ("failed", None, CRASHED),
            ("failed", None, "SubAgentError: sub-agent failed on 'c'"),
        ]
    )


async def test_on_virtual_time_the_crash_fails_its_slot_as_the_adapter_reports_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    task = "a; b; c"
    run = CourseRun("step17_processes", Demo("crash", task, crash=frozenset({1})), [], {})
    run.plan = decompose(task)
    run.options = {"max_workers": 3}
    agent = SimulatedAgent(latencies={"a": 1.0, "b": 0.5, "c": 2.0})
    await run_step(step17, run, agent)
    assert run.aggregate is not None
    assert [r.error for r in run.aggregate] == [None, CRASHED, None]
    assert trio.current_time() == 2.0  # the siblings ran to their ends after the crash
    assert dict(agent.calls) == {"a": 1, "b": 1, "c": 1}


def test_the_demos_show_a_crash_contained_and_a_hung_process_killed_by_its_timeout() -> None:
    crashed, hung = (run_json("17", "--virtual")[n]["aggregate"]["results"] for n in (0, 1))
    assert [r["error"] for r in crashed] == [
        None,
        CRASHED,
        None,
        "SubAgentError: sub-agent failed on 'supplier risk'",
        None,
    ]
    assert [r["status"] for r in hung] == ["ok", "timed out", "ok", "ok", "ok"]


def test_crash_is_refused_by_a_step_whose_workers_run_in_this_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        main([str(BEFORE), "--virtual", "--crash", "1"], console=Console(file=out))
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "python -m lessons: error: --crash needs a step whose workers run in worker processes "
        f"(17 on): {steps()[BEFORE]} runs them in this process, where a crash would end the "
        "runner\n"
    )
    assert out.getvalue() == ""


@pytest.mark.parametrize("other", ["--fail", "--hang", "--flaky"])
def test_a_slot_that_crashes_does_nothing_else(
    other: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["17", "--virtual", "--crash", "1", other, "1"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"python -m lessons: error: slot 1 is given both --crash and {other}: a slot whose "
        "process dies does nothing else\n"
    )


def test_crash_names_a_slot_of_the_task_and_titles_the_demo_it_changes() -> None:
    with pytest.raises(ValueError, match=r"^--crash 5 is not a slot of the task: slots are 0-4$"):
        demos(parser().parse_args(["17", "--crash", "5"]), 17)
    (changed, _) = demos(parser().parse_args(["17", "--crash", "2"]), 17)
    assert changed.crash == {2}
    assert changed.fail == {3}  # the demo's other slots keep what they do
    assert changed_title(changed) == (
        "the demo's 5 subtasks, slot 3 fails, slot 2 kills its process"
    )
    assert load_step("step17_processes") is step17


def test_the_player_offers_a_crash_only_where_a_worker_process_can_end() -> None:
    *_, crash = dispatch.scenarios("step17_processes")
    assert (crash.key, crash.label) == ("crashes", "slot 1's process dies, 2 workers")
    run = crash.run("step17_processes")
    assert run.aggregate is not None
    assert [r.error for r in run.aggregate] == [None, CRASHED, None, None, None]
    assert "crashes" not in [s.key for s in dispatch.scenarios(steps()[BEFORE])]
