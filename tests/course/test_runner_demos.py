"""The runner on Part I from fault isolation on: its demos, each showing what its step is still
wrong about, the options that reach their ``supervise``, the guard that stops a run that never
returns, and the command line's refusals."""

from __future__ import annotations

import io
import itertools
import json
import math
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lessons._course.arguments import parser
from lessons._course.demos import DEMOS, STEP_DEMOS, changed_title, demos
from lessons._course.runner import main
from lessons._course.running import Run, guard_after, run_demo, step_options
from lessons._course.steps import step as record
from tests.course.probing import (
    STEP05,
    STEP06,
    STEP07,
    STEP08,
    STEP09,
    STEP10,
    STEP11,
    STEP12,
    STEP13,
    STEP14,
)
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parents[2]


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


def test_step5_demo_shows_one_hung_worker_keeping_the_run_from_ever_returning() -> None:
    isolated, hung = run_json("5")
    assert statuses(isolated) == ["ok", "failed", "ok"]
    assert hung["aggregate"] is None, "the run never returned"
    assert hung["error"] == "never returns: step 5 has no timeout (step 6 adds one)"
    slots = hung["trace"]["slots"]
    assert [slot["spans"][-1]["status"] for slot in slots] == ["ok", None, "ok", "ok", "ok"]
    assert slots[1]["spans"][-1]["end"] is None, "the hung slot is still running"
    assert hung["stopped"] == hung["trace"]["wall"]


def test_step6_demos_time_out_the_hung_worker_and_wait_out_every_timeout() -> None:
    one, four = run_json("6")
    assert statuses(one)[:3] == ["ok", "timed out", "ok"]
    assert one["options"] == {"max_workers": 4, "worker_timeout": 1.5}
    assert statuses(four).count("timed out") == 4
    # a worker freed by one hang's timeout meets the next hang: the run outlasts one timeout by
    # far more than any sub-agent's latency, and nothing bounds it
    assert four["trace"]["wall"] > 1.5 + 1.25


def test_step7_demos_cut_the_late_run_short_and_keep_a_transient_failure_final() -> None:
    late, flaky = run_json("7")
    assert late["options"] == {"max_workers": 4, "worker_timeout": 1.5, "deadline": 2.0}
    assert late["trace"]["wall"] == 2.0
    assert "cancelled" in statuses(late)
    assert statuses(late)[:2] == ["timed out", "ok"]
    assert statuses(flaky)[3] == "failed"
    assert flaky["aggregate"]["results"][3]["error"].endswith("(attempt 1)"), "it was transient"


def test_step8_demos_retry_flaky_workers_and_retry_a_dead_one_to_the_last_attempt() -> None:
    flaky, down = run_json("8")
    assert statuses(flaky) == ["ok"] * 5
    assert [len(slot["spans"]) for slot in flaky["trace"]["slots"]] == [1, 3, 1, 2, 1]
    assert statuses(down) == ["ok"] + ["failed"] * 4
    assert [len(slot["spans"]) for slot in down["trace"]["slots"]] == [1] + [4] * 4


def test_step3_demos_run_more_subtasks_than_workers_so_the_bound_shows() -> None:
    dozen, five = run_json("3")
    for run in (dozen, five):
        spans = [span for slot in run["trace"]["slots"] for span in slot["spans"]]
        assert len(run["trace"]["slots"]) > run["options"]["max_workers"] == 4
        # at each start, how many ran: never more than the workers, and all of them at the peak
        running = [
            sum(1 for other in spans if other["start"] <= span["start"] < other["end"])
            for span in spans
        ]
        assert max(running) == 4
        later = [slot for slot in run["trace"]["slots"] if slot["spans"][0]["start"] > 0]
        assert later, "a slot waited for a token"
    assert statuses(dozen) == ["ok"] * 12
    assert five["aggregate"] is None, "one failure sinks the batch"


def _restarts(run: dict[str, Any]) -> list[float]:
    """When each failed attempt that another attempt followed ended: the run's restarts."""
    return sorted(
        span["end"]
        for slot in run["trace"]["slots"]
        for span in slot["spans"][:-1]
        if span["status"] == "failed"
    )


