"""render_svg: the timeline picture of a run, drawn from the same rows as the terminal table."""

from __future__ import annotations

import importlib
import io
import itertools
import sys
import xml.etree.ElementTree as ET

import pytest
import trio
import trio.testing
from rich.console import Console

from trio_supervisor import Status, Trace
from trio_supervisor.timeline import (
    crashed,
    legend,
    legend_keys,
    render_svg,
    render_timeline,
    timeline_rows,
)

SVG = "{http://www.w3.org/2000/svg}"
# a 0-16/32 s; b 0-8/32 s, fails; c waits for b's place (K=2), then 8/32-32/32 s: wall 1 s
LATENCY = {"a": 16 / 32, "b": 8 / 32, "c": 24 / 32}
WIDTH = 400.0


async def _bounded_run(plan: list[str], limit: int, fail: set[str]) -> Trace:
    """Run ``plan`` with at most ``limit`` workers at once, failures isolated, under a trace."""
    trace = Trace(plan)
    limiter = trio.CapacityLimiter(limit)

    async def worker(subtask: str) -> str:
        await trio.sleep(LATENCY[subtask])
        if subtask in fail:
            raise ValueError(f"{subtask} failed")
        return subtask

    watched = trace.watch(worker)

    async def run_one(slot: int, subtask: str) -> None:
        try:
            await watched(subtask)
        except ValueError:
            pass  # isolated: the trace recorded the failure
        finally:
            limiter.release_on_behalf_of(slot)

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(plan):
            await limiter.acquire_on_behalf_of(slot)  # dispatched in plan order
            nursery.start_soon(run_one, slot, subtask)
    trace.close()
    return trace


async def sleep_its_latency(subtask: str) -> None:
    await trio.sleep(LATENCY.get(subtask, 1 / 32))


def traced(plan: tuple[str, ...] = ("a", "b", "c"), limit: int = 2) -> Trace:
    async def main() -> Trace:
        return await _bounded_run(list(plan), limit, fail={"b"})

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def rows_of(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "ts-row"]


def classes(element: ET.Element) -> set[str]:
    return set((element.get("class") or "").split())


def axis_origin(svg: str) -> float:
    root = ET.fromstring(svg)
    axis = next(line for line in root.iter(f"{SVG}line") if line.get("class") == "ts-axis")
    return float(axis.get("x1", "nan"))


def test_one_row_per_slot_in_plan_order() -> None:
    svg = render_svg(traced(("c", "a", "b", "a")))
    assert [row.get("data-slot") for row in rows_of(svg)] == ["0", "1", "2", "3"]
    labels = [
        "".join(text.itertext())
        for row in rows_of(svg)
        for text in row.iter(f"{SVG}text")
        if "ts-label" in classes(text)
    ]
    # each label holds its full name as a tooltip, then the name shown
    assert labels == ["cc", "aa", "bb", "aa"]


def test_bars_are_placed_and_sized_in_proportion_to_their_times() -> None:
    trace = traced()
    svg = render_svg(trace, width=WIDTH)
    origin = axis_origin(svg)
    scale = WIDTH / trace.wall
    assert trace.wall == 1.0
    expected = {
        "0": [("running", 0.0, 16 / 32)],
        "1": [("running", 0.0, 8 / 32)],
        "2": [("waiting", 0.0, 8 / 32), ("running", 8 / 32, 1.0)],
    }
    for row in rows_of(svg):
        bars = [
            ("waiting" if "ts-waiting" in classes(rect) else "running", rect)
            for rect in row.iter(f"{SVG}rect")
            if classes(rect) & {"ts-waiting", "ts-bar"}
        ]
        want = expected[row.get("data-slot", "")]
        assert [kind for kind, _ in bars] == [kind for kind, _, _ in want]
        for (_, rect), (_, start, end) in zip(bars, want, strict=True):
            assert float(rect.get("x", "nan")) == pytest.approx(origin + start * scale, abs=0.01)
            assert float(rect.get("width", "nan")) == pytest.approx((end - start) * scale, abs=0.01)


