"""A journaled run's slots as the timeline in the terminal, from the journal alone.

The journal keeps, per slot, its first attempt's start and its end on the clock of the process
that ran it (trio's), and the unix time its row was written; a slot running now has the unix
time its lease was claimed. Each supervisor's (``owner``'s) rows share one trio clock: they are
placed on the wall clock together, by the row written soonest after its slot ended, so that the
slots of a run resumed, or run by several supervisors, line up on one axis. The trace this
makes is replayed on a virtual clock (``MockClock``), through `Trace`'s own methods, and drawn
by [`render_timeline`][trio_supervisor.timeline.render_timeline].
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence

import trio
import trio.testing

from .._contract import Status
from .._journal_view import PARKED, SlotRow
from .._trace import Span, Trace

WIDTH = 48  # the timeline's columns


def placed(
    rows: Sequence[SlotRow], begun: float | None, now: float
) -> dict[int, tuple[float, float | None]]:
    """Each row's attempt (by index in ``rows``) on the wall clock: (start, end), end None for
    a slot running now. ``begun``: when the run was first journaled (unix time), where rows of
    an older journal (no ``written``) are put."""
    offsets: dict[str | None, float] = {}
    for row in rows:
        if row.written is not None and row.finished is not None:
            offset = row.written - row.finished
            known = offsets.get(row.owner)
            offsets[row.owner] = offset if known is None else min(known, offset)
    unplaced = [row.started for row in rows if row.written is None and row.started is not None]
    base = (begun if begun is not None else now) - min(unplaced, default=0.0)
    spans: dict[int, tuple[float, float | None]] = {}
    for index, row in enumerate(rows):
        if row.claimed is not None:
            spans[index] = (row.claimed, None)
        elif row.started is not None and row.finished is not None:
            offset = offsets.get(row.owner, base) if row.written is not None else base
            spans[index] = (row.started + offset, row.finished + offset)
    return spans


def render(rows: Sequence[SlotRow], begun: float | None, now: float, width: int) -> str:
    """The terminal timeline of ``rows`` (a run's slots, by round and slot), as text ``width``
    columns wide, with a line per slot that took more than one attempt and who ran what."""
    from rich.console import Console  # the drawing library, loaded only to draw

    from ..timeline import render_timeline

    spans = placed(rows, begun, now)
    origin = min([begun or now, *(start for start, _ in spans.values())])
    running = any(end is None for _, end in spans.values())
    right = max([0.0, *((end if end is not None else now) - origin for _, end in spans.values())])
    if running:
        right = max(right, now - origin)
    rounds = sorted({row.round for row in rows})
    sections = {}
    if len(rounds) > 1:
        for round_ in rounds:
            first = next(index for index, row in enumerate(rows) if row.round == round_)
            sections[first] = f"round {round_}: {sum(r.round == round_ for r in rows)} slots"

    async def replay() -> Trace:
        clock = trio.lowlevel.current_clock()
        assert isinstance(clock, trio.testing.MockClock)
        trace = Trace([row.subtask for row in rows])
        events = []
        for index, (start, end) in spans.items():
            events.append((start - origin, 1, index))
            if end is not None:
                events.append((end - origin, 0, index))
        opened: dict[int, Span] = {}
        for at, kind, index in sorted(events):
            if at > trio.current_time():
                clock.jump(at - trio.current_time())
            row = rows[index]
            if kind:
                opened[index] = trace.started(index, row.subtask)
            else:
                status = Status(row.status) if row.status is not None else Status.CANCELLED
                trace.ended(index, status, span=opened[index])
                opened[index].error = row.error
        if right > trio.current_time():
            clock.jump(right - trio.current_time())
        trace.close()
        return trace

    trace = trio.run(replay, clock=trio.testing.MockClock())
    final = {
        index: Status.AWAITING_APPROVAL for index, row in enumerate(rows) if row.status == PARKED
    }
    out = io.StringIO()
    console = Console(file=out, width=max(width, WIDTH + 62), color_system=None)
    console.print(render_timeline(trace, final, width=WIDTH, sections=sections))
    notes = []
    owners: dict[str, list[str]] = defaultdict(list)
    for index, row in enumerate(rows):
        name = f"{row.round}/{row.slot}" if len(rounds) > 1 else str(row.slot)
        if row.attempts > 1:
            hedged = f", {row.hedges} of them hedges" if row.hedges else ""
            notes.append(f"slot {name}: {row.attempts} attempts{hedged}")
        if row.owner is not None and index in spans:
            owners[row.owner].append(name + (" (running)" if row.claimed is not None else ""))
    if len(owners) > 1 or running:
        notes.extend(f"run by {owner}: slots {', '.join(slots)}" for owner, slots in owners.items())
    return out.getvalue() + "".join(f"{note}\n" for note in notes)
