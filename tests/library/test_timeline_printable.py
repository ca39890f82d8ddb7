"""A run's text (its subtasks, its errors, a re-planning run's headings) is drawn, never obeyed:
every picture of it shows a control character as its escape."""

from __future__ import annotations

import io
import unicodedata
import xml.etree.ElementTree as ET

import pytest
import trio
import trio.testing
from rich.console import Console

from trio_supervisor import Supervisor, Trace
from trio_supervisor.timeline import printable, render_svg, render_timeline

NAMED = ["a\x1b]0;owned\x07b", "c\x9b2Jd", "e\u202ef", "g\udc9bh"]
"""What a model could name a subtask: an OSC that retitles the window, the 8-bit CSI, a
right-to-left override, a lone surrogate."""


DRAWN = "plain text, \u00fcn\u00efc\u00f6d\u00e9, \u4e2d\u6587, " + "\u200d".join(
    ["\U0001f469", "\U0001f469", "\U0001f467"]
)
"""Letters, CJK and an emoji sequence (spelled as escapes: the site's fonts draw none of them)."""


def acting(text: str) -> set[str]:
    return {c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Cs")}


def recorded() -> Trace:
    async def worker(subtask: str) -> str:
        await trio.sleep(1)
        raise ValueError(f"no \x1b[31m{subtask}")

    async def run() -> Trace:
        trace = Trace()
        await Supervisor(worker, max_workers=2).run(NAMED, trace=trace)
        return trace

    return trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_terminal_timeline_draws_control_characters_as_escapes() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, color_system=None)
    console.print(render_timeline(recorded(), sections={0: "round 1: \x1b[2J\u2028plan"}))
    drawn = out.getvalue()
    assert acting(drawn) == set()
    assert "a\\x1b]0;owned\\x07b" in drawn
    assert "\\x1b[2J\\u2028plan" in drawn


def test_the_svg_is_well_formed_xml_whatever_the_subtasks_and_errors_hold() -> None:
    svg = render_svg(recorded(), title="t\x1b", sections={0: "round 1: \x1b[2J"})
    assert acting(svg) == set()
    ET.fromstring(svg)  # XML forbids these characters: a parser would refuse them
    assert "c\\x9b2Jd" in svg


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param(DRAWN, DRAWN, id="letters-cjk-and-an-emoji-sequence"),
        pytest.param("tab\there", "tab\\there", id="tab"),
        pytest.param("del\x7f", "del\\x7f", id="delete"),
        pytest.param("bidi\u2066x\u2069", "bidi\\u2066x\\u2069", id="bidi-isolates"),
    ],
)
def test_printable_keeps_what_draws_and_escapes_what_acts(text: str, shown: str) -> None:
    assert printable(text) == shown
