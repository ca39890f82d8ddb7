"""Exercises graded by the laws: ``python -m lessons exercise N`` writes step N-1's code with step
N's places marked, and ``python -m lessons check N`` passes on step N's own code and fails, telling
the smallest counterexample, on step N-1's and on the untouched starter.

Every check runs on virtual time with a derandomized Hypothesis (no example database), so its
output is the same on every run.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
import trio
from hypothesis import settings
from rich.cells import cell_len
from rich.console import Console

from lessons._course import exercises, laws
from lessons._course.laws import LAWS, Law, Seen, laws_of, secs
from lessons._course.probes import HOUR, spy_for, task_of
from lessons._course.runner import main
from lessons._course.steps import PART_TWO, load_step, previous, step_path, steps
from trio_supervisor.testing import SimulatedAgent

ROOT = Path(__file__).resolve().parents[2]
KNOWN = steps()
PART_ONE = [number for number in KNOWN if 2 <= number < PART_TWO]
LAST = max(number for number in KNOWN if laws_of(number))  # the last step with laws


@pytest.fixture(autouse=True)
def exercises_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test writes its exercises under its own tmp_path, never into the project."""
    monkeypatch.setattr(exercises, "EXERCISES", tmp_path / "exercises")
    return tmp_path / "exercises"


def run(*argv: str) -> tuple[int, str]:
    """``python -m lessons <argv>`` in this process: its exit status and what it printed."""
    out = io.StringIO()
    status = main(list(argv), Console(file=out, width=100, highlight=False))
    return status, out.getvalue()


SPARED = 3
"""Inputs a check draws here, at most, for a law a fuller search is made for elsewhere."""


@functools.cache
def proved_on_its_steps() -> frozenset[str]:
    """The rules of the laws a test of the course proves on every step they name, drawing their
    own budget: parametrized by ``cases(laws.NAME)``, it runs ``laws.NAME.verify(step)``."""
    tests = "\n".join(path.read_text() for path in sorted(Path(__file__).parent.glob("test_*.py")))
    return frozenset(
        law.rule
        for name, law in vars(laws).items()
        if isinstance(law, Law)
        and f"cases(laws.{name})" in tests
        and f"laws.{name}.verify(step)" in tests
    )


@contextlib.contextmanager
def sparing(about: Collection[Law] | None = None) -> Iterator[None]:
    """Within it, a check draws at most `SPARED` inputs for a law (and no more than the law's own
    budget) where a fuller search is made elsewhere, and the check's whole `exercises.CHECK` for
    the rest. On a file that must fail, ``about`` are the laws the test reads the failure of: any
    other law is spared (what it tells, the test never reads). On the course's own step
    (``about`` None), the laws a test proves on that very step with their own budget are spared
    (`proved_on_its_steps`): the check adds that the command passes, not a search."""
    whole = exercises.CHECK
    spared = (
        {law.rule for law in LAWS} - {law.rule for law in about}
        if about is not None
        else proved_on_its_steps()
    )

    def budget_of(law: Law) -> settings:
        if law.rule not in spared:
            return whole
        return settings(whole, max_examples=min(SPARED, law.budget.max_examples))

    saved = exercises.budget_of
    exercises.budget_of = budget_of
    try:
        yield
    finally:
        exercises.budget_of = saved


@functools.cache
def checked_on_the_step_before(number: int) -> tuple[int, str]:
    """``check N`` on step N-1's code, run once in this process for every test that reads it: a
    check is derandomized and on virtual time, so it tells the same on every run."""
    return run("check", str(number), str(step_path(KNOWN[number - 1])))


