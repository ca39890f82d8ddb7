"""What a crash-isolated worker costs per subtask: ProcessWorker and RayWorker against a thread
and a plain call.

Each contender runs the same sync function through ``Supervisor.run`` with ``max_workers=K``
(K = the CPUs, trio_parallel's default number of processes): called in the supervisor's own
process (``await``-free, the least a worker can cost), through ``trio.to_thread.run_sync``
(a thread: no isolation from a crash, the GIL shared), through
``trio_supervisor.processes.ProcessWorker`` (a worker process per call), through
``trio_parallel.run_sync`` bare (the pool without the adapter: what the adapter adds), and
through ``trio_supervisor.ray.RayWorker`` (a Ray task per call, on a local cluster of K CPUs
started once in this process).
Two functions: ``nothing``, which returns its argument, so what is timed is the fixed cost of
the way in and out; and ``spin``, a few milliseconds of pure Python, where processes run in
parallel and threads take turns on the GIL.

The pool is warmed before the measured runs (every contender's processes are started once);
the cold starts, the time for K processes to start and answer once (``ProcessWorker.warm(K)``)
and for a local Ray cluster to start and answer once, are measured first, each in a fresh
process. Repetitions take turns, and the median is reported; for ``spin``, subtasks a second is
the throughput on the machine's cores.

Run: ``python benchmarks/processes.py`` (about two minutes on 2 cores; it writes
``benchmarks/results/processes.json``; ``--quick`` for a smoke run, which writes nothing and
starts no second Ray cluster for its cold start, ``--json`` for the figures as JSON).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import _machine
import trio
import trio_parallel

from trio_supervisor import Supervisor
from trio_supervisor.processes import ProcessWorker
from trio_supervisor.ray import RayWorker, start_local

K = os.cpu_count() or 1
RESULTS = Path(__file__).resolve().parent / "results" / "processes.json"


def machine() -> str:
    """This machine, with the versions of the pool and the cluster the benchmark measures."""
    return _machine.machine(
        f"trio-parallel {importlib.metadata.version('trio-parallel')}",
        f"ray {importlib.metadata.version('ray')}",
    )


def nothing(i: int) -> int:
    """The fixed cost: the function does nothing."""
    return i


def spin(i: int, loops: int = 100_000) -> int:
    """A few milliseconds of pure Python (it holds the GIL throughout)."""
    total = 0
    for n in range(loops):
        total += n * n
    return i + total - total


FUNCTIONS: dict[str, Callable[[int], int]] = {"nothing": nothing, "spin": spin}


def in_process(function: Callable[[int], int]) -> Callable[[int], Awaitable[int]]:
    async def call(i: int) -> int:
        return function(i)

    return call


def in_thread(function: Callable[[int], int]) -> Callable[[int], Awaitable[int]]:
    async def call(i: int) -> int:
        return await trio.to_thread.run_sync(function, i)

    return call


def bare_pool(function: Callable[[int], int]) -> Callable[[int], Awaitable[int]]:
    async def call(i: int) -> int:
        output: int = await trio_parallel.run_sync(function, i, kill_on_cancel=True)
        return output

    return call


def process_worker(function: Callable[[int], int]) -> Callable[[int], Awaitable[int]]:
    return ProcessWorker(function)


def ray_worker(function: Callable[[int], int]) -> Callable[[int], Awaitable[int]]:
    return RayWorker(function)  # on the local cluster main() started


CONTENDERS: dict[str, Callable[[Callable[[int], int]], Callable[[int], Awaitable[int]]]] = {
    "in process (plain call)": in_process,
    "trio.to_thread.run_sync": in_thread,
    "trio_parallel.run_sync (bare)": bare_pool,
    "ProcessWorker": process_worker,
    "RayWorker": ray_worker,
}


def measure(contender: str, function: str, n: int, k: int = K) -> float:
    """Seconds for one ``Supervisor.run`` of ``n`` subtasks; raises on a wrong or failed slot."""
    worker = CONTENDERS[contender](FUNCTIONS[function])

    async def run() -> float:
        start = time.perf_counter()
        aggregate = await Supervisor(worker, max_workers=k).run(range(n))
        elapsed = time.perf_counter() - start
        if [result.output for result in aggregate] != list(range(n)):
            failed = [result.error for result in aggregate if not result.ok][:1]
            raise RuntimeError(f"{contender} on {function}: wrong results {failed}")
        return elapsed

    return trio.run(run)


def cold_start(k: int = K) -> float:
    """Seconds for ``k`` new worker processes to start and answer once: ``ProcessWorker.warm``
    (this process's pool must be cold: run it first, in a fresh process)."""

    async def warm() -> float:
        start = time.perf_counter()
        await ProcessWorker(nothing).warm(k)
        return time.perf_counter() - start

    return trio.run(warm)


def ray_cold_start(k: int = K) -> float:
    """Seconds for a local Ray cluster of ``k`` CPUs to start and answer one call."""

    async def first_call() -> float:
        start = time.perf_counter()
        await trio.to_thread.run_sync(start_local, k)
        await RayWorker(nothing)(0)
        return time.perf_counter() - start

    return trio.run(first_call)


def cold_start_in_fresh_process(k: int, which: str = "--cold") -> float:
    done = subprocess.run(
        [sys.executable, __file__, which, str(k)], capture_output=True, text=True, check=True
    )
    seconds: float = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
    return seconds


def figures(sizes: dict[str, int], reps: int, k: int) -> dict[str, dict[str, float]]:
    """Function -> contender -> median µs per subtask, the contenders taking turns."""
    for name in CONTENDERS:  # warm up: every pool's processes and threads started once
        measure(name, "nothing", 4 * k, k)
    result: dict[str, dict[str, float]] = {}
    for function, n in sizes.items():
        samples: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        names = list(CONTENDERS)
        for rep in range(reps):
            shift = rep % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(measure(name, function, n, k) / n * 1e6)
        result[function] = {name: statistics.median(values) for name, values in samples.items()}
    return result


def rows(table: dict[str, dict[str, float]], sizes: dict[str, int]) -> list[dict[str, Any]]:
    """One row per function and contender, as the results file keeps them."""
    out = []
    for function, row in table.items():
        base = row["in process (plain call)"]
        for name, micros in row.items():
            out.append(
                {
                    "function": function,
                    "n": sizes[function],
                    "contender": name,
                    "us_per_subtask": round(micros, 1),
                    "vs_plain_call": round(micros / base, 2),
                    "subtasks_per_s": round(1e6 / micros, 1),
                }
            )
    return out


def report(
    table: dict[str, dict[str, float]],
    cold: float,
    cold_ray: float | None,
    sizes: dict[str, int],
    k: int,
) -> str:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    lines = [f"# machine: {machine()}", f"# K={k}; median µs per subtask; load average {load}", ""]
    lines.append(f"cold start: {cold * 1e3:,.0f} ms for {k} worker processes to answer once")
    if cold_ray is not None:
        lines.append(
            f"cold start: {cold_ray * 1e3:,.0f} ms for a local Ray cluster of {k} CPUs to "
            "answer once"
        )
    for function, row in table.items():
        base = row["in process (plain call)"]
        lines += ["", f"## {function} (N={sizes[function]:,})", ""]
        lines += ["| contender | µs/subtask | / plain call | subtasks/s |", "|---|---:|---:|---:|"]
        for name, micros in row.items():
            lines.append(
                f"| {name} | {micros:,.1f} | {micros / base:,.1f}x | {1e6 / micros:,.0f} |"
            )
    nothing = table["nothing"]
    adds = nothing["ProcessWorker"] - nothing["trio_parallel.run_sync (bare)"]
    lines += ["", f"what the adapter adds to the bare pool: {adds:,.1f} µs per subtask"]
    lines.append(
        f"what a Ray task costs against a worker process: "
        f"{nothing['RayWorker'] - nothing['ProcessWorker']:+,.1f} µs per subtask"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--nothing", type=int, default=2_000, metavar="N", help="subtasks (2000)")
    p.add_argument("--spin", type=int, default=200, metavar="N", help="subtasks (200)")
    p.add_argument("--reps", type=int, default=3, help="repetitions (3)")
    p.add_argument("--workers", type=int, default=K, metavar="K", help=f"max_workers ({K})")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke run")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--cold", type=int, metavar="K", help=argparse.SUPPRESS)
    p.add_argument("--cold-ray", type=int, metavar="K", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cold is not None:
        print(json.dumps({"seconds": cold_start(args.cold)}))
        return {}
    if args.cold_ray is not None:
        print(json.dumps({"seconds": ray_cold_start(args.cold_ray)}))
        return {}
    if args.quick:
        args.nothing, args.spin, args.reps = 20, 4, 1
    sizes = {"nothing": args.nothing, "spin": args.spin}
    cold = cold_start_in_fresh_process(args.workers)
    # a smoke run starts one cluster, not a second one in a fresh process to time its start
    cold_ray = None if args.quick else cold_start_in_fresh_process(args.workers, "--cold-ray")
    start_local(args.workers)  # a cluster of K CPUs, as the pool has K processes
    table = figures(sizes, args.reps, args.workers)
    data = {
        "machine": machine(),
        "k": args.workers,
        "cold_start": cold,
        "cold_start_ray": cold_ray,
        "us_per_subtask": table,
    }
    text = report(table, cold, cold_ray, sizes, args.workers)
    print(json.dumps(data, indent=2) if args.json else text)
    if not args.quick:
        measured = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        kept = {
            "measured": measured,
            "machine": machine(),
            "k": args.workers,
            "load_average": [round(value, 1) for value in os.getloadavg()],
            "cold_start_s": {
                "ProcessWorker": round(cold, 3),
                "RayWorker": None if cold_ray is None else round(cold_ray, 3),
            },
            "rows": rows(table, sizes),
        }
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(kept, indent=2, ensure_ascii=False) + "\n")
    return data


if __name__ == "__main__":
    main()