def test_exactly_the_failed_slot_is_marked() -> None:
    svg = render_svg(traced())
    marked = {}
    for row in rows_of(svg):
        rects = list(row.iter(f"{SVG}rect"))
        ending = next(text for text in row.iter(f"{SVG}text") if "ts-end" in classes(text))
        marked[row.get("data-slot")] = (
            row.get("data-status"),
            any("ts-band" in classes(rect) for rect in rects),
            any("ts-failed" in classes(rect) for rect in rects),
            "".join(ending.itertext()),
        )
    assert marked == {
        "0": ("ok", False, False, "✓ ok 0.50s"),
        "1": ("failed", True, True, "✗ failed 0.25s"),
        "2": ("ok", False, False, "✓ ok 1.00s"),
    }


def test_completion_order_is_shown_beside_the_plan_order() -> None:
    svg = render_svg(traced())
    ranks = {row.get("data-slot"): row.get("data-rank") for row in rows_of(svg)}
    assert ranks == {"0": "2", "1": "1", "2": "3"}


def test_rows_agree_with_the_terminal_timeline_rows() -> None:
    trace = traced()
    svg = render_svg(trace, {2: Status.TIMED_OUT})
    rows = timeline_rows(trace, {2: Status.TIMED_OUT})
    drawn = [
        (row.get("data-slot"), row.get("data-status"), row.get("data-rank")) for row in rows_of(svg)
    ]
    assert drawn == [
        (str(row.slot), row.status.value if row.status else "none", str(row.rank or ""))
        for row in rows
    ]
    assert drawn[2] == ("2", "timed out", "3")


def test_a_slot_that_never_ran_waits_to_the_end() -> None:
    async def main() -> Trace:
        trace = Trace(["a", "b"])
        await trace.watch(sleep_its_latency)("a")
        trace.close()
        return trace

    trace = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    svg = render_svg(trace, width=WIDTH)
    never = rows_of(svg)[1]
    ending = next(text for text in never.iter(f"{SVG}text") if "ts-end" in classes(text))
    assert "".join(ending.itertext()) == "… never ran"
    (waiting,) = (rect for rect in never.iter(f"{SVG}rect") if "ts-waiting" in classes(rect))
    assert float(waiting.get("x", "nan")) == axis_origin(svg)
    assert float(waiting.get("width", "nan")) == WIDTH


def test_two_renders_of_two_runs_are_byte_identical() -> None:
    first, second = traced(), traced()
    assert render_svg(first, title="t") == render_svg(first, title="t")
    assert render_svg(first, title="t") == render_svg(second, title="t")


def test_text_is_escaped_and_the_picture_is_well_formed_xml() -> None:
    async def main() -> Trace:
        trace = Trace(['<b> & "c"'])
        await trace.watch(sleep_its_latency)('<b> & "c"')
        trace.close()
        return trace

    trace = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    svg = render_svg(trace, title="a <title> & more")
    root = ET.fromstring(svg)
    assert root.findtext(f"{SVG}title") == "a <title> & more"
    assert "<b>" not in svg


def test_width_must_be_positive() -> None:
    with pytest.raises(ValueError, match=r"^width must be > 0, got 0$"):
        render_svg(traced(), width=0)


def test_only_a_slot_that_failed_or_timed_out_is_tinted() -> None:
    finals = {0: Status.CANCELLED, 2: Status.TIMED_OUT}
    svg = render_svg(traced(), finals)
    tinted = {
        row.get("data-slot"): any("ts-band" in classes(rect) for rect in row.iter(f"{SVG}rect"))
        for row in rows_of(svg)
    }
    assert tinted == {"0": False, "1": True, "2": True}


async def test_a_result_held_for_plan_order_is_drawn_from_its_end_to_its_hand_over(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def worker(subtask: str) -> None:
        await trio.sleep({"slow": 1.0, "quick": 1 / 32}[subtask])

    trace = Trace(["slow", "quick"])
    watched = trace.watch(worker)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watched, "slow")
        nursery.start_soon(watched, "quick")
    trace.delivered(0)
    trace.delivered(1)
    trace.close()
    (held,) = [bar for row in timeline_rows(trace) for bar in row.bars if bar.kind == "held"]
    assert (held.start, held.end) == (1 / 32, 1.0)
    svg = render_svg(trace, width=WIDTH)
    rects = [r for r in ET.fromstring(svg).iter(f"{SVG}rect") if r.get("class") == "ts-held"]
    assert len(rects) == 2  # the bar, and its swatch in the legend
    assert "done, held for plan order" in svg


