"""A trace nests the runs of a supervision tree, and the timeline draws each child run under its
parent's slot, indented, on the parent's time axis."""

from __future__ import annotations

import pytest
import trio

from trio_supervisor import Status, Supervisor, Trace
from trio_supervisor.timeline import render_svg, timeline_rows


async def tree(trace: Trace) -> None:
    async def leaf(subtask: str) -> str:
        await trio.sleep(0.5 if subtask.endswith("1") else 0.25)
        return subtask

    async def parent(subtask: str) -> str:
        child: Supervisor[str, str] = Supervisor(leaf, max_workers=2)
        await trio.sleep(0.125)
        aggregate = await child.run([f"{subtask}.0", f"{subtask}.1"], trace=trace.nest(subtask))
        return str(len(aggregate))

    supervisor: Supervisor[str, str] = Supervisor(parent, max_workers=1)
    await supervisor.run(["x", "y"], trace=trace)


async def test_child_rows_follow_their_parents_row_one_level_deeper(autojump_clock: object) -> None:
    trace = Trace(["x", "y"])
    await tree(trace)
    rows = timeline_rows(trace)
    assert [(row.depth, row.label) for row in rows] == [
        (0, "x"),
        (1, "├ x.0"),
        (1, "└ x.1"),
        (0, "y"),
        (1, "├ y.0"),
        (1, "└ y.1"),
    ]
    assert all(row.status is Status.OK for row in rows)
    # on the parent's time axis: y's children were planned when y's worker nested them
    y0 = rows[4]
    assert y0.bars[0].start == 0.625 + 0.125
    assert trace.to_dict()["slots"][1]["child"]["slots"][1]["spans"][0]["end"] == 1.25
    svg = render_svg(trace)
    assert svg.count('data-depth="1"') == 4
    assert "└ y.1" in svg


async def test_a_new_attempt_nests_a_new_child_trace(autojump_clock: object) -> None:
    trace = Trace(["x"])
    trace.started(0, "x")
    first = trace.nest("x")
    second = trace.nest("x")
    assert first is not second
    assert trace.slots[0].child is second
    assert second.origin == trace.origin


async def test_nesting_under_a_subtask_the_trace_lacks_is_refused(autojump_clock: object) -> None:
    with pytest.raises(ValueError, match=r"^no slot of this trace has the subtask 'z': nest "):
        Trace(["x"]).nest("z")
