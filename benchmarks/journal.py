"""What the journal costs: a journaled run against a plain one, side by side.

Four figures, one run each (the median of ``--reps`` repetitions that take turns):

- fast slots: N subtasks of ``await trio.sleep(0); return i`` at K at a time, plain, journaled
  with group commit (``flush="group"``, the default), and journaled with ``flush="each"`` (on
  fewer slots: a commit per result is the point of it, and the ratio is per slot);
- slow slots: the same with a worker latency of 10 ms, where a real worker is;
- journal bytes per slot: the database and its WAL after the group-commit run, over N;
- resume: a run of the same ``run_id`` once all N slots are journaled (it runs nothing).

Targets (issue 22): group commit <= 1.5x plain at N=100k fast slots, <= 1.05x at 10 ms.

Run: ``python benchmarks/journal.py`` (about a minute on 2 cores; ``--quick`` for a smoke run,
``--json`` for the figures as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio
import trio.lowlevel
from _machine import machine

from trio_supervisor import Durable, Journal, Supervisor

K = 100


async def fast(i: int) -> int:
    await trio.lowlevel.checkpoint()
    return i


async def slow(i: int) -> int:
    await trio.sleep(0.01)
    return i


def timed(worker: Any, n: int, journal: Journal | None, run_id: str) -> float:
    supervisor = Supervisor(worker, max_workers=K)
    named: dict[str, Any] = {} if journal is None else {"durable": Durable(run_id, journal)}

    async def main() -> float:
        start = time.perf_counter()
        aggregate = await supervisor.run(range(n), **named)
        took = time.perf_counter() - start
        assert [r.output for r in aggregate] == list(range(n))
        return took

    return trio.run(main)


def measure(n: int, each_n: int, slow_n: int, reps: int) -> dict[str, float]:
    where = Path(tempfile.mkdtemp())
    times: dict[str, list[float]] = {
        "plain": [],
        "group": [],
        "each": [],
        "each plain": [],
        "slow plain": [],
        "slow group": [],
        "resume": [],
    }
    size = 0.0
    try:
        for rep in range(reps):
            times["plain"].append(timed(fast, n, None, ""))
            path = where / f"group-{rep}.db"
            with Journal(path) as journal:
                times["group"].append(timed(fast, n, journal, "bench"))
                times["resume"].append(timed(fast, n, journal, "bench"))
            size = sum(p.stat().st_size for p in where.glob(f"group-{rep}.db*")) / n
            times["each plain"].append(timed(fast, each_n, None, ""))
            with Journal(where / f"each-{rep}.db", flush="each") as journal:
                times["each"].append(timed(fast, each_n, journal, "bench"))
            times["slow plain"].append(timed(slow, slow_n, None, ""))
            with Journal(where / f"slow-{rep}.db") as journal:
                times["slow group"].append(timed(slow, slow_n, journal, "bench"))
    finally:
        shutil.rmtree(where, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "N": n,
        "plain s": median["plain"],
        "group s": median["group"],
        "group / plain": median["group"] / median["plain"],
        "each N": each_n,
        "each / plain": median["each"] / median["each plain"],
        "each us per slot": 1e6 * (median["each"] - median["each plain"]) / each_n,
        "slow N": slow_n,
        "slow group / plain": median["slow group"] / median["slow plain"],
        "bytes per slot": size,
        "resume s": median["resume"],
    }


def write_results(path: Path, figures: dict[str, float]) -> None:
    """The figures as data, the docs site's performance page draws from: when and where they
    were measured, and one row of every figure."""
    where = f"{machine()}, load average {os.getloadavg()[0]:.1f}"
    data = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": where,
        "benchmark": "journal.py",
        "command": "python benchmarks/journal.py",
        "rows": [figures],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run at a tiny size")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--results",
        type=Path,
        metavar="FILE",
        help="also write the figures there as JSON (benchmarks/results/journal.json)",
    )
    options = parser.parse_args()
    if options.quick:
        figures = measure(300, 100, 200, 1)
    else:
        figures = measure(100_000, 5_000, 5_000, options.reps)
    if options.results:
        write_results(options.results, figures)
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"fast slots, N={figures['N']:,}, K={K}:")
    print(
        f"  plain {figures['plain s']:.3f}s, group commit {figures['group s']:.3f}s: "
        f"{figures['group / plain']:.2f}x (target <= 1.5x)"
    )
    print(
        f"  flush='each' at N={figures['each N']:,}: {figures['each / plain']:.2f}x, "
        f"{figures['each us per slot']:.0f} us per slot more"
    )
    print(
        f"slow slots (10 ms), N={figures['slow N']:,}: group commit "
        f"{figures['slow group / plain']:.3f}x (target <= 1.05x)"
    )
    print(f"journal bytes per slot: {figures['bytes per slot']:.0f}")
    print(f"resume of {figures['N']:,} finished slots: {figures['resume s']:.3f}s")


if __name__ == "__main__":
    main()