async def test_without_colour_each_attempt_a_retry_followed_ends_in_how_it_ended(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """In the terminal table, uncoloured: a rerun after a failure is told apart from one after a
    success, because each attempt but the last ends in its own glyph."""
    trace = Trace(["after a failure", "after a success", "once"])
    for slot, first in ((0, Status.FAILED), (1, Status.OK)):
        trace.started(slot)
        await trio.sleep(1)
        trace.ended(slot, first)
        await trio.sleep(1)
        trace.started(slot)
        await trio.sleep(1)
        trace.ended(slot, Status.OK)
    trace.started(2)
    await trio.sleep(1)
    trace.ended(2, Status.OK)
    trace.close()
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(render_timeline(trace, width=30))
    rows = out.getvalue().splitlines()[1:4]
    timelines = [row.split("✓ ok")[0] for row in rows]  # each row up to its ending
    assert [(line.count("✗"), line.count("✓")) for line in timelines] == [(1, 0), (0, 1), (0, 0)]


async def test_a_wait_a_failure_asked_for_is_drawn_from_its_end_to_the_next_attempt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A 429's ``Retry-After`` (a failure's ``retry_after``) is kept on its span with the error's
    text, and drawn as an ``asked`` bar from the failure to the end of the wait, at most to the
    next attempt; the rest of the gap is plain waiting. A failure that asks nothing has none."""

    class Refused(Exception):
        retry_after = 0.5

    calls = 0

    async def worker(subtask: str) -> str:
        nonlocal calls
        calls += 1
        await trio.sleep(1 / 32)
        if calls == 1:
            raise Refused("429 Too Many Requests")
        if calls == 2:
            raise ValueError("500")
        return subtask

    trace = Trace(["a"])
    watched = trace.watch(worker)
    for wait in (1.0, 0.25):  # the second attempt comes later than asked, the third at once
        with pytest.raises(Exception):  # noqa: B017, PT011  # Refused, then ValueError
            await watched("a")
        await trio.sleep(wait)
    await watched("a")
    trace.close()
    first, second, _ = trace.slots[0].spans
    assert (first.error, first.retry_after) == ("Refused: 429 Too Many Requests", 0.5)
    assert (second.error, second.retry_after) == ("ValueError: 500", None)
    (row,) = timeline_rows(trace)
    gaps = [(bar.kind, bar.start, bar.end) for bar in row.bars if bar.kind != "running"]
    assert gaps == [
        ("asked", 1 / 32, 1 / 32 + 0.5),
        ("waiting", 1 / 32 + 0.5, 1 / 32 + 1.0),
        ("waiting", 2 / 32 + 1.0, 2 / 32 + 1.25),
    ]
    assert trace.to_dict()["slots"][0]["spans"][0]["retry_after"] == 0.5
    svg = render_svg(trace, width=WIDTH)
    asked = [r for r in ET.fromstring(svg).iter(f"{SVG}rect") if r.get("class") == "ts-asked"]
    assert len(asked) == 2  # the bar, and its swatch in the legend
    assert "told to wait (Retry-After)" in svg
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(render_timeline(trace, width=40))
    assert "✗╌" in out.getvalue()


def test_importing_the_timeline_without_rich_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [m for m in sys.modules if m.startswith("trio_supervisor.timeline")]:
        monkeypatch.delitem(sys.modules, name)
    for name in [m for m in sys.modules if m == "rich" or m.startswith("rich.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(
        ImportError,
        match=r"^trio_supervisor\.timeline needs the 'timeline' extra \(rich is missing\): "
        r"pip install 'trio-supervisor\[timeline\]'$",
    ):
        importlib.import_module("trio_supervisor.timeline")


async def _crashed_and_failed() -> Trace:
    """Slot 0's worker process dies, then its retry succeeds; slot 1's process dies for good;
    slot 2's worker raises: an exception, for comparison."""
    from trio_supervisor.processes import WorkerCrashed

    trace = Trace(["retried", "crashed", "raised"])
    died = WorkerCrashed("the worker process died: killed by SIGKILL", -9)
    for slot, failure in ((0, died), (1, died), (2, ValueError("no"))):
        trace.started(slot)
        await trio.sleep(1)
        trace.ended(slot, Status.FAILED, failure)
    trace.started(0)
    await trio.sleep(1)
    trace.ended(0, Status.OK)
    trace.close()
    return trace


