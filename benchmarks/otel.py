"""What OpenTelemetry spans cost a run: off against on, and the off path against the code before.

On: a ``Supervisor(..., spans=Spans(tracer))`` whose tracer's provider has the SDK's
``BatchSpanProcessor`` over an exporter that drops what it is given (so the figure is the
library's and the SDK's work, not a network's). Off: the same supervisor without ``spans=``.
Each runs N slots of workers that sleep 1 ms (real time), at most K at a time; repetitions take
turns, in one process, and the median wall time of each is reported with the cost of on over
off. Every span is counted as it ends, so a run that dropped or leaked spans shows. Beside
them, the SDK alone: the same spans (a run's, and per slot a slot's and an attempt's) made in a
plain loop with the same processor, the cost no recorder of these spans can avoid; what on costs
beyond it is the library's.

The off path against the code before (``--baseline SRC``, a source tree of the library as it was,
its ``src`` directory): N slots of ``await sleep(0)`` workers, the benchmark of
``benchmarks/overhead.py``, run in fresh processes that take turns between that tree and this
one; a supervisor without ``spans=`` runs exactly the code it ran before, so the two should be
within the noise.

Run: ``python benchmarks/otel.py`` (``--quick`` for a smoke run, ``--json PATH`` to write the
figures, ``--baseline SRC`` for the off path).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio
from _machine import machine
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from trio_supervisor import Supervisor
from trio_supervisor.otel import Spans

TARGET = 0.05  # on may cost at most 5% of the wall time of 1 ms workers


class Dropping(SpanExporter):
    """An exporter that counts the spans it is given and keeps none."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS


async def one_ms(i: int) -> int:
    await trio.sleep(0.001)
    return i


def timed(n: int, k: int, spans: Spans | None) -> float:
    supervisor = Supervisor(one_ms, max_workers=k, spans=spans)

    async def main() -> None:
        aggregate = await supervisor.run(range(n))
        assert all(result.ok for result in aggregate)

    began = time.perf_counter()
    trio.run(main)
    return time.perf_counter() - began


def sdk_floor(n: int, tracer: Any) -> float:
    """Seconds the SDK alone takes for a run's spans: a run span, and per slot a slot span
    and an attempt span under it, attributes set as the recorder sets them, in a plain loop."""
    from opentelemetry import trace

    began = time.perf_counter()
    run = tracer.start_span("run", attributes={"k": "run"})
    context = trace.set_span_in_context(run)
    for slot in range(n):
        span = tracer.start_span("slot", context=context, attributes={"slot": slot})
        attempt = tracer.start_span(
            "attempt", context=trace.set_span_in_context(span), attributes={"s": slot, "a": 1}
        )
        attempt.set_attribute("status", "ok")
        attempt.end()
        span.set_attributes({"status": "ok", "attempts": 1})
        span.end()
    run.end()
    return time.perf_counter() - began


def off_and_on(n: int, k: int, reps: int) -> dict[str, Any]:
    """Median wall seconds of a run off and on, taking turns."""
    off: list[float] = []
    on: list[float] = []
    floor: list[float] = []
    exported = 0
    for rep in range(reps):
        exporter = Dropping()
        # the SDK's defaults, but a queue that holds a run's burst of slot spans
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=4 * n))
        spans = Spans(provider.get_tracer("benchmark"))
        order = [(off, None), (on, spans)] if rep % 2 == 0 else [(on, spans), (off, None)]
        for times, given in order:
            times.append(timed(n, k, given))
        provider.shutdown()  # exports what the batch still holds
        exported = exporter.count
        alone = TracerProvider()
        alone.add_span_processor(BatchSpanProcessor(Dropping(), max_queue_size=4 * n))
        floor.append(sdk_floor(n, alone.get_tracer("floor")))
        alone.shutdown()
    expected = 1 + 2 * n  # the run, each slot, its one attempt
    off_s, on_s = statistics.median(off), statistics.median(on)
    return {
        "n": n,
        "k": k,
        "reps": reps,
        "off_s": round(off_s, 4),
        "on_s": round(on_s, 4),
        "cost": round(on_s / off_s - 1, 4),
        "on_us_per_slot": round((on_s - off_s) / n * 1e6, 2),
        # the SDK's own cost of the same spans, in a plain loop: what no recorder can avoid
        "sdk_us_per_slot": round(statistics.median(floor) / n * 1e6, 2),
        "spans_exported": exported,
        "spans_expected": expected,
    }


CHILD = """
import sys, time, trio
from trio_supervisor import Supervisor
n, k = int(sys.argv[1]), int(sys.argv[2])
async def work(i):
    await trio.sleep(0)
    return i
async def main():
    await Supervisor(work, max_workers=k).run(range(n))
trio.run(main)  # warm
began = time.perf_counter()
trio.run(main)
print((time.perf_counter() - began) / n * 1e6)
"""


def off_path(baseline: Path, n: int, k: int, reps: int) -> dict[str, Any]:
    """µs per slot without spans=, the code before against this code, fresh processes."""
    here = Path(__file__).resolve().parents[1] / "src"
    figures: dict[str, list[float]] = {"before": [], "now": []}
    for rep in range(reps):
        order = [("before", baseline), ("now", here)]
        for name, src in order if rep % 2 == 0 else reversed(order):
            env = {**os.environ, "PYTHONPATH": str(src)}
            shown = subprocess.run(
                [sys.executable, "-c", CHILD, str(n), str(k)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            figures[name].append(float(shown))
    before, now = statistics.median(figures["before"]), statistics.median(figures["now"])
    return {
        "n": n,
        "k": k,
        "reps": reps,
        "before_us_per_slot": round(before, 2),
        "now_us_per_slot": round(now, 2),
        "ratio": round(now / before, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="the src directory of the code before")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    args = parser.parse_args(argv)
    n, workers, reps = args.n, args.workers, args.reps
    if args.quick:
        n, workers, reps = 500, [10], 1
    rows: list[dict[str, Any]] = []
    print(f"# {machine()}")
    print(f"## off and on: N={n} slots of 1 ms workers, median of {reps}")
    print("| K | off s | on s | cost | µs/slot on | SDK alone µs/slot | spans |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k in workers:
        row = {"what": "off and on", **off_and_on(n, k, reps)}
        rows.append(row)
        print(
            f"| {k} | {row['off_s']:.3f} | {row['on_s']:.3f} | {row['cost']:+.1%} | "
            f"{row['on_us_per_slot']:.1f} | {row['sdk_us_per_slot']:.1f} | "
            f"{row['spans_exported']}/{row['spans_expected']} |"
        )
    if args.baseline is not None:
        row = {"what": "off path", **off_path(args.baseline, n, 100, max(reps, 3))}
        rows.append(row)
        print(f"## off path: N={n} slots of sleep(0) workers, K=100, fresh processes")
        print(
            f"before {row['before_us_per_slot']} µs/slot, now {row['now_us_per_slot']} µs/slot: "
            f"{row['ratio']}x"
        )
    for row in rows:
        if row["what"] == "off and on":
            met = row["cost"] <= TARGET
            verdict = "met" if met else "NOT met"
            print(f"- K={row['k']}: on costs {row['cost']:+.1%} (<= {TARGET:.0%}): {verdict}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        measured = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        data = {"measured": measured, "machine": machine(), "rows": rows}
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