def test_step9_demos_give_up_within_t_and_go_on_once_older_restarts_age_out() -> None:
    """The same intensity, 2 restarts within 1 s, on the same four failures: close together,
    the third within 1 s gives up; spread 0.6 s apart, each restart older than 1 s no longer
    counts, and the run goes on, with more restarts in all than R."""
    _, close, spread, _ = run_json("9")
    for run in (close, spread):
        assert run["options"]["intensity"] == [2, 1.0]
    errors = [result["error"] for result in close["aggregate"]["results"]]
    assert "gave up: more than 2 restarts within 1s" in errors
    assert close["trace"]["wall"] < 1.0
    assert statuses(spread) == ["ok"] * 5
    restarts = _restarts(spread)
    assert len(restarts) == 4 > 2
    assert restarts[-1] - restarts[0] > 1.0, "the restarts spread over more than T"
    assert max(len([t for t in restarts if now - 1.0 < t <= now]) for now in restarts) == 2


def test_step9_demos_give_up_past_the_intensity_and_hold_every_result_for_the_slowest() -> None:
    down, _, _, slow = run_json("9")
    assert down["options"]["intensity"] == [3, 10.0]
    errors = [result["error"] for result in down["aggregate"]["results"]]
    assert errors[0] is None
    assert errors.count("gave up: more than 3 restarts within 10s") == 3
    assert sum(len(slot["spans"]) for slot in down["trace"]["slots"]) <= 5 + 3
    assert statuses(slow) == ["ok"] * 5
    assert slow["trace"]["wall"] == 4.5


def test_step10_demos_hand_over_around_the_slow_one_and_hold_what_is_done_behind_it() -> None:
    slow, held = run_json("10")
    slots = slow["trace"]["slots"]
    ends = [slot["spans"][-1]["end"] for slot in slots[:4]]
    delivered = [slot["delivered"] for slot in slots[:4]]
    assert delivered == [max(ends[: slot + 1]) for slot in range(4)], (
        "as soon as it and those before"
    )
    assert max(delivered) < 4.0, "every one handed over before the slow last one ends"
    behind = [slot for slot in held["trace"]["slots"][2:] if slot["spans"][-1]["end"] < 3.0]
    assert behind, "slots done while review 02 ran"
    assert all(slot["delivered"] == 3.0 for slot in behind), "held until review 02 was done"
    assert statuses(held) == ["ok"] * 20


def test_step11_demo_leaving_the_stream_early_waits_for_every_worker() -> None:
    (left,) = run_json("11")
    assert statuses(left) == ["ok"] * 8
    ran = [slot for slot in left["trace"]["slots"] if slot["spans"]]
    assert len(ran) == 20, "every worker ran, though the caller left after 8"
    assert {slot["spans"][-1]["status"] for slot in ran} == {"ok"}


def test_step12_demos_cancel_the_rest_on_leaving_and_pile_results_up_behind_the_slow_one() -> None:
    left, run = run_json("12")
    slots = run["trace"]["slots"]
    assert [slot["subtask"] for slot in slots] == [f"review {n:02}" for n in range(1, 21)]
    delivered = [slot["delivered"] for slot in slots]
    assert delivered == sorted(delivered)
    held = [slot for slot in slots[2:] if slot["spans"][-1]["end"] < 3.0]
    assert len(held) > 8, "with no window, more finish behind review 02 than a window would hold"
    assert all(slot["delivered"] == 3.0 for slot in held)
    assert statuses(run) == ["ok"] * 20
    # the first demo leaves after 8 results: the workers still running then are cancelled
    slots = left["trace"]["slots"]
    assert statuses(left) == ["ok"] * 8
    leave = slots[7]["delivered"]
    cut = [slot for slot in slots[8:] if slot["spans"] and slot["spans"][-1]["status"] != "ok"]
    assert cut, "some workers were running when the caller left"
    assert [slot["spans"][-1]["end"] for slot in cut] == [leave] * len(cut)
    assert {slot["spans"][-1]["status"] for slot in cut} == {"cancelled"}


def test_step13_demos_fill_the_window_behind_the_slow_one_and_read_the_whole_list() -> None:
    run, left = run_json("13")
    slots = run["trace"]["slots"]
    assert [slot["subtask"] for slot in slots] == [f"review {n:02}" for n in range(1, 21)]
    delivered = [slot["delivered"] for slot in slots]
    assert delivered == sorted(delivered)
    assert delivered[1:9] == [3.0] * 8, "review 02 takes 3 s and holds back the window behind it"
    # the window (8 slots, 2 x max_workers) was full: nothing more started before 3 s
    assert [slot["spans"][0]["start"] < 3.0 for slot in slots].count(True) == 1 + 8
    assert statuses(run) == ["ok"] * 20
    # left after 8: no more started than the window holds past them, but all 20 were read
    slots = left["trace"]["slots"]
    assert statuses(left) == ["ok"] * 8
    assert len(slots) == 20
    assert len([slot for slot in slots if slot["spans"]]) <= 8 + 8


