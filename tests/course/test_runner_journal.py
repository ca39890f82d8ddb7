"""The runner's journal: ``--journal FILE``, ``--run-id ID``, ``--resume``, and the ``approve``
and ``reject`` commands, each mistake refused in one line (exit 2) before anything runs."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from lessons._course.runner import main
from tests.course.step_laws import run_virtual
from trio_supervisor import Durable, Journal, Status, Supervisor, approval

TASK = "acme: pricing, reviews"


def run_json(*argv: str) -> list[dict[str, Any]]:
    buffer = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", buffer)
        assert main([*argv, "--virtual", "--json"], console=Console(file=io.StringIO())) == 0
    runs: list[dict[str, Any]] = json.loads(buffer.getvalue())["runs"]
    return runs


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--virtual"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


def test_a_run_journaled_in_a_file_is_resumed_from_it_whole(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    (first,) = run_json("27", "--task", TASK, "--journal", str(path))
    assert first["run_id"] == "27.1"
    assert first["killed_at"] == 1.0  # the demo's kill, then its resume
    (again,) = run_json("27", "--task", TASK, "--journal", str(path), "--resume")
    assert again["killed_at"] is None  # a resume is not killed
    assert all(slot.get("journaled") for slot in again["trace"]["slots"])
    assert again["answer"] == first["answer"]


def test_a_run_id_of_ones_own_names_the_run_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run_json("27", "--task", TASK, "--journal", str(path), "--run-id", "mine")
    with Journal(path) as journal:
        assert journal.results("mine", 1)[0].ok


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["26", "--journal", "x.db"], "need a step whose runs are journaled (27 on)"),
        (["27", "--resume"], "--resume needs --journal FILE"),
        (["27", "--run-id", "r"], "--run-id names a run in a journal: give --journal FILE too"),
        (["27", "--journal", "missing.db", "--resume"], "--resume: no journal at missing.db"),
        (
            ["27", "--journal", "x.db", "--run-id", "r"],
            "--run-id names one run, and the step has 2",
        ),
    ],
)
def test_a_journal_option_that_cannot_hold_is_refused_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in refused(argv, capsys)


def test_an_unknown_run_a_known_run_and_another_task_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.db")
    run_json("27", "--task", TASK, "--journal", path)
    unknown = refused(
        ["27", "--task", TASK, "--journal", path, "--run-id", "x", "--resume"], capsys
    )
    assert unknown.endswith("--resume: run 'x' is not in " + path + " (its runs: 27.1)")
    again = refused(["27", "--task", TASK, "--journal", path], capsys)
    assert "run '27.1' is in " + path + " already: give --resume to resume it" in again
    other = refused(["27", "--task", "globex", "--journal", path, "--resume"], capsys)
    assert "was journaled for the task 'acme: pricing, reviews', not 'globex'" in other


def test_approve_answers_once_and_a_second_answer_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"

    async def refund(order: str) -> str:
        await approval(f"refund $500 to order {order}?")
        return "refunded"

    async def ask() -> None:
        with Journal(path, writer="inline") as journal:
            parked = await Supervisor(refund, max_workers=1).run(
                ["1234"], durable=Durable("r", journal)
            )
        assert parked[0].status is Status.AWAITING_APPROVAL

    run_virtual(ask)
    assert main(["approve", str(path), "r", "0", "--by", "ana"]) == 0
    assert capsys.readouterr().out == "r slot 0: approved\n"
    assert main(["reject", str(path), "r", "0", "--by", "bo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "was approved already, by ana" in err[0]
    assert main(["approve", str(tmp_path / "none.db"), "r", "0"]) == 2
    assert "no journal at" in capsys.readouterr().err


def test_approve_names_itself_as_the_user_typed_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["approve", str(tmp_path / "runs.db"), "r", "first"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith("python -m lessons approve: argument slot: a slot is a number")
    assert "see python -m lessons approve --help" in err
    assert "trio_supervisor" not in err


REFUNDS = "acme: pricing, refund $500 to order 1234; globex: refund $40 to order 77"


def test_a_parked_refund_is_approved_by_a_second_command_and_the_resume_finishes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.db")
    (parked,) = run_json("28", "--task", REFUNDS, "--journal", path)
    (question,) = parked["parked"]
    assert question["question"] == "acme refund $500 to order 1234: over $100, approve?"
    assert "round 1 waits for approval: acme refund $500" in parked["replan"]["reason"]
    argv = [path, question["run_id"], str(question["slot"]), "--by", "ana"]
    assert main(["approve", *argv]) == 0
    assert main(["approve", *argv]) == 2  # answered once
    assert "was approved already, by ana" in capsys.readouterr().err
    (done,) = run_json("28", "--task", REFUNDS, "--journal", path, "--resume")
    assert done["parked"] == []
    assert not done["replan"]["degraded"]
    assert "acme refund $500 to order 1234: findings" in done["answer"]


def test_the_runners_journal_holds_its_data_in_its_main_file_when_it_ends(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    (parked,) = run_json("28", "--task", REFUNDS, "--journal", str(path))
    assert not Path(f"{path}-wal").exists()
    copy = tmp_path / "copy" / "runs.db"
    copy.parent.mkdir()
    shutil.copy(path, copy)  # the main file only: what a copy to another machine takes
    (question,) = parked["parked"]
    with Journal(copy) as journal:
        assert [q[2] for q in journal.pending(question["run_id"])] == [question["question"]]


def test_on_real_time_the_first_run_is_a_child_python_killed_with_sigkill(tmp_path: Path) -> None:
    """The one real-time run of the demo (some seconds): the kill is a real one, and the resume
    ends as the simulated kill's does on virtual time."""
    from lessons._course.arguments import parser
    from lessons._course.demos import STEP_DEMOS
    from lessons._course.running import run_demo

    demo = STEP_DEMOS[27][0]
    args = parser().parse_args(["27", "--journal", str(tmp_path / "runs.db")])
    real = run_demo("step27_durable_runs", demo, args)
    assert real.error is None
    assert real.killed_really
    assert real.killed is not None
    assert 0 < real.killed < len(real.plan)  # killed part way: some committed, some not
    args.virtual, args.journal = True, tmp_path / "virtual.db"
    simulated = run_demo("step27_durable_runs", demo, args)
    assert not simulated.killed_really
    assert real.aggregate is not None
    assert simulated.aggregate is not None
    assert [(r.subtask, r.status, r.output) for r in real.aggregate] == [
        (r.subtask, r.status, r.output) for r in simulated.aggregate
    ]
    assert real.replanned is not None
    rounds = range(1, len(real.replanned.ledger.rounds) + 1)
    with Journal(tmp_path / "runs.db") as journal:  # each slot of each round once
        assert sum(len(journal.results(real.run_id, n)) for n in rounds) == len(real.plan)


