"""Timelines that never lie: every ending drawn from one table, a bar's colour and its row's end
label agreeing, the legend listing exactly the endings drawn, each attempt its own bar, labels
as wide as the longest or cut with the full name on hover, and no glyph the font lacks."""

from __future__ import annotations

import io
import itertools
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from trio_supervisor import Backoff, Hedge, Retry, SlotTrace, Span, Status, Supervisor, Trace
from trio_supervisor.timeline import (
    ENDINGS,
    LABEL,
    MARKS,
    endings_used,
    legend,
    legend_keys,
    marks_used,
    render_svg,
    render_timeline,
    timeline_rows,
)

SVG = "{http://www.w3.org/2000/svg}"
CRASH = "WorkerCrashed: the worker process died"
CONNECTORS = "├└│"


def classes(element: ET.Element) -> set[str]:
    return set((element.get("class") or "").split())


def groups(svg: str, css: str) -> list[ET.Element]:
    return [g for g in ET.fromstring(svg).iter(f"{SVG}g") if css in classes(g)]


def text_of(element: ET.Element) -> str:
    """A text element's shown words, without its hover title."""
    return element.text or "".join(
        child.tail or "" for child in element if child.tag == f"{SVG}title"
    )


@dataclass(frozen=True)
class Planned:
    """One slot of a made-up run: its attempts ``(gap before, duration, status, crashed)``,
    the last one open when its status is None, its final status and whether it was journaled."""

    attempts: tuple[tuple[float, float, Status | None, bool], ...]
    final: Status | None
    journaled: bool


STATUSES = st.sampled_from(
    [Status.OK, Status.FAILED, Status.TIMED_OUT, Status.CANCELLED, Status.REJECTED]
)
ATTEMPT = st.tuples(
    st.sampled_from([0.0, 0.25, 0.5]),
    st.sampled_from([0.0, 0.125, 0.5, 1.0]),
    st.one_of(st.none(), STATUSES, st.just(Status.AWAITING_APPROVAL)),
    st.booleans(),
)
SLOTS = st.lists(
    st.builds(
        Planned,
        st.lists(ATTEMPT, max_size=3).map(tuple),
        st.one_of(st.none(), STATUSES),
        st.booleans(),
    ),
    min_size=1,
    max_size=5,
)


def made_up(slots: list[Planned]) -> tuple[Trace, dict[int, Status]]:
    """A closed trace of ``slots`` (times from 0), and the final statuses a run reported."""

    async def main() -> Trace:
        return Trace()

    trace = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    final = {}
    wall = 0.0
    for index, planned in enumerate(slots):
        slot = SlotTrace(index, f"slot-{index}", planned=trace.origin)
        at = 0.0
        for number, (gap, duration, status, died) in enumerate(planned.attempts):
            at += gap
            last = number == len(planned.attempts) - 1
            shown = status if status is not None or last else Status.FAILED
            error = (CRASH if died else "ValueError: no") if shown is Status.FAILED else None
            end = None if shown is None else trace.origin + at + duration
            slot.spans.append(Span(trace.origin + at, end, shown, error))
            at += duration
        slot.journaled = planned.journaled and not planned.attempts
        wall = max(wall, at)
        trace.slots.append(slot)
        if planned.final is not None:
            final[index] = planned.final
    trace.closed = trace.origin + wall + 0.5
    return trace, final


@settings(max_examples=150, deadline=None)
@given(SLOTS)
def test_a_bar_and_its_rows_end_label_agree_and_the_legend_lists_what_is_drawn(
    slots: list[Planned],
) -> None:
    """For every row: its end label is its ending's glyph and word, in its ending's colour; its
    last attempt is drawn in that colour whenever that attempt is how the slot ended (its own
    status, or the run's when the run cut it short); each attempt is a bar of its own, apart
    from the one before; and the legend lists exactly the endings the bars and labels use."""
    trace, final = made_up(slots)
    agree(trace, final)


