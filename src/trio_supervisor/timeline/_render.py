"""Drawing a trace: one row per slot on a shared time axis, for the terminal (and the docs)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
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
from .._trace import Span, Trace
from ._printable import printable


@dataclass(frozen=True)
class Ending:
    """How one ending of an attempt or a slot is drawn, the same in every picture of a run:
    the terminal table, the SVG, and the docs' player (which reads this table from the data it
    replays). One record per ending, in `ENDINGS`: a new ending is one more record there.

    ```pycon
    >>> ok = ENDINGS["ok"]
    >>> ok.glyph, ok.style, ok.css
    ('✓', 'green', 'ts-ok')
    >>> ENDINGS["timed out"].legend, ENDINGS["timed out"].fault  # a fault: its row is tinted
    ('timed out (its own timeout)', True)

    ```

    ``word`` is what the end label says (``ok``, ``timed out``); ``glyph`` its mark before the
    word, a character the pictures' monospace font (DejaVu Sans Mono) has and no emoji; ``style``
    its rich colour; ``fill`` the colour of its bar; ``ink`` the colour of its words on a light
    background, dark enough for white words on it too (contrast at least 4.5 either way);
    ``night`` the colour of its words on the site's dark scheme; ``legend`` what the legend
    says of it; ``fault`` whether it is the slot's own failure (its row is tinted).
    """

    word: str
    glyph: str
    style: str
    fill: str
    ink: str
    night: str
    legend: str
    fault: bool = False

    @property
    def css(self) -> str:
        """Its class in the SVG and the player: ``ts-timed-out``."""
        return "ts-" + self.word.replace(" ", "-")


#: Every ending, in the order a legend lists them. A slot's ending is chosen from its status and
#: its trace: see `Row.ending` and `Bar.ending`.
ENDINGS: dict[str, Ending] = {
    ending.word: ending
    for ending in (
        Ending("ok", "✓", "green", "#2da44e", "#1a7f37", "#3fb950", "ok"),
        Ending("failed", "✗", "red", "#d1242f", "#cf222e", "#f85149", "failed", fault=True),
        Ending(
            "gave up",
            "⊖",
            "dark_orange",
            "#e16f24",
            "#bc4c00",
            "#f0883e",
            "gave up (the run was past its restart intensity)",
            fault=True,
        ),
        Ending(
            "timed out",
            "◷",
            "yellow",
            "#d4a72c",
            "#7d4e00",
            "#d29922",
            "timed out (its own timeout)",
            fault=True,
        ),
        Ending("cancelled", "⊘", "magenta", "#a371f7", "#8250df", "#a371f7", "cancelled"),
        Ending(
            "crashed",
            "⊠",
            "bold bright_red",
            "#82071e",
            "#82071e",
            "#ff7b72",
            "crashed (its process died)",
            fault=True,
        ),
        Ending(
            "awaiting approval", "?", "cyan", "#1b7c83", "#1b7c83", "#39c5cf", "awaiting approval"
        ),
        Ending("rejected", "⊗", "bright_magenta", "#bf3989", "#99286e", "#db61a2", "rejected"),
        Ending(
            "over budget",
            "$",
            "dark_goldenrod",
            "#9a6700",
            "#6f4a00",
            "#e3b341",
            "over budget (its worst case did not fit what was left)",
            fault=True,
        ),
        Ending(
            "journaled",
            "↺",
            "blue",
            "#0969da",
            "#0969da",
            "#58a6ff",
            "from the journal (a resumed run did not run it again)",
        ),
        Ending(
            "running", "…", "bright_black", "#57606a", "#57606a", "#8b949e", "running, or never ran"
        ),
    )
}
_BY_STATUS = {
    Status.OK: ENDINGS["ok"],
    Status.FAILED: ENDINGS["failed"],
    Status.TIMED_OUT: ENDINGS["timed out"],
    Status.CANCELLED: ENDINGS["cancelled"],
    Status.AWAITING_APPROVAL: ENDINGS["awaiting approval"],
    Status.REJECTED: ENDINGS["rejected"],
    Status.OVER_BUDGET: ENDINGS["over budget"],
    None: ENDINGS["running"],
}


@dataclass(frozen=True)
class Mark:
    """How a stretch of a row is drawn apart from an attempt's ending: its terminal ``glyph``
    and rich ``style``, its class in the SVG and the player, and what the legend says of it;
    ``pictured`` what the SVG's and the player's legends say instead, where they draw it
    otherwise than the terminal (a hedge: a lower bar, not a line of its own); ``fill`` its
    swatch's colour in those legends, for a mark the SVG's stylesheet does not otherwise colour.

    ```pycon
    >>> waiting = MARKS["waiting"]
    >>> waiting.glyph, waiting.css, waiting.legend
    ('·', 'ts-waiting', 'waiting (for a worker, or a retry)')

    ```
    """

    kind: str
    glyph: str
    style: str
    legend: str
    pictured: str | None = None
    fill: str | None = None

    @property
    def css(self) -> str:
        """Its class in the SVG and the player: ``ts-waiting``."""
        return "ts-" + self.kind


#: Every stretch that is not an attempt, in the order a legend lists them (``running`` is the
#: attempts' own mark in the terminal, coloured by their endings; ``hedge`` an extra attempt of a
#: hedged slot, coloured by its ending too, on a line of its own under its slot's row).
MARKS: dict[str, Mark] = {
    mark.kind: mark
    for mark in (
        Mark("waiting", "·", "bright_black", "waiting (for a worker, or a retry)"),
        Mark("asked", "╌", "yellow", "told to wait (Retry-After)"),
        Mark("running", "█", "", "running (coloured by its end)"),
        Mark(
            "hedge",
            "▓",
            "",
            "hedge: another attempt of the slot, on the line under it",
            pictured="hedge: another attempt of the slot (lower bar)",
            fill="#57606a",
        ),
        Mark("held", "░", "bright_black", "done, held for plan order"),
    )
}

#: What the SVG says of an attempt cancelled because another attempt of its slot won (a hedged
#: race's loser): its ending is ``cancelled``.
LOST = "lost, another attempt won"

#: The error kind a crashed attempt records: the process pool's exception, by its name (a trace
#: keeps an error as text, ``WorkerCrashed: the worker process died: ...``).
CRASH_KIND = "WorkerCrashed"


def crashed(error: str | None) -> bool:
    """Whether an attempt's ``error`` (as a trace records it) says its worker process died:
    its kind is ``WorkerCrashed``, or the failure it reports was one (a parent slot whose child
    escalated a crash: ``Escalated: nothing found: WorkerCrashed: ...``).

    ```pycon
    >>> crashed("WorkerCrashed: the worker process died: killed by SIGKILL (Killed)")
    True
    >>> crashed("Escalated: nothing found: WorkerCrashed: the worker process died: ...")
    True
    >>> crashed("KeyError: 'WorkerCrashed'"), crashed(None)
    (False, False)

    ```

    Args:
      error: the error text of a span or a result, None for none.
    """
    return error is not None and CRASH_KIND in (part.strip() for part in error.split(":"))


def ending(status: Status | None) -> tuple[str, str]:
    """The glyph a timeline draws after a slot that ended ``status`` (None: it has not ended),
    and its rich colour: ``("✓", "green")`` for ``Status.OK``.

    ```pycon
    >>> ending(Status.OK), ending(Status.TIMED_OUT), ending(None)
    (('✓', 'green'), ('◷', 'yellow'), ('…', 'bright_black'))

    ```

    Args:
      status: how the slot ended, or None while it runs.
    """
    drawn = _BY_STATUS[status]
    return drawn.glyph, drawn.style


@dataclass(frozen=True)
class Bar:
    """A stretch of one row, in seconds since the trace's origin: a wait, an attempt (``kind``
    ``running``, coloured by how it ended), a wait a failure asked for, or a result held for
    plan order.

    ```pycon
    >>> died = Bar(0, 0.5, "running", Status.FAILED, note="WorkerCrashed: the process died")
    >>> retry = Bar(0.5, 1.5, "running", Status.OK)
    >>> died.crashed, died.ending.word, retry.drawn
    (True, 'crashed', ('✓', 'green'))

    ```
    """

    start: float
    end: float
    kind: str  # "waiting", "running", "asked" (a wait the failure asked for), or "held"
    status: Status | None  # how a running bar ended; None while running or for waiting
    note: str | None = None  # a failed attempt's error; the wait an "asked" bar was asked for
    cut: bool = False  # the run cut this attempt short: its status is what the run reported
    hedge: int = 0  # a running bar's: k for its attempt's k-th hedge, 0 for the attempt itself
    lost: bool = False  # a running bar cancelled because another attempt of its slot won
    deciding: bool = False  # the attempt that says how its slot ended (`SlotTrace.deciding`)

    @property
    def crashed(self) -> bool:
        """Whether this is an attempt that failed because its worker process died."""
        return self.kind == "running" and self.status is Status.FAILED and crashed(self.note)

    @property
    def ending(self) -> Ending:
        """How this running bar ended: a crash's own, ``gave up`` for an attempt the run cut and
        reported failed (it gave up past its restart intensity), else its status's."""
        if self.crashed:
            return ENDINGS["crashed"]
        if self.cut and self.status is Status.FAILED:
            return ENDINGS["gave up"]
        return _BY_STATUS[self.status]

    @property
    def drawn(self) -> tuple[str, str]:
        """The glyph and colour of how this running bar ended (see `ending`)."""
        return self.ending.glyph, self.ending.style


