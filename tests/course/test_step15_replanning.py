"""Step 15 in the course: its demos re-plan, ``--max-rounds 1`` ends degraded with an answer,
``--json`` carries the rounds, the ledger and the answer, the timeline is headed round by round,
and ``--planner llm`` runs end to end against the real loopback server (real time, seconds)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import xml.etree.ElementTree as ET
from inspect import signature
from typing import Any

import pytest
import trio
import trio.testing
from rich.console import Console

from lessons._course.arguments import parser
from lessons._course.demos import STEP_DEMOS
from lessons._course.runner import main
from lessons._course.running import run_demo
from lessons._course.showing import round_sections, show
from lessons._course.steps import load_step, steps
from trio_supervisor import Status, Trace
from trio_supervisor.timeline import render_svg, render_timeline

STEP = "step15_replanning"
SVG = "{http://www.w3.org/2000/svg}"
FOLLOW_UP = "Acme's discounts"
REROUTED = "customer reviews, from app stores"


def run_json(*argv: str) -> list[dict[str, Any]]:
    """``python -m lessons 15 <argv> --virtual --json``: the runs."""
    buffer = io.StringIO()
    console = Console(file=io.StringIO(), width=100, color_system=None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdout", buffer)
        assert main(["15", *argv, "--virtual", "--json"], console=console) == 0
    runs: list[dict[str, Any]] = json.loads(buffer.getvalue())["runs"]
    return runs


def test_the_demo_follows_up_the_competitor_and_reroutes_the_reviews_then_is_done() -> None:
    replanned, one_round = run_json()
    plan = replanned["replan"]
    assert [
        (entry["round"], entry["index"], entry["subtask"], entry["status"])
        for entry in plan["ledger"]
    ] == [
        (1, 0, "competitor pricing", "ok"),
        (1, 1, "customer reviews", "failed"),
        (1, 2, "inventory", "ok"),
        (2, 0, FOLLOW_UP, "ok"),
        (2, 1, REROUTED, "ok"),
    ]
    assert plan["ledger"][4]["replaces"] == [1, 1]
    assert [done["note"] for done in plan["rounds"]] == [
        "the task split in 3",
        "competitor pricing names Acme: follow it up; customer reviews failed: rerouted",
    ]
    assert (plan["ended_by"], plan["degraded"]) == (None, False)
    assert replanned["answer"].splitlines()[-1] == f"{REROUTED}: findings on {REROUTED}"
    # the rounds follow one another on the trace: round 2's slots start as round 1 ends
    round_two = [slot for slot in replanned["trace"]["slots"] if slot["slot"] >= 3]
    assert {slot["started"] for slot in round_two} == {plan["rounds"][0]["finished"]}
    assert one_round["replan"]["ended_by"] == "max_rounds"


def test_max_rounds_1_ends_degraded_after_one_round_with_an_answer() -> None:
    for run in run_json("--max-rounds", "1"):
        plan = run["replan"]
        assert len(plan["rounds"]) == 1
        assert (plan["ended_by"], plan["degraded"]) == ("max_rounds", True)
        assert run["options"]["max_rounds"] == 1
        assert run["answer"].endswith(
            "\n(degraded: max_rounds (1) reached, the planner wanted more)"
        )
        assert "competitor pricing: Acme undercuts our list price by 10%" in run["answer"]


def test_the_budgets_reach_the_run_from_the_command_line() -> None:
    (run,) = run_json("--task", "a; b; c; d", "--max-subtasks", "2", "--max-stalls", "0")
    assert run["options"]["max_subtasks"] == 2
    assert run["options"]["max_stalls"] == 0
    assert run["replan"]["ended_by"] == "max_subtasks"
    assert [entry["subtask"] for entry in run["replan"]["ledger"]] == ["a", "b"]


def test_the_timeline_is_headed_round_by_round_by_the_planners_decision() -> None:
    demo = STEP_DEMOS[15][0]
    run = run_demo(STEP, demo, parser().parse_args(["15", "--virtual"]))
    sections = round_sections(run)
    assert sections == {
        0: "round 1 · 0.00s: the task split in 3",
        3: "round 2 · 0.91s: competitor pricing names Acme: follow it up; customer reviews "
        "failed: rerouted",
    }
    out = io.StringIO()
    show(Console(file=out, width=120, color_system=None), run)
    lines = out.getvalue().splitlines()
    heading = next(index for index, line in enumerate(lines) if "round 2 · 0.91s" in line)
    assert FOLLOW_UP in lines[heading + 1], "the heading stands right above its round's first row"
    assert run.trace is not None
    svg = ET.fromstring(render_svg(run.trace, sections=sections))
    drawn = []  # (the heading in full, as its tooltip; the heading shown, cut to fit)
    for group in svg.iter(f"{SVG}g"):
        if group.get("class") == "ts-section":
            title = next(group.iter(f"{SVG}title"))
            drawn.append((title.text, title.tail))
    assert drawn == [
        (sections[0], sections[0]),
        (sections[3], sections[3][:92] + "…"),  # what fits right of the labels' column
    ]


async def test_sections_take_a_row_each_and_move_the_rows_below_them(
    autojump_clock: trio.testing.MockClock,
) -> None:
    trace = Trace(["a", "b", "c"])
    for slot in range(3):
        trace.started(slot, None)
        await trio.sleep(1)
        trace.ended(slot, Status.OK)
    trace.close()
    plain = ET.fromstring(render_svg(trace))
    headed = ET.fromstring(render_svg(trace, sections={0: "first", 2: "second"}))

    def rows(svg: ET.Element) -> list[float]:
        return [
            float(next(text for text in group if "ts-slot" in text.get("class", "")).get("y", ""))
            for group in svg.iter("{http://www.w3.org/2000/svg}g")
            if group.get("class") == "ts-row"
        ]

    # one row of 24 above slot 0, another above slot 2
    assert [y - before for y, before in zip(rows(headed), rows(plain), strict=True)] == [24, 24, 48]
    assert float(headed.get("height", "")) == float(plain.get("height", "")) + 48
    table = io.StringIO()
    Console(file=table, width=120, color_system=None).print(
        render_timeline(trace, sections={1: "round 2 · 1.00s: " + "x" * 100}, width=20)
    )
    heading = next(line for line in table.getvalue().splitlines() if "round 2" in line)
    assert "x" * 19 + "…" in heading, "a heading is cut to the timeline's width"
    assert "x" * 20 not in heading


def test_planner_llm_refuses_virtual_time_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["15", "--planner", "llm", "--virtual"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "python -m lessons: error: --planner llm asks a real server, on real time: "
        "leave out --virtual\n"
    )


def test_planner_llm_runs_the_demo_end_to_end_against_the_real_loopback_server() -> None:
    # real time: the demo's latencies shortened, so the whole run takes a fraction of a second
    demo = dataclasses.replace(STEP_DEMOS[15][0], slow={0: 0.05, 1: 0.02, 2: 0.04})
    llm = run_demo(STEP, demo, parser().parse_args(["15", "--planner", "llm"]))
    scripted = run_demo(STEP, demo, parser().parse_args(["15", "--virtual"]))
    assert llm.error is None
    assert llm.replanned is not None
    assert scripted.replanned is not None
    assert llm.options["planner"] == "llm"

    def decided(run: Any) -> list[Any]:
        return [
            (
                done.note,
                [(entry.subtask, entry.result.status, entry.replaces) for entry in done.entries],
            )
            for done in run.replanned.ledger.rounds
        ]

    assert decided(llm) == decided(scripted)
    assert (llm.answer, llm.replanned.ended_by) == (scripted.answer, None)


STATIC = [name for number, name in steps().items() if number < 12]


@pytest.mark.parametrize("name", STATIC)
def test_no_step_before_asks_the_follow_up_or_the_reroute_that_step_12_asks(name: str) -> None:
    """Every step before 12 runs the plan it was given: whatever the pricing result names and
    whatever fails, its worker is never asked about the competitor nor sent to another source.
    Step 15, on the same task with the same sub-agent, asks both."""

    def asked(module: Any) -> list[str]:
        agent = STEP_DEMOS[15][0].agent(0)
        calls: list[str] = []

        async def worker(subtask: str) -> str:
            calls.append(subtask)
            return await agent(subtask)

        options = (
            {"max_workers": 4} if "max_workers" in signature(module.supervise).parameters else {}
        )

        async def main() -> None:
            # steps 1-4: one failure sinks the run; the calls made are what count
            with contextlib.suppress(Exception):
                await module.supervise(STEP_DEMOS[15][0].task, worker, **options)

        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        return calls

    static = asked(load_step(name))
    assert FOLLOW_UP not in static
    assert REROUTED not in static
    assert {FOLLOW_UP, REROUTED} <= set(asked(load_step(STEP)))
