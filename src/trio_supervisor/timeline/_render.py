"""Drawing a trace: one row per slot on a shared time axis, for the terminal (and the docs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

try:
    from rich.table import Table
    from rich.text import Text
except ImportError as error:  # pragma: no cover - exercised by a test that hides rich
    raise ImportError(
        "trio_supervisor.timeline needs the 'timeline' extra (rich is missing): "
        "pip install 'trio-supervisor[timeline]'"
    ) from error

from .._contract import Status
from .._trace import Trace

#: How each ending is drawn: the glyph after the last bar, and its colour.
ENDINGS: dict[Status | None, tuple[str, str]] = {
    Status.OK: ("✓", "green"),
    Status.FAILED: ("✗", "red"),
    Status.TIMED_OUT: ("⏱", "yellow"),
    Status.CANCELLED: ("⊘", "magenta"),
    Status.AWAITING_APPROVAL: ("?", "cyan"),
    Status.REJECTED: ("⊗", "red"),
    None: ("…", "bright_black"),
}


#: How a slot whose worker process died is drawn (its error a ``WorkerCrashed``): apart from an
#: exception its worker raised, for the fault is of another kind (the process, not the call).
CRASHED = ("☠", "bold bright_red")
#: The error kind a crashed attempt records: the process pool's exception, by its name (a trace
#: keeps an error as text, ``WorkerCrashed: the worker process died: ...``).
CRASH_KIND = "WorkerCrashed"


#: How a slot whose result came from a journal is marked (a resumed run did not run it again).
JOURNALED = "↺"

#: How a hedge is drawn in the terminal: its own line under its slot's row, in this glyph.
HEDGE = "▓"


def crashed(error: str | None) -> bool:
    """Whether an attempt's ``error`` (as a trace records it) says its worker process died:
    its kind is ``WorkerCrashed``, or the failure it reports was one (a parent slot whose child
    escalated a crash: ``Escalated: nothing found: WorkerCrashed: ...``).

    Args:
      error: the error text of a span or a result, None for none.
    """
    return error is not None and CRASH_KIND in (part.strip() for part in error.split(":"))


def ending(status: Status | None) -> tuple[str, str]:
    """The glyph a timeline draws after a slot that ended ``status`` (None: it has not ended),
    and its rich colour: ``("✓", "green")`` for ``Status.OK``.

    Args:
      status: how the slot ended, or None while it runs.
    """
    return ENDINGS[status]


@dataclass(frozen=True)
class Bar:
    """A stretch of one row, in seconds since the trace's origin."""

    start: float
    end: float
    kind: str  # "waiting", "running", "asked" (a wait the failure asked for), or "held"
    status: Status | None  # how a running bar ended; None while running or for waiting
    note: str | None = None  # a failed attempt's error; the wait an "asked" bar was asked for
    hedge: int = 0  # a running bar's: k for its attempt's k-th hedge, 0 for the attempt itself
    lost: bool = False  # a running bar cancelled because another attempt of its slot won

    @property
    def crashed(self) -> bool:
        """Whether this is an attempt that failed because its worker process died."""
        return self.kind == "running" and self.status is Status.FAILED and crashed(self.note)

    @property
    def drawn(self) -> tuple[str, str]:
        """The glyph and colour of how this running bar ended (see `ending`): a crash's own."""
        return CRASHED if self.crashed else ENDINGS[self.status]


@dataclass(frozen=True)
class Row:
    """One slot of the timeline: its bars, how it ended, and its completion rank; ``depth`` is
    how deep in a supervision tree its run is (0 for the top run's slots, 1 for the slots of a
    child run drawn under its parent's slot, and so on)."""

    slot: int
    subtask: str
    bars: tuple[Bar, ...]
    status: Status | None
    rank: int | None
    depth: int = 0
    journaled: bool = False  # its result came from a journal: a resumed run did not run it

    @property
    def crashed(self) -> bool:
        """Whether the slot failed because the process of its last attempt died."""
        running = [bar for bar in self.bars if bar.kind == "running"]
        return self.status is Status.FAILED and bool(running) and running[-1].crashed

    @property
    def drawn(self) -> tuple[str, str]:
        """The glyph and colour of how the slot ended: a crash's own, else its status's."""
        return CRASHED if self.crashed else ENDINGS[self.status]

    @property
    def label(self) -> str:
        """The subtask as drawn: indented under its parent's slot in a tree."""
        return self.subtask if not self.depth else "  " * (self.depth - 1) + "└ " + self.subtask