@dataclass(frozen=True)
class Row:
    """One slot of the timeline: its bars, how it ended, and its completion rank; ``depth`` is
    how deep in a supervision tree its run is (0 for the top run's slots, 1 for the slots of a
    child run drawn under its parent's slot, and so on); ``prefix`` the tree's connectors drawn
    before its subtask (``├ `` before a slot a sibling follows, ``└ `` before the last, ``│ ``
    under an ancestor a sibling follows); ``attempt`` the parent's attempt whose child run it
    belongs to, when the parent ran child runs in more than one attempt.

    ```pycon
    >>> bars = (Bar(0, 1, "waiting", None), Bar(1, 2, "running", Status.TIMED_OUT))
    >>> row = Row(0, "pricing", bars, Status.TIMED_OUT, rank=1)
    >>> row.ending.word, row.drawn, row.deciding.end
    ('timed out', ('◷', 'yellow'), 2)

    ```
    """

    slot: int
    subtask: str
    bars: tuple[Bar, ...]
    status: Status | None
    rank: int | None
    depth: int = 0
    journaled: bool = False  # its result came from a journal: a resumed run did not run it
    prefix: str = ""
    attempt: int | None = None

    @property
    def crashed(self) -> bool:
        """Whether the slot failed because the process of its deciding attempt died."""
        return self.ending.word == "crashed"

    @property
    def deciding(self) -> Bar | None:
        """The running bar of the attempt that says how the slot ended: its last attempt's, or
        of a hedged race the one `SlotTrace.deciding` names (not always the last drawn); None
        for a slot that never ran."""
        running = [bar for bar in self.bars if bar.kind == "running"]
        return next((bar for bar in running if bar.deciding), running[-1] if running else None)

    @property
    def ending(self) -> Ending:
        """How the slot ended, as its end label says it and its deciding bar is coloured: the
        deciding attempt's own ending when it is the slot's status; ``gave up`` for a slot that
        failed though no attempt of it failed (the run gave up past its restart intensity);
        from the journal for a slot a resumed run did not run."""
        deciding = self.deciding
        if self.journaled and deciding is None:
            return ENDINGS["journaled"]
        if deciding is not None and deciding.status is self.status:
            return deciding.ending
        if self.status is Status.FAILED:  # failed, and not by an attempt of its own
            return ENDINGS["gave up"]
        return _BY_STATUS[self.status]

    @property
    def drawn(self) -> tuple[str, str]:
        """The glyph and colour of how the slot ended (see `ending`)."""
        return self.ending.glyph, self.ending.style

    @property
    def label(self) -> str:
        """The subtask as drawn: after the tree's connectors, and the parent's attempt when
        its child runs came from more than one; nothing in it acts on a terminal (see
        [`printable`][trio_supervisor.timeline.printable])."""
        tried = "" if self.attempt is None else f" (attempt {self.attempt})"
        return printable(f"{self.prefix}{self.subtask}{tried}")


