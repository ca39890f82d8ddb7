"""The runner on steps 6-8: their demos, the options that reach their ``supervise``, and the
command line's refusals."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pytest
from helpers678 import STEP05, STEP06, STEP07, STEP08
from rich.console import Console

from lessons import _runner
from lessons._runner import DEMOS, demos, entry, main, parser, step_options


def run_json(*argv: str) -> list[dict[str, Any]]:
    """``python -m lessons <argv> --virtual --json``: the runs."""
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    buffer = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", buffer)
        assert main([*argv, "--virtual", "--json"], console=console) == 0
    runs: list[dict[str, Any]] = json.loads(buffer.getvalue())["runs"]
    return runs


def statuses(run: dict[str, Any]) -> list[str]:
    return [result["status"] for result in run["aggregate"]["results"]]


def test_step6_demos_time_out_the_hung_worker_and_cut_the_late_run_short() -> None:
    hung, late = run_json("6")
    assert statuses(hung) == ["ok", "timed out", "ok", "failed", "ok"]
    assert hung["options"] == {"max_workers": 4, "worker_timeout": 1.5}
    assert hung["trace"]["wall"] == 1.5
    assert late["options"] == {"max_workers": 4, "deadline": 1.5}
    assert late["trace"]["wall"] == 1.5
    assert "cancelled" in statuses(late)
    assert statuses(late)[:2] == ["ok", "ok"]


def test_step7_demos_retry_the_flaky_workers_until_they_succeed() -> None:
    alone, rest = run_json("7")
    assert statuses(alone) == ["ok"] * 5
    assert [len(slot["spans"]) for slot in alone["trace"]["slots"]] == [1, 3, 1, 2, 1]
    assert statuses(rest) == ["ok"] * 5
    assert rest["options"]["strategy"] == "rest_for_one"
    # chapter 3 failed once: it and every later chapter ran again, the earlier ones did not
    assert [len(slot["spans"]) for slot in rest["trace"]["slots"]][:3] == [1, 1, 2]
    assert all(len(slot["spans"]) >= 2 for slot in rest["trace"]["slots"][2:])


def test_step8_demo_hands_results_over_in_plan_order_after_the_slow_one() -> None:
    run, left = run_json("8")
    slots = run["trace"]["slots"]
    assert [slot["subtask"] for slot in slots] == [f"review {n:02}" for n in range(1, 21)]
    delivered = [slot["delivered"] for slot in slots]
    assert delivered == sorted(delivered)
    assert delivered[1:9] == [3.0] * 8, "review 02 takes 3 s and holds back the window behind it"
    assert statuses(run) == ["ok"] * 20
    # the second demo leaves after 10 results: the workers still running then are cancelled
    assert statuses(left) == ["ok"] * 10
    slots = left["trace"]["slots"]
    leave = slots[9]["delivered"]
    cut = [slot for slot in slots[10:] if slot["spans"]]
    assert cut, "some workers were running when the caller left"
    assert [slot["spans"][-1]["end"] for slot in cut] == [leave] * len(cut)
    assert {slot["spans"][-1]["status"] for slot in cut} == {"cancelled"}


def test_step8_shows_each_result_as_it_is_handed_over() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    argv = ["8", "--virtual", "--workers", "2", "--slow", "1:2", "--task", "a; b; c"]
    assert main(argv, console=console) == 0
    lines = out.getvalue().splitlines()
    start = lines.index("handed over, in plan order:")
    assert [line.split()[2:4] for line in lines[start + 1 : start + 4]] == [
        ["0", "a"],
        ["1", "b"],
        ["2", "c"],
    ]
    assert "░ done, held until every earlier slot was handed over" in lines


def options(step: Any, *argv: str) -> dict[str, Any]:
    return step_options(entry(step), parser().parse_args(["x", *argv]))


def test_the_command_line_options_reach_each_step_that_accepts_them() -> None:
    argv = (
        "--workers=3",
        "--timeout=0.5",
        "--deadline=9",
        "--attempts=4",
        "--strategy=rest_for_one",
        "--intensity=2/10",
        "--window=5",
        "--seed=7",
    )
    assert options(STEP05, *argv) == {"max_workers": 3}
    assert options(STEP06, *argv) == {"max_workers": 3, "worker_timeout": 0.5, "deadline": 9.0}
    seven = {
        "max_workers": 3,
        "worker_timeout": 0.5,
        "deadline": 9.0,
        "attempts": 4,
        "strategy": "rest_for_one",
        "intensity": (2, 10.0),
        "seed": 7,
    }
    assert options(STEP07, *argv) == seven
    assert options(STEP08, *argv) == {**seven, "window": 5}
    # step 8's supervise, the stream collected, still names max_workers
    assert step_options(STEP08.supervise, parser().parse_args(["8"])) == {"max_workers": 4}


def test_the_command_line_wins_over_a_demo_option() -> None:
    demo = _runner.STEP_DEMOS[6][0]
    args = parser().parse_args(["6", "--timeout", "0.75"])
    assert step_options(STEP06.supervise, args, demo)["worker_timeout"] == 0.75
    assert step_options(STEP06.supervise, parser().parse_args(["6"]), demo)["worker_timeout"] == 1.5


def test_steps_1_to_5_keep_the_default_demos_and_task_keeps_the_step_options() -> None:
    args = parser().parse_args(["3"])
    assert demos(args, 3) == list(DEMOS)
    (yours,) = demos(parser().parse_args(["6", "--task", "a; b", "--hang", "1"]), 6)
    assert (yours.task, yours.hang, dict(yours.options)) == (
        "a; b",
        frozenset({1}),
        {"worker_timeout": 1.5},
    )


def test_the_sub_agent_follows_hang_flaky_and_slow() -> None:
    args = parser().parse_args(["7", "--task", "a; b; c", "--hang", "0", "--flaky", "1:2"])
    args_slow = parser().parse_args(["8", "--task", "a; b; c", "--slow", "2:1.5"])
    (demo,) = demos(args, 7)
    agent = demo.agent(0)
    assert agent.hangs("a")
    assert agent.flaky == {"b": 2}
    assert demos(args_slow, 8)[0].agent(0).latency("c") == 1.5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["6", "--timeout", "0"], "argument --timeout: must be a number of seconds > 0, got '0'"),
        (
            ["6", "--deadline", "soon"],
            "argument --deadline: must be a number of seconds > 0, got 'soon'",
        ),
        (
            ["6", "--timeout", "nan"],
            "argument --timeout: must be a number of seconds > 0, got 'nan'",
        ),
        (["7", "--attempts", "0"], "argument --attempts: must be an integer >= 1, got 0"),
        (
            ["7", "--strategy", "one_for_some"],
            "argument --strategy: must be one of one_for_one, one_for_all, rest_for_one, "
            "got 'one_for_some'",
        ),
        (
            ["7", "--intensity", "3"],
            "argument --intensity: must be R/T (at most R >= 0 restarts in T > 0 seconds), "
            "e.g. 3/5, got '3'",
        ),
        (
            ["7", "--flaky", "1:0"],
            "argument --flaky: must be a slot I or I:K (slot I fails its first K >= 1 calls), "
            "got '1:0'",
        ),
        (
            ["8", "--slow", "1"],
            "argument --slow: must be I:S (slot I takes S >= 0 seconds), e.g. 1:3, got '1'",
        ),
        (["8", "--window", "2"], "--window must be >= --workers (4), got 2"),
        (["8", "--take", "0"], "argument --take: must be an integer >= 1, got 0"),
        (["6", "--hang", "5"], "--hang 5 is not a slot of the task: slots are 0-4"),
        (
            ["7", "--task", "a; b", "--flaky", "2"],
            "--flaky 2 is not a slot of the task: slots are 0-1",
        ),
        (
            ["8", "--task", "a", "--slow", "1:2"],
            "--slow 1 is not a slot of the task: slots are 0-0",
        ),
    ],
)
def test_a_bad_option_is_refused_with_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"python -m lessons: error: {message}\n"


def test_an_unbounded_timeout_is_accepted() -> None:
    assert parser().parse_args(["6", "--timeout", "inf"]).timeout == math.inf
