"""What the journal costs: a journaled run against a plain one, side by side.

Four figures, one run each (the median of ``--reps`` repetitions that take turns):

- fast slots: N subtasks of ``await trio.sleep(0); return i`` at K at a time, plain, journaled
  with group commit (``flush="group"``, the default), and journaled with ``flush="each"`` (on
  fewer slots: a commit per result is the point of it, and the ratio is per slot);
- slow slots: the same with a worker latency of 10 ms, where a real worker is;
- journal bytes per slot: the database and its WAL after the group-commit run, over N;
- resume: a run of the same ``run_id`` once all N slots are journaled (it runs nothing);
- leases: the journaled runs (fast and slow) with the journal's slot leases (the default)
  against the same without (``Journal(lease=None)``): what sharing a run's slots between
  supervisors costs one supervisor alone.

Targets (issue 22): group commit <= 1.5x plain at N=100k fast slots, <= 1.05x at 10 ms.
Targets (issue 34): leases <= 1.5x the journaled run without them at 10k fast slots, <= 1.05x
at 10 ms.

``--store postgres`` measures the same against a PostgreSQL journal, on a real server this
script starts on loopback (``trio_supervisor.testing.postgres``, with ``fsync`` on, as a team
runs it: each commit is on disk), a database of its own per journal; ``--store both`` measures
each store in turn, and ``--sizes 10000,100000`` each N of fast slots, a row per store and N.

``--processes 1,2,4`` measures, instead, supervisors in processes sharing one run: for each
store and each count, that many processes (each this script, ``--child``) resume the same run
id on the same journal at one instant, its slots shared through their leases; it reports the
wall time from the start to the last one's end, the slots each process ran, and whether every
slot's worker was called once in all and every process gave the whole run's results. Published
in ``results/journal_processes.json``: ``python benchmarks/journal.py --store both
--processes 1,2,4 --results benchmarks/results/journal_processes.json``.

Run: ``python benchmarks/journal.py`` (about a minute on 2 cores; ``--quick`` for a smoke run,
``--json`` for the figures as JSON). The stores side by side, as published in
``results/journal_stores.json``: ``python benchmarks/journal.py --store both --sizes
10000,100000 --results benchmarks/results/journal_stores.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio
import trio.lowlevel
from _machine import machine

from trio_supervisor import Durable, Journal, Supervisor
from trio_supervisor.testing.postgres import postgres_server

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


class Store:
    """Where the benchmark's journals go: a new SQLite file, or a new database on the
    loopback server, for each."""

    def __init__(self, kind: str, folder: Path, server: str | None) -> None:
        self.kind = kind
        self.folder = folder
        self.server = server
        self.numbers = itertools.count()

    def fresh(self) -> str:
        """A new, empty journal's target."""
        number = next(self.numbers)
        if self.server is None:
            return str(self.folder / f"journal-{number}.db")
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE bench{number}")
        return f"{self.server.rsplit('/', 1)[0]}/bench{number}"

    def size(self, target: str) -> int:
        """The bytes the journal at ``target`` holds: its file and WAL, or its tables."""
        if self.server is None:
            return sum(p.stat().st_size for p in Path(target).parent.glob(Path(target).name + "*"))
        import psycopg

        with psycopg.connect(target, autocommit=True) as conn:
            row = conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
            ).fetchone()
        return int(row[0]) if row and row[0] else 0


@contextlib.contextmanager
def opened(kind: str) -> Iterator[Store]:
    """The store ``kind`` for the block: a temporary folder, and for ``postgres`` a server."""
    folder = Path(tempfile.mkdtemp())
    try:
        if kind == "postgres":
            with postgres_server(fsync=True) as server:
                yield Store(kind, folder, server)
        else:
            yield Store(kind, folder, None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(store: Store, n: int, each_n: int, slow_n: int, reps: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {
        "plain": [],
        "group": [],
        "each": [],
        "each plain": [],
        "slow plain": [],
        "slow group": [],
        "resume": [],
        "unleased": [],
        "slow unleased": [],
    }
    size = 0.0
    for _ in range(reps):
        times["plain"].append(timed(fast, n, None, ""))
        target = store.fresh()
        with Journal(target) as journal:
            times["group"].append(timed(fast, n, journal, "bench"))
            times["resume"].append(timed(fast, n, journal, "bench"))
        size = store.size(target) / n
        times["each plain"].append(timed(fast, each_n, None, ""))
        with Journal(store.fresh(), flush="each") as journal:
            times["each"].append(timed(fast, each_n, journal, "bench"))
        times["slow plain"].append(timed(slow, slow_n, None, ""))
        with Journal(store.fresh()) as journal:
            times["slow group"].append(timed(slow, slow_n, journal, "bench"))
        with Journal(store.fresh(), lease=None) as journal:
            times["unleased"].append(timed(fast, n, journal, "bench"))
        with Journal(store.fresh(), lease=None) as journal:
            times["slow unleased"].append(timed(slow, slow_n, journal, "bench"))
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
        "leases / none": median["group"] / median["unleased"],
        "slow leases / none": median["slow group"] / median["slow unleased"],
    }


WORKERS = {"fast": fast, "10 ms": slow}
SHARED = "shared"  # the run id the processes share


def child(target: str, n: int, kind: str) -> None:
    """One of the processes on one run (``--child``): open the journal, say ``ready``, wait for
    ``go`` on stdin, run the plan of ``n`` slots as run ``SHARED``, then print as JSON the
    slots whose worker it called and whether its results are the whole run's."""
    work = WORKERS[kind]
    ran: list[int] = []

    async def worker(i: int) -> int:
        ran.append(i)
        return await work(i)

    async def main(journal: Journal) -> bool:
        supervisor = Supervisor(worker, max_workers=K)
        aggregate = await supervisor.run(range(n), durable=Durable(SHARED, journal))
        return [r.output for r in aggregate] == list(range(n))

    with Journal(target) as journal:
        print("ready", flush=True)
        sys.stdin.readline()
        whole = trio.run(main, journal)
    print(json.dumps({"ran": ran, "whole": whole}), flush=True)


def shared(store: Store, n: int, count: int, kind: str) -> dict[str, Any]:
    """``count`` processes on one run of ``n`` slots of the ``kind`` worker, in a new journal
    of ``store``, started at one instant: the wall time to the last one's end, the slots each
    ran, and whether every slot ran once and each process gave the whole run."""
    target = store.fresh()
    with Journal(target):  # the schema made once, before the processes race to it
        pass
    command = [sys.executable, __file__, "--child", target, str(n), kind]
    children = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(count)
    ]
    try:
        for one in children:
            assert one.stdout is not None
            assert one.stdout.readline().strip() == "ready"
        start = time.perf_counter()
        for one in children:
            assert one.stdin is not None
            one.stdin.write("go\n")
            one.stdin.flush()
        outs = [one.communicate(timeout=600)[0] for one in children]
        wall = time.perf_counter() - start
    finally:
        for one in children:
            if one.poll() is None:
                one.kill()
                one.communicate()
    said = [json.loads(out.splitlines()[-1]) for out in outs]
    calls = Counter(slot for one in said for slot in one["ran"])
    return {
        "store": store.kind,
        "worker": kind,
        "N": n,
        "processes": count,
        "wall s": wall,
        "slots per process": sorted((len(one["ran"]) for one in said), reverse=True),
        "every slot once": calls == Counter(range(n)),
        "each gave the whole run": all(one["whole"] for one in said),
    }