# the tests that read `checked_on_the_step_before`: one worker runs them all when the tests run
# on several cores, so that each of those checks runs once
STEP_BEFORE = pytest.mark.xdist_group("checks of the step before")


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run ``argv``, which must be refused: exit 2 and one line on stderr, which is returned."""
    with pytest.raises(SystemExit) as exit_:
        run(*argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return re.sub(r"^python -m lessons( exercise| check)?: error: ", "", err).rstrip("\n")


def fixed_by(number: int) -> Law:
    """The law step ``number`` is the first to keep, which the step before it fails."""
    (law,) = [law for law in LAWS if law.flaw is not None and law.flaw[0] == previous(number)]
    assert number in law.steps
    return law


def test_every_step_with_laws_but_the_first_has_an_exercise() -> None:
    assert list(exercises.exercisable()) == [
        number for number in KNOWN if number != min(KNOWN) and laws_of(number)
    ]
    assert set(PART_ONE) <= set(exercises.exercisable())


def test_the_laws_name_steps_that_exist_and_each_flaw_is_of_the_step_before_them() -> None:
    for law in LAWS:
        assert set(law.steps) <= set(KNOWN), law.rule
        if law.flaw is not None:
            number, reason = law.flaw
            after = min(known for known in KNOWN if known > number)  # number + 1, once written
            assert after in law.steps, law.rule
            assert number not in law.steps, law.rule
            assert reason.startswith(f"step {number}'s flaw: ")


@pytest.mark.parametrize("number", sorted(exercises.exercisable()))
def test_check_passes_on_the_steps_own_code(number: int) -> None:
    with sparing():
        status, out = run("check", str(number), str(step_path(KNOWN[number])))
    rules = [law.rule for law in laws_of(number)]
    told = " ".join(out.split())  # a long rule is wrapped at the console's width
    assert [f"passed {rule}" in told for rule in rules] == [True] * len(rules), out
    assert "FAILED" not in out
    assert out.splitlines()[-1] == f"{len(rules)} of {len(rules)} laws passed"
    assert status == 0


def assert_told(out: str, law: Law, part_two: bool = False) -> None:
    """``out`` tells ``law`` as failed, with the case that broke it, what the code returned, and
    the timeline of that run (a law of Part II: the case, and what differs)."""
    if part_two:
        said = " ".join(out.split())
        assert f"FAILED {' '.join(law.rule.split())} " in said, out
        story = said.split(f"FAILED {' '.join(law.rule.split())} ", 1)[1].split(" passed ")[0]
        assert "smallest counterexample:" in story or "the case:" in story, out
        return
    told = out.split(f"  FAILED  {law.rule}\n", 1)
    assert len(told) == 2, out
    story = told[1].split("\n  passed  ")[0].split("\n  FAILED  ")[0]
    assert "    smallest counterexample:\n" in story or "    the case:\n" in story
    assert "your code returned" in story
    assert re.search(r"^    the timeline of that run(:|, to .*\(stopped at .*\):)$", story, re.M)


@STEP_BEFORE
@pytest.mark.parametrize("number", PART_ONE)
def test_check_fails_on_the_step_befores_code_and_tells_the_counterexample(number: int) -> None:
    status, out = checked_on_the_step_before(number)
    assert_told(out, fixed_by(number))
    assert status == 1


@pytest.mark.parametrize("number", PART_ONE)
def test_check_fails_on_the_untouched_starter(number: int) -> None:
    assert run("exercise", str(number))[0] == 0
    with sparing([fixed_by(number)]):
        status, out = run("check", str(number))
    assert out.startswith(f"step {number}'s laws on ")
    assert_told(out, fixed_by(number))
    assert status == 1


@STEP_BEFORE
def test_the_told_counterexample_is_the_smallest_and_shows_what_differs() -> None:
    """Step 3 returns results in completion order: the smallest case that shows it is two
    subtasks, the first slower, on two workers, and the results come back swapped. The plan's
    names are a real plan's, which do not sort in plan order (a sort by name is no plan order)."""
    _, out = checked_on_the_step_before(4)
    story = out.split("  FAILED  results come back in plan order", 1)[1].split("  passed  ")[0]
    assert story.splitlines()[1:10] == [
        "    the law's check failed",
        "      assert [result.subtask for result in aggregate.results] == plan",
        "    smallest counterexample:",
        "      latencies = [0.0625, 0.03125]",
        "      k = 2",
        "      names = ['pricing', 'inventory']",
        "      your code returned             the law expected",
        "      inventory: ok, out:inventory   pricing: ok, out:pricing   <- differs",
        "      pricing: ok, out:pricing       inventory: ok, out:inventory   <- differs",
    ]


