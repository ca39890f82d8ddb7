"""Where the runner's output goes: a file it cannot write is refused before any run, one it finds
it cannot write after all is said in one line, and a stdout that takes no more (full, closed,
its reader gone) ends the command quietly with status 1; never a traceback."""

from __future__ import annotations

import errno
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lessons._course.exercises as exercises
import lessons._course.runner as runner
from lessons._course.arguments import unwritable
from lessons._course.runner import main

ROOT = Path(__file__).resolve().parents[2]
PROTECTED = Path("/sys/x.json")  # even root may not make a file in /sys
FULL = Path("/dev/full")  # takes any open, and fails every write: "No space left on device"


class Full(io.StringIO):
    """A stdout on a full disk: every write fails as ``> /dev/full``'s does."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="a folder nobody may write in: Linux's /sys")
@pytest.mark.parametrize("option", ["--trace-out", "--journal"])
def test_a_file_that_cannot_be_written_is_refused_before_any_run(
    option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def ran(*args: object, **kwargs: object) -> None:
        raise AssertionError("a demo ran before the command line was refused")

    monkeypatch.setattr(runner, "run_demo", ran)
    assert refused(["27", "--virtual", option, str(PROTECTED)], capsys) == (
        f"python -m lessons: error: {option}: cannot write {PROTECTED}: Permission denied\n"
    )


@pytest.mark.skipif(not FULL.exists(), reason="a file that fails every write: Linux's /dev/full")
def test_a_journal_that_is_no_regular_file_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(["27", "--virtual", "--journal", str(FULL)], capsys) == (
        f"python -m lessons: error: --journal: {FULL} is not a regular file: give a FILE, "
        "such as runs.db\n"
    )


@pytest.mark.skipif(not FULL.exists(), reason="a file that fails every write: Linux's /dev/full")
def test_a_trace_that_cannot_be_written_after_the_runs_is_one_line_and_status_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["1", "--virtual", "--json", "--trace-out", str(FULL)]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith('{\n  "runs"')  # the runs were printed all the same
    assert captured.err == (
        f"python -m lessons: --trace-out: cannot write {FULL}: No space left on device\n"
    )


def test_the_check_that_a_file_can_be_written_leaves_no_file(tmp_path: Path) -> None:
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("kept")
    assert unwritable(new) is None
    assert unwritable(old) is None
    assert not new.exists()
    assert old.read_text() == "kept"


@pytest.mark.parametrize(
    "argv",
    [[], ["--json"], ["3", "--virtual"], ["10", "--virtual", "--json"], ["check", "4", "--hint"]],
)
@pytest.mark.parametrize(
    ("stdout", "why"), [(Full(), "No space left on device"), (None, "it is closed")]
)
def test_a_full_or_closed_stdout_ends_the_command_with_one_line_and_status_1(
    argv: list[str],
    stdout: io.StringIO | None,
    why: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(exercises, "EXERCISES", tmp_path)  # a hint is kept there
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(argv) == 1
    assert capsys.readouterr().err == f"python -m lessons: cannot write to stdout: {why}\n"


@pytest.mark.skipif(not FULL.exists(), reason="a file that fails every write: Linux's /dev/full")
@pytest.mark.parametrize("redirect", ["> /dev/full", ">&-"])
def test_a_full_or_closed_stdout_from_the_shell_has_no_traceback(redirect: str) -> None:
    done = subprocess.run(
        f"exec {sys.executable} -m lessons 1 --virtual {redirect}",
        shell=True,
        capture_output=False,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("python -m lessons: cannot write to stdout: ")