def timeline_rows(trace: Trace, final: Mapping[int, Status] | None = None) -> list[Row]:
    """Turn a trace into rows: what every picture of a run (terminal or SVG) is drawn from.

    ```pycon
    >>> agent = SimulatedAgent(0, fail={"reviews"}, latencies={"pricing": 1, "reviews": 0.5})
    >>> async def record():
    ...     trace = Trace()
    ...     await Supervisor(agent, max_workers=2).run(["pricing", "reviews"], trace=trace)
    ...     return trace
    >>> trace = trio.run(record, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> for row in timeline_rows(trace):
    ...     print(row.slot, row.subtask, [(bar.kind, bar.end) for bar in row.bars], row.ending.word)
    0 pricing [('running', 1.0)] ok
    1 reviews [('running', 0.5)] failed

    ```

    A slot whose worker ran child supervisors (see [`Trace.nest`][trio_supervisor.Trace.nest])
    is followed by every child run's rows (each attempt's, in order), one level deeper, on the
    same time axis, with the tree's connectors. A final status that differs from the one the
    trace recorded for an attempt the run cut short (cancelled, or still open) is that attempt's
    ending too: a timeout's cut attempt is drawn timed out, and a run that gave up past its
    restart intensity draws the attempts it cut as ``gave up``, so that a bar and its row's end
    label never disagree.

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
    trace: Trace,
    final: Mapping[int, Status],
    right: float,
    depth: int,
    rows: list[Row],
    prefix: str = "",
    last_run: bool = True,
    attempt: int | None = None,
) -> None:
    """Append the rows of ``trace``'s slots, and of their child runs, to ``rows``: ``prefix``
    is the connectors of the ancestors, ``last_run`` whether this run is its parent's last (its
    last slot then ends the parent's branch: ``└``)."""
    ranks = trace.completion_rank()
    for index, slot in enumerate(trace.slots):
        bars: list[Bar] = []
        waiting_from = slot.planned - trace.origin
        asked = 0.0  # the wait the previous attempt's failure asked for (Retry-After)
        hedge = 0  # the hedge number of the span, within its attempt
        deciding = slot.deciding
        for span in slot.spans:
            start = span.start - trace.origin
            end = right if span.end is None else span.end - trace.origin
            if span.hedge:  # drawn on a line of its own: no wait before it
                hedge += 1
                bars.append(_attempt(start, end, span, span is deciding, hedge))
                waiting_from = max(waiting_from, end)
                continue
            hedge = 0
            if asked > 0 and start > waiting_from:
                told = min(start, waiting_from + asked)
                bars.append(Bar(waiting_from, told, "asked", None, f"{asked:g}s"))
                waiting_from = told
            if start > waiting_from:
                bars.append(Bar(waiting_from, start, "waiting", None))
            bars.append(_attempt(start, end, span, span is deciding))
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
        _cut_attempt(bars, status)
        rank = ranks.get(slot.slot)
        last = last_run and index == len(trace.slots) - 1
        row = Row(
            slot.slot,
            str(slot.subtask),
            tuple(bars),
            status,
            rank,
            depth,
            slot.journaled,
            prefix=(prefix + ("└ " if last else "├ ")) if depth else "",
            attempt=attempt,
        )
        rows.append(row)
        below = (prefix + ("  " if last else "│ ")) if depth else ""
        tried = {child.attempt for child in slot.children}
        for number, child in enumerate(slot.children, start=1):
            shown = child.attempt if len(tried) > 1 else None
            lasts = number == len(slot.children)
            _rows_of(child, {}, right, depth + 1, rows, below, lasts, shown)


def _attempt(start: float, end: float, span: Span, deciding: bool, hedge: int = 0) -> Bar:
    """The running bar of one attempt's ``span``, from ``start`` to ``end``."""
    return Bar(start, end, "running", span.status, span.error, False, hedge, span.lost, deciding)


def _cut_attempt(bars: list[Bar], status: Status | None) -> None:
    """Give the deciding attempt the slot's final ``status`` when the run cut it short (its
    trace says cancelled, or it is still open) and reported another, other than ok: its bar
    then says how the slot ended, as its end label does. (A hedged race's other attempts cut
    at the same instant, and not lost to a winner, are cut the same way.)"""
    running = [index for index, bar in enumerate(bars) if bar.kind == "running"]
    if not running or status is None or status is Status.OK:
        return
    chosen = next((index for index in running if bars[index].deciding), running[-1])
    decided = bars[chosen]
    for index in running:
        bar = bars[index]
        same = index == chosen or (bar.end == decided.end and (bar.hedge or decided.hedge))
        cut = same and not bar.lost and bar.status in (None, Status.CANCELLED)
        if cut and bar.status is not status:
            bars[index] = dataclasses.replace(bar, status=status, cut=True)


def _seconds(value: float) -> str:
    return f"{value:.2f}s"


def _ending(row: Row, *, timed: bool = True) -> str:
    """How a row ended, as both pictures say it: ``✓ ok 0.88s``, ``⊘ cancelled, never ran``;
    short unless ``timed``: ``✓ ok``, ``⊘ never ran`` (the glyph and colour say the rest)."""
    drawn = row.ending
    deciding = row.deciding
    if row.journaled and deciding is None:
        status = "" if row.status is None else row.status.value + ", "
        return f"{drawn.glyph} {status}journaled"
    if deciding is None:
        said = "" if row.status is None or not timed else f"{drawn.word}, "
        return f"{drawn.glyph} {said}never ran"
    if not timed:
        return f"{drawn.glyph} {drawn.word}"
    return f"{drawn.glyph} {drawn.word} {_seconds(deciding.end)}"


def endings_used(rows: Sequence[Row]) -> list[Ending]:
    """The endings a timeline of ``rows`` draws, on its bars and its end labels, in the order
    of `ENDINGS`: what its legend lists, no more and no fewer.

    ```pycon
    >>> tried = (Bar(0, 1, "running", Status.FAILED), Bar(1, 2, "running", Status.OK))
    >>> waits = (Bar(0, 2, "waiting", None),)
    >>> rows = [Row(0, "a", tried, Status.OK, 1), Row(1, "b", waits, None, None)]
    >>> [drawn.word for drawn in endings_used(rows)]  # "b" has not ended: it is running
    ['ok', 'failed', 'running']

    ```
    """
    used = {row.ending.word for row in rows}
    used |= {bar.ending.word for row in rows for bar in row.bars if bar.kind == "running"}
    return [drawn for word, drawn in ENDINGS.items() if word in used]


def marks_used(rows: Sequence[Row]) -> list[Mark]:
    """The stretches other than attempts that a timeline of ``rows`` draws, in `MARKS` order.

    ```pycon
    >>> tried = (Bar(0, 1, "running", Status.FAILED), Bar(1, 2, "running", Status.OK))
    >>> waits = (Bar(0, 2, "waiting", None),)
    >>> rows = [Row(0, "a", tried, Status.OK, 1), Row(1, "b", waits, None, None)]
    >>> [mark.kind for mark in marks_used(rows)]
    ['waiting', 'running']

    ```
    """
    kinds = {bar.kind for row in rows for bar in row.bars}
    if any(bar.hedge for row in rows for bar in row.bars):
        kinds.add("hedge")
    return [mark for kind, mark in MARKS.items() if kind in kinds]