@pytest.mark.parametrize("number", PART_ONE)
def test_the_starter_is_the_step_befores_code_with_the_changed_places_marked(number: int) -> None:
    text = exercises.starter(number)
    mark = exercises.MARK.format(number=number)
    code = text.split('"""', 2)[2].splitlines()
    unmarked = [line for line in code if not line.strip().startswith(mark)]
    before = step_path(KNOWN[number - 1]).read_text()
    assert "\n".join(unmarked).strip() == "\n".join(exercises._code(before))
    old, new = exercises._code(before), exercises._code(step_path(KNOWN[number]).read_text())
    places = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    assert len(code) - len(unmarked) == sum(tag != "equal" for tag, *_ in places)
    assert "__main__" not in text  # the starter never runs the course's own step
    assert f"python -m lessons check {number}" in text
    compile(text, "starter.py", "exec")


def test_exercise_writes_the_starter_and_never_replaces_a_readers_file_without_force(
    capsys: pytest.CaptureFixture[str], exercises_dir: Path
) -> None:
    status, out = run("exercise", "3")
    path = exercises_dir / f"{KNOWN[3]}.py"
    assert status == 0
    assert path.read_text() == exercises.starter(3)
    assert out.splitlines()[-1] == "check it with: python -m lessons check 3"
    path.write_text("# my work\n")
    said = refused(capsys, "exercise", "3")
    assert said.endswith(f"{KNOWN[3]}.py exists: it may hold your work; add --force to replace it")
    assert path.read_text() == "# my work\n"
    assert run("exercise", "3", "--force")[0] == 0
    assert path.read_text() == exercises.starter(3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["exercise", "1"],
            f"step 1 has no exercise: there is no step before it to start from; choose 2-{LAST}",
        ),
        (["exercise", "99"], f"step 99 has no exercise: choose 2-{LAST}"),
        (["exercise", "two"], "argument N: a step is a number, got 'two'"),
        (["check", "99"], f"step 99 has no laws to check: choose 1-{LAST}"),
        (["check", "3", "nowhere.py"], "no file nowhere.py"),
        (["check", "1"], "step 1 has no exercise file: give the PATH of your code"),
        (
            ["check", "3", "--limit", "0"],
            "argument --limit: a time limit is a positive number of seconds, got '0'",
        ),
        (
            ["check", "3", "--limit", "soon"],
            "argument --limit: a time limit is a positive number of seconds, got 'soon'",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert refused(capsys, *argv) == message


def test_check_without_a_path_and_no_exercise_written_says_how_to_write_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    said = refused(capsys, "check", "4")
    assert said.startswith("no file ")
    assert said.endswith(f"{KNOWN[4]}.py: write it with python -m lessons exercise 4")


def test_a_file_that_does_not_import_fails_the_check_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("async def supervise(:\n")
    status, out = run("check", "2", str(path))
    assert status == 1
    assert out.startswith(f"{path} does not import: SyntaxError: ")


def test_a_file_without_supervise_fails_the_check(tmp_path: Path) -> None:
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    assert run("check", "2", str(path)) == (1, f"{path} has no supervise (or stream) to check\n")


def test_hint_gives_one_more_hint_each_time_and_keeps_count(exercises_dir: Path) -> None:
    said = [run("check", "3", "--hint") for _ in range(6)]
    assert all(status == 0 for status, _ in said)
    heads = [out.splitlines()[0] for _, out in said]
    total = int(heads[0].split(" of ")[1].split()[0])
    shown = [min(n, total) for n in range(1, 7)]
    assert heads == [f"hint {n} of {total} for step 3:" for n in shown]
    assert "CapacityLimiter" in said[0][1]
    assert f"lessons/{KNOWN[3]}.py" in said[-1][1]  # the last hint: the course's own answer
    assert json.loads((exercises_dir / "hints.json").read_text()) == {"3": total}
    assert run("check", "4", "--hint")[1].startswith("hint 1 of ")  # each step counts its own


def test_the_exercises_directory_is_git_ignored() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "exercises/step02_fan_out.py"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0


def test_the_command_line_refuses_in_one_line_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lessons", "exercise", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "python -m lessons: error: step 1 has no exercise: there is no step before it to start "
        f"from; choose 2-{LAST}\n"
    )


