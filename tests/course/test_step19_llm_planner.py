"""Step 19: an LLM planner. ``planner="llm"`` asks a chat model for each decision over HTTP (the
loopback server playing step 17's rules, in this process), and plans as the rules do; an unknown
planner is refused in one line before any work.

All on virtual time.
"""

from __future__ import annotations

import io
from types import ModuleType

import pytest
import trio
from rich.console import Console

from lessons import step19_llm_planner as step19
from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step17_rounds import run_json
from trio_supervisor.agents import ChatPlanner
from trio_supervisor.testing import SimulatedAgent


@pytest.mark.parametrize("step", cases(laws.AN_LLM_PLANS_AS_THE_RULES_DO))
def test_the_loopback_model_playing_the_rules_makes_the_scripted_planners_ledger(
    step: ModuleType,
) -> None:
    laws.AN_LLM_PLANS_AS_THE_RULES_DO.verify(step)


def test_the_demos_are_decided_by_a_chat_model_and_follow_the_rules() -> None:
    research, stalled = run_json(19)
    assert research["options"]["planner"] == "llm"
    assert [entry["subtask"] for entry in research["replan"]["ledger"]][3:] == [
        "competitor discounts",
        "customer reviews, from app stores",
    ]
    assert [done["fresh"] for done in stalled["replan"]["rounds"]] == [False, False, True]
    # the same run as step 17's scripted planner gives, entry for entry
    assert research["replan"]["ledger"] == run_json(17)[0]["replan"]["ledger"]


async def test_the_llm_planner_is_a_chat_planner_asked_over_http(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with step19.open_planner("llm", None, None) as planner:
        assert isinstance(planner, ChatPlanner)
    async with step19.open_planner("scripted", None, None) as planner:
        assert planner is step19.RULES


async def test_an_unknown_planner_is_refused_before_any_work(
    autojump_clock: trio.abc.Clock,
) -> None:
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=r"^planner must be 'scripted' or 'llm', got 'oracle'$"):
        await step19.supervise("a; b", agent, max_workers=2, planner="oracle")
    assert not agent.calls


def test_the_command_line_offers_only_the_two_planners(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["19", "--virtual", "--planner", "oracle"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert "argument --planner: invalid choice: 'oracle'" in capsys.readouterr().err