def test_on_real_time_a_kill_due_before_any_commit_waits_for_the_first(tmp_path: Path) -> None:
    """A busy machine may start the child's run late, so that nothing is committed by the
    demo's ``killed_at``: the kill is then put off until the first commit, so the resume still
    shows results from the journal. Here the kill is due at once (0 s), before any commit."""
    from lessons._course.arguments import parser
    from lessons._course.demos import STEP_DEMOS
    from lessons._course.running import run_demo

    demo = dataclasses.replace(STEP_DEMOS[27][0], killed_at=0.0)
    args = parser().parse_args(["27", "--journal", str(tmp_path / "runs.db")])
    real = run_demo("step27_durable_runs", demo, args)
    assert real.error is None
    assert real.killed_really
    assert real.killed_after is not None  # killed, not ended on its own
    assert real.killed is not None
    assert 0 < real.killed < len(real.plan)


def test_a_real_run_that_ends_before_its_kill_is_not_said_to_be_killed(tmp_path: Path) -> None:
    """On real time the child may end its run before the kill falls (``kill_part_way`` returns
    None): the line under the resume says so, instead of a kill at the demo's instant. The
    run's fields are set as ``running.durably`` sets them then (no child is started here)."""
    from lessons._course.arguments import parser
    from lessons._course.demos import STEP_DEMOS
    from lessons._course.running import run_demo
    from lessons._course.showing import show

    demo = STEP_DEMOS[27][0]
    args = parser().parse_args(["27", "--virtual", "--journal", str(tmp_path / "runs.db")])
    simulated = run_demo("step27_durable_runs", demo, args)
    assert simulated.killed is not None
    lines = {}
    for name, killed_after in (("ended", None), ("killed", 1.25)):
        out = io.StringIO()
        real = dataclasses.replace(simulated, killed_really=True, killed_after=killed_after)
        show(Console(file=out, width=400, color_system=None), real)
        [lines[name]] = [line for line in out.getvalue().splitlines() if "committed;" in line]
    assert "ended before its kill, due at 1.00s," in lines["ended"]
    assert "killed at" not in lines["ended"]
    assert "was killed at 1.25s (a child Python, killed with SIGKILL)" in lines["killed"]


def test_on_real_time_step_33_kills_a_supervisor_that_holds_a_lease(tmp_path: Path) -> None:
    """Step 33's real-time demo (some seconds): a supervisor claims the slots it can run at
    once in one lease, so the child started first may hold none. The kill falls on a child
    that holds a lease of a slot without a result, and another supervisor runs that slot.
    (The old demo killed the first child at its instant, whatever it held.)"""
    from lessons._course import running
    from lessons._course.arguments import parser
    from lessons._course.demos import STEP_DEMOS
    from lessons._course.showing import show

    # pid, its slots without a result, and the unix time they were read (just before the kill)
    held: list[tuple[int, list[tuple[str, int, int]], float]] = []
    leased = running.leased

    def recorded(path: Path, run_id: str, pid: int) -> list[tuple[str, int, int]]:
        slots = leased(path, run_id, pid)
        if slots:
            held.append((pid, slots, time.time()))
        return slots

    path = tmp_path / "runs.db"
    args = parser().parse_args(["33", "--journal", str(path)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(running, "leased", recorded)
        real = running.run_demo("step33_many_supervisors", STEP_DEMOS[33][0], args)
    assert real.error is None
    assert real.killed_really
    assert real.killed_after is not None  # a child was killed, not left to end its run
    out = io.StringIO()
    show(Console(file=out, width=400, color_system=None), real)
    assert f"process 2 killed with SIGKILL at {real.killed_after:.2f}s;" in out.getvalue()
    [(killed, slots, looked)] = held  # the first child found holding one is killed at once
    with Journal(path) as journal:
        after = {
            (name, row.round, row.slot): row for name, *_ in slots for row in journal.slots(name)[1]
        }
    for slot in slots:  # each slot it held ended, run by another supervisor (or by it, as the
        row = after[slot]  # kill fell: between that look and the kill, nothing else ran here)
        assert row.status == "ok"
        if f":{killed}:" in (row.owner or ""):
            assert row.written is not None
            assert row.written < looked + 0.5