def _blank(rows: Sequence[Row]) -> str:
    """What a blank stretch of a row means in a timeline of ``rows``."""
    pulled = any(row.bars and row.bars[0].start > 0 for row in rows)
    return "not planned yet, or over" if pulled else "over"


def legend(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """What each mark of a timeline of ``rows`` means, for the marks it has: ``(mark, meaning)``
    pairs, in the order a row draws them, then the endings; the terminal prints them in a line
    under the table, and the SVG's legend says the same.

    ```pycon
    >>> tried = (Bar(0, 1, "running", Status.FAILED), Bar(1, 2, "running", Status.OK))
    >>> waits = (Bar(0, 2, "waiting", None),)
    >>> rows = [Row(0, "a", tried, Status.OK, 1), Row(1, "b", waits, None, None)]
    >>> for mark, meaning in legend(rows):
    ...     print(mark, meaning)
    · waiting (for a worker, or a retry)
    █ running (coloured by its end)
    blank over
    ✓ ok
    ✗ failed
    … running, or never ran

    ```

    A blank stretch of a row is time in which its slot was neither waiting nor running: before
    it was planned (a slot pulled later from a lazy input, or a child run's), and after it was
    over.

    Args:
      rows: the rows drawn (see [`timeline_rows`][trio_supervisor.timeline.timeline_rows]).
    """
    said = [(mark.glyph, mark.legend) for mark in marks_used(rows)]
    said.append(("blank", _blank(rows)))
    return said + [(drawn.glyph, drawn.legend) for drawn in endings_used(rows)]


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
    completion rank, over a time axis from 0 to the wall time.

    ```pycon
    >>> agent = SimulatedAgent(0, fail={"reviews"}, latencies={"pricing": 1, "reviews": 0.5})
    >>> async def record():
    ...     trace = Trace()
    ...     await Supervisor(agent, max_workers=2).run(["pricing", "reviews"], trace=trace)
    ...     return trace
    >>> trace = trio.run(record, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> from rich.console import Console
    >>> console = Console(width=64)  # a terminal, or whatever rich draws on
    >>> console.print(render_timeline(trace, width=20))
    slot  subtask  timeline              end             done #
       0  pricing  ████████████████████  ✓ ok 1.00s           2
       1  reviews  ██████████            ✗ failed 0.50s       1
                   0s             1.00s

    ```

    A running bar followed by another (a retry) ends in its own ending glyph, so that how each
    attempt ended shows without colour. A hedge (another attempt of a slot, racing the one it
    hedges) is drawn ``▓`` on a line of its own under its slot's row (``└ hedge``; the k-th
    hedge of an attempt on line k), ending in its own glyph; the end label says how the slot's
    deciding attempt ended (the race's winner). ``sections`` (slot -> a heading
    ``label: text``) puts a line above a slot's row, its label where the subtasks are and its
    text on the timeline: the rounds of a re-planning run, each headed by the planner's decision
    (the top run's slots only, never a child run's).
    """
    sections = sections or {}
    right = trace.wall or 1.0
    rows = timeline_rows(trace, final)
    hedges = max((bar.hedge for row in rows for bar in row.bars), default=0)
    widest = max([len(row.label) for row in rows] + [len(_hedge_line(hedges))], default=0)
    table = Table(box=None, pad_edge=False, show_edge=False, title_justify="left")
    table.add_column("slot", justify="right", no_wrap=True, min_width=4)
    # a terminal has no hover to show a cut name: the column stays narrow enough to leave the
    # timeline and its ends their room in 80 columns (the SVG widens to the longest label)
    table.add_column(
        "subtask", overflow="ellipsis", max_width=max(7, min(TERMINAL_LABEL, widest)), no_wrap=True
    )
    table.add_column("timeline", no_wrap=True, min_width=width)
    table.add_column("end", justify="left", no_wrap=True, min_width=14)
    table.add_column("done #", justify="right", no_wrap=True)
    for row in rows:
        # a heading is the top run's (a child's slot numbers are its own), cut to the timeline's
        # width: it must not widen the column
        if not row.depth and row.slot in sections:
            label, _, text = printable(sections[row.slot]).partition(": ")
            text = text if len(text) <= width else text[: width - 1] + "…"
            table.add_row("", Text(label, style="bold"), Text(text, style="bold"), "", "")
        # a hedge has a line of its own under the row's (the k-th hedge of an attempt, line k)
        lines = 1 + max((bar.hedge for bar in row.bars), default=0)
        cells = [[" "] * width for _ in range(lines)]
        styles = [[""] * width for _ in range(lines)]
        last_run = max((bar.end for bar in row.bars if bar.kind == "running"), default=None)
        marks = []  # (line, column, glyph): where each attempt ended that is not the row's end
        for bar in row.bars:
            first = min(width - 1, int(bar.start / right * width))
            last = max(first + 1, min(width, round(bar.end / right * width)))
            mark = MARKS["hedge" if bar.hedge else bar.kind]
            style = bar.ending.style if bar.kind == "running" else mark.style
            for column in range(first, last):
                cells[bar.hedge][column], styles[bar.hedge][column] = mark.glyph, style
            if bar.kind != "running" or bar.status is None:
                continue
            # a hedge's line has no end label: it ends in its glyph; so does any attempt but the
            # deciding one, unless it ends the row (the end label says how)
            if bar.hedge or (not bar.deciding and (bar.lost or bar.end != last_run)):
                marks.append((bar.hedge, last - 1, bar.drawn[0]))
        for index, column, glyph in marks:  # drawn over the bars, so that no later bar hides one
            cells[index][column] = glyph
        line = Text()
        for index in range(lines):
            if index:
                line.append("\n")
            for cell, style in zip(cells[index], styles[index], strict=True):
                line.append(cell, style=style)
        named = row.label + "".join(f"\n{_hedge_line(index)}" for index in range(1, lines))
        end = Text(_ending(row), style=row.ending.style)
        table.add_row(
            str(row.slot), Text(named), line, end, "" if row.rank is None else str(row.rank)
        )
    axis = Text("0s".ljust(width - len(_seconds(right))) + _seconds(right), style="bright_black")
    table.add_row("", "", axis, "", "")
    return table


def _hedge_line(hedge: int) -> str:
    """The subtask column of a row's line of its ``hedge``-th hedge (none for 0)."""
    return "" if not hedge else "└ hedge" + (f" {hedge}" if hedge > 1 else "")


