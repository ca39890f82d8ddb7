"""``python -m lessons --trace-out FILE``: every run of the command in one trace-event file."""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest
from rich.console import Console

from lessons._course.runner import main
from lessons._course.steps import steps
from tests.trace_documents import check_trace_document

ROOT = Path(__file__).resolve().parents[2]


def run_main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), console=Console(file=out, width=100, color_system=None))
    return status, out.getvalue()


@pytest.mark.parametrize("step", ["5", "7", "10"])
def test_each_run_is_a_process_and_each_attempt_a_slice_with_the_final_status(
    step: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "runs.json"
    status, _ = run_main(step, "--virtual", "--json", "--trace-out", str(out))
    assert status == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert len(runs) == 2  # the step's two demos
    document = json.loads(out.read_text())
    tracks = check_trace_document(document)
    processes = {
        event["pid"]: event["args"]["name"]
        for event in document["traceEvents"]
        if event["name"] == "process_name"
    }
    assert processes == {pid: f"{run['step']} · {run['demo']}" for pid, run in enumerate(runs, 1)}
    for pid, run in enumerate(runs, start=1):
        for slot in run["trace"]["slots"]:
            track = tracks.get((pid, slot["slot"] + 1), [])
            slices = [event for event in track if event["ph"] == "X"]
            assert len(slices) == slot["attempts"] == len(slot["spans"])
            assert [event["ts"] for event in slices] == [
                round(span["start"] * 1e6, 3) for span in slot["spans"]
            ]
            if slices:  # the last attempt says how the slot ended, as the results do
                assert slices[-1]["args"]["status"] == (slot["status"] or "running")


def test_without_json_it_says_where_the_runs_went(tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    status, printed = run_main("1", "--virtual", "--trace-out", str(out))
    assert status == 0
    assert printed.endswith(
        f"2 runs written to {out}: open it in Perfetto's UI (ui.perfetto.dev) or chrome://tracing\n"
    )
    assert out.exists()


def test_all_writes_every_run_of_every_step(tmp_path: Path) -> None:
    out = tmp_path / "runs.json"
    status, _ = run_main("all", "--virtual", "--task", "a; b; c", "--trace-out", str(out))
    assert status == 0
    names = [
        event["args"]["name"]
        for event in json.loads(out.read_text())["traceEvents"]
        if event["name"] == "process_name"
    ]
    assert names == [f"{name} · your task" for name in steps().values()]


def test_a_trace_out_in_no_directory_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere" / "runs.json"
    with pytest.raises(SystemExit) as exit_:
        main(["1", "--virtual", "--trace-out", str(missing)], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert error == (
        f"python -m lessons: error: --trace-out: {missing.parent} is not a directory: "
        "give a FILE in one\n"
    )


def test_a_trace_out_that_is_a_directory_is_refused_in_one_line_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory is no FILE to write: refused with exit 2 and the rule, not a traceback
    (``IsADirectoryError``) after every run."""
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        main(["1", "--virtual", "--trace-out", str(tmp_path)], console=Console(file=out))
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        f"python -m lessons: error: --trace-out: {tmp_path} is a directory: give a FILE, "
        f"such as {tmp_path / 'runs.json'}\n"
    )
    assert out.getvalue() == ""  # refused before anything ran


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_pages_trace_out_example_writes_a_file_perfetto_reads(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / page).read_text()
    (line,) = [line for line in text.splitlines() if "--trace-out runs.json" in line]
    argv = shlex.split(line.split("#")[0])
    assert argv[:3] == [".venv/bin/python", "-m", "lessons"]
    monkeypatch.chdir(tmp_path)
    status, _ = run_main(*argv[3:], "--virtual")
    assert status == 0
    check_trace_document(json.loads((tmp_path / "runs.json").read_text()))
