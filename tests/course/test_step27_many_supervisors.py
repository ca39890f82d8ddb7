"""Step 27: several supervisors on one run. Supervisors that share a run_id and a journal call
each leaf once between them, and take over a killed one's slots only once its lease ran out;
the step before, given the same journal, runs every slot in every supervisor."""

from __future__ import annotations

from types import ModuleType

import pytest

from lessons._course import laws
from tests.course.step_laws import cases


@pytest.mark.parametrize("step", cases(laws.ONE_RUN_MANY_SUPERVISORS))
def test_supervisors_on_one_run_share_its_slots(step: ModuleType) -> None:
    laws.ONE_RUN_MANY_SUPERVISORS.verify(step)