def timeline_rows(trace: Trace, final: Mapping[int, Status] | None = None) -> list[Row]:
    """Turn a trace into rows: what every picture of a run (terminal or SVG) is drawn from.

    A slot whose worker ran a child supervisor (see [`Trace.nest`][trio_supervisor.Trace.nest])
    is followed by its child run's rows, one level deeper, on the same time axis.

    Args:
      trace: the recorded run.
      final: slot -> status to show instead of the recorded one (a supervisor knows that a
        cancelled attempt was its timeout, or that a slot that never ran was cut by a deadline);
        for the top run's slots only.
    """
    rows: list[Row] = []
    _rows_of(trace, final or {}, trace.wall, 0, rows)
    return rows


def _rows_of(
    trace: Trace, final: Mapping[int, Status], right: float, depth: int, rows: list[Row]
) -> None:
    """Append the rows of ``trace``'s slots, and of their child runs, to ``rows``."""
    ranks = trace.completion_rank()
    for slot in trace.slots:
        bars: list[Bar] = []
        waiting_from = slot.planned - trace.origin
        asked = 0.0  # the wait the previous attempt's failure asked for (Retry-After)
        hedge = 0  # the hedge number of the span, within its attempt
        for span in slot.spans:
            start = span.start - trace.origin
            if span.hedge:  # drawn on a line of its own: no wait before it
                hedge += 1
                end = right if span.end is None else span.end - trace.origin
                bars.append(Bar(start, end, "running", span.status, span.error, hedge, span.lost))
                waiting_from = max(waiting_from, end)
                continue
            hedge = 0
            if asked > 0 and start > waiting_from:
                told = min(start, waiting_from + asked)
                bars.append(Bar(waiting_from, told, "asked", None, f"{asked:g}s"))
                waiting_from = told
            if start > waiting_from:
                bars.append(Bar(waiting_from, start, "waiting", None))
            end = right if span.end is None else span.end - trace.origin
            bars.append(Bar(start, end, "running", span.status, span.error, lost=span.lost))
            waiting_from = end
            asked = span.retry_after or 0.0
        if (
            not slot.spans
            and slot.admitted is None
            and trace.closed is not None
            and not slot.journaled
        ):
            end = right if depth == 0 else trace.closed - trace.origin
            bars.append(Bar(waiting_from, end, "waiting", None))
        if slot.delivered is not None and slot.delivered - trace.origin > waiting_from:
            bars.append(Bar(waiting_from, slot.delivered - trace.origin, "held", None))
        status = final.get(slot.slot, slot.status)
        rank = ranks.get(slot.slot)
        row = Row(slot.slot, str(slot.subtask), tuple(bars), status, rank, depth, slot.journaled)
        rows.append(row)
        if slot.child is not None:
            _rows_of(slot.child, {}, right, depth + 1, rows)


def _seconds(value: float) -> str:
    return f"{value:.2f}s"


def _ending(row: Row) -> str:
    """How a row ended, as both pictures say it: ``✓ ok 0.88s``, ``⊘ cancelled, never ran``."""
    glyph, _ = row.drawn
    running = [bar for bar in row.bars if bar.kind == "running"]
    if row.journaled and not running:
        return f"{JOURNALED} {'' if row.status is None else row.status.value + ', '}journaled"
    if not running:
        return (
            f"{glyph} never ran" if row.status is None else f"{glyph} {row.status.value}, never ran"
        )
    label = "running" if row.status is None else "crashed" if row.crashed else row.status.value
    kept = [bar.end for bar in running if not bar.lost]  # a hedge that lost ended no slot
    end = max(kept) if kept else running[-1].end
    return f"{glyph} {label} {_seconds(end)}"