def test_step14_demos_pull_the_feed_only_while_the_window_has_room() -> None:
    run, left = run_json("14")
    slots = run["trace"]["slots"]
    assert [slot["subtask"] for slot in slots] == [f"review {n:02}" for n in range(1, 21)]
    delivered = [slot["delivered"] for slot in slots]
    assert delivered == sorted(delivered)
    assert delivered[1:9] == [3.0] * 8, "review 02 takes 3 s and holds back the window behind it"
    # the window (8 slots, 2 x max_workers) was full: nothing more was pulled before 3 s
    assert [slot["planned"] < 3.0 for slot in slots].count(True) == 1 + 8
    assert statuses(run) == ["ok"] * 20
    # left after 8: the feed was pulled no further than the window past them
    assert statuses(left) == ["ok"] * 8
    assert len(left["trace"]["slots"]) <= 8 + 8


@pytest.mark.parametrize("step", ["1", "2", "3", "4", "5"])
def test_a_run_that_never_returns_is_stopped_and_says_why(step: str) -> None:
    # in a process of its own: without the guard this run would never end, and the test must fail
    argv = [step, "--virtual", "--task", "a; b; c", "--hang", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "lessons", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    (row,) = [line for line in lines if line.split()[:2] == ["1", "b"]]
    assert "… running" in row, "the hung slot is drawn still running"
    (said,) = [line for line in lines if line.startswith("never returns")]
    assert said.startswith(f"never returns: step {step} has no timeout (step 6 adds one); stopped")


def test_a_later_step_with_no_timeout_is_stopped_too_and_with_one_is_not() -> None:
    (run,) = run_json("8", "--task", "a; b", "--hang", "0")
    assert run["error"] == "never returns: a worker hangs, and no --timeout or --deadline was given"
    (run,) = run_json("8", "--task", "a; b", "--hang", "0", "--timeout", "30", "--attempts", "1")
    assert run["stopped"] is None
    assert statuses(run) == ["timed out", "ok"]
    assert run["trace"]["wall"] == 30


def test_the_guard_waits_twice_as_long_as_every_other_attempt_and_backoff_could_take() -> None:
    agent = SimulatedAgent(hang={"b"}, latencies={"a": 1.0, "c": 2.0})
    plan = ["a", "b", "c"]
    run = Run("step05_fault_isolation", DEMOS[0], plan, {"max_workers": 2})
    assert guard_after(record(STEP05.__name__), run, agent) == 2 * 3.0
    run.options = {"max_workers": 2, "attempts": 3}
    # step 8's backoff is at most 4 s: 3 attempts of a and c, 2 backoffs for each of 3 slots
    assert guard_after(record(STEP08.__name__), run, agent) == 2 * (3 * 3.0 + 2 * 4.0 * 3)
    for bounded in ({"worker_timeout": 9.0}, {"deadline": 9.0}):
        run.options = {"max_workers": 2, **bounded}
        assert guard_after(record(STEP06.__name__), run, agent) == math.inf
    run.options = {"max_workers": 2}
    assert guard_after(record(STEP05.__name__), run, SimulatedAgent()) == math.inf


@pytest.mark.parametrize("step", ["10", "12"])
def test_a_streaming_step_shows_each_result_as_it_is_handed_over(step: str) -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None)
    argv = [step, "--virtual", "--workers", "2", "--slow", "1:2", "--task", "a; b; c"]
    assert main(argv, console=console) == 0
    lines = out.getvalue().splitlines()
    start = lines.index("handed over, in plan order:")
    assert [line.split()[2:4] for line in lines[start + 1 : start + 4]] == [
        ["0", "a"],
        ["1", "b"],
        ["2", "c"],
    ]
    axis = next(index for index, line in enumerate(lines) if line.strip().startswith("0s"))
    said = " ".join(lines[axis + 1 : axis + 3])
    assert "░ done, held for plan order" in said, "the legend under the timeline says it"


