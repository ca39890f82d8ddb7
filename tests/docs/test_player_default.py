"""Each step page's player starts with a run of the step's own idea: a scenario that sets an
option the step adds wherever one does (step 8's retried slot, step 25's hedge), else one the
step before does not offer. Every page opened on "slot 1 fails, 2 workers" before, so step 8
played it with one attempt and step 25 without a hedge."""

from __future__ import annotations

import pytest

from lessons._course.steps import steps
from tools.docs import dispatch

NAMES = list(steps().values())


def recorded(name: str, first: str) -> dict[str, object]:
    """The data the player reads, its runs' options only, opening on ``first``."""
    return {
        "default": first,
        "scenarios": [
            {"key": scenario.key, "run": {"options": scenario.run(name).options}}
            for scenario in dispatch.scenarios(name)
        ],
    }


@pytest.mark.parametrize("name", NAMES)
def test_the_player_starts_with_a_scenario_of_the_steps_own_idea(name: str) -> None:
    first = dispatch.default(name)
    keys = [scenario.key for scenario in dispatch.scenarios(name)]
    assert first in keys
    assert dispatch.unset_idea(name, recorded(name, first)) == []


@pytest.mark.parametrize("name", ["step08_retries", "step25_hedging"])
def test_a_player_opening_on_a_run_without_its_idea_is_told(name: str) -> None:
    assert dispatch.unset_idea(name, recorded(name, dispatch.DEFAULT)) != []
