"""Step 28: an approval gate. A refund over the threshold asks a person first: its slot is parked
and the run ends degraded, naming the question; an answer from a second command, and the resume
finishes it. The step before does the refund at once, asking nobody."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType

import pytest
from rich.console import Console

from lessons import step28_approval_gate as step28
from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json


@pytest.mark.parametrize("step", cases(laws.A_PARKED_SLOT_IS_FINISHED_BY_ITS_APPROVAL))
def test_a_parked_refund_is_finished_by_its_answer_on_resume(step: ModuleType) -> None:
    laws.A_PARKED_SLOT_IS_FINISHED_BY_ITS_APPROVAL.verify(step)


@pytest.mark.parametrize(
    ("subtask", "dollars"),
    [
        ("acme refund $500 to order 1234", 500),
        ("refund $40 to order 7", 40),
        ("acme pricing", None),
        ("refunds $500", None),
    ],
)
def test_a_refund_is_read_from_its_subtask(subtask: str, dollars: int | None) -> None:
    assert step28.refund_of(subtask) == dollars


def test_the_demos_approve_and_reject_the_parked_refund_and_resume() -> None:
    approved, rejected = run_json(28)
    question = "acme refund $500 to order 1234: over $100, approve?"
    assert approved["answered"] == rejected["answered"] == [question]
    assert approved["parked"] == rejected["parked"] == []
    assert "acme refund $500 to order 1234: findings" in approved["answer"]
    assert "acme refund $500 to order 1234: missing" in rejected["answer"]
    leaves = rejected["trace"]["slots"][0]["child"]["slots"]
    assert [leaf.get("journaled", False) for leaf in leaves] == [True, False]  # pricing kept
    assert leaves[1]["spans"][-1]["status"] == "rejected"


def test_the_summary_counts_a_parked_slot_as_parked_not_failed(tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    task = "acme: refund $500 to order 1; globex: pricing"
    argv = ["28", "--virtual", "--task", task, "--journal", str(tmp_path / "runs.db")]
    assert main(argv, console=console) == 0
    (summary,) = [line for line in out.getvalue().splitlines() if line.startswith("wall ")]
    assert summary.endswith("· 1 ok, 0 failed, 1 parked (waiting for approval)")
