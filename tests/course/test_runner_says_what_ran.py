"""The runner says what ran: titles and the serial figure follow the options given, ``--json``
holds every slot and option, conflicting options are refused, and a closed stdout ends it quietly.

The steps are picked by what their ``supervise`` accepts (retries, streaming), not by number, so
these laws hold whatever the steps are called.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lessons._course.arguments import parser
from lessons._course.demos import OPTIONS, STEP_DEMOS, Demo, demos
from lessons._course.runner import main
from lessons._course.steps import load_step, step, steps
from trio_supervisor import decompose
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parents[2]
STEPS = steps()


def accepting(option: str) -> list[int]:
    """The steps whose ``supervise`` (or ``stream``) takes keyword option ``option``."""
    return [number for number in STEPS if step(number).takes(option)]


STREAMING = [number for number in STEPS if step(number).streams]
FIRST = "step11_streaming"  # the first stream: its workers run on after the caller leaves
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


# --- titles follow the options given ------------------------------------------------------------


def as_given(value: Any) -> str:
    """``value`` as the command line writes it (an intensity as R/T)."""
    return "/".join(map(str, value)) if isinstance(value, tuple) else str(value)


def other_value(name: str, value: Any) -> str:
    """A command-line value for option ``name`` that differs from a demo's ``value``."""
    if name == "intensity":
        return as_given((value[0] + 1, value[1]))
    if name == "strategy":
        return "one_for_all" if value != "one_for_all" else "one_for_one"
    if name == "planner":
        return "scripted" if value == "llm" else "llm"
    if isinstance(value, int):
        return str(value + 1)
    return str(value * 2)


def flag(name: str) -> str:
    """The command-line option that sets a step's keyword option ``name``."""
    return "--" + OPTIONS[name].replace("_", "-")


def changes() -> Iterator[tuple[int, Demo, list[str]]]:
    """Each step's demo with one thing it sets given otherwise on the command line."""
    for number, step_demos in STEP_DEMOS.items():
        for demo in step_demos:
            for name, value in demo.options.items():
                if name in OPTIONS:
                    yield number, demo, [flag(name), other_value(name, value)]
            if demo.take is not None:
                yield number, demo, ["--take", str(demo.take + 1)]


@pytest.mark.parametrize(
    ("number", "demo", "argv"),
    [
        pytest.param(*change, id=f"{change[0]} {change[1].title} {' '.join(change[2])}")
        for change in changes()
    ],
)
def test_a_demo_the_command_line_changes_is_not_titled_as_the_demo(
    number: int, demo: Demo, argv: list[str]
) -> None:
    ran = demos(parser().parse_args([str(number), *argv]), number)
    assert not [other.title for other in ran if demo.title in other.title]


def test_a_demo_given_its_own_options_keeps_its_title() -> None:
    for number, step_demos in STEP_DEMOS.items():
        for demo in step_demos:
            same = [
                f"{flag(name)}={as_given(value)}"
                for name, value in demo.options.items()
                if name in OPTIONS  # `adaptive` has no command-line option
            ]
            same += [] if demo.take is None else [f"--take={demo.take}"]
            assert demo in demos(parser().parse_args([str(number), *same]), number)


FLAW = re.compile(r"fed endlessly|the caller raises")


def takes() -> Iterator[tuple[int, int]]:
    """Each streaming step with 3, and with the take each of its demos sets."""
    for number in STREAMING:
        own = {demo.take for demo in STEP_DEMOS.get(number, ()) if demo.take is not None}
        for take in sorted({3} | own):
            yield number, take


@pytest.mark.parametrize(("number", "take"), list(takes()))
def test_an_explicit_take_is_what_every_run_does_and_no_run_repeats(number: int, take: int) -> None:
    runs = runs_of(str(number), "--take", str(take))
    # step 16's flaw demos end by their deadline or their caller's own exception, not the take
    runs = [run for run in runs if not FLAW.search(run["demo"])]
    for run in runs:  # a demo of fewer subtasks than the take hands over all of them
        assert len(run["aggregate"]["results"]) == min(take, len(decompose(run["task"])))
    assert all(run["options"]["take"] == take for run in runs)
    what_ran = [json.dumps([run["task"], run["options"]]) for run in runs]
    assert len(set(what_ran)) == len(what_ran)
    titles = {demo.title for demo in STEP_DEMOS.get(number, ())}
    for run in runs:
        assert f"left after {take} results" in run["demo"] or run["demo"] in titles


@pytest.mark.parametrize("number", [number for number in STEPS if number not in STREAMING])
def test_take_changes_no_step_that_does_not_stream(number: int) -> None:
    given = demos(parser().parse_args([str(number), "--take", "2"]), number)
    assert given == demos(parser().parse_args([str(number)]), number)