def test_the_timeline_is_followed_by_a_legend_of_its_marks() -> None:
    """Under the terminal timeline, one line says what each mark drawn means: ``·`` waiting,
    ``█`` running, a blank stretch, and each ending drawn, no other; a narrow terminal gets it
    on as few lines as fit, no key cut in two."""
    for width, said in ((140, 1), (60, 3)):
        out = io.StringIO()
        console = Console(file=out, width=width, color_system=None)
        argv = ["9", "--virtual", "--task", "a; b; c; d; e", "--fail", "1"]
        assert main(argv, console=console) == 0
        lines = out.getvalue().splitlines()
        axis = next(index for index, line in enumerate(lines) if line.strip().startswith("0s"))
        legend = lines[axis + 1 : axis + 1 + said]
        assert lines[axis + 1 + said].startswith("results, in the order")
        assert max(len(line) for line in legend) <= width
        assert "   ".join(legend) == (
            "· waiting (for a worker, or a retry)   █ running (coloured by its end)   "
            "blank: over   ✓ ok   ✗ failed"
        )


def options(step: Any, *argv: str) -> dict[str, Any]:
    return step_options(record(step.__name__), parser().parse_args(["x", *argv]))


def test_the_command_line_options_reach_each_step_that_accepts_them() -> None:
    argv = (
        "--workers=3",
        "--timeout=0.5",
        "--deadline=9",
        "--attempts=4",
        "--intensity=2/10",
        "--window=5",
        "--seed=7",
    )
    assert options(STEP05, *argv) == {"max_workers": 3}
    six = {"max_workers": 3, "worker_timeout": 0.5}
    assert options(STEP06, *argv) == six
    timed = {**six, "deadline": 9.0}
    assert options(STEP07, *argv) == timed
    seven = {**timed, "attempts": 4, "seed": 7}
    assert options(STEP08, *argv) == seven
    eight = {**seven, "intensity": (2, 10.0)}
    assert options(STEP09, *argv) == eight
    assert options(STEP10, *argv) == eight
    assert options(STEP11, *argv) == eight
    assert options(STEP12, *argv) == eight
    assert options(STEP13, *argv) == {**eight, "window": 5}
    assert options(STEP14, *argv) == {**eight, "window": 5}


def test_the_command_line_wins_over_a_demo_option() -> None:
    demo = STEP_DEMOS[6][0]
    args = parser().parse_args(["6", "--timeout", "0.75"])
    assert step_options(record(6), args, demo)["worker_timeout"] == 0.75
    assert step_options(record(6), parser().parse_args(["6"]), demo)["worker_timeout"] == 1.5


def test_steps_1_2_and_4_keep_the_default_demos_and_task_keeps_the_step_options() -> None:
    for number in (1, 2, 4):
        assert demos(parser().parse_args([str(number)]), number) == list(DEMOS)
    (yours,) = demos(parser().parse_args(["6", "--task", "a; b", "--hang", "1"]), 6)
    assert (yours.task, yours.hang, dict(yours.options)) == (
        "a; b",
        frozenset({1}),
        {"worker_timeout": 1.5},
    )