async def test_a_slot_whose_process_died_is_drawn_as_a_crash_not_as_a_failure(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A ``WorkerCrashed`` attempt is drawn apart from an exception its worker raised: its own
    glyph and colour in the terminal, the word ``crashed`` as its ending, its own class in the
    SVG (bar, ending and legend), and ``crashed`` in the legend; a retried crash keeps its glyph."""
    trace = await _crashed_and_failed()
    retried, crashed_row, raised = timeline_rows(trace)
    assert [row.crashed for row in (retried, crashed_row, raised)] == [False, True, False]
    assert retried.bars[0].crashed
    assert crashed_row.status is raised.status is Status.FAILED  # the same status, told apart
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(render_timeline(trace, width=30))
    lines = out.getvalue().splitlines()
    assert "⊠ crashed 2.00s" in lines[2]
    assert "✗ failed 3.00s" in lines[3]
    assert lines[1].split()[2].count("⊠") == 1, "the crash a retry followed keeps its glyph"
    svg = render_svg(trace, width=WIDTH)
    rows = rows_of(svg)
    crashed_bars = [
        rect for rect in rows[1].iter(f"{SVG}rect") if {"ts-bar", "ts-crashed"} <= classes(rect)
    ]
    assert len(crashed_bars) == 1
    ends = [t for t in rows[1].iter(f"{SVG}text") if "ts-end" in classes(t)]
    assert [(t.text, "ts-crashed" in classes(t)) for t in ends] == [("⊠ crashed 2.00s", True)]
    assert not [r for r in rows[2].iter(f"{SVG}rect") if "ts-crashed" in classes(r)]
    assert "⊠ crashed (its process died)" in svg  # the legend's key
    assert ("⊠", "crashed (its process died)") in legend(timeline_rows(trace))
    assert crashed("WorkerCrashed: the worker process died")
    assert not crashed("ValueError: no")


def test_the_legend_names_each_mark_drawn_and_a_blank_stretch() -> None:
    """The legend says what ``·`` (waiting), ``█`` (running) and a blank stretch mean, and each
    ending the rows draw, no other; the SVG's legend has the same keys, the blank one without
    a swatch."""
    trace = traced()
    rows = timeline_rows(trace)
    assert legend(rows) == [
        ("·", "waiting (for a worker, or a retry)"),
        ("█", "running (coloured by its end)"),
        ("blank", "over"),
        ("✓", "ok"),
        ("✗", "failed"),
    ]
    svg = render_svg(trace, width=WIDTH)
    keys = next(g for g in ET.fromstring(svg).iter(f"{SVG}g") if g.get("class") == "ts-legend")
    said = [text.text for text in keys.iter(f"{SVG}text")]
    assert said == ["waiting (for a worker, or a retry)", "blank: over", "✓ ok", "✗ failed"]
    assert len(list(keys.iter(f"{SVG}rect"))) == 3  # no swatch for a blank stretch


async def test_a_slot_planned_later_makes_the_legend_say_blank_is_not_planned_yet(
    autojump_clock: trio.testing.MockClock,
) -> None:
    trace = Trace()
    await trio.sleep(1)
    trace.pulled(0, "late")
    trace.started(0)
    await trio.sleep(1)
    trace.ended(0, Status.OK)
    trace.close()
    assert ("blank", "not planned yet, or over") in legend(timeline_rows(trace))
    assert "blank: not planned yet, or over" in render_svg(trace)


async def test_a_legend_too_long_for_one_line_wraps_and_the_picture_grows_to_hold_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Every key inside the picture's width: a legend that does not fit one line goes on to a
    second, and the picture is that much taller."""
    trace = await _crashed_and_failed()
    narrow = render_svg(trace, width=40.0)
    root = ET.fromstring(narrow)
    total = float(root.get("width", "nan"))
    keys = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "ts-legend")
    texts = list(keys.iter(f"{SVG}text"))
    assert len({t.get("y") for t in texts}) > 1, "the legend took more than one line"
    for text in texts:
        assert float(text.get("x", "nan")) + 7.3 * len(text.text or "") <= total
    assert float(root.get("height", "nan")) >= max(float(t.get("y", "0")) for t in texts)