def report_shared(figures: dict[str, Any]) -> None:
    """Print one row of the processes' figures."""
    print(
        f"{figures['store']}, {figures['worker']} slots, N={figures['N']:,}, "
        f"{figures['processes']} process(es): {figures['wall s']:.2f}s, slots per process "
        f"{figures['slots per process']}, every slot once: {figures['every slot once']}, each "
        f"gave the whole run: {figures['each gave the whole run']}"
    )


def write_results(path: Path, rows: list[dict[str, Any]], command: str) -> None:
    """The figures as data, the docs site's performance page draws from: when and where they
    were measured, and one row of every figure (per store and N, when there are several)."""
    where = f"{machine()}, load average {os.getloadavg()[0]:.1f}"
    data = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": where,
        "benchmark": "journal.py",
        "command": command,
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def report(figures: dict[str, Any]) -> None:
    """Print one row of figures."""
    store = f" ({figures['store']})" if "store" in figures else ""
    print(f"fast slots, N={figures['N']:,}, K={K}{store}:")
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
    print(
        f"leases: {figures['leases / none']:.2f}x the journaled run without them (target <= "
        f"1.5x), {figures['slow leases / none']:.3f}x at 10 ms (target <= 1.05x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run at a tiny size")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--store",
        choices=["sqlite", "postgres", "both"],
        default="sqlite",
        help="the journal's store: a SQLite file, a PostgreSQL server on loopback, or each",
    )
    parser.add_argument(
        "--sizes",
        default="100000",
        help="the N of the fast-slot runs, comma-separated (a row each)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        metavar="FILE",
        help="also write the figures there as JSON (benchmarks/results/journal.json)",
    )
    parser.add_argument(
        "--processes",
        metavar="COUNTS",
        help="instead: that many processes on one run, comma-separated (1,2,4), per store",
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("TARGET", "N", "WORKER"), help=argparse.SUPPRESS
    )
    options = parser.parse_args()
    if options.child:
        target, n, kind = options.child
        child(target, int(n), kind)
        return
    kinds = ["sqlite", "postgres"] if options.store == "both" else [options.store]
    sizes = [300] if options.quick else [int(size) for size in options.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    if options.processes:
        counts = [int(count) for count in options.processes.split(",")]
        n = 300 if options.quick else 10_000
        for kind in kinds:
            with opened(kind) as store:
                rows += [shared(store, n, c, worker) for worker in WORKERS for c in counts]
        if options.results:
            said = " ".join(["python", "benchmarks/journal.py", *sys.argv[1:]])
            write_results(options.results, rows, said)
        if options.json:
            print(json.dumps(rows, indent=2))
            return
        for figures in rows:
            report_shared(figures)
        return
    for kind in kinds:
        with opened(kind) as store:
            for n in sizes:
                if options.quick:
                    figures = measure(store, n, 100, 200, 1)
                else:
                    figures = measure(store, n, 5_000, 5_000, options.reps)
                if options.store != "sqlite":
                    figures = {"store": kind, **figures}
                rows.append(figures)
    if options.results:
        said = " ".join(["python", "benchmarks/journal.py", *sys.argv[1:]])
        write_results(options.results, rows, said)
    if options.json:
        print(json.dumps(rows[0] if len(rows) == 1 else rows, indent=2))
        return
    for figures in rows:
        report(figures)


if __name__ == "__main__":
    main()