def legend(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """What each mark of a timeline of ``rows`` means, for the marks it has: ``(mark, meaning)``
    pairs, in the order a row draws them, then the endings; the terminal prints them in a line
    under the table, and the SVG's legend says the same.

    A blank stretch of a row is time in which its slot was neither waiting nor running: before
    it was planned (a slot pulled later from a lazy input, or a child run's), and after it was
    over.

    Args:
      rows: the rows drawn (see [`timeline_rows`][trio_supervisor.timeline.timeline_rows]).
    """
    bars = [bar for row in rows for bar in row.bars]
    kinds = {bar.kind for bar in bars}
    said: list[tuple[str, str]] = []
    if "waiting" in kinds:
        said.append(("·", "waiting (for a worker, or a retry)"))
    if "asked" in kinds:
        said.append(("╌", "told to wait (Retry-After)"))
    if "running" in kinds:
        said.append(("█", "running (coloured by its end)"))
    if "held" in kinds:
        said.append(("░", "done, held for plan order"))
    if any(bar.hedge for bar in bars):
        said.append((HEDGE, "hedge: another attempt of the slot, on the line under it"))
    pulled = any(row.bars and row.bars[0].start > 0 for row in rows)
    said.append(("blank", "not planned yet, or over" if pulled else "over"))
    endings = {row.drawn for row in rows if not row.journaled or row.bars}
    endings |= {bar.drawn for bar in bars if bar.kind == "running"}
    for status, words in (
        (Status.OK, "ok"),
        (Status.FAILED, "failed"),
        (Status.TIMED_OUT, "timed out"),
        (Status.CANCELLED, "cancelled"),
        (Status.AWAITING_APPROVAL, "awaiting approval"),
        (Status.REJECTED, "rejected"),
    ):
        if ENDINGS[status] in endings:
            said.append((ENDINGS[status][0], words))
    if CRASHED in endings:
        said.append((CRASHED[0], "crashed (its process died)"))
    if any(row.journaled for row in rows):
        said.append((JOURNALED, "from the journal (a resumed run did not run it again)"))
    if ENDINGS[None] in endings:
        said.append((ENDINGS[None][0], "running, or never ran"))
    return said


def render_timeline(
    trace: Trace,
    final: Mapping[int, Status] | None = None,
    width: int = 48,
    *,
    sections: Mapping[int, str] | None = None,
) -> Table:
    """A rich table of the run: per slot, waiting (``·``) then running (``█``) bars, then held
    (``░``: done, waiting to be handed over in order); a wait a failure asked for before the
    next attempt (a 429's ``Retry-After``) is drawn ``╌``; the ending glyph, when it ended and its
    completion rank, over a time axis from 0 to the wall time. A running bar followed by another
    (a retry) ends in its own ending glyph, so that how each attempt ended shows without colour.
    ``sections`` (slot -> a heading ``label: text``) puts a line above a slot's row, its label
    where the subtasks are and its text on the timeline: the rounds of a re-planning run, each
    headed by the planner's decision (the top run's slots only, never a child run's)."""
    sections = sections or {}
    right = trace.wall or 1.0
    table = Table(box=None, pad_edge=False, show_edge=False, title_justify="left")
    table.add_column("slot", justify="right", no_wrap=True, min_width=4)
    table.add_column("subtask", overflow="ellipsis", max_width=22, no_wrap=True)
    table.add_column("timeline", no_wrap=True, min_width=width)
    table.add_column("end", justify="left", no_wrap=True, min_width=14)
    table.add_column("done #", justify="right", no_wrap=True)
    for row in timeline_rows(trace, final):
        # a heading is the top run's (a child's slot numbers are its own), cut to the timeline's
        # width: it must not widen the column
        if not row.depth and row.slot in sections:
            label, _, text = sections[row.slot].partition(": ")
            text = text if len(text) <= width else text[: width - 1] + "…"
            table.add_row("", Text(label, style="bold"), Text(text, style="bold"), "", "")
        # a hedge has a line of its own under the row's (the k-th hedge of an attempt, line k)
        lines = 1 + max((bar.hedge for bar in row.bars), default=0)
        cells = [[" "] * width for _ in range(lines)]
        styles = [[""] * width for _ in range(lines)]
        last_run = max((bar.end for bar in row.bars if bar.kind == "running"), default=None)
        marks = []  # (line, column, glyph): where each attempt that another followed ended, how
        for bar in row.bars:
            first = min(width - 1, int(bar.start / right * width))
            last = max(first + 1, min(width, round(bar.end / right * width)))
            at, shade = cells[bar.hedge], styles[bar.hedge]
            for column in range(first, last):
                if bar.kind == "waiting":
                    at[column], shade[column] = "·", "bright_black"
                elif bar.kind == "held":
                    at[column], shade[column] = "░", "bright_black"
                elif bar.kind == "asked":
                    at[column], shade[column] = "╌", "yellow"
                else:
                    at[column], shade[column] = HEDGE if bar.hedge else "█", bar.drawn[1]
            ended = bar.kind == "running" and bar.status is not None
            if ended and (bar.end != last_run or bar.lost or bar.hedge):
                marks.append((bar.hedge, last - 1, bar.drawn[0]))
        for index, column, glyph in marks:  # drawn over the bars, so that no later bar hides one
            cells[index][column] = glyph
        line = Text()
        for index in range(lines):
            if index:
                line.append("\n")
            for cell, style in zip(cells[index], styles[index], strict=True):
                line.append(cell, style=style)
        named = Text(
            row.label
            + "".join(f"\n└ hedge{f' {index}' if index > 1 else ''}" for index in range(1, lines))
        )
        end = Text(_ending(row), style=row.drawn[1])
        table.add_row(str(row.slot), named, line, end, "" if row.rank is None else str(row.rank))
    axis = Text("0s".ljust(width - len(_seconds(right))) + _seconds(right), style="bright_black")
    table.add_row("", "", axis, "", "")
    return table


# The SVG picture: the same rows as the terminal table, drawn on a shared time axis. Its text and
# grid take the docs theme's colours where it is inlined in a page (mkdocs-material's CSS
# variables), with fallbacks for a plain viewer; bars keep one colour per ending in both schemes.
# Deterministic to the byte: coordinates are formatted with two decimals, nothing random, no ids.
_SVG_STYLE = (
    ".ts-chart{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}"
    ".ts-chart text{fill:var(--md-default-fg-color,#1f2328)}"
    ".ts-chart .ts-head,.ts-chart .ts-tick,.ts-chart .ts-never{"
    "fill:var(--md-default-fg-color--light,#57606a)}"
    ".ts-chart .ts-grid{stroke:var(--md-default-fg-color--lightest,#d0d7de);stroke-width:1}"
    ".ts-chart .ts-axis{stroke:var(--md-default-fg-color--light,#57606a);stroke-width:1}"
    ".ts-chart .ts-wall{stroke:var(--md-default-fg-color--light,#57606a);stroke-dasharray:3 3}"
    ".ts-chart rect.ts-waiting{fill:var(--md-default-fg-color--lighter,#8c959f)}"
    ".ts-chart rect.ts-hedge{fill:#57606a;stroke:#1f2328;stroke-width:1;stroke-dasharray:2 1}"
    ".ts-chart .ts-band{fill:#d1242f;fill-opacity:.12}"
    # an ending's words: dark enough to read on white (contrast >= 4.5); a dark scheme sets
    # the --ts-*-text variables to lighter ones (the site's stylesheet does)
    ".ts-chart rect.ts-ok{fill:#2da44e}.ts-chart text.ts-ok{fill:var(--ts-ok-text,#1a7f37)}"
    ".ts-chart rect.ts-failed{fill:#d1242f}"
    ".ts-chart text.ts-failed{fill:var(--ts-failed-text,#cf222e)}"
    ".ts-chart rect.ts-timed-out{fill:#d4a72c}"
    ".ts-chart text.ts-timed-out{fill:var(--ts-timed-out-text,#9a6700)}"
    ".ts-chart rect.ts-cancelled{fill:#a371f7}"
    ".ts-chart text.ts-cancelled{fill:var(--ts-cancelled-text,#8250df)}"
    ".ts-chart rect.ts-crashed{fill:#82071e}"
    ".ts-chart text.ts-crashed{fill:var(--ts-crashed-text,#82071e)}"
    ".ts-chart rect.ts-running{fill:#57606a}"
    ".ts-chart rect.ts-held{fill:#2da44e;fill-opacity:.3}"
    ".ts-chart rect.ts-asked{fill:#d4a72c}"
    ".ts-chart .ts-bold{font-weight:bold}"
)
_CHAR = 7.3  # the advance of one 12px monospace character, for laying out columns
_ROW = 24.0  # height of one slot's row
_BAR = 14.0  # height of a running bar (a waiting bar is a thin line through the row's middle)
_LABEL = 22  # characters of a subtask shown before it is cut with an ellipsis, as in the terminal


def _css_class(status: Status | None) -> str:
    return "ts-running" if status is None else "ts-" + status.value.replace(" ", "-")


def _n(value: float) -> str:
    """A coordinate, formatted the same on every run and platform."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _ticks(right: float) -> list[float]:
    """Round times for the axis: the finest step of 1, 2 or 5 x 10^k with at most 8 intervals."""
    exponent = -2
    while True:
        for mantissa in (1, 2, 5):
            step = mantissa * 10.0**exponent
            if right / step <= 8:
                count = int(right / step + 1e-9)
                return [round(index * step, 6) for index in range(count + 1)]
        exponent += 1


def _legend_keys(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """The SVG legend's keys, ``(css class, text)``, for what ``rows`` draw: the terminal's
    `legend` in the picture's own words and swatches."""
    bars = [bar for row in rows for bar in row.bars]
    keys = [("ts-waiting", "waiting")]
    shown = {bar.status for bar in bars if bar.kind == "running" and not bar.crashed}
    for kind in (Status.OK, Status.FAILED, Status.TIMED_OUT, Status.CANCELLED, None):
        if kind in shown:
            keys.append((_css_class(kind), "running" if kind is None else kind.value))
    if any(bar.crashed for bar in bars):
        keys.append(("ts-crashed", "crashed: its process died"))
    if any(bar.kind == "asked" for bar in bars):
        keys.append(("ts-asked", "told to wait (Retry-After)"))
    if any(bar.kind == "held" for bar in bars):
        keys.append(("ts-held", "done, held for plan order"))
    if any(bar.hedge for bar in bars):
        keys.append(("ts-hedge", "hedge: another attempt of the slot (lower bar)"))
    pulled = any(row.bars and row.bars[0].start > 0 for row in rows)
    keys.append(("ts-blank", "blank: not planned yet, or over" if pulled else "blank: over"))
    return keys


def _cut(text: str) -> str:
    return text if len(text) <= _LABEL else text[: _LABEL - 1] + "…"


def render_svg(
    trace: Trace,
    final: Mapping[int, Status] | None = None,
    *,
    title: str | None = None,
    width: float = 320.0,
    sections: Mapping[int, str] | None = None,
) -> str:
    """The run as an SVG picture, built on the same
    [`timeline_rows`][trio_supervisor.timeline.timeline_rows] as the terminal table.

    One row per slot in plan order: its waiting bar (a thin line) then its running bars (one per
    attempt, coloured by how it ended) on a time axis from 0 to the wall time, then the ending
    (glyph, status and when it ended) and the slot's completion rank. The row of a slot that
    failed or timed out is tinted. Two renders of the same trace are byte-identical.

    Args:
      trace: the recorded run (closed, for a fixed right edge).
      final: slot -> status to show instead of the recorded one, as for
        [`timeline_rows`][trio_supervisor.timeline.timeline_rows].
      title: the picture's accessible title (a ``<title>`` element), if any.
      width: the width of the time axis, in pixels.
      sections: slot -> a heading drawn on a line of its own above that slot's row (the rounds
        of a re-planning run, each headed by the planner's decision); the top run's slots only.

    Raises:
      ValueError: if ``width`` is not positive.
    """
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width}")
    rows = timeline_rows(trace, final)
    right = trace.wall or 1.0
    x_slot = 5 * _CHAR  # right edge of the slot numbers
    x_label = x_slot + 2 * _CHAR
    x_axis = x_label + (_LABEL + 2) * _CHAR
    x_end = x_axis + width + 2 * _CHAR
    x_rank = x_end + 17 * _CHAR + 6 * _CHAR  # right edge of the completion ranks
    total_width = x_rank + _CHAR
    top = _ROW  # the header takes one row
    sections = sections or {}
    ys: list[float] = []  # the top of each row: a section's heading takes a row above its first
    headings: list[tuple[float, str]] = []
    for row in rows:
        if not row.depth and row.slot in sections:
            headings.append((top + _ROW * (len(ys) + len(headings)), sections[row.slot]))
        ys.append(top + _ROW * (len(ys) + len(headings)))
    bottom = top + _ROW * (len(rows) + len(headings))
    keys = _legend_keys(rows)
    placed: list[tuple[float, int, str, str]] = []  # (x, line, css, text) of each legend key
    legend_x, line = _CHAR, 0
    for css, text in keys:
        wide = 20 + (len(text) + 3) * _CHAR
        if legend_x + wide > total_width and legend_x > _CHAR:  # on to the legend's next line
            legend_x, line = _CHAR, line + 1
        placed.append((legend_x, line, css, text))
        legend_x += wide
    height = bottom + 52 + 16 * line  # the axis, its labels and the legend's lines

    def x_of(seconds: float) -> float:
        return x_axis + seconds / right * width

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ts-chart" role="img" '
        f'viewBox="0 0 {_n(total_width)} {_n(height)}" '
        f'width="{_n(total_width)}" height="{_n(height)}">'
    ]
    if title is not None:
        out.append(f"<title>{escape(title)}</title>")
    out.append(f"<style>{_SVG_STYLE}</style>")
    head_y = _n(top - 8)
    out.append(
        f'<g class="ts-head">'
        f'<text class="ts-head" x="{_n(x_slot)}" y="{head_y}" text-anchor="end">slot</text>'
        f'<text class="ts-head" x="{_n(x_label)}" y="{head_y}">subtask</text>'
        f'<text class="ts-head" x="{_n(x_axis)}" y="{head_y}">timeline (plan order, top to '
        f"bottom)</text>"
        f'<text class="ts-head" x="{_n(x_end)}" y="{head_y}">end</text>'
        f'<text class="ts-head" x="{_n(x_rank)}" y="{head_y}" text-anchor="end">done #</text>'
        f"</g>"
    )
    ticks = _ticks(right)
    out.append('<g class="ts-grid-lines">')
    for tick in ticks:
        grid_x = _n(x_of(tick))
        out.append(
            f'<line class="ts-grid" x1="{grid_x}" y1="{_n(top)}" x2="{grid_x}" y2="{_n(bottom)}"/>'
        )
    out.append("</g>")
    fits = int((total_width - x_label) / _CHAR)  # characters of a heading that fit
    for y, heading in headings:
        cut = heading if len(heading) <= fits else heading[: fits - 1] + "…"
        out.append(
            f'<g class="ts-section"><line class="ts-axis" x1="0" y1="{_n(y + 1)}" '
            f'x2="{_n(total_width)}" y2="{_n(y + 1)}"/><text class="ts-head ts-bold" '
            f'x="{_n(x_label)}" y="{_n(y + _ROW / 2 + 4)}"><title>{escape(heading)}</title>'
            f"{escape(cut)}</text></g>"
        )
    for index, row in enumerate(rows):
        y = ys[index]
        middle = y + _ROW / 2
        text_y = _n(middle + 4)
        ended_as = "none" if row.status is None else row.status.value
        rank = "" if row.rank is None else str(row.rank)
        depth = f' data-depth="{row.depth}"' if row.depth else ""
        out.append(
            f'<g class="ts-row" data-slot="{row.slot}" data-status="{escape(ended_as)}" '
            f'data-rank="{rank}"{depth}>'
        )
        failed = row.status in (Status.FAILED, Status.TIMED_OUT)  # the slot's own failure
        if failed:
            out.append(
                f'<rect class="ts-band" x="0" y="{_n(y + 1)}" '
                f'width="{_n(total_width)}" height="{_n(_ROW - 2)}"/>'
            )
        row_css = "ts-crashed" if row.crashed else _css_class(row.status)
        marked = f" {row_css} ts-bold" if failed else ""
        out.append(
            f'<text class="ts-slot{marked}" x="{_n(x_slot)}" y="{text_y}" '
            f'text-anchor="end">{row.slot}</text>'
        )
        out.append(
            f'<text class="ts-label{marked}" x="{_n(x_label)}" y="{text_y}">'
            f"<title>{escape(row.subtask)}</title>{escape(_cut(row.label))}</text>"
        )
        lanes = 1 + max((bar.hedge for bar in row.bars), default=0)  # a hedge: a lower bar
        for bar in row.bars:
            x, w = x_of(bar.start), max(1.0, (bar.end - bar.start) / right * width)
            span = f"{bar.start:.2f}s to {bar.end:.2f}s"
            if bar.kind == "waiting":
                out.append(
                    f'<rect class="ts-waiting" x="{_n(x)}" y="{_n(middle - 1.5)}" '
                    f'width="{_n(w)}" height="3"><title>waiting {span}</title></rect>'
                )
            elif bar.kind == "asked":
                out.append(
                    f'<rect class="ts-asked" x="{_n(x)}" y="{_n(middle - 2.5)}" '
                    f'width="{_n(w)}" height="5"><title>told to wait {span}: the failure asked '
                    f"for {escape(bar.note or '')} before a retry</title></rect>"
                )
            elif bar.kind == "held":
                out.append(
                    f'<rect class="ts-held" x="{_n(x)}" y="{_n(middle - _BAR / 2)}" '
                    f'width="{_n(w)}" height="{_n(_BAR)}" rx="2">'
                    f"<title>done, held {span} until every earlier slot was handed over</title>"
                    "</rect>"
                )
            else:
                ending = "still running" if bar.status is None else bar.status.value
                if bar.crashed:
                    ending = "crashed: its worker's process died"
                if bar.note is not None:
                    ending = f"{ending}, {bar.note}"
                css = "ts-crashed" if bar.crashed else _css_class(bar.status)
                top_y, tall = middle - _BAR / 2, _BAR
                if lanes > 1:  # the attempt on top, each hedge under it
                    tall = _BAR / lanes
                    top_y += bar.hedge * tall
                    if bar.hedge:
                        css = f"ts-hedge {css}"
                        ending = f"hedge {bar.hedge}, {ending}"
                    if bar.lost:
                        ending = f"{ending}: lost, another attempt won"
                out.append(
                    f'<rect class="ts-bar {css}" x="{_n(x)}" '
                    f'y="{_n(top_y)}" width="{_n(w)}" height="{_n(tall)}" rx="2">'
                    f"<title>running {span}: {escape(ending)}</title></rect>"
                )
        ran = any(bar.kind == "running" for bar in row.bars)
        css = ("ts-crashed" if row.crashed else _css_class(row.status)) if ran else "ts-never"
        out.append(f'<text class="ts-end {css}" x="{_n(x_end)}" y="{text_y}">{_ending(row)}</text>')
        out.append(
            f'<text class="ts-rank" x="{_n(x_rank)}" y="{text_y}" text-anchor="end">{rank}</text>'
        )
        out.append("</g>")
    axis_y = bottom + 4
    out.append('<g class="ts-time">')
    out.append(
        f'<line class="ts-axis" x1="{_n(x_axis)}" y1="{_n(axis_y)}" '
        f'x2="{_n(x_axis + width)}" y2="{_n(axis_y)}"/>'
    )
    wall_x = _n(x_axis + width)
    out.append(
        f'<line class="ts-wall" x1="{wall_x}" y1="{_n(top)}" x2="{wall_x}" y2="{_n(axis_y)}"/>'
    )
    room = 6 * _CHAR  # no tick label this close to the wall time's label
    for tick in ticks:
        x = x_of(tick)
        out.append(
            f'<line class="ts-axis" x1="{_n(x)}" y1="{_n(axis_y)}" '
            f'x2="{_n(x)}" y2="{_n(axis_y + 4)}"/>'
        )
        if x_axis + width - x >= room:
            out.append(
                f'<text class="ts-tick" x="{_n(x)}" y="{_n(axis_y + 16)}" '
                f'text-anchor="middle">{tick:g}s</text>'
            )
    out.append(
        f'<text class="ts-wall-label ts-bold" x="{wall_x}" y="{_n(axis_y + 16)}" '
        f'text-anchor="middle">{trace.wall:.2f}s</text>'
    )
    out.append("</g>")
    out.append('<g class="ts-legend">')
    for legend_x, line, css, text in placed:
        legend_y = axis_y + 36 + 16 * line
        swatch_y, swatch_h = (legend_y - 9, 10)
        if css in ("ts-waiting", "ts-asked"):
            swatch_y, swatch_h = (legend_y - 6, 3 if css == "ts-waiting" else 5)
        if css != "ts-blank":  # a blank stretch is drawn as nothing: its key has no swatch
            out.append(
                f'<rect class="{css}" x="{_n(legend_x)}" y="{_n(swatch_y)}" width="16" '
                f'height="{swatch_h}"/>'
            )
        out.append(
            f'<text class="ts-tick" x="{_n(legend_x + 20)}" y="{_n(legend_y)}">'
            f"{escape(text)}</text>"
        )
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