# The SVG picture: the same rows as the terminal table, drawn on a shared time axis. Its text and
# grid take the docs theme's colours where it is inlined in a page (mkdocs-material's CSS
# variables), with fallbacks for a plain viewer; bars keep one colour per ending in both schemes.
# Deterministic to the byte: coordinates are formatted with two decimals, nothing random, no ids.
_SVG_BASE = (
    ".ts-chart{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}"
    ".ts-chart text{fill:var(--md-default-fg-color,#1f2328)}"
    ".ts-chart .ts-head,.ts-chart .ts-tick,.ts-chart .ts-never{"
    "fill:var(--md-default-fg-color--light,#57606a)}"
    ".ts-chart .ts-grid{stroke:var(--md-default-fg-color--lightest,#d0d7de);stroke-width:1}"
    ".ts-chart .ts-axis{stroke:var(--md-default-fg-color--light,#57606a);stroke-width:1}"
    ".ts-chart .ts-wall{stroke:var(--md-default-fg-color--light,#57606a);stroke-dasharray:3 3}"
    ".ts-chart rect.ts-waiting{fill:var(--md-default-fg-color--lighter,#8c959f)}"
    ".ts-chart .ts-band{fill:#d1242f;fill-opacity:.12}"
    ".ts-chart rect.ts-held{fill:#2da44e;fill-opacity:.3}"
    ".ts-chart rect.ts-asked{fill:#d4a72c}"
    ".ts-chart .ts-bold{font-weight:bold}"
)


def svg_style() -> str:
    """The SVG's stylesheet: its frame, then each ending's bar and words from `ENDINGS` (an
    ending's words dark enough to read on white; on the site's dark scheme, its ``night``).

    ```pycon
    >>> style = svg_style()
    >>> ".ts-chart rect.ts-ok{fill:#2da44e}" in style, "[data-md-color-scheme=slate]" in style
    (True, True)

    ```
    """
    parts = [_SVG_BASE]
    for mark in MARKS.values():  # before the endings': a hedge's bar takes its ending's fill
        if mark.fill is not None:
            parts.append(f".ts-chart rect.{mark.css}{{fill:{mark.fill}}}")
    for drawn in ENDINGS.values():
        variable = f"--{drawn.css}-text"
        parts.append(
            f".ts-chart rect.{drawn.css}{{fill:{drawn.fill}}}"
            f".ts-chart text.{drawn.css}{{fill:var({variable},{drawn.ink})}}"
        )
    night = ";".join(f"--{drawn.css}-text:{drawn.night}" for drawn in ENDINGS.values())
    parts.append(f"[data-md-color-scheme=slate] .ts-chart{{{night}}}")
    return "".join(parts)


_CHAR = 7.3  # the advance of one 12px monospace character, for laying out columns
_ROW = 24.0  # height of one slot's row
_LINE = 14.0  # the height a row grows by for its label's second line
_BAR = 14.0  # height of a running bar (a waiting bar is a thin line through the row's middle)
_GAP = 2.0  # pixels between two attempts that follow each other at once: never one bar
_SLIVER = 2.0  # the narrowest attempt drawn: one that ended as it started still shows
#: Characters of a subtask the terminal table shows before it cuts it with an ellipsis.
TERMINAL_LABEL = 22
#: Characters of a subtask shown before it is cut with an ellipsis (its full name on hover);
#: the label column is as wide as its longest label up to this.
LABEL = 40
#: The same, in a compact picture (`render_svg`'s ``compact``).
COMPACT_LABEL = 18
_TIMELINE_HEAD = "timeline (plan order, top to bottom)"


