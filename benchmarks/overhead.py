"""Per-subtask overhead of the supervisor against a hand-written loop and the peers.

Every contender runs N subtasks, at most K at a time, each ``await sleep(0); return i``, and
keeps every result. Repetitions are interleaved (each repetition runs every contender once, in a
rotated order) in one process, and the median time per subtask is reported with its ratio to the
hand-written trio loop. Peak memory per subtask is measured separately, each contender in a fresh
process (``--memory``), as the growth of peak RSS over a warmed-up baseline, divided by N.

Run: ``python benchmarks/overhead.py`` (``--quick`` for a smoke run, ``--help`` for options).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import trio

from trio_supervisor import Aggregate, Status, SubResult, Supervisor

TIMEOUT = 60.0  # never fires: the benchmark measures what a timeout costs, not what it does


async def work(i: int) -> int:
    await trio.sleep(0)  # noqa: ASYNC115  # the subtask the issue benchmarks
    return i


# --- trio: the supervisor --------------------------------------------------------------------


async def supervisor_run(n: int, k: int) -> list[Any]:
    aggregate = await Supervisor(work, max_workers=k).run(range(n))
    return [result.output for result in aggregate.results]


async def supervisor_run_timeout(n: int, k: int) -> list[Any]:
    aggregate = await Supervisor(work, max_workers=k, timeout=TIMEOUT).run(range(n))
    return [result.output for result in aggregate.results]


async def supervisor_stream(n: int, k: int) -> list[Any]:
    outputs = []
    async with Supervisor(work, max_workers=k).stream(range(n)) as results:
        async for result in results:
            outputs.append(result.output)
    return outputs


# --- trio: by hand, with the same features ---------------------------------------------------


async def hand_loop(n: int, k: int, subtask_timeout: float | None = None) -> list[Any]:
    """What a careful engineer writes by hand, the loop of the course's step 5 with a timeout:
    a limiter taken before ``start_soon``, a result per slot, ``try/except``, and
    ``move_on_after`` per subtask when there is a timeout."""
    plan = list(range(n))
    results: list[SubResult[int] | None] = [None] * n
    limiter = trio.CapacityLimiter(k)

    async def run_one(slot: int, subtask: int) -> None:
        started = trio.current_time()
        try:
            if subtask_timeout is None:
                output = await work(subtask)
            else:
                with trio.move_on_after(subtask_timeout) as scope:
                    output = await work(subtask)
                if scope.cancelled_caught:
                    results[slot] = SubResult.from_exception(
                        subtask,
                        trio.TooSlowError(),
                        Status.TIMED_OUT,
                        started=started,
                        finished=trio.current_time(),
                    )
                    return
        except Exception as exc:
            results[slot] = SubResult.from_exception(
                subtask, exc, started=started, finished=trio.current_time()
            )
        else:
            results[slot] = SubResult(
                subtask, output=output, started=started, finished=trio.current_time()
            )
        finally:
            limiter.release_on_behalf_of(slot)

    async with trio.open_nursery() as nursery:
        for slot, subtask in enumerate(plan):
            await limiter.acquire_on_behalf_of(slot)
            nursery.start_soon(run_one, slot, subtask)
    aggregate = Aggregate([result for result in results if result is not None])
    return [result.output for result in aggregate.results]


async def raw_nursery(n: int, k: int) -> list[Any]:
    """No bound, no isolation: every task at once (``k`` is ignored)."""
    results: list[Any] = [None] * n

    async def run_one(slot: int) -> None:
        results[slot] = await work(slot)

    async with trio.open_nursery() as nursery:
        for slot in range(n):
            nursery.start_soon(run_one, slot)
    return results


# --- the peers ----------------------------------------------------------------------------------


async def aiometer_run_all(n: int, k: int) -> list[Any]:
    import aiometer

    return await aiometer.run_all([functools.partial(work, i) for i in range(n)], max_at_once=k)


async def anyio_task_group(n: int, k: int) -> list[Any]:
    """anyio's idiom on the trio backend: a task per subtask, each entering a CapacityLimiter."""
    import anyio

    results: list[Any] = [None] * n
    limiter = anyio.CapacityLimiter(k)

    async def run_one(slot: int) -> None:
        async with limiter:
            await anyio.sleep(0)  # noqa: ASYNC115
            results[slot] = slot

    async with anyio.create_task_group() as group:
        for slot in range(n):
            group.start_soon(run_one, slot)
    return results


async def asyncio_task_group(n: int, k: int) -> list[Any]:
    """asyncio's idiom: TaskGroup with a task per subtask, each entering a Semaphore."""
    results: list[Any] = [None] * n
    semaphore = asyncio.Semaphore(k)

    async def run_one(slot: int) -> None:
        async with semaphore:
            await asyncio.sleep(0)
            results[slot] = slot

    async with asyncio.TaskGroup() as group:
        for slot in range(n):
            group.create_task(run_one(slot))
    return results


Contender = Callable[[int, int], Any]
CONTENDERS: dict[str, tuple[str, Contender]] = {
    "Supervisor.run": ("trio", supervisor_run),
    "Supervisor.run timeout": ("trio", supervisor_run_timeout),
    "Supervisor.stream": ("trio", supervisor_stream),
    "hand loop": ("trio", hand_loop),
    "hand loop timeout": ("trio", functools.partial(hand_loop, subtask_timeout=TIMEOUT)),
    "raw nursery": ("trio", raw_nursery),
    "aiometer run_all": ("trio", aiometer_run_all),
    "anyio TaskGroup+Limiter": ("trio", anyio_task_group),
    "asyncio TaskGroup+Semaphore": ("asyncio", asyncio_task_group),
}
BASELINE = {"Supervisor.run timeout": "hand loop timeout"}  # the rest compare to "hand loop"