def test_a_slot_the_command_line_names_does_only_what_it_says() -> None:
    for number, step_demos in STEP_DEMOS.items():
        for demo in step_demos:
            for slot in demo.hang:
                argv = [str(number), "--fail", str(slot)]
                for changed in demos(parser().parse_args(argv), number):
                    assert slot in changed.fail
                    assert slot not in changed.hang


# --- serial would take: the calls that ran, one after another -----------------------------------


def calls(slots: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls of the workers: in a tree, the leaves' (a child run's for its slot)."""
    found: list[dict[str, Any]] = []
    for slot in slots:
        found += calls(slot["child"]["slots"]) if "child" in slot else slot["spans"]
    return found


@pytest.mark.parametrize("number", list(STEPS))
def test_serial_is_the_sum_of_every_attempt_that_ran(number: int) -> None:
    for run in runs_of(str(number)):
        spans = calls(slots_of(run))
        if any(span["end"] is None for span in spans):  # a hung call: serial never ends
            assert run["serial"] is None
            continue
        assert run["serial"] == sum(span["end"] - span["start"] for span in spans)


def test_the_summary_calls_the_figure_the_calls_alone_where_a_run_waits_longer_than_it_calls() -> (
    None
):
    """Step 21's stall demo waits out backoffs and Retry-Afters: its wall time (5.58s) is more
    than its calls take one after another (5.16s), which the summary called what a serial run
    would take, though a serial run would wait as long between its retries."""
    out = io.StringIO()
    main(["21", "--virtual"], console=Console(file=out, width=200))
    summaries = [line for line in out.getvalue().splitlines() if line.startswith("wall ")]
    walls = [float(re.findall(r"[\d.]+(?=s)", line)[0]) for line in summaries]
    alone = [float(re.findall(r"one after another: ([\d.]+)s", line)[0]) for line in summaries]
    assert any(w > a for w, a in zip(walls, alone, strict=True))  # the run that waits
    assert all("its calls alone, one after another" in line for line in summaries)
    assert not any("serial would take" in line for line in summaries)


@pytest.mark.parametrize(
    # a journaling step shows the resume of a run killed part way: its retries are split
    # between the two runs (its own tests count what the resume runs again)
    "number",
    [number for number in RETRYING if not step(number).journals],
)
def test_serial_counts_each_retry(number: int) -> None:
    (run,) = runs_of(str(number), "--task", "a", "--flaky", "0:2", "--attempts", "3")
    assert len(calls(slots_of(run)[:1])) == 3
    assert run["serial"] == 3 * SimulatedAgent(0).latency("a")


@pytest.mark.parametrize("number", [number for number in STREAMING if step(number).name != FIRST])
def test_serial_counts_only_what_ran_before_the_caller_left(number: int) -> None:
    task = "; ".join(f"r{index}" for index in range(10))
    argv = ("--task", task, "--workers", "1", "--window", "1", "--take", "2")
    (run,) = runs_of(str(number), *argv)
    agent = SimulatedAgent(0)
    assert run["serial"] == agent.latency("r0") + agent.latency("r1")


# --- --json: every slot and every option --------------------------------------------------------


@pytest.mark.parametrize("number", list(STEPS))
def test_json_gives_each_slot_its_status_attempts_started_and_finished(number: int) -> None:
    for run in runs_of(str(number)):
        slots = slots_of(run)
        for slot in slots:
            spans = slot["spans"]
            assert slot["attempts"] == len(spans)
            assert slot["started"] == (spans[0]["start"] if spans else None)
            assert slot["finished"] == (spans[-1]["end"] if spans else None)
            assert slot["status"] in {None, "ok", "failed", "timed out", "cancelled"}
        for result in (run["aggregate"] or {"results": []})["results"]:
            traced = slots[result["slot"]]
            assert traced["subtask"] == result["subtask"]
            assert traced["status"] == result["status"]
            for key in ("attempts", "started", "finished"):
                assert result[key] == traced[key]


@pytest.mark.parametrize("number", list(STEPS))
def test_json_options_hold_every_option_of_the_step(number: int) -> None:
    keyword = list(step(number).options)  # each held to the step's signature by test_catalogue
    streams = number in STREAMING
    for run in runs_of(str(number), "--task", "a; b"):
        assert list(run["options"]) == keyword + (["take"] if streams else [])
        assert run["options"].get("max_workers", 4) == 4


def test_json_options_say_the_value_the_run_used() -> None:
    number = max(STREAMING)
    (run,) = runs_of(str(number), "--task", "a; b", "--window", "6", "--take", "1")
    assert (run["options"]["window"], run["options"]["take"]) == (6, 1)
    assert run["options"]["deadline"] is None, "no deadline: null, not Infinity"


@pytest.mark.parametrize("number", RETRYING)
def test_a_slot_is_admitted_before_its_first_attempt_starts(number: int) -> None:
    argv = ("--task", "a; b", "--flaky", "0:2", "--attempts", "3", "--workers", "1")
    for run in [*runs_of(str(number)), *runs_of(str(number), *argv)]:
        for slot in slots_of(run):
            if slot["spans"]:
                assert slot["admitted"] is not None
                assert slot["admitted"] <= slot["spans"][0]["start"]


def test_json_with_no_step_prints_the_steps() -> None:
    listed = run_json()["steps"]
    assert [(step["number"], step["name"]) for step in listed] == list(STEPS.items())
    for listing in listed:
        first = (load_step(listing["name"]).__doc__ or "").splitlines()[0]
        assert first == f"Step {listing['number']}: {listing['title']}. {listing['idea']}"


def test_help_marks_every_repeatable_option() -> None:
    repeatable = [
        action
        for action in parser()._actions
        if isinstance(action, argparse._AppendAction)  # given more than once, each one counts
    ]
    assert repeatable
    for action in repeatable:
        assert "(repeatable)" in (action.help or ""), action.option_strings


# --- conflicting options: one line, exit 2, nothing runs ----------------------------------------

RULE = "a slot does one of fail, hang, flaky"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fail", "1", "--hang", "1"], f"slot 1 is given both --fail and --hang: {RULE}"),
        (["--fail", "1", "--flaky", "1:1"], f"slot 1 is given both --fail and --flaky: {RULE}"),
        (["--hang", "1", "--flaky", "1"], f"slot 1 is given both --hang and --flaky: {RULE}"),
        (
            ["--hang", "2", "--slow", "2:1"],
            "slot 2 is given both --hang and --slow: a slot that hangs never ends, "
            "so it has no latency",
        ),
        (
            ["--flaky", "0:1", "--flaky", "0:2"],
            "slot 0 is given --flaky twice: give each slot once",
        ),
        (["--slow", "0:1", "--slow", "0:1"], "slot 0 is given --slow twice: give each slot once"),
    ],
)
def test_conflicting_options_are_refused_before_anything_runs(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        main([str(TIMING), "--virtual", "--timeout", "2", *argv], console=Console(file=out))
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"python -m lessons: error: {message}\n"
    assert out.getvalue() == ""


# --- a closed stdout ends the program quietly ---------------------------------------------------


def read_a_line_then_close(*argv: str) -> tuple[bytes, subprocess.CompletedProcess[bytes]]:
    """Run ``python -m lessons <argv>`` into a pipe of one page, read its first line and close
    the pipe, as ``| head -1`` does; the writer is still writing (its output is longer than the
    pipe holds), so its next write finds no reader."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_SETPIPE_SZ"):
        pytest.skip("the pipe's size can be set on Linux only")
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(
        [sys.executable, "-m", "lessons", *argv],
        cwd=ROOT,
        stdout=write,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100"},
    )
    os.close(write)
    line = b""
    while not line.endswith(b"\n"):
        byte = os.read(read, 1)
        assert byte, "the program wrote no line"
        line += byte
    os.close(read)
    _, err = process.communicate(timeout=10)
    return line, subprocess.CompletedProcess(process.args, process.returncode, b"", err)