PAGE = ROOT / "docs" / "exercises.md"
README = ROOT / "README.md"
COMMAND = re.compile(r"^(?:\$ |\.venv/bin/)python -m lessons ((?:exercise|check)\b[^#\n]*)", re.M)


@pytest.mark.parametrize("source", [PAGE, README], ids=lambda path: path.name)
def test_every_exercise_command_shown_runs_as_the_text_says(
    source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands of the exercises page and the README, run in order: an exercise is written,
    its untouched starter fails its check, a hint is given, and the course's own step passes."""
    monkeypatch.chdir(ROOT)  # the page's paths are the project's
    shown = [shlex.split(command) for command in COMMAND.findall(source.read_text())]
    assert ["exercise", "4"] in shown
    assert ["check", "4"] in shown
    for argv in shown:
        status, out = run(*argv)
        failing = argv == ["check", "4"]  # step 3's code, which breaks plan order
        assert status == (1 if failing else 0), out


def test_the_page_shows_a_real_check_of_step_4s_starter() -> None:
    page = PAGE.read_text()
    assert page.count('--8<-- "docs/generated/exercises/sample.md"') == 1
    sample = exercises.sample(4)
    assert sample.startswith("```console\n$ python -m lessons exercise 4\nwrote exercises/")
    assert "  FAILED  results come back in plan order, whatever order the workers finish in\n" in (
        sample
    )
    assert "    smallest counterexample:\n      latencies = [0.0625, 0.03125]\n" in sample
    assert "$ python -m lessons check 4 --hint\nhint 1 of " in sample
    assert "\n3 of 4 laws passed\n" in sample  # the bound, the makespan and its refusal held
    said = " ".join(page.split())
    assert f"Each check draws at most {exercises.CHECK.max_examples} inputs per law" in said
    assert exercises.CHECK.derandomize
    assert exercises.CHECK.database is None


def test_the_runners_help_names_the_exercise_commands() -> None:
    from lessons._course.arguments import parser

    said = " ".join(parser().format_help().split())
    assert "'python -m lessons exercise N' writes one" in said
    assert "'python -m lessons check N' grades it by step N's laws" in said


def test_ctrl_c_stops_a_check_with_status_130_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(laws.Law, "verify", interrupted)
    status, out = run("check", "2", str(step_path(KNOWN[2])))
    assert status == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert "laws passed" not in out


@pytest.mark.parametrize("number", [7, 9, 12])
def test_the_laws_compare_statuses_attempts_and_times_not_how_an_error_words_a_number(
    number: int, tmp_path: Path
) -> None:
    """A step whose errors word their seconds in full (``0.1015625s`` where the course's step
    says ``0.101562s``) keeps every law: a law compares what the step teaches (statuses, the
    error's kind, attempts, times), not the digits of an error's text."""
    source = step_path(KNOWN[number]).read_text()
    assert ":g}s" in source
    path = tmp_path / f"worded_step{number:02}.py"
    path.write_text(source.replace(":g}s", "}s"))
    status, out = run("check", str(number), str(path))
    total = len(laws_of(number))
    assert out.splitlines()[-1] == f"{total} of {total} laws passed", out
    assert status == 0


@pytest.mark.parametrize(
    ("number", "said", "instead", "rule"),
    [
        (
            7,
            "cancelled: the run's deadline",
            "timed out: the run's deadline",
            laws.DEADLINE_ACCOUNTS_FOR_EVERY_SUBTASK,
        ),
        (9, "gave up: more than", "failed: more than", laws.GIVES_UP_PAST_THE_INTENSITY),
    ],
    ids=["deadline-said-timed-out", "gave-up-said-failed"],
)
def test_a_law_still_fails_an_error_of_the_wrong_kind(
    number: int, said: str, instead: str, rule: Law, tmp_path: Path
) -> None:
    """What an error says happened is compared: a slot cut by the deadline that says it timed
    out, or a slot left when the run gave up that says it merely failed, breaks its law."""
    source = step_path(KNOWN[number]).read_text()
    assert said in source
    path = tmp_path / f"misnamed_step{number:02}.py"
    path.write_text(source.replace(said, instead))
    status, out = run("check", str(number), str(path))
    assert f"  FAILED  {rule.rule}\n" in out
    assert "<- differs" in out.split(f"  FAILED  {rule.rule}\n", 1)[1]
    assert status == 1


def timelines(out: str) -> list[list[str]]:
    """The timelines told in ``out``: each its header, one row per slot, and its time axis."""
    found: list[list[str]] = []
    lines = out.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("    the timeline of that run"):
            drawn = []
            for row in lines[index + 1 :]:
                if not row.startswith("      "):
                    break
                drawn.append(row)
            found.append(drawn)
    return found


ENDED = re.compile(r"[✓✗⊖◷⊘⊠] [a-z ]+ (?P<at>\d+\.\d\d)s")


@pytest.mark.parametrize("pipe", [False, True], ids=["width-80", "pipe"])
def test_what_a_check_tells_fits_80_columns_with_every_column_of_its_timelines_whole(
    pipe: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In an 80-column terminal, or written to a pipe (which rich takes as 80 columns), no line
    of a check is wider, and every column of a timeline is whole: its header, each subtask,
    each ending and each slot's completion rank (``done #``)."""
    monkeypatch.delenv("COLUMNS", raising=False)
    out = io.StringIO()
    console = Console(file=out, highlight=False) if pipe else Console(file=out, width=80)
    assert console.width == 80
    for number in (4, 6, 10):
        assert main(["check", str(number), str(step_path(KNOWN[number - 1]))], console) == 1
    told = out.getvalue()
    assert [line for line in told.splitlines() if cell_len(line) > 80] == []
    drawn = timelines(told)
    assert len(drawn) == 6  # step 5 breaks two laws of step 6: a hung worker holds its slot
    for header, *rows, axis in drawn:
        assert header.split() == ["slot", "subtask", "timeline", "end", "done", "#"]
        assert re.fullmatch(r" +0s +\d+\.\d\ds *", axis)
        for row in rows:
            assert "…" not in row.replace("… never ran", ""), row  # nothing cut short
            if ENDED.search(row):
                assert row.split()[-1].isdigit(), row  # its rank shown whole


@STEP_BEFORE
def test_a_run_that_never_returned_is_drawn_to_when_it_was_due_and_what_differs_is_marked() -> None:
    """Step 5 never returns when a worker hangs: its timeline is drawn to when the law expected
    the run to end (the hung slot's timeout, then the two others, on one worker), not to the
    hour after which the check stopped it; and the line that differs is marked."""
    status, out = checked_on_the_step_before(6)
    rule = laws.HUNG_WORKER_FREES_ITS_SLOT.rule
    story = out.split(f"  FAILED  {rule}\n", 1)[1].split("\n  FAILED  ")[0]
    agent = SimulatedAgent()
    due = 1.5 + agent.latency("b") + agent.latency("c")
    assert story.splitlines()[5:12] == [
        "    your code returned:",
        "      (never returned: still running an hour of virtual time later)   <- differs",
        "    the law expected:",
        "      stuck: timed out",
        "      b: ok, findings on b   <- differs",
        "      c: ok, findings on c   <- differs",
        f"    the timeline of that run, to {secs(due)} (stopped at {secs(HOUR)}):",
    ]
    ((_, stuck, b, c, axis),) = timelines(story)
    assert stuck.split()[:3] == ["0", "stuck", "█" * len(stuck.split()[2])]  # to the right edge
    assert b.split()[1:] == ["b", "·" * len(stuck.split()[2]), "…", "never", "ran"]
    assert c.split()[1] == "c"
    assert axis.split() == ["0s", f"{due:.2f}s"]
    assert status == 1


def test_a_timeline_ends_where_its_run_ended_not_where_the_law_stopped_waiting() -> None:
    """A law that waits on after the run (to see that no worker starts later) draws the run to
    its end: the last worker's end here, not an hour later."""
    step = load_step(KNOWN[2])
    seen = Seen()

    async def main() -> None:
        plan, spy = spy_for([0.5, 0.25])
        worker = seen.watch(spy, plan)
        await seen.run(lambda: step.supervise(task_of(plan), worker))
        await trio.sleep(HOUR)

    seen.virtual(main)
    trace = seen.timeline()
    assert trace is not None
    assert trace.wall == 0.5


@STEP_BEFORE
@pytest.mark.parametrize("number", PART_ONE)
def test_every_told_timeline_spans_its_runs_real_extent(number: int) -> None:
    """Whatever law fails on the step before, its timeline ends neither before a slot ended
    nor at the hour a law waits after the run (or stops a run that never returns)."""
    _, out = checked_on_the_step_before(number)
    for _, *rows, axis in timelines(out):
        right = float(axis.split()[-1].removesuffix("s"))
        assert 0 < right < HOUR
        for row in rows:
            ended = ENDED.search(row)
            if ended is not None and ended["at"] != f"{HOUR:.2f}":  # stopped after an hour
                assert float(ended["at"]) <= right, row


BUSY = """
async def supervise(task, worker, *, max_workers=4):
    while True:  # never yields: no await, so trio can never cancel it
        pass
"""


def test_a_supervise_that_never_yields_is_told_as_never_returned_within_the_limit(
    tmp_path: Path,
) -> None:
    """A busy loop cannot be interrupted: the check abandons it at its time limit (1 s here;
    real time is what this test is about), tells the law as never returned on the case it was
    running, tells the laws after it as not run, and ends."""
    path = tmp_path / "busy.py"
    path.write_text(BUSY)
    done = subprocess.run(
        [sys.executable, "-m", "lessons", "check", "3", str(path), "--limit", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    first, second, *_ = (law.rule for law in laws_of(3))
    told = " ".join(done.stdout.split())
    assert f"FAILED {first} never returned within 1s of real time: your code never lets " in told
    assert " on the case: latencies = " in told
    assert f"not run {second}" in told
    assert done.stdout.endswith(f"\n0 of {len(laws_of(3))} laws passed\n")
    assert done.stderr == ""
    assert done.returncode == 1


def test_watch_checks_again_on_each_save_and_ctrl_c_ends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check --watch``: a check at once, then none while the file stays as it is (looked at
    every ``POLL`` seconds), one more after a save, and Ctrl-C ends it, with status 130. The
    file's clock is the fake ``sleep``'s: no real time passes."""
    path = tmp_path / "mine.py"
    path.write_text("x = 1\n")
    graded: list[float] = []
    naps: list[float] = []
    clock = 0.0

    def grade() -> int:
        graded.append(clock)
        return 1

    def sleep(seconds: float) -> None:
        nonlocal clock
        naps.append(seconds)
        clock += seconds
        if clock == 2.0:  # saved, two seconds in
            path.write_text("x = 2  # saved\n")
            stamp = path.stat().st_mtime_ns + 10**9
            os.utime(path, ns=(stamp, stamp))
        if clock == 5.0:
            raise KeyboardInterrupt

    out = io.StringIO()
    status = exercises.watch(path, grade, Console(file=out, width=100), sleep=sleep)
    assert graded == [0.0, 2.0]
    assert set(naps) == {exercises.POLL}
    assert out.getvalue().count("the check runs again when you save it (Ctrl-C ends it)") == 2
    assert status == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_check_watch_runs_the_check_then_waits_for_a_save(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(exercises, "pause", interrupted)
    path = step_path(KNOWN[2])
    status, out = run("check", "2", str(path), "--watch")
    assert out.count("laws passed") == 1
    assert f"watching {path}: the check runs again when you save it" in " ".join(out.split())
    assert status == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize("number", sorted(exercises.exercisable()))
def test_each_step_page_offers_its_exercise_with_its_commands_before_its_code(number: int) -> None:
    """The page's generated part (what follows its player) offers the exercise, then the code
    that answers it."""
    from tools.docs import pages

    part = pages.code_section(KNOWN[number])
    section = part.split("## Write it yourself\n", 1)[1].split("\n## ", 1)[0]
    tip = section.split('!!! tip "Write this step yourself"\n', 1)[1]
    for command in ("exercise", "check"):
        assert f"$ python -m lessons {command} {number}\n" in tip
    for option in ("--watch", "--hint"):
        assert f"$ python -m lessons check {number} {option}\n" in tip
    earlier = previous(number)
    start = f"step {earlier}'s code"  # Part II's: the step's module without its idea
    if earlier is not None and earlier >= PART_TWO:
        start = f"step {number}'s module with what it changes as step {earlier} has it"
    assert f"the exercise is {start}" in " ".join(tip.split())
    assert part.index("## Write it yourself") < part.index("## The code that changed")


def test_the_exercises_page_names_watch_and_limit() -> None:
    said = " ".join(PAGE.read_text().split())
    assert "python -m lessons check 4 --watch" in said
    assert "--limit" in said


EXITS = """
import sys

import trio


async def supervise(task, worker, *, max_workers=4):
    async def exits(subtask):
        await worker(subtask)
        sys.exit(70)  # a worker of the reader's that ends the process, or means to

    async with trio.open_nursery() as nursery:
        for subtask in task.split(";"):
            nursery.start_soon(exits, subtask.strip())
    return []
"""


@pytest.mark.parametrize("where", ["in a worker", "bare"])
def test_a_system_exit_from_the_readers_code_is_a_failed_law_and_the_check_goes_on(
    tmp_path: Path, where: str
) -> None:
    """``SystemExit`` raised by the code checked (in a worker task, so inside an exception
    group; or bare) is no Ctrl-C: each law it breaks is told as failed, naming it, and the check
    goes on to its count and exit status 1, instead of ending silently with the reader's
    status."""
    source = {
        "in a worker": EXITS,
        "bare": "async def supervise(task, worker, *, max_workers=4):\n    raise SystemExit(70)\n",
    }[where]
    path = tmp_path / "exits.py"
    path.write_text(source)
    status, out = run("check", "2", str(path))
    told = " ".join(out.split())
    total = len(laws_of(2))
    assert told.count("FAILED ") == total
    assert "SystemExit: 70" in told
    assert out.endswith(f"\n0 of {total} laws passed\n")
    assert status == 1


def test_a_file_that_exits_as_it_is_imported_is_told_as_not_importing(tmp_path: Path) -> None:
    path = tmp_path / "exits.py"
    path.write_text("raise SystemExit(70)\n")
    status, out = run("check", "2", str(path))
    assert status == 1
    assert " ".join(out.split()).endswith("exits.py does not import: SystemExit: 70")