# -- the compact picture: two side by side -------------------------------------------------------


def picture_width(svg: str) -> float:
    return float(ET.fromstring(svg).get("width", "nan"))


def texts_of(svg: str, css: str) -> list[str]:
    """The text of each ``<text>`` of class ``css``, its lines (tspans) joined, without the
    title a reader sees on hover."""
    root = ET.fromstring(svg)
    return [
        "".join(text.itertext())
        if text.find(f"{SVG}title") is None
        else (text[0].tail or "")
        + "".join("".join(t.itertext()) + (t.tail or "") for t in text[1:])
        for text in root.iter(f"{SVG}text")
        if css in classes(text)
    ]


def test_a_compact_picture_cuts_long_labels_keeps_them_on_hover_and_drops_the_end_times() -> None:
    from trio_supervisor.timeline import COMPACT_LABEL

    long = "a subtask with a name much longer than the column"
    LATENCY[long] = 4 / 32
    try:
        trace = traced(("a", long, "b"))
    finally:
        del LATENCY[long]
    full, compact = render_svg(trace, width=120), render_svg(trace, width=120, compact=True)
    assert picture_width(compact) < picture_width(full)
    (cut,) = [label for label in texts_of(compact, "ts-label") if label.endswith("…")]
    assert long.startswith(cut[:-1])
    assert long[len(cut) - 1] == " "  # cut where a word ends, never inside one
    (wrapped,) = [
        t for t in ET.fromstring(compact).iter(f"{SVG}text") if t.find(f"{SVG}tspan") is not None
    ]
    lines = [(wrapped[0].tail or "").strip(), "".join(wrapped[1].itertext())]
    assert lines == ["a subtask with a", "name much longer…"]  # two lines, each whole words
    assert all(len(line) <= COMPACT_LABEL for line in lines)
    titles = [t.text for t in ET.fromstring(compact).iter(f"{SVG}title")]
    assert long in titles  # the full name, on hover
    assert texts_of(compact, "ts-end") == ["✓ ok", "✓ ok", "✗ failed"]
    assert all(end.endswith("s") for end in texts_of(full, "ts-end"))  # with their times

    # the bars, and so the times, are the same in both
    def bars(svg: str) -> list[list[str | None]]:
        return [
            [bar.get("width") for bar in row.iter(f"{SVG}rect") if "ts-bar" in classes(bar)]
            for row in rows_of(svg)
        ]

    assert bars(compact) == bars(full)


def test_a_legend_key_wider_than_the_picture_wraps_instead_of_widening_it() -> None:
    trace = traced()
    svg = render_svg(trace, width=100, compact=True)
    root = ET.fromstring(svg)
    (legend_group,) = [g for g in root.iter(f"{SVG}g") if g.get("class") == "ts-legend"]
    width = picture_width(svg)
    for text in legend_group.iter(f"{SVG}text"):
        right = float(text.get("x", "nan")) + len(text.text or "") * 7.3
        assert right <= width, (text.text, right, width)
    lines = [text.text or "" for text in legend_group.iter(f"{SVG}text")]
    keys = legend_keys(timeline_rows(trace))
    assert len(lines) > len(keys)  # a key went on to a next line
    assert " ".join(lines).split() == " ".join(text for _, text in keys).split()  # all of it


def test_tick_labels_on_a_narrow_axis_keep_apart_and_off_the_wall_label() -> None:
    root = ET.fromstring(render_svg(traced(), width=60, compact=True))
    placed = sorted(
        float(text.get("x", "nan"))
        for text in root.iter(f"{SVG}text")
        if "ts-wall-label" in classes(text)
        or ("ts-tick" in classes(text) and text.get("text-anchor") == "middle")
    )
    assert len(placed) >= 2
    assert all(b - a >= 6 * 7.3 - 1e-6 for a, b in itertools.pairwise(placed))


def test_a_run_of_no_time_draws_its_wall_at_the_start_of_the_axis() -> None:
    async def main() -> Trace:
        trace = Trace(["a"])
        trace.close()
        return trace

    trace = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert trace.wall == 0
    svg = render_svg(trace)
    root = ET.fromstring(svg)
    (wall,) = [line for line in root.iter(f"{SVG}line") if line.get("class") == "ts-wall"]
    assert float(wall.get("x1", "nan")) == axis_origin(svg)
