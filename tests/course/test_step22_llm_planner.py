"""Step 22: an LLM planner. ``planner="llm"`` asks a chat model for each decision over HTTP (the
loopback server playing step 20's rules, in this process), and plans as the rules do; an unknown
planner is refused in one line before any work.

All on virtual time.
"""

from __future__ import annotations

import io
from types import ModuleType

import pytest
import trio
from rich.console import Console

from lessons import step22_llm_planner as step22
from lessons._course import laws
from lessons._course.arguments import parser
from lessons._course.demos import demos
from lessons._course.runner import main
from lessons._course.running import run_demo
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json
from trio_supervisor.agents import ChatPlanner, PlannerReply
from trio_supervisor.testing import SimulatedAgent


@pytest.mark.parametrize("step", cases(laws.AN_LLM_PLANS_AS_THE_RULES_DO))
def test_the_loopback_model_playing_the_rules_makes_the_scripted_planners_ledger(
    step: ModuleType,
) -> None:
    laws.AN_LLM_PLANS_AS_THE_RULES_DO.verify(step)


def test_the_demos_are_decided_by_a_chat_model_and_follow_the_rules() -> None:
    research, stalled = run_json(22)
    assert research["options"]["planner"] == "llm"
    assert [entry["subtask"] for entry in research["replan"]["ledger"]][3:] == [
        "competitor discounts",
        "customer reviews, from app stores",
    ]
    assert [done["fresh"] for done in stalled["replan"]["rounds"]] == [False, False, True]
    # the same run as step 20's scripted planner gives, entry for entry
    assert research["replan"]["ledger"] == run_json(20)[0]["replan"]["ledger"]


async def test_the_llm_planner_is_a_chat_planner_asked_over_http(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with step22.open_planner("llm", None, None) as planner:
        assert isinstance(planner, ChatPlanner)
    async with step22.open_planner("scripted", None, None) as planner:
        assert planner is step22.RULES


async def test_an_unknown_planner_is_refused_before_any_work(
    autojump_clock: trio.abc.Clock,
) -> None:
    agent = SimulatedAgent()
    with pytest.raises(ValueError, match=r"^planner must be 'scripted' or 'llm', got 'oracle'$"):
        await step22.supervise("a; b", agent, max_workers=2, planner="oracle")
    assert not agent.calls


def test_the_command_line_offers_only_the_two_planners(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["22", "--virtual", "--planner", "oracle"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert "argument --planner: invalid choice: 'oracle'" in capsys.readouterr().err


def test_each_demo_run_keeps_the_replies_its_rounds_came_from() -> None:
    """The runner keeps what the loopback model replied: each round's batch is a reply's, the
    last reply says done, and the stall demo keeps the reply no round shows (nothing new to
    try: the decision that asked for the fresh plan)."""
    args = parser().parse_args(["22", "--virtual"])
    research, stalled = (run_demo("step22_llm_planner", demo, args) for demo in demos(args, 22))
    for run in (research, stalled):
        assert run.replanned is not None
        replies = [PlannerReply.model_validate_json(reply) for reply in run.replies]
        batches = [[item.subtask for item in reply.batch] for reply in replies if reply.batch]
        rounds = [[entry.subtask for entry in done.entries] for done in run.replanned.ledger.rounds]
        assert batches == rounds
        assert replies[-1].done
    said = [PlannerReply.model_validate_json(reply).note for reply in stalled.replies]
    assert any(note.startswith("nothing new to try") for note in said)


def test_step_22s_demo_prints_the_json_its_model_replied_and_step_20s_does_not() -> None:
    printed = {}
    for number in (20, 22):
        out = io.StringIO()
        main([str(number), "--virtual"], console=Console(file=out, width=200))
        printed[number] = out.getvalue()
    assert "what the chat model replied" in printed[22]
    assert '{"done": true, "note": "every subtask has a result"' in printed[22]
    assert "what the chat model replied" not in printed[20]