def agree(trace: Trace, final: dict[int, Status]) -> None:
    """The property's checks, on one trace: see its test."""
    rows = timeline_rows(trace, final)
    svg = render_svg(trace, final)
    drawn_rows = groups(svg, "ts-row")
    assert len(drawn_rows) == len(rows)
    used: set[str] = set()  # the endings' classes the picture uses
    marked: set[str] = set()  # the marks' classes its bars use (a hedge's)
    endings = {drawn.css for drawn in ENDINGS.values()}
    for row, group in zip(rows, drawn_rows, strict=True):
        ending = row.ending
        assert group.get("data-ending") == ending.word
        end = next(t for t in group.iter(f"{SVG}text") if "ts-end" in classes(t))
        assert text_of(end).startswith(f"{ending.glyph} ")
        assert ending.word in text_of(end) or text_of(end).endswith("never ran")
        bars = [r for r in group.iter(f"{SVG}rect") if "ts-bar" in classes(r)]
        running = [bar for bar in row.bars if bar.kind == "running"]
        assert len(bars) == len(running), "one bar per attempt"
        if bars:
            assert ending.css in classes(end), "an end label in its ending's colour"
        lanes = sorted({bar.get("y", "") for bar in bars}, key=float)  # a hedge: a lane lower
        for lane in lanes:
            along = [bar for bar in bars if bar.get("y") == lane]
            for before, after in itertools.pairwise(along):
                edge = float(before.get("x", "nan")) + float(before.get("width", "nan"))
                gap = float(after.get("x", "nan")) - edge
                assert gap >= 1.99 - 1e-6, "two attempts merged into one"
        deciding = row.deciding
        if deciding is not None and deciding.status is row.status:
            drawn = bars[running.index(deciding)]
            assert ending.css in classes(drawn), "the deciding bar disagrees with its end label"
        for rect in bars:
            used |= classes(rect) & endings
            marked |= classes(rect) - endings - {"ts-bar"}
        used |= {css for css in classes(end) if css not in ("ts-end", "ts-never")}
    keys = groups(svg, "ts-legend")[0]
    swatches = {css for r in keys.iter(f"{SVG}rect") for css in classes(r)}
    assert swatches & endings == used | {drawn.css for drawn in endings_used(rows)}
    assert used <= swatches, "the legend misses an ending the picture uses"
    assert marked <= swatches, "the legend misses a mark the picture uses"
    said = {mark for mark, _ in legend(rows)}
    assert {drawn.glyph for drawn in endings_used(rows)} <= said