def test_a_closed_stdout_after_the_first_json_line_ends_quietly() -> None:
    line, done = read_a_line_then_close("all", "--virtual", "--json")
    assert line == b"{\n"
    assert done.stderr == b""
    assert done.returncode == 1


@pytest.mark.parametrize("number", STREAMING)
def test_a_closed_stdout_while_a_stream_hands_results_over_ends_quietly(number: int) -> None:
    task = "; ".join(f"review {index}" for index in range(300))  # its lines fill the pipe
    line, done = read_a_line_then_close(str(number), "--virtual", "--task", task)
    assert line.startswith(STEPS[number].encode())
    assert done.stderr == b""
    assert done.returncode == 1


def test_a_password_in_the_endpoint_is_masked_as_the_key_is() -> None:
    """``--endpoint http://user:secret@host/v1``: the header of every demo and ``--json`` show
    the URL with its password masked, and so does the line that says it cannot be reached."""
    import io
    import socket

    from rich.console import Console

    from lessons._course.arguments import unreachable
    from lessons._course.demos import DEMOS
    from lessons._course.recording import run_dict
    from lessons._course.running import Run
    from lessons._course.showing import ConsoleWatch

    url = "http://ana:s3cret@127.0.0.1:9/v1"
    run = Run("step17_http_subagents", DEMOS[0], [], {"max_workers": 4}, endpoint=url, model="m")
    out = io.StringIO()
    ConsoleWatch(Console(file=out, width=200, color_system=None)).starting(run)
    assert "against http://ana:***@127.0.0.1:9/v1 (m)" in out.getvalue()
    assert run_dict(run)["endpoint"] == "http://ana:***@127.0.0.1:9/v1"
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    said = unreachable(f"http://ana:s3cret@127.0.0.1:{port}/v1", timeout=1.0)
    assert said is not None
    assert "s3cret" not in said
    assert "http://ana:***@127.0.0.1" in said
