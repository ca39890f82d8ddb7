"""Step 24: escalation. A child past its intensity fails its parent's slot with its reason,
and the planner reroutes it.

All on virtual time.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from lessons._course import laws
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json


@pytest.mark.parametrize("step", cases(laws.A_CHILD_THAT_GIVES_UP_ESCALATES))
def test_a_child_past_its_intensity_fails_its_parents_slot_with_its_reason(
    step: ModuleType,
) -> None:
    laws.A_CHILD_THAT_GIVES_UP_ESCALATES.verify(step)


def test_the_escalated_company_is_rerouted_in_the_next_round() -> None:
    (escalated,) = run_json(24)
    ledger = escalated["replan"]["ledger"]
    assert ledger[1]["status"] == "failed"
    assert ledger[1]["error"] == "Escalated: globex: gave up: more than 3 restarts within 10s"
    assert (ledger[2]["round"], ledger[2]["replaces"]) == (2, [1, 1])
    assert escalated["replan"]["degraded"] is False  # the reroute settled it
