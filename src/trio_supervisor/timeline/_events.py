"""A recorded run in the trace-event format that Perfetto's UI and ``chrome://tracing`` open.

The format is a JSON object whose ``traceEvents`` list holds events with a phase (``ph``), a
time in microseconds (``ts``), a process (``pid``) and a thread (``tid``). The standard library
has no writer for it, and the libraries that write it record a live Python program (its calls, its
threads), not a trace already made; the mapping from a [`Trace`][trio_supervisor.Trace] is a few
dozen lines, so it is written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._contract import Status
from .._trace import SlotTrace, Span, Trace


def _micros(seconds: float) -> float:
    """Seconds as microseconds, to the nanosecond (the format's unit, fractions allowed)."""
    return round(seconds * 1e6, 3)


def _plain(subtask: Any) -> Any:
    """A subtask as a JSON value: itself if it is a string, number or None, else its repr."""
    if subtask is None or isinstance(subtask, str | int | float | bool):
        return subtask
    return repr(subtask)


def trace_events(
    trace: Trace,
    final: Mapping[int, Status] | None = None,
    *,
    pid: int = 1,
    process: str = "run",
) -> list[dict[str, Any]]:
    """The run as trace events: one process, a track (thread) per slot, a slice per attempt.

    ```pycon
    >>> agent = SimulatedAgent(0, fail={"reviews"}, latencies={"pricing": 1, "reviews": 0.5})
    >>> async def record():
    ...     trace = Trace()
    ...     await Supervisor(agent, max_workers=2).run(["pricing", "reviews"], trace=trace)
    ...     return trace
    >>> trace = trio.run(record, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> events = trace_events(trace)
    >>> [(e["name"], e["tid"], e["dur"], e["args"]["status"]) for e in events if e["ph"] == "X"]
    [('attempt 1', 1, 1000000.0, 'ok'), ('attempt 1', 2, 500000.0, 'failed')]
    >>> import json
    >>> perfetto = json.dumps({"traceEvents": events})  # in a file, Perfetto's UI opens it

    ```

    Every slot's track is named ``slot N: <subtask>`` and sorted by slot. Each attempt is a
    complete slice (``ph: "X"``) named ``attempt K`` from its start to its end (to the right edge
    of the run while it is still running), its ``status`` in ``args``. Instant events
    (``ph: "i"``, scoped to the track) mark when a slot was admitted (``waited``: seconds since it
    was planned), each retry (``after``: seconds since the previous attempt ended), and when a
    streaming supervisor handed the result over. Every event's ``args`` holds its ``slot`` and
    ``subtask``. Times (``ts``, ``dur``) are microseconds since the trace's origin.

    Wrap the events as ``{"traceEvents": events}`` and write them as JSON: Perfetto's UI opens the
    file. Several runs go into one file as several processes (a ``pid`` each).

    Args:
      trace: the recorded run.
      final: slot -> status to record for the slot's last attempt instead of the recorded one,
        as for [`timeline_rows`][trio_supervisor.timeline.timeline_rows]; a slot that never ran
        and has a final status gets an instant ``never ran`` with it.
      pid: the process number of this run's tracks.
      process: the process's name, shown above its tracks.

    Returns:
      The events, metadata first, then each slot's events in time order, slot by slot.

    Raises:
      ValueError: ``pid`` is below 1.
    """
    if pid < 1:
        raise ValueError(f"pid must be >= 1, got {pid}")
    final = final or {}
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": process}},
        {
            "name": "process_sort_index",
            "ph": "M",
            "pid": pid,
            "tid": 0,
            "args": {"sort_index": pid},
        },
    ]
    for slot in trace.slots:
        tid = slot.slot + 1
        name = f"slot {slot.slot}: {slot.subtask}"
        events += [
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}},
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": tid},
            },
        ]
    for slot in trace.slots:
        events += _slot_events(trace, slot, final.get(slot.slot), pid)
    return events


def _slot_events(
    trace: Trace, slot: SlotTrace, final: Status | None, pid: int
) -> list[dict[str, Any]]:
    """One slot's slices and instants, in time order."""
    origin = trace.origin
    said = {"slot": slot.slot, "subtask": _plain(slot.subtask)}

    def instant(name: str, time: float, **args: Any) -> dict[str, Any]:
        return {
            "name": name,
            "cat": "slot",
            "ph": "i",
            "s": "t",
            "ts": _micros(time - origin),
            "pid": pid,
            "tid": slot.slot + 1,
            "args": {**said, **args},
        }

    def slice_of(name: str, span: Span, end: float, **args: Any) -> dict[str, Any]:
        return {
            "name": name,
            "cat": "attempt",
            "ph": "X",
            "ts": _micros(span.start - origin),
            "dur": _micros(end - span.start),
            "pid": pid,
            "tid": slot.slot + 1,
            "args": {**said, **args},
        }

    events = []
    if slot.admitted is not None:
        events.append(instant("admitted", slot.admitted, waited=slot.admitted - slot.planned))
    previous_end: float | None = None
    for attempt, span in enumerate(slot.spans, start=1):
        end = span.end if span.end is not None else origin + trace.wall
        if span.hedge:  # another attempt while one runs: no retry, a slice of its own
            hedged = "running" if span.status is None else span.status.value
            name = f"hedge {attempt}"
            events.append(
                slice_of(
                    name, span, end, attempt=attempt, status=hedged, hedge=True, lost=span.lost
                )
            )
            continue
        if previous_end is not None:
            events.append(
                instant("retry", span.start, attempt=attempt, after=span.start - previous_end)
            )
        ended = span.status
        if attempt == len(slot.spans) and final is not None:
            ended = final
        status = "running" if ended is None else ended.value
        events.append(slice_of(f"attempt {attempt}", span, end, attempt=attempt, status=status))
        previous_end = end
    if not slot.spans and final is not None:
        events.append(instant("never ran", origin + trace.wall, status=final.value))
    if slot.delivered is not None:
        events.append(instant("handed over", slot.delivered))
    return events
