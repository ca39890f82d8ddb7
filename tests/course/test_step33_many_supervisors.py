"""Step 33: several supervisors on one run. Supervisors that share a run_id and a journal call
each leaf once between them, and take over a killed one's slots only once its lease ran out;
the step before, given the same journal, runs every slot in every supervisor."""

from __future__ import annotations

import io
import re
from types import ModuleType

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases


@pytest.mark.parametrize("step", cases(laws.ONE_RUN_MANY_SUPERVISORS))
def test_supervisors_on_one_run_share_its_slots(step: ModuleType) -> None:
    laws.ONE_RUN_MANY_SUPERVISORS.verify(step)


def test_the_demo_shows_the_killed_supervisors_slots_taken_over_by_another() -> None:
    """The runner's demo: the slots A had not finished when it was killed (at 1 s) are run to
    the end by another supervisor, only once A's lease (2 s, renewed every third) ran out."""
    out = io.StringIO()
    assert main(["33", "--virtual"], console=Console(file=out, width=120, color_system=None)) == 0
    row = r"^\s+\d+\s+([ABC]) (.+?)\s+[·█]+\s+(\S) \w+ ([\d.]+)s"
    calls = re.findall(row, out.getvalue(), re.M)
    begun = {subtask for who, subtask, _, _ in calls if who == "A"}
    unfinished = begun - {subtask for who, subtask, mark, _ in calls if who == "A" and mark == "✓"}
    taken = {subtask: float(end) for who, subtask, mark, end in calls if who != "A" and mark == "✓"}
    assert unfinished, out.getvalue()
    assert unfinished <= set(taken)
    assert all(taken[subtask] > 1.0 + 2.0 * 2 / 3 for subtask in unfinished)
    assert not (begun - unfinished) & set(taken), "a slot A finished was run again"
