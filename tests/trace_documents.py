"""What a trace-event file must be for Perfetto's UI to open it: checked by the tests of
``trace_events`` and of the runner's ``--trace-out``."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

PHASES = {"M", "X", "i"}
METADATA = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


def check_trace_document(document: Any) -> dict[tuple[int, int], list[dict[str, Any]]]:
    """Assert that ``document`` is a trace-event file Perfetto reads, and return its events that
    are not metadata by track ``(pid, tid)``, in time order.

    Every event has a name, a known phase, a pid and a tid; every non-metadata event a ``ts``
    in microseconds and ``args`` naming its slot and subtask; a slice a ``dur`` >= 0; an instant a
    scope; every process and every track it uses is named by metadata; slices on one track do
    not overlap.
    """
    assert isinstance(document, dict)
    events = document["traceEvents"]
    assert isinstance(events, list)
    assert events
    named_processes, named_tracks = set(), set()
    tracks: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        assert {"name", "ph", "pid", "tid"} <= event.keys(), event
        assert event["ph"] in PHASES, event
        assert isinstance(event["pid"], int), event
        assert isinstance(event["tid"], int), event
        if event["ph"] == "M":
            assert event["name"] in METADATA, event
            if event["name"] == "process_name":
                named_processes.add(event["pid"])
            if event["name"] == "thread_name":
                named_tracks.add((event["pid"], event["tid"]))
            continue
        assert isinstance(event["ts"], int | float), event
        assert event["ts"] >= 0, event
        assert {"slot", "subtask"} <= event["args"].keys(), event
        if event["ph"] == "X":
            assert isinstance(event["dur"], int | float), event
            assert event["dur"] >= 0, event
        else:
            assert event["s"] == "t", event
        tracks[event["pid"], event["tid"]].append(event)
    assert {pid for pid, _ in tracks} <= named_processes
    assert set(tracks) <= named_tracks
    for track in tracks.values():
        track.sort(key=lambda event: event["ts"])
        slices = [event for event in track if event["ph"] == "X"]
        for before, after in itertools.pairwise(slices):
            assert before["ts"] + before["dur"] <= after["ts"], (before, after)
    return dict(tracks)