def _n(value: float) -> str:
    """A coordinate, formatted the same on every run and platform."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def ticks(right: float) -> list[float]:
    """Round times for the axis: the finest step of 1, 2 or 5 x 10^k with at most 8 intervals
    (the player's timeline takes the same).

    ```pycon
    >>> ticks(2.5)
    [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]
    >>> ticks(10)
    [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]

    ```
    """
    exponent = -2
    while True:
        for mantissa in (1, 2, 5):
            step = mantissa * 10.0**exponent
            if right / step <= 8:
                count = int(right / step + 1e-9)
                return [round(index * step, 6) for index in range(count + 1)]
        exponent += 1


def legend_keys(rows: Sequence[Row]) -> list[tuple[str, str]]:
    """The SVG legend's keys, ``(css class, text)``, for what ``rows`` draw: the terminal's
    `legend` in the picture's own swatches, each ending's glyph before its words.

    ```pycon
    >>> tried = (Bar(0, 1, "running", Status.FAILED), Bar(1, 2, "running", Status.OK))
    >>> waits = (Bar(0, 2, "waiting", None),)
    >>> rows = [Row(0, "a", tried, Status.OK, 1), Row(1, "b", waits, None, None)]
    >>> for css, text in legend_keys(rows):
    ...     print(css, text)
    ts-waiting waiting (for a worker, or a retry)
    ts-blank blank: over
    ts-ok ✓ ok
    ts-failed ✗ failed
    ts-running … running, or never ran

    ```
    """
    keys = [
        (mark.css, mark.pictured or mark.legend)
        for mark in marks_used(rows)
        if mark.kind != "running"
    ]
    keys.append(("ts-blank", f"blank: {_blank(rows)}"))
    return keys + [(drawn.css, f"{drawn.glyph} {drawn.legend}") for drawn in endings_used(rows)]


def _wrapped(text: str, fits: int) -> list[str]:
    """``text`` in lines of at most ``fits`` characters, broken between words (a word longer
    than that is a line of its own)."""
    lines = [""]
    for word in text.split(" "):
        if lines[-1] and len(lines[-1]) + 1 + len(word) > fits:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return lines


def cut_label(text: str, fits: int = LABEL) -> str:
    """``text`` in at most ``fits`` characters: whole when it fits, else cut after the last
    whole word that fits, with an ellipsis, so that a label never ends inside a word, nor on a
    number whose noun was cut (a first word longer than ``fits`` alone is cut inside it).
    Pictures give the whole text on hover.

    ```pycon
    >>> cut_label("competitor discounts", 18)
    'competitor…'
    >>> cut_label("customer reviews, from app stores", 18)
    'customer reviews…'
    >>> cut_label("the parent: 2 rounds", 15)
    'the parent…'
    >>> cut_label("inventory", 18), cut_label("supercalifragilistic", 10)
    ('inventory', 'supercali…')

    ```

    Raises:
      ValueError: if ``fits`` is below 2 (no room for a character and the ellipsis).
    """
    if fits < 2:
        raise ValueError(f"a label fits at least 2 characters, got fits={fits}")
    if len(text) <= fits:
        return text
    head = text[: fits - 1]
    if not text[fits - 1].isspace():  # the cut falls inside a word: drop that word
        space = max(head.rfind(" "), head.rfind("\t"))
        head = head[:space] if space > 0 else head
    words = head.split()
    if len(words) > 1 and words[-1].replace(".", "").isdigit():  # a count without its noun
        head = head[: head.rstrip().rfind(" ")]
    return head.rstrip(" \t,;:·-") + "…"


def _cut(text: str, fits: int = LABEL) -> str:
    return cut_label(text, fits)


def label_lines(text: str, fits: int) -> list[str]:
    """A row's label in lines of at most ``fits`` characters: one when it fits, else two,
    broken where a word ends, the second cut (`cut_label`) if it is still too long; one line
    cut inside its word when the first word alone is too long.

    ```pycon
    >>> label_lines("competitor discounts", 18)
    ['competitor', 'discounts']
    >>> label_lines("customer reviews, from app stores and forums", 18)
    ['customer reviews,', 'from app stores…']
    >>> label_lines("inventory", 18), label_lines("supercalifragilistic", 10)
    (['inventory'], ['supercali…'])

    ```
    """
    if len(text) <= fits:
        return [text]
    space = text.rfind(" ", 0, fits + 1)
    if space <= 0:
        return [cut_label(text, fits)]
    return [text[:space].rstrip(), cut_label(text[space:].strip(), fits)]


def render_svg(
    trace: Trace,
    final: Mapping[int, Status] | None = None,
    *,
    title: str | None = None,
    width: float = 320.0,
    sections: Mapping[int, str] | None = None,
    compact: bool = False,
) -> str:
    """The run as an SVG picture, built on the same
    [`timeline_rows`][trio_supervisor.timeline.timeline_rows] as the terminal table.

    ```pycon
    >>> agent = SimulatedAgent(0, fail={"reviews"}, latencies={"pricing": 1, "reviews": 0.5})
    >>> async def record():
    ...     trace = Trace()
    ...     await Supervisor(agent, max_workers=2).run(["pricing", "reviews"], trace=trace)
    ...     return trace
    >>> trace = trio.run(record, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> svg = render_svg(trace, title="two sources")
    >>> svg.startswith("<svg"), svg.count('<g class="ts-row"')  # a row for each slot
    (True, 2)
    >>> svg == render_svg(trace, title="two sources")  # the same trace: the same bytes
    True

    ```

    One row per slot in plan order (a tree's child runs under their parent's, with its
    connectors): its waiting bar (a thin line) then its running bars (one per attempt, coloured
    by how it ended, apart by a gap when one follows another at once) on a time axis from 0 to
    the wall time, then the ending (glyph, word and when it ended, in its ending's colour) and
    the slot's completion rank; a hedge is a lower bar in its slot's row (the row's bar height
    split: the attempt on top, its k-th hedge k lanes under it), in its own ending's colour, the
    end label the deciding attempt's (the race's winner). The row of a slot that failed, timed
    out, gave up or crashed is tinted. The label column is as wide as its longest label, up to
    `LABEL` characters (a longer one is cut, its full name on hover); the legend lists the marks
    and endings drawn, no other. Two renders of the same trace are byte-identical.

    Args:
      trace: the recorded run (closed, for a fixed right edge).
      final: slot -> status to show instead of the recorded one, as for
        [`timeline_rows`][trio_supervisor.timeline.timeline_rows].
      title: the picture's accessible title (a ``<title>`` element), if any.
      width: the width of the time axis, in pixels.
      sections: slot -> a heading drawn on a line of its own above that slot's row (the rounds
        of a re-planning run, each headed by the planner's decision); the top run's slots only.
      compact: the narrow form, for two pictures side by side: labels cut at `COMPACT_LABEL`
        characters, short end labels (no times, which a bar's hover still has; a slot that never
        ran says only that), and narrow slot and rank columns under short headings.

    Raises:
      ValueError: if ``width`` is not positive.
    """
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width}")
    return SvgPicture(trace, final, title, width, sections or {}, compact).draw()


class SvgPicture:
    """One SVG picture of a run being drawn (see
    [`render_svg`][trio_supervisor.timeline.render_svg]): its layout, worked out once as it is
    made (the columns, each row's top, the legend's keys and lines), and a method that draws
    each part of it from that layout.

    Args:
      trace: the recorded run.
      final: slot -> status to show instead of the recorded one.
      title: the picture's accessible title, if any.
      width: the width of the time axis, in pixels (> 0).
      sections: slot -> a heading drawn above that slot's row.
      compact: the narrow form.
    """

    def __init__(
        self,
        trace: Trace,
        final: Mapping[int, Status] | None,
        title: str | None,
        width: float,
        sections: Mapping[int, str],
        compact: bool,
    ) -> None:
        self.trace = trace
        self.title = title
        self.width = width
        self.rows = timeline_rows(trace, final)
        self.right = trace.wall or 1.0  # the time at the axis's right end
        self._columns(compact)
        self._lines(sections)
        self._legend_keys()

    def _columns(self, compact: bool) -> None:
        """Where each column goes, and what its heading and each row's end label say."""
        rows = self.rows
        most = COMPACT_LABEL if compact else LABEL
        self.labels = max(7, min(most, max((len(row.label) for row in rows), default=0)))
        self.ends = [_ending(row, timed=not compact) for row in rows]
        # the columns' headings, each as wide as the column under it or narrower
        self.heads = ("slot", "timeline", "#") if compact else ("slot", _TIMELINE_HEAD, "done #")
        gap = 1 if compact else 2  # characters between two columns
        self.x_slot = (4 if compact else 5) * _CHAR  # right edge of the slot numbers
        self.x_label = self.x_slot + gap * _CHAR
        self.x_axis = self.x_label + (self.labels + gap) * _CHAR
        self.x_end = self.x_axis + self.width + gap * _CHAR
        ranks = max((len(str(row.rank)) for row in rows if row.rank is not None), default=1)
        wide = max(3, *map(len, self.ends), 0) + gap + max(ranks, len(self.heads[2]))
        self.x_rank = self.x_end + wide * _CHAR
        self.total_width = self.x_rank + _CHAR

    def _lines(self, sections: Mapping[int, str]) -> None:
        """The top of each row, and of each section's heading (a row above its first slot); a
        row whose label is two lines (`label_lines`) is taller by a line."""
        self.top = _ROW  # the header takes one row
        self.ys: list[float] = []
        self.headings: list[tuple[float, str]] = []
        self.label_lines = [label_lines(row.label, self.labels) for row in self.rows]
        self.tall = [_ROW + _LINE * (len(lines) - 1) for lines in self.label_lines]
        ys, headings = self.ys, self.headings
        y = self.top
        for index, row in enumerate(self.rows):
            if not row.depth and row.slot in sections:
                headings.append((y, printable(sections[row.slot])))
                y += _ROW
            ys.append(y)
            y += self.tall[index]
        self.bottom = y

    def _legend_keys(self) -> None:
        """Where each legend key goes, its words wrapped to the picture's width; the picture
        widens for a key too wide for it on a line of its own, and its height follows."""
        # (x, line, css, text) of each legend key; css None for a key's words wrapped to a next line
        self.placed: list[tuple[float, int, str | None, str]] = []
        placed = self.placed
        legend_x, line = _CHAR, 0
        for css, text in legend_keys(self.rows):
            wide = 20 + (len(text) + 3) * _CHAR
            if legend_x + wide > self.total_width and legend_x > _CHAR:  # on to a next line
                legend_x, line = _CHAR, line + 1
            # a key wider than the picture wraps at its words, under its first line's text
            fits = max(1, int((self.total_width - legend_x - 20) / _CHAR) - 1)
            parts = _wrapped(text, fits)
            placed.append((legend_x, line, css, parts[0]))
            for part in parts[1:]:
                line += 1
                placed.append((legend_x, line, None, part))
            legend_x += 20 + (max(map(len, parts)) + 3) * _CHAR
        # a key wider than the picture on a line of its own widens the picture: never clipped
        self.total_width = max(
            self.total_width, *(x + 20 + (len(text) + 1) * _CHAR for x, _, _, text in placed)
        )
        self.height = self.bottom + 52 + 16 * line  # the axis, its labels and the legend's lines

    def x_of(self, seconds: float) -> float:
        """Where ``seconds`` is on the time axis."""
        return self.x_axis + seconds / self.right * self.width

    def draw(self) -> str:
        """The picture, as SVG text: each part in the order it is drawn."""
        out = self.opening()
        out += self.header()
        out += self.grid()
        out += self.section_headings()
        for index, row in enumerate(self.rows):
            out += self.row(index, row)
        out += self.axis()
        out += self.legend()
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def opening(self) -> list[str]:
        """The ``<svg>`` element's start, its title and its style."""
        total_width, height = _n(self.total_width), _n(self.height)
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" class="ts-chart" role="img" '
            f'viewBox="0 0 {total_width} {height}" '
            f'width="{total_width}" height="{height}">'
        ]
        if self.title is not None:
            out.append(f"<title>{_xml(self.title)}</title>")
        out.append(f"<style>{svg_style()}</style>")
        return out

    def header(self) -> list[str]:
        """The columns' headings."""
        heads = self.heads
        head_y = _n(self.top - 8)
        return [
            f'<g class="ts-head">'
            f'<text class="ts-head" x="{_n(self.x_slot)}" y="{head_y}" text-anchor="end">'
            f"{heads[0]}</text>"
            f'<text class="ts-head" x="{_n(self.x_label)}" y="{head_y}">subtask</text>'
            f'<text class="ts-head" x="{_n(self.x_axis)}" y="{head_y}">{heads[1]}</text>'
            f'<text class="ts-head" x="{_n(self.x_end)}" y="{head_y}">end</text>'
            f'<text class="ts-head" x="{_n(self.x_rank)}" y="{head_y}" text-anchor="end">'
            f"{heads[2]}</text>"
            f"</g>"
        ]

    def grid(self) -> list[str]:
        """A vertical line through the rows at each tick of the axis."""
        out = ['<g class="ts-grid-lines">']
        top, bottom = _n(self.top), _n(self.bottom)
        for tick in ticks(self.right):
            grid_x = _n(self.x_of(tick))
            out.append(
                f'<line class="ts-grid" x1="{grid_x}" y1="{top}" x2="{grid_x}" y2="{bottom}"/>'
            )
        out.append("</g>")
        return out

    def section_headings(self) -> list[str]:
        """Each section's heading, on a line of its own, cut to the picture's width."""
        out = []
        fits = int((self.total_width - self.x_label) / _CHAR)  # characters of a heading that fit
        for y, heading in self.headings:
            out.append(
                f'<g class="ts-section"><line class="ts-axis" x1="0" y1="{_n(y + 1)}" '
                f'x2="{_n(self.total_width)}" y2="{_n(y + 1)}"/><text class="ts-head ts-bold" '
                f'x="{_n(self.x_label)}" y="{_n(y + _ROW / 2 + 4)}">'
                f"<title>{escape(heading)}</title>"
                f"{escape(_cut(heading, fits))}</text></g>"
            )
        return out

    def row(self, index: int, row: Row) -> list[str]:
        """Row ``index``: its tint when the slot failed, its number, label, bars, ending and
        rank."""
        y = self.ys[index]
        tall = self.tall[index]
        middle = y + tall / 2
        text_y = _n(middle + 4)
        drawn = row.ending
        ended_as = "none" if row.status is None else row.status.value
        rank = "" if row.rank is None else str(row.rank)
        depth = f' data-depth="{row.depth}"' if row.depth else ""
        out = [
            f'<g class="ts-row" data-slot="{row.slot}" data-status="{escape(ended_as)}" '
            f'data-ending="{escape(drawn.word)}" data-rank="{rank}"{depth}>'
        ]
        if drawn.fault:  # the slot's own failure
            out.append(
                f'<rect class="ts-band" x="0" y="{_n(y + 1)}" '
                f'width="{_n(self.total_width)}" height="{_n(tall - 2)}"/>'
            )
        marked = f" {drawn.css} ts-bold" if drawn.fault else ""
        out.append(
            f'<text class="ts-slot{marked}" x="{_n(self.x_slot)}" y="{text_y}" '
            f'text-anchor="end">{row.slot}</text>'
        )
        first, *rest = self.label_lines[index]
        label_y = _n(middle + 4 - _LINE / 2 * len(rest))
        second = "".join(
            f'<tspan x="{_n(self.x_label)}" dy="{_n(_LINE)}">{escape(line)}</tspan>'
            for line in rest
        )
        out.append(
            f'<text class="ts-label{marked}" x="{_n(self.x_label)}" y="{label_y}">'
            f"<title>{escape(row.label)}</title>{escape(first)}{' ' if rest else ''}{second}"
            "</text>"
        )
        out += _svg_bars(row, middle, self.x_of, self.width / self.right)
        ran = any(bar.kind == "running" for bar in row.bars)
        css = drawn.css if ran or row.journaled else "ts-never"
        out.append(
            f'<text class="ts-end {css}" x="{_n(self.x_end)}" y="{text_y}">'
            f"{escape(self.ends[index])}</text>"
        )
        out.append(
            f'<text class="ts-rank" x="{_n(self.x_rank)}" y="{text_y}" text-anchor="end">'
            f"{rank}</text>"
        )
        out.append("</g>")
        return out

    @property
    def axis_y(self) -> float:
        """Where the time axis runs, under the rows."""
        return self.bottom + 4

    def axis(self) -> list[str]:
        """The time axis: its line, the wall time's line and label, and each tick's label
        where it leaves room for the ones beside it."""
        axis_y = self.axis_y
        wall = self.trace.wall
        out = ['<g class="ts-time">']
        out.append(
            f'<line class="ts-axis" x1="{_n(self.x_axis)}" y1="{_n(axis_y)}" '
            f'x2="{_n(self.x_axis + self.width)}" y2="{_n(axis_y)}"/>'
        )
        wall_x = _n(self.x_of(wall))  # the axis's right end, or its left for a run of no time
        out.append(
            f'<line class="ts-wall" x1="{wall_x}" y1="{_n(self.top)}" x2="{wall_x}" '
            f'y2="{_n(axis_y)}"/>'
        )
        room = 6 * _CHAR  # no tick label this close to the wall time's label, nor to the last one
        labelled = -math.inf  # where the last tick label was drawn
        for tick in ticks(self.right):
            x = self.x_of(tick)
            out.append(
                f'<line class="ts-axis" x1="{_n(x)}" y1="{_n(axis_y)}" '
                f'x2="{_n(x)}" y2="{_n(axis_y + 4)}"/>'
            )
            if abs(self.x_of(wall) - x) >= room and x - labelled >= room:
                labelled = x
                out.append(
                    f'<text class="ts-tick" x="{_n(x)}" y="{_n(axis_y + 16)}" '
                    f'text-anchor="middle">{tick:g}s</text>'
                )
        out.append(
            f'<text class="ts-wall-label ts-bold" x="{wall_x}" y="{_n(axis_y + 16)}" '
            f'text-anchor="middle">{wall:.2f}s</text>'
        )
        out.append("</g>")
        return out

    def legend(self) -> list[str]:
        """The legend: a swatch and its words for each mark and ending drawn."""
        out = ['<g class="ts-legend">']
        for legend_x, line, kind, text in self.placed:
            legend_y = self.axis_y + 36 + 16 * line
            swatch_y, swatch_h = (legend_y - 9, 10)
            if kind in ("ts-waiting", "ts-asked"):
                swatch_y, swatch_h = (legend_y - 6, 3 if kind == "ts-waiting" else 5)
            elif kind == MARKS["hedge"].css:  # a lower bar
                swatch_y, swatch_h = (legend_y - 4, 5)
            # a blank stretch is drawn as nothing: its key has no swatch, nor has a wrapped line
            if kind is not None and kind != "ts-blank":
                out.append(
                    f'<rect class="{kind}" x="{_n(legend_x)}" y="{_n(swatch_y)}" width="16" '
                    f'height="{swatch_h}"/>'
                )
            out.append(
                f'<text class="ts-tick" x="{_n(legend_x + 20)}" y="{_n(legend_y)}">'
                f"{escape(text)}</text>"
            )
        out.append("</g>")
        return out


