"""A tree's timeline draws every child run, with the tree's own connectors, and each parent row
by its own outcome.

The defect these tests hold: a parent slot retried after its first attempt had run a child
supervisor showed two attempts, and only the second attempt's child run under them. The drawing
was right; the recording lost the run: ``Trace.nest`` replaced the slot's child trace at each
attempt. Every child run is kept now, each with its parent's attempt.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import trio

from trio_supervisor import Retry, Status, Supervisor, Trace
from trio_supervisor.timeline import render_svg, timeline_rows

SVG = "{http://www.w3.org/2000/svg}"


async def retried_parent(trace: Trace) -> None:
    """One company whose first attempt runs its child supervisor (2 leaves), then fails; the
    retry runs a fresh child supervisor, which succeeds."""
    tried = 0

    async def leaf(subtask: str) -> str:
        await trio.sleep(0.25)
        return subtask

    async def company(subtask: str) -> str:
        nonlocal tried
        tried += 1
        child: Supervisor[str, str] = Supervisor(leaf, max_workers=2)
        await child.run([f"{subtask} pricing", f"{subtask} reviews"], trace=trace.nest(subtask))
        if tried == 1:
            raise ValueError("the first answer was malformed")
        return "found"

    parent: Supervisor[str, str] = Supervisor(
        company, max_workers=1, retry=Retry(attempts=2, seed=1)
    )
    await parent.run(["acme"], trace=trace)


async def test_a_retried_parent_draws_the_child_run_of_each_attempt(
    autojump_clock: object,
) -> None:
    trace = Trace(["acme"])
    await retried_parent(trace)
    assert len(trace.slots[0].spans) == 2
    assert [child.attempt for child in trace.slots[0].children] == [1, 2]
    rows = timeline_rows(trace)
    assert [row.label for row in rows] == [
        "acme",
        "├ acme pricing (attempt 1)",
        "├ acme reviews (attempt 1)",
        "├ acme pricing (attempt 2)",
        "└ acme reviews (attempt 2)",
    ]
    first, second = trace.slots[0].spans
    # each child run lies inside its own parent attempt, on the parent's time axis
    assert rows[1].bars[-1].start == first.start - trace.origin
    assert rows[3].bars[-1].start >= second.start - trace.origin
    assert [c["attempt"] for c in trace.to_dict()["slots"][0]["children"]] == [1, 2]
    svg = render_svg(trace)
    assert svg.count('data-depth="1"') == 4


async def grandchildren(trace: Trace) -> None:
    """Two companies, the first with two divisions, each a supervisor of its own leaves."""

    async def leaf(subtask: str) -> str:
        await trio.sleep(0.125)
        if subtask == "b.1":
            raise ValueError("no")
        return subtask

    async def division(subtask: str) -> str:
        child: Supervisor[str, str] = Supervisor(leaf, max_workers=2)
        await child.run([f"{subtask}.0", f"{subtask}.1"], trace=nested[subtask].nest(subtask))
        return subtask

    nested: dict[str, Trace] = {}

    async def company(subtask: str) -> str:
        child: Supervisor[str, str] = Supervisor(division, max_workers=2)
        units = ["a", "b"] if subtask == "x" else ["c"]
        run = trace.nest(subtask)
        nested.update(dict.fromkeys(units, run))
        aggregate = await child.run(units, trace=run)
        return str(len(aggregate))

    parent: Supervisor[str, str] = Supervisor(company, max_workers=1)
    await parent.run(["x", "y"], trace=trace)


async def test_connectors_follow_the_tree_and_each_row_keeps_its_own_outcome(
    autojump_clock: object,
) -> None:
    trace = Trace(["x", "y"])
    await grandchildren(trace)
    rows = timeline_rows(trace)
    assert [row.label for row in rows] == [
        "x",
        "├ a",
        "│ ├ a.0",
        "│ └ a.1",
        "└ b",
        "  ├ b.0",
        "  └ b.1",
        "y",
        "└ c",
        "  ├ c.0",
        "  └ c.1",
    ]
    # a parent is drawn by its own outcome: b answered though its leaf b.1 failed
    by_label = {row.label.strip("├└│ "): row for row in rows}
    assert by_label["b.1"].status is Status.FAILED
    assert by_label["b"].ending.word == "ok"
    assert by_label["x"].ending.word == "ok"
    svg = render_svg(trace)
    root = ET.fromstring(svg)
    endings = [g.get("data-ending") for g in root.iter(f"{SVG}g") if g.get("class") == "ts-row"]
    assert endings == [row.ending.word for row in rows]
    assert endings.count("failed") == 1
