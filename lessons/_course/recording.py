"""Recording runs: a run as the plain data ``--json`` prints (and the docs' player replays), and
every run's trace as one trace-event file for Perfetto (``--trace-out``)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lessons._course.running import Run, final_statuses, result_slots
from lessons._course.steps import step
from trio_supervisor import Answer, Trace
from trio_supervisor.timeline import trace_events


def run_dict(run: Run) -> dict[str, Any]:
    """``run`` as plain data for ``--json``.

    ``options`` holds every option of the step's ``supervise`` as the run used it (the
    step's default where neither the demo nor the command line set it; no bound, such as an
    infinite timeout, is ``null``), and ``take`` for a step that streams. Each slot, in the
    results and in the trace, carries its ``status``, ``attempts`` (the worker's calls),
    ``started`` (its first attempt's start) and ``finished`` (its last attempt's end), in
    seconds since the trace's origin. ``endpoint`` and ``model`` say where a step that takes
    ``--endpoint`` sent its requests (null otherwise, as for the loopback server), a password in
    the URL masked (see `endpoint_shown`).
    """
    slots = slot_facts(run)
    aggregate = None
    if run.aggregate is not None:
        aggregate = {
            "results": [
                {
                    "slot": slot,
                    "subtask": result.subtask,
                    "output": result.output,
                    "error": result.error,
                    **slots.get(slot, {}),
                    "status": result.status.value,
                }
                for slot, result in zip(result_slots(run), run.aggregate.results, strict=True)
            ],
            "succeeded": run.aggregate.succeeded,
            "failed": run.aggregate.failed,
            "degraded": run.aggregate.degraded,
        }
    trace = None
    if run.trace is not None:
        trace = run.trace.to_dict()
        for traced in trace["slots"]:
            traced.update(slots[traced["slot"]])
    return {
        "step": run.step,
        "demo": run.demo.title,
        "task": run.demo.task,
        "options": every_option(run),
        "aggregate": aggregate,
        "error": run.error,
        "answer": run.answer,
        "serial": run.serial,
        "stopped": run.stopped,
        "endpoint": None if run.endpoint is None else endpoint_shown(run.endpoint),
        "model": run.model,
        "trace": trace,
        "replan": None if run.replanned is None else replan_dict(run.replanned, run.trace),
        **journal_dict(run),
    }


def endpoint_shown(url: str) -> str:
    """``--endpoint`` as the runner shows it: a password in it masked as the API key is, by the
    agents' one helper (``http://ana:***@host/v1``)."""
    from trio_supervisor.agents import mask  # loads the SDK: only for a run given --endpoint

    return mask(url)


def journal_dict(run: Run) -> dict[str, Any]:
    """A journaling step's run: its ``run_id``, when its supervisor was killed (the demo's
    ``killed_at``, None when it was not: a resume) and how many results that left committed,
    the questions answered before the run shown, and those it left without an answer (the run,
    round and slot that ``python -m lessons approve`` names each by)."""
    if not step(run.step).journals:
        return {}
    killed = run.demo.killed_at if run.killed is not None else None
    return {
        "run_id": run.run_id,
        "killed_at": killed,
        "committed_at_kill": run.killed,
        "answered": list(run.answered),
        "parked": [
            {"run_id": name, "round": round_, "slot": slot, "question": question}
            for name, round_, slot, question in run.parked
        ],
    }


def every_option(run: Run) -> dict[str, Any]:
    """Every keyword option of the step's ``supervise`` (or ``stream``) and its value in this
    run, then ``take`` if the step streams; unbounded values are None."""
    record = step(run.step)
    options = {name: run.options.get(name, default) for name, default in record.options.items()}
    if record.streams:
        options["take"] = run.demo.take
    return {
        name: None if isinstance(value, float) and not math.isfinite(value) else value
        for name, value in options.items()
    }


def slot_facts(run: Run) -> dict[int, dict[str, Any]]:
    """Slot -> its status, attempts, started and finished, from the trace (the aggregate's
    status where it has the slot), times in seconds since the trace's origin."""
    if run.trace is None:
        return {}
    statuses = final_statuses(run)
    origin = run.trace.origin
    facts = {}
    for slot in run.trace.slots:
        status = statuses.get(slot.slot, slot.status)
        facts[slot.slot] = {
            "status": None if status is None else status.value,
            "attempts": len(slot.spans),
            "started": None if slot.started is None else slot.started - origin,
            "finished": None if slot.ended is None else slot.ended - origin,
        }
    return facts


def replan_dict(answer: Answer[str, str], trace: Trace | None) -> dict[str, Any]:
    """A re-planning run's rounds, ledger and ending as plain data (times since the trace's
    origin)."""
    origin = trace.origin if trace is not None else 0.0
    return {
        "ended_by": answer.ended_by,
        "degraded": answer.degraded,
        "reason": answer.reason,
        "rounds": [
            {
                "round": done.number,
                "note": done.note,
                "error": done.error,
                "fresh": done.fresh,
                "stalled": done.stalled,
                "planned": done.planned - origin,
                "dispatched": done.dispatched - origin,
                "finished": done.finished - origin,
                "subtasks": len(done.entries),
            }
            for done in answer.ledger.rounds
        ],
        "ledger": [
            {
                "round": entry.round,
                "index": entry.index,
                "subtask": entry.subtask,
                "status": entry.result.status.value,
                "output": entry.result.output,
                "error": entry.result.error,
                "replaces": None if entry.replaces is None else list(entry.replaces),
            }
            for entry in answer.ledger.entries
        ],
    }


def write_trace_events(path: Path, runs: Sequence[Run]) -> None:
    """Write ``runs`` to ``path`` as one trace-event file: each run a process (``pid`` 1, 2, ...
    in the order they ran) named by its step and demo, each slot a track in it (see
    [`trace_events`][trio_supervisor.timeline.trace_events]), the slots' final statuses as the
    run's results say them."""
    events = []
    for pid, run in enumerate(runs, start=1):
        if run.trace is not None:
            process = f"{run.step} · {run.demo.title}"
            events += trace_events(run.trace, final_statuses(run), pid=pid, process=process)
    path.write_text(json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}) + "\n")


def runs_json(runs: Sequence[Run]) -> str:
    """What ``--json`` prints: ``{"runs": [...]}``, each run as `run_dict` gives it."""
    return json.dumps({"runs": [run_dict(run) for run in runs]}, indent=2)