def test_the_sub_agent_follows_hang_flaky_and_slow() -> None:
    args = parser().parse_args(["7", "--task", "a; b; c", "--hang", "0", "--flaky", "1:2"])
    args_slow = parser().parse_args(["9", "--task", "a; b; c", "--slow", "2:1.5"])
    (demo,) = demos(args, 7)
    agent = demo.agent(0)
    assert agent.hangs("a")
    assert agent.flaky == {"b": 2}
    assert demos(args_slow, 9)[0].agent(0).latency("c") == 1.5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["6", "--timeout", "0"],
            "argument --timeout: must be a number of seconds above 0 and at most 300, got '0'",
        ),
        (
            ["6", "--deadline", "soon"],
            "argument --deadline: must be a number of seconds above 0 and at most 300, got 'soon'",
        ),
        (
            ["6", "--timeout", "nan"],
            "argument --timeout: must be a number of seconds above 0 and at most 300, got 'nan'",
        ),
        (
            ["7", "--attempts", "0"],
            "argument --attempts: must be an integer from 1 to 100, got '0'",
        ),
        (
            ["17", "--strategy", "one_for_rest"],
            "argument --strategy: invalid choice: 'one_for_rest' (choose from 'one_for_one', "
            "'one_for_all', 'rest_for_one')",
        ),
        (
            ["8", "--intensity", "3"],
            "argument --intensity: must be R/T (at most R restarts, from 0 to 1000, in T seconds, "
            "above 0 and at most 300), e.g. 3/5, got '3'",
        ),
        (
            ["7", "--flaky", "1:0"],
            "argument --flaky: must be a slot I or I:K (slot I fails its first K calls, K from 1 "
            "to 1000), got '1:0'",
        ),
        (
            ["9", "--slow", "1"],
            "argument --slow: must be I:S (slot I takes S seconds, from 0 to 300), e.g. 1:3, "
            "got '1'",
        ),
        (["10", "--window", "2"], "--window must be >= --workers (4), got 2"),
        (["9", "--take", "0"], "argument --take: must be an integer from 1 to 1000, got '0'"),
        (["8", "--hang", "5"], "--hang 5 is not a slot of the task: slots are 0-4"),
        (
            ["7", "--task", "a; b", "--flaky", "2"],
            "--flaky 2 is not a slot of the task: slots are 0-1",
        ),
        (
            ["10", "--task", "a", "--slow", "1:2"],
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


FLAWS = STEP_DEMOS[16][-2:]  # step 16's own demos: the flaws of step 15's stream


def test_an_endless_feed_is_the_plan_over_and_over_numbered_and_its_run_is_guarded() -> None:
    endless, _ = FLAWS
    assert endless.endless
    assert endless.options == {"deadline": 1.0}
    args = parser().parse_args(["15", "--virtual"])
    run = run_demo("step15_async_input", endless, args)
    assert run.trace is not None
    subtasks = [slot.subtask for slot in run.trace.slots]
    assert len(subtasks) > 20, "the feed went on past the plan"
    assert subtasks[:21] == [f"review {n:02}" for n in range(1, 21)] + ["review 01 (2)"]
    assert run.plan == subtasks, "an endless run's plan is what it pulled"
    # step 15 never ends: the guard, at twice the deadline, stopped it
    assert run.guard == 2.0
    assert run.stopped == 2.0
    assert run.error is not None
    assert run.error.startswith("never returns: its input never ends")
    pulled = [slot.planned for slot in run.trace.slots]
    assert pulled == sorted(pulled)
    assert all(later - earlier >= 0.05 - 1e-9 for earlier, later in itertools.pairwise(pulled))


def test_a_caller_that_raises_after_n_results_raises_from_its_own_block() -> None:
    _, raising = FLAWS
    assert raising.raises == 4
    args = parser().parse_args(["15", "--virtual"])
    wrapped = run_demo("step15_async_input", raising, args)
    bare = run_demo("step16_library", raising, args)
    said = "CallerError: the caller's block failed after 4 results"
    assert bare.error == said
    assert wrapped.error is not None
    assert wrapped.error.startswith("ExceptionGroup")
    assert said in wrapped.error
    assert bare.trace is not None
    assert [slot.delivered is not None for slot in bare.trace.slots].count(True) == 4
    assert changed_title(raising).endswith("the caller raises after 4 results")
    assert changed_title(FLAWS[0]).endswith("fed endlessly")


# --- text from a run is drawn, never obeyed ------------------------------------------------------

HOSTILE = "a\x1b[2Jb; c\x9b31m\x07d; e\u202ef\x08g"
"""Subtasks a model could name: ESC (clear the screen), the 8-bit CSI, BEL, a right-to-left
override, BS."""


def acting(text: str) -> set[str]:
    """The characters of ``text`` that a terminal acts on rather than draws (a newline aside)."""
    return {
        char
        for char in text
        if char != "\n" and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    }


@pytest.mark.parametrize("step", ["5", "10", "21"])
def test_no_subtask_output_or_error_reaches_the_terminal_as_a_control_character(
    step: str,
) -> None:
    """Every place a run's text is printed (the header, the timeline, a stream's lines, the
    results or the ledger, the answer, the summary) shows a control character as its escape."""
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None)
    assert main([step, "--virtual", "--task", HOSTILE, "--fail", "0"], console=console) == 0
    printed = out.getvalue()
    assert acting(printed) == set()
    assert "a\\x1b[2Jb" in printed  # drawn, as its escape
    assert "c\\x9b31m\\x07d" in printed
    assert "e\\u202ef\\x08g" in printed