def _xml(text: str) -> str:
    """``text`` as SVG text: nothing in it that XML forbids or a viewer acts on, then escaped."""
    return escape(printable(text))


def _svg_bars(row: Row, middle: float, x_of: Callable[[float], float], scale: float) -> list[str]:
    """The SVG shapes of one row's bars: ``scale`` is pixels a second. An attempt that starts
    where the one before it ended starts a gap later: two attempts are never drawn as one. A row
    with hedges splits its bar's height: the attempt on top, its k-th hedge k lanes under it."""
    out = []
    lanes = 1 + max((bar.hedge for bar in row.bars), default=0)
    tall = _BAR / lanes
    attempt = 0  # the attempts so far
    after = [-math.inf] * lanes  # the right edge of each lane's last attempt
    for bar in row.bars:
        x, w = x_of(bar.start), max(1.0, (bar.end - bar.start) * scale)
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
                f"for {_xml(bar.note or '')} before a retry</title></rect>"
            )
        elif bar.kind == "held":
            out.append(
                f'<rect class="ts-held" x="{_n(x)}" y="{_n(middle - _BAR / 2)}" '
                f'width="{_n(w)}" height="{_n(_BAR)}" rx="2">'
                f"<title>done, held {span} until every earlier slot was handed over</title>"
                "</rect>"
            )
        else:
            attempt += 1
            right = x + (bar.end - bar.start) * scale
            x = max(x, after[bar.hedge] + _GAP)
            w = max(_SLIVER, right - x)
            after[bar.hedge] = x + w
            drawn = bar.ending
            said = "still running" if bar.status is None else drawn.legend
            if bar.note is not None:
                said = f"{said}, {bar.note}"
            if bar.lost:
                said = f"{said}: {LOST}"
            css = f"{MARKS['hedge'].css} {drawn.css}" if bar.hedge else drawn.css
            which = f"attempt {attempt}" + (f" (hedge {bar.hedge})" if bar.hedge else "")
            out.append(
                f'<rect class="ts-bar {css}" data-attempt="{attempt}" x="{_n(x)}" '
                f'y="{_n(middle - _BAR / 2 + bar.hedge * tall)}" width="{_n(w)}" '
                f'height="{_n(tall)}" rx="2">'
                f"<title>{which}, running {span}: {_xml(said)}</title></rect>"
            )
    return out