async def test_a_timeout_the_trace_saw_as_a_cancellation_is_drawn_timed_out(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The worker saw its timeout as a cancellation; the run reports it timed out: its bar is
    the timed-out colour, as its end label is, and the legend says timed out, not cancelled."""
    trace = Trace(["slow"])
    trace.started(0)
    await trio.sleep(1.5)
    trace.ended(0, Status.CANCELLED)
    trace.close()
    svg = render_svg(trace, {0: Status.TIMED_OUT})
    bar = next(r for r in ET.fromstring(svg).iter(f"{SVG}rect") if "ts-bar" in classes(r))
    assert "ts-timed-out" in classes(bar)
    assert "ts-cancelled" not in svg.split("</style>")[1]
    assert "◷ timed out 1.50s" in svg


async def test_a_run_that_gave_up_draws_its_cut_attempts_and_unstarted_slots_as_gave_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Past its restart intensity a run fails every unfinished slot; the trace saw their
    attempts cancelled: each is drawn and labelled ``gave up``, not a purple bar ending in
    ``failed``; a slot that never started says it gave up too."""
    trace = Trace(["running", "never"])
    trace.started(0)
    await trio.sleep(1)
    trace.end_open(Status.CANCELLED)
    trace.close()
    final = {0: Status.FAILED, 1: Status.FAILED}
    rows = timeline_rows(trace, final)
    assert [row.ending.word for row in rows] == ["gave up", "gave up"]
    svg = render_svg(trace, final)
    ends = [t for t in ET.fromstring(svg).iter(f"{SVG}text") if "ts-end" in classes(t)]
    assert [text_of(t) for t in ends] == ["⊖ gave up 1.00s", "⊖ gave up, never ran"]
    assert ("⊖", ENDINGS["gave up"].legend) in legend(rows)


async def test_back_to_back_attempts_are_two_bars_with_a_gap(
    autojump_clock: trio.testing.MockClock,
) -> None:
    trace = Trace(["x"])
    trace.started(0)
    await trio.sleep(1)
    trace.ended(0, Status.FAILED, ValueError("no"))
    trace.started(0)  # at once, no wait between them
    await trio.sleep(1)
    trace.ended(0, Status.OK)
    trace.close()
    svg = render_svg(trace, width=200.0)
    bars = [r for r in ET.fromstring(svg).iter(f"{SVG}rect") if "ts-bar" in classes(r)]
    assert [b.get("data-attempt") for b in bars] == ["1", "2"]
    first_end = float(bars[0].get("x", "0")) + float(bars[0].get("width", "0"))
    assert float(bars[1].get("x", "0")) - first_end >= 2
    out = io.StringIO()
    Console(file=out, width=100, color_system=None).print(render_timeline(trace, width=20))
    assert "✗█" in out.getvalue(), "in the terminal, the first attempt ends in its own glyph"


async def test_labels_are_as_wide_as_the_longest_or_cut_with_the_full_name_on_hover(
    autojump_clock: trio.testing.MockClock,
) -> None:
    middling = "globex reviews failing on every call"  # longer than the old 22-character cut
    long = "x" * (LABEL + 10)
    trace = Trace([middling, long])
    trace.close()
    svg = render_svg(trace)
    labels = [t for t in ET.fromstring(svg).iter(f"{SVG}text") if "ts-label" in classes(t)]
    assert text_of(labels[0]) == middling, "a label that fits is shown whole"
    assert text_of(labels[1]) == long[: LABEL - 1] + "…"
    assert [t.find(f"{SVG}title").text for t in labels] == [middling, long]  # type: ignore[union-attr]
    axis = next(
        line for line in ET.fromstring(svg).iter(f"{SVG}line") if "ts-axis" in classes(line)
    )
    x_label = float(labels[0].get("x", "0"))
    assert float(axis.get("x1", "0")) - x_label >= LABEL * 7.3, "the column holds the longest"


def test_every_ending_and_mark_has_its_own_glyph_colour_and_legend() -> None:
    glyphs = [drawn.glyph for drawn in ENDINGS.values()]
    assert len(set(glyphs)) == len(glyphs)
    assert len({drawn.fill for drawn in ENDINGS.values()}) == len(ENDINGS)
    assert len({drawn.css for drawn in ENDINGS.values()}) == len(ENDINGS)
    assert all(drawn.legend for drawn in ENDINGS.values())
    assert all(mark.legend for mark in MARKS.values())


def contrast(colour: str, other: str = "#ffffff") -> float:
    """The WCAG contrast ratio of two ``#rrggbb`` colours."""

    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(colour), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("word", list(ENDINGS))
def test_an_endings_words_read_on_white_and_white_words_read_on_it(word: str) -> None:
    assert contrast(ENDINGS[word].ink) >= 4.5
    assert contrast(ENDINGS[word].night, "#1e2129") >= 4.5  # the dark scheme's background


def test_no_glyph_a_picture_draws_is_missing_from_its_font() -> None:
    """Every glyph of an ending, a mark or a tree connector is in DejaVu Sans Mono, the first
    font the SVG names (an emoji such as a stopwatch is in no text font: an empty box)."""
    matplotlib = pytest.importorskip("matplotlib")
    ttlib = pytest.importorskip("fontTools.ttLib")
    font = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSansMono.ttf"
    cmap = ttlib.TTFont(font).getBestCmap()
    drawn = [drawn.glyph for drawn in ENDINGS.values()] + [m.glyph for m in MARKS.values()]
    missing = [glyph for glyph in [*drawn, *CONNECTORS] if ord(glyph) not in cmap]
    assert not missing, f"glyphs the font lacks: {missing}"
    assert ord("\u23f1") not in cmap  # the check can fail: the glyph the issue found boxed


#: A hedged slot's calls, ``(latency, fails)``, in the order its worker gets them.
CALLS = st.lists(
    st.tuples(st.sampled_from([0.5, 1.5, 2.5, 4.0]), st.booleans()), min_size=1, max_size=4
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(CALLS, min_size=1, max_size=3),
    st.integers(min_value=1, max_value=2),
    st.integers(min_value=1, max_value=2),
)
def test_a_hedged_slots_hedges_are_bars_of_their_own_and_its_end_label_the_deciding_attempts(
    script: list[list[tuple[float, bool]]], max_extra: int, attempts: int
) -> None:
    """Real hedged runs (a hedge after 1s): everything the property above holds, and each
    hedge a bar of its own, lower in its slot's row than the attempt it hedges, on a line of
    its own in the terminal; the legends list the hedge exactly when one is drawn; and the end
    label says how the slot's deciding attempt ended (`SlotTrace.deciding`, which need not be
    the last drawn: a hedge that lost, or failed while the first attempt won), and when."""
    from tests.library.test_hedge import scripted

    async def main() -> Trace:
        trace = Trace()
        supervisor = Supervisor(
            scripted(dict(enumerate(script))),
            max_workers=4,
            hedge=Hedge(1.0, max_extra=max_extra, throttle=1.0),
            retry=Retry(attempts=attempts, backoff=Backoff(initial=0, maximum=0)),
        )
        await supervisor.run(range(len(script)), trace=trace)
        return trace

    trace = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    agree(trace, {})
    rows = timeline_rows(trace)
    svg = render_svg(trace)
    hedged = any(span.hedge for slot in trace.slots for span in slot.spans)
    assert ("hedge" in {mark.kind for mark in marks_used(rows)}) == hedged
    assert (MARKS["hedge"].legend in dict(legend(rows)).values()) == hedged
    assert (MARKS["hedge"].pictured in {text for _, text in legend_keys(rows)}) == hedged
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(render_timeline(trace))
    lines = out.getvalue().splitlines()
    for row, slot, group in zip(rows, trace.slots, groups(svg, "ts-row"), strict=True):
        deciding = slot.deciding
        assert deciding is not None
        assert deciding.end is not None
        bar = row.deciding
        assert bar is not None
        assert (bar.start, bar.end, bar.hedge > 0) == (
            deciding.start - trace.origin,
            deciding.end - trace.origin,
            deciding.hedge,
        )
        end = next(t for t in group.iter(f"{SVG}text") if "ts-end" in classes(t))
        when = deciding.end - trace.origin  # the slot ended when its deciding attempt did
        assert text_of(end) == f"{row.ending.glyph} {row.ending.word} {when:.2f}s"
        assert row.ending is bar.ending, "the end label is the deciding attempt's"
        rects = [r for r in group.iter(f"{SVG}rect") if "ts-bar" in classes(r)]
        running = [b for b in row.bars if b.kind == "running"]
        numbers: list[int] = []
        number = 0  # a hedge's number: k for its attempt's k-th, 0 for the attempt
        for span in slot.spans:
            number = number + 1 if span.hedge else 0
            numbers.append(number)
        assert [b.hedge for b in running] == numbers
        assert ["ts-hedge" in classes(r) for r in rects] == [span.hedge for span in slot.spans]
        for drawn, rect in zip(running, rects, strict=True):
            assert bar.ending.css in classes(rects[running.index(bar)])
            assert drawn.ending.css in classes(rect), "a bar in its own ending's colour"
            if drawn.hedge:  # lower than the attempt it hedges (or than its row's top lane)
                assert float(rect.get("y", "nan")) > float(rects[0].get("y", "nan"))
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{row.slot} "))
        below = lines[at + 1 : at + 1 + max(b.hedge for b in running)]
        assert all("└ hedge" in line and "▓" in line for line in below)
        assert "└ hedge" not in lines[at + 1 + len(below)]
