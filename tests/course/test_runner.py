"""The lesson runner, ``python -m lessons``, as a reader meets it."""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio
from rich.console import Console

import lessons._course.running as running
from lessons._course.arguments import parser
from lessons._course.demos import DEMOS, STEP_DEMOS, Demo
from lessons._course.runner import main
from lessons._course.running import Run, run_step, step_options
from lessons._course.steps import load_step, step, step_number, steps
from trio_supervisor import decompose
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parents[2]
STEP_NAMES = list(steps().values())


def run_main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), console=Console(file=out, width=100, color_system=None))
    return status, out.getvalue()


def python_m(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


# --- every step keeps the contract --------------------------------------------------------------


@pytest.mark.parametrize("name", STEP_NAMES)
def test_every_step_accounts_for_every_subtask_once(name: str) -> None:
    module = load_step(name)
    task = "a; b; c; d; e"
    run = Run(name, Demo("contract", task), decompose(task), {})
    args = parser().parse_args([name])
    run.options = step_options(step(name), args)
    trio.run(
        run_step, module, run, SimulatedAgent(3), clock=trio.testing.MockClock(autojump_threshold=0)
    )
    assert run.error is None
    assert run.aggregate is not None
    assert sorted(result.subtask for result in run.aggregate.results) == ["a", "b", "c", "d", "e"]
    # each its own findings; from step 32 on, read from a typed reply with how sure it is
    assert all(
        re.fullmatch(rf"findings on {result.subtask}( \(\d+% sure\))?", str(result.output))
        for result in run.aggregate.results
    )


@pytest.mark.parametrize("name", STEP_NAMES)
def test_every_step_says_what_it_adds_and_what_is_still_wrong(name: str) -> None:
    doc = load_step(name).__doc__ or ""
    assert doc.startswith(f"Step {step_number(name)}: ")
    assert "What it adds:" in doc
    assert "What is still wrong:" in doc
    # the idea and its flaw, about a dozen lines; sample runs are generated on the step's page
    assert "Sample run" not in doc
    assert len(doc.splitlines()) <= 16


# An interpreter that has imported what the steps' ``__main__`` import (the runner, and through
# it trio and rich: 0.3 s of CPU for each fresh interpreter; from step 17 on, the chat agent and
# the loopback server: 0.5 s more), then, for each line it reads (a module and its arguments,
# as JSON), forks a child that runs the module as ``python -m`` does (``runpy``, as
# ``__main__``), its output in two files, and exits as that interpreter would (its exit
# handlers, trio-parallel's included, run); it answers with the child's status. Each step still
# runs in a process of its own, from its own file.
FORKING = """
import json, os, runpy, sys
import lessons._course.runner, trio_supervisor.agents, trio_supervisor.testing.devserver
for line in sys.stdin:
    module, argv, out, err = json.loads(line)
    child = os.fork()
    if child == 0:
        os.dup2(os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
        os.dup2(os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        sys.argv = [module, *argv]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        sys.exit(0)
    print(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]), flush=True)
"""


@pytest.fixture(scope="module")
def as_module(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """``python -m MODULE ARGV...`` in a child of one interpreter (see `FORKING`): its exit
    status, stdout and stderr."""
    folder = tmp_path_factory.mktemp("as_module")
    with subprocess.Popen(
        [sys.executable, "-c", FORKING],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as forking:
        asks, answers = forking.stdin, forking.stdout
        assert asks is not None
        assert answers is not None

        def run(module: str, *argv: str) -> tuple[int, str, str]:
            out, err = folder / f"{module}.out", folder / f"{module}.err"
            asks.write(json.dumps([module, argv, str(out), str(err)]) + "\n")
            asks.flush()
            status = int(answers.readline())
            return status, out.read_text(), err.read_text()

        yield run
        asks.close()


@pytest.mark.parametrize("name", STEP_NAMES)
def test_every_step_runs_as_a_module(
    name: str, as_module: Callable[..., tuple[int, str, str]]
) -> None:
    status, out, err = as_module(f"lessons.{name}", "--virtual", "--task", "a; b", "--json")
    assert status == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["step"] == name


# --- the commands -------------------------------------------------------------------------------


def test_no_argument_lists_every_step_one_line_each() -> None:
    status, out = run_main()
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == len(STEP_NAMES)
    for number, line in zip(steps(), lines, strict=True):
        assert line.split()[:2] == [str(number), steps()[number]]


@pytest.mark.parametrize("step", ["4", "step04_ordered_slots"])
def test_a_step_runs_by_number_or_name_with_both_demos(step: str) -> None:
    status, out = run_main(step, "--virtual")
    assert status == 0
    for demo in DEMOS:
        assert f"step04_ordered_slots · {demo.title}, max_workers=4" in out
    assert out.count("wall ") == len(DEMOS)


def test_all_runs_every_step_in_order() -> None:
    status, out = run_main("all", "--virtual", "--task", "a; b")
    assert status == 0
    positions = [out.index(f"{name} · your task") for name in STEP_NAMES]
    assert positions == sorted(positions)


def test_a_naive_step_shows_the_exception_that_sank_the_run() -> None:
    status, out = run_main("2", "--virtual", "--task", "a; b; hang", "--fail", "1")
    assert status == 0
    assert "the run raised ExceptionGroup" in out
    assert "SubAgentError: sub-agent failed on 'b'" in out
    assert "⊘ cancelled" in out


def test_subtasks_are_shown_as_written_never_read_as_markup() -> None:
    status, out = run_main("5", "--virtual", "--task", "[bold]a[/bold]; [red]b", "--fail", "1")
    assert status == 0
    lines = out.splitlines()
    timeline_a, timeline_b = (line.split()[:2] for line in lines[2:4])
    assert (timeline_a, timeline_b) == (["0", "[bold]a[/bold]"], ["1", "[red]b"])
    assert "[bold]a[/bold]: findings on [bold]a[/bold]" in lines
    assert "[red]b: (missing: SubAgentError: sub-agent failed on '[red]b')" in lines


def test_json_prints_plan_ordered_results_and_the_trace() -> None:
    done = python_m("lessons", "5", "--virtual", "--json")
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["runs"]
    assert [run["demo"] for run in runs] == [demo.title for demo in STEP_DEMOS[5]]
    assert STEP_DEMOS[5][0] == DEMOS[0]
    research = runs[0]
    plan = decompose(DEMOS[0].task)
    assert [r["subtask"] for r in research["aggregate"]["results"]] == plan
    assert [r["status"] for r in research["aggregate"]["results"]] == ["ok", "failed", "ok"]
    assert research["aggregate"]["failed"] == 1
    assert [slot["subtask"] for slot in research["trace"]["slots"]] == plan
    assert research["trace"]["wall"] == max(
        span["end"] for slot in research["trace"]["slots"] for span in slot["spans"]
    )


def test_workers_seed_and_fail_reach_the_run() -> None:
    status, out = run_main(
        "5",
        "--virtual",
        "--workers",
        "1",
        "--seed",
        "9",
        "--task",
        "a; b",
        "--fail",
        "0",
        "--fail",
        "1",
    )
    assert status == 0
    assert "max_workers=1" in out
    agent = SimulatedAgent(9)
    assert f"wall {agent.latency('a') + agent.latency('b'):.2f}s" in out
    assert "0 ok, 2 failed" in out


# --- bad input: one clear line, exit 2 ----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["3", "--workers", "0"], "argument --workers: must be an integer from 1 to 100, got '0'"),
        (["3", "--workers", "x"], "argument --workers: must be an integer from 1 to 100, got 'x'"),
        (["99"], "unknown step '99': choose a number 1-"),
        (["nope"], "unknown step 'nope': choose a number 1-"),
        (["3", "--task", ""], "--task: task must hold at least one non-blank subtask, got ''"),
        (["3", "--task", " ; \n;"], "--task: task must hold at least one non-blank subtask"),
        (
            ["3", "--task", "a; b", "--fail", "2"],
            "--fail 2 is not a slot of the task: slots are 0-1",
        ),
        (["3", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    ],
)
def test_bad_input_prints_one_clear_line_and_exits_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        run_main(*argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"python -m lessons: error: {message}")


INTENSITY_RULE = (
    "must be R/T (at most R restarts, from 0 to 1000, in T seconds, above 0 and at most 300), "
    "e.g. 3/5"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["8", "--intensity", "-1/5"],
        ["8", "--intensity=-1/5"],
        ["8", "--virtual", "--intensity", "-1/5", "--workers", "2"],
    ],
)
def test_a_value_that_starts_with_a_minus_is_read_as_the_options_value(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--intensity -1/5`` is the same command as ``--intensity=-1/5``: its rule, in one line
    (argparse alone takes ``-1/5`` for an option and says a value is missing)."""
    with pytest.raises(SystemExit) as exit_:
        run_main(*argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"python -m lessons: error: argument --intensity: {INTENSITY_RULE}, got '-1/5'\n"
    )


def test_an_option_is_still_no_value_of_the_option_before_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        run_main("8", "--fail", "--virtual")
    assert capsys.readouterr().err == (
        "python -m lessons: error: argument --fail: expected one argument\n"
    )


def test_bad_input_from_the_shell_has_no_traceback() -> None:
    done = python_m("lessons", "--workers", "0", "3")
    assert done.returncode == 2
    assert done.stderr == (
        "python -m lessons: error: argument --workers: must be an integer from 1 to 100, got '0'\n"
    )


# --- Ctrl-C: exit 130, no traceback -------------------------------------------------------------


def test_keyboard_interrupt_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(running, "run_step", interrupted)
    assert run_main("1", "--virtual")[0] == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_ends_a_run_as_ctrl_c_does_with_status_143(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``SIGTERM`` (``kill``, a service manager) cancels the run as Ctrl-C does, where the
    signal's default would end the process at once, its children and scratch files left."""

    async def terminated(*args: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        await trio.sleep_forever()  # the run goes on until the signal ends it

    def unhandled(signum: int, frame: object) -> None:
        raise AssertionError("the runner left SIGTERM to its default: the process would die")

    monkeypatch.setattr(running, "run_step", terminated)
    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        assert run_main("1", "--virtual")[0] == 143
    finally:
        assert signal.signal(signal.SIGTERM, previous) is unhandled  # the runner's is undone
    assert capsys.readouterr().err == "terminated\n"


def marked_processes(mark: str) -> dict[int, tuple[int, str]]:
    """The live processes whose environment holds ``mark``: pid -> (parent's pid, command)."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or mark.encode() not in (proc / "environ").read_bytes():
                continue
            state, parent = (proc / "stat").read_text().rpartition(")")[2].split()[:2]
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # it ended as it was read, or is not ours to read
            continue
        if state != "Z":  # a zombie has ended: only its parent's wait is missing
            found[int(proc.name)] = (int(parent), command)
    return found


def until(found: Callable[[], set[int]], what: str, within: float = 60.0) -> set[int]:
    """What ``found`` finds first, looking every 20 ms (real processes: real time), for at most
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while not (seen := found()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {within:g}s")
        time.sleep(0.02)
    return seen


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads Linux's /proc")
def test_sigterm_during_a_real_kill_ends_every_child_and_leaves_no_scratch_folder(
    tmp_path: Path,
) -> None:
    """Step 27 on real time: its child Python (to be killed part way) runs with worker processes
    of its own, and the runner has its workers too. ``SIGTERM`` to the runner ends it with
    ``terminated``: the child and its workers at once, and by the time the runner has ended,
    every process it started; its temporary folders are gone."""
    name, mark = "LESSONS_TEST_MARK", uuid.uuid4().hex
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "lessons", "27", "--task", "acme: pricing, reviews"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch), name: mark},
    )
    try:

        def child() -> set[int]:
            return {
                pid
                for pid, (_, command) in marked_processes(mark).items()
                if "lessons._course.killing" in command
            }

        def childs_workers() -> set[int]:
            return {pid for pid, (parent, _) in marked_processes(mark).items() if parent in child()}

        workers = until(childs_workers, "the child to be killed started no workers")
        process.send_signal(signal.SIGTERM)
        until(lambda: set() if child() else {0}, "the child was not killed")
        time.sleep(0.2)  # at once: a worker left to find its parent gone takes seconds
        assert workers.isdisjoint(marked_processes(mark)), "the child's workers outlived it"
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert (process.returncode, err) == (143, "terminated\n")
    assert marked_processes(mark) == {}
    assert list(scratch.iterdir()) == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_real_run_exits_130_without_a_traceback() -> None:
    # step 6 with a long timeout: the run goes on for a minute, and no guard stops it before
    process = subprocess.Popen(
        [sys.executable, "-m", "lessons", "6", "--task", "hang; hang too", "--timeout", "60"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert process.stdout is not None
    assert "step06_worker_timeout" in process.stdout.readline()  # the run has begun; it hangs
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err == "interrupted\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("instant", [0.0, 0.15, 0.3, 0.6, 1.0])
def test_ctrl_c_at_any_instant_start_up_included_ends_interrupted_without_a_traceback(
    instant: float,
) -> None:
    """From the first instant on, through the imports (trio, rich, the steps: most of the first
    second) and into the run, Ctrl-C ends the runner with ``interrupted``. A signal that comes
    before the interpreter handles signals at all ends it as the signal does, silently (the
    shell says 130 for both): never a traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lessons", "3"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(instant)  # the instant after the start; real time is what this test is about
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert "Traceback" not in err
    if process.returncode == -signal.SIGINT and err == "":
        return  # before the interpreter installed its handler: ended by the signal itself
    assert err == "interrupted\n"
    assert process.returncode in (130, -signal.SIGINT)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_while_the_worker_processes_end_after_the_last_run_has_no_traceback() -> None:
    """From step 26 on, the runner's worker processes end after its last run, in the
    interpreter's exit (a second or two): a Ctrl-C then is let go, where it broke into that
    wait with a traceback."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lessons", "26", "--task", "acme: pricing"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.startswith("wall "):  # the run's last line: what is left is the exit
                break
        time.sleep(0.5)  # into the workers' end, which takes seconds (real processes)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert "Traceback" not in err
    assert (process.returncode, err) in ((0, ""), (130, "interrupted\n"))  # late, or let go


@pytest.mark.parametrize("argv", [["check", "4"], ["3", "--task", "a; b"]])
def test_an_interpreter_without_the_dependencies_is_told_which_to_use(argv: list[str]) -> None:
    """The commands the course prints (``python -m lessons check 4``) run as printed: with an
    interpreter that lacks the project's dependencies (here: without its site-packages), one
    line names the interpreter to use, with the same arguments, and no traceback."""
    done = subprocess.run(
        [sys.executable, "-S", "-m", "lessons", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("python -m lessons needs the project's dependencies, and ")
    command = " ".join(argv).replace("a; b", "'a; b'")
    assert f"run `.venv/bin/python -m lessons {command}` instead" in done.stderr


# --- an older Python is told which to use -------------------------------------------------------

FRONT_DOOR = ROOT / "lessons" / "__main__.py"


def older_pythons() -> list[str]:
    """Interpreters older than the course's (3.8-3.10) that run: on the path, or pyenv's."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = [shutil.which(f"python3.{minor}") for minor in (8, 9, 10)]
    found += [str(path) for path in sorted(pyenv.glob("3.[89]*/bin/python"))]
    found += [str(path) for path in sorted(pyenv.glob("3.10*/bin/python"))]
    running = []
    for python in filter(None, found):
        done = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info < (3, 11))"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if done.stdout.strip() == "True":
            running.append(python)
    return running[:1]  # one is enough: each compiles the same front door


def test_the_front_door_compiles_on_python_3_8_and_checks_the_version_before_the_runner() -> None:
    """``python3.8 -m lessons`` compiles ``lessons/__init__.py`` and ``lessons/__main__.py``
    only: they use no newer syntax, and import the runner (``except*``) only inside ``main``,
    after the version check."""
    for path in (ROOT / "lessons" / "__init__.py", FRONT_DOOR):
        ast.parse(path.read_text(), feature_version=(3, 8))
    tree = ast.parse(FRONT_DOOR.read_text())
    checks = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and "version_info" in ast.unparse(node)
    ]
    imports = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lessons")
    ]
    assert checks
    assert imports
    assert all(node not in tree.body for node in imports)
    assert min(node.lineno for node in imports) > min(checks)


def test_an_older_python_is_told_which_interpreter_to_use_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import lessons.__main__ as front_door

    monkeypatch.setattr(sys, "version_info", (3, 10, 4, "final", 0))
    monkeypatch.setattr(sys, "argv", ["lessons", "3", "--task", "a; b"])
    assert front_door.main() == 1
    assert capsys.readouterr().err == (
        f"python -m lessons needs Python 3.11 or newer, and {sys.executable} is Python 3.10.4: "
        "run `.venv/bin/python -m lessons 3 --task 'a; b'` instead (`make lessons` makes .venv)\n"
    )


def test_an_older_python_from_the_shell_gets_one_line_not_a_syntax_error() -> None:
    pythons = older_pythons()
    if not pythons:
        pytest.skip("no Python 3.8-3.10 is installed")
    done = subprocess.run(
        [pythons[0], "-m", "lessons", "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("python -m lessons needs Python 3.11 or newer, and ")


def test_a_run_with_no_server_imports_none() -> None:
    # every `python -m lessons` starts by importing the runner and its demos: the loopback
    # server (and the openai client under it) is imported by the runs that start one, or each
    # process of a Part I step would spend most of its start-up on it
    code = """
import runpy, sys
sys.argv = ["lessons", "2", "--virtual"]
try:
    runpy.run_module("lessons", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    assert not exit.code, exit.code
server = ("openai", "starlette", "trio_supervisor.testing.devserver")
print(sorted(name for name in sys.modules if name in server))
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