def measure(name: str, n: int, k: int) -> float:
    """Seconds one run of ``name`` takes, timed inside its event loop (startup excluded)."""
    loop, contender = CONTENDERS[name]
    elapsed = 0.0

    async def timed() -> None:
        nonlocal elapsed
        start = time.perf_counter()
        outputs = await contender(n, k)
        elapsed = time.perf_counter() - start
        if outputs != list(range(n)):
            raise AssertionError(f"{name} returned wrong outputs")

    gc.collect()
    if loop == "trio":
        trio.run(timed)
    else:
        asyncio.run(timed())
    return elapsed


def peak_memory(name: str, n: int, k: int) -> float:
    """Bytes of peak RSS per subtask, over a warmed-up baseline, in this (fresh) process."""
    measure(name, 1000, k)  # warm up: imports, allocator arenas
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    measure(name, n, k)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (after - before) * 1024 / n  # ru_maxrss is in KiB on Linux


def memory_in_fresh_process(name: str, n: int, k: int) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--memory", name, str(n), str(k)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(json.loads(out)["bytes_per_subtask"])


def machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, nproc {os.cpu_count()}, Python {platform.python_version()}, "
        f"trio {trio.__version__}, {platform.system()} {platform.release()}"
    )


def targets(medians: dict[tuple[int, int], dict[str, float]]) -> list[str]:
    """The issue's targets, judged on this run: ratios at K=100 and N=1e4..1e5."""
    lines = []
    big = [(n, k) for (n, k) in medians if k == 100 and n >= 10_000]
    checks = [
        ("Supervisor.run / hand loop", "Supervisor.run", "hand loop", "<=", 1.2),
        (
            "Supervisor.run timeout / hand loop timeout",
            "Supervisor.run timeout",
            "hand loop timeout",
            "<=",
            1.2,
        ),
        ("aiometer run_all / Supervisor.run", "aiometer run_all", "Supervisor.run", ">=", 2.5),
    ]
    for label, top, bottom, sense, goal in checks:
        for n, k in sorted(big):
            row = medians[(n, k)]
            if top in row and bottom in row:
                ratio = row[top] / row[bottom]
                met = ratio <= goal if sense == "<=" else ratio >= goal
                verdict = "met" if met else "MISSED"
                lines.append(f"- {label} at N={n:,}: {ratio:.2f} ({sense} {goal}): {verdict}")
    sizes = sorted(n for (n, k) in medians if k == 100)
    if len(sizes) > 1 and all("Supervisor.run" in medians[(n, 100)] for n in sizes):
        costs = [medians[(n, 100)]["Supervisor.run"] for n in sizes]
        spread = max(costs) / min(costs)
        shown = ", ".join(f"{cost:.2f}" for cost in costs)
        verdict = "met" if spread <= 1.25 else "MISSED"
        lines.append(
            f"- flat cost per subtask, Supervisor.run at K=100, N={sizes[0]:,}..{sizes[-1]:,}: "
            f"{shown} µs (max/min {spread:.2f}, <= 1.25): {verdict}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000], metavar="N")
    p.add_argument("--workers", type=int, nargs="+", default=[8, 100], metavar="K")
    p.add_argument(
        "--reps", type=int, help="repetitions per size (default 5, and 3 at N >= 100,000)"
    )
    p.add_argument("--memory-n", type=int, default=100_000, help="N for the memory column")
    p.add_argument("--only", nargs="+", choices=list(CONTENDERS), help="run only these")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke run")
    p.add_argument("--memory", nargs=3, metavar=("NAME", "N", "K"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.memory:
        name, n, k = args.memory
        print(json.dumps({"bytes_per_subtask": peak_memory(name, int(n), int(k))}))
        return 0
    if args.quick:
        args.sizes, args.workers, args.reps, args.memory_n = [200], [8], 1, 2_000

    names = args.only or list(CONTENDERS)
    print(f"# machine: {machine()}")
    print("# times: median µs per subtask over interleaved repetitions, one process")
    print(f"# memory: peak RSS growth per subtask at N={args.memory_n:,}, each in a fresh process")
    medians: dict[tuple[int, int], dict[str, float]] = {}
    for k in args.workers:
        memory = {name: memory_in_fresh_process(name, args.memory_n, k) for name in names}
        for n in args.sizes:
            reps = args.reps or (3 if n >= 100_000 else 5)
            samples: dict[str, list[float]] = {name: [] for name in names}
            for rep in range(reps):
                shift = rep % len(names)
                for name in names[shift:] + names[:shift]:
                    samples[name].append(measure(name, n, k) / n * 1e6)
            row = {name: statistics.median(values) for name, values in samples.items()}
            medians[(n, k)] = row
            print(f"\n## N={n:,} K={k} ({reps} reps)\n")
            print("| contender | µs/subtask | vs hand loop | peak bytes/subtask |")
            print("|---|---:|---:|---:|")
            for name in names:
                base = BASELINE.get(name, "hand loop")
                ratio = f"{row[name] / row[base]:.2f}x" if base in row else "-"
                if base != "hand loop" and base in row:
                    ratio += " (vs hand loop timeout)"
                print(f"| {name} | {row[name]:.2f} | {ratio} | {memory[name]:,.0f} |")
            sys.stdout.flush()
    lines = targets(medians)
    if lines:
        print("\n## targets (K=100)\n")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
