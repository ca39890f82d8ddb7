"""Per-subtask overhead of the supervisor against a hand-written loop and the peers.

Every contender runs N subtasks, at most K at a time, each ``await sleep(0); return i``, and
keeps every result. Repetitions are interleaved (each repetition runs every contender once, in a
rotated order) in one process, and the median time per subtask is reported with its ratio to the
hand-written trio loop. Peak memory per subtask is measured separately, each contender in a fresh
process (``--memory``), as its peak RSS above the RSS it started the run with, divided by N.
Whether Supervisor.run's cost per subtask is flat in N is checked apart, with the same work in
every sample and the sizes taking turns.

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
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import trio

from trio_supervisor import Aggregate, Status, SubResult, Supervisor

TIMEOUT = 60.0  # never fires: the benchmark measures what a timeout costs, not what it does


# --8<-- [start:work]
async def work(i: int) -> int:
    await trio.sleep(0)  # noqa: ASYNC115  # the subtask the issue benchmarks
    return i


# --8<-- [end:work]


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


# --8<-- [start:hand_loop]
async def hand_loop(n: int, k: int, subtask_timeout: float | None = None) -> list[Any]:
    """What a careful engineer writes by hand, the loop of the course's step 5 with a timeout:
    a limiter taken before ``start_soon``, a result per slot, ``try/except``, and
    ``move_on_after`` per subtask when there is a timeout."""
    plan = list(range(n))
    results: list[SubResult[Any, int] | None] = [None] * n
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


# --8<-- [end:hand_loop]


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


def peak_rss_kib() -> int:
    """This process image's peak RSS (VmHWM): unlike ``ru_maxrss``, not inherited from a parent
    across fork and exec, and it can be reset. Linux only."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def peak_memory(name: str, n: int, k: int) -> float:
    """Bytes of peak RSS per subtask above the RSS before the run, in this (fresh) process."""
    measure(name, 1000, k)  # warm up: imports, allocator arenas
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # the peak is now the current RSS
    before = peak_rss_kib()
    measure(name, n, k)
    return (peak_rss_kib() - before) * 1024 / n


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


def flatness(k: int, sizes: list[int], rounds: int) -> dict[int, float]:
    """Supervisor.run's µs per subtask at each N, for the flat-cost check: every sample runs
    ``max(sizes)`` subtasks (several runs at small N), and the sizes take turns in each round,
    so every N is measured with the same work under the same conditions."""
    samples: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(rounds):
        for n in sizes:
            runs = max(1, max(sizes) // n)
            seconds = sum(measure("Supervisor.run", n, k) for _ in range(runs))
            samples[n].append(seconds / (runs * n) * 1e6)
    return {n: statistics.median(values) for n, values in samples.items()}


def targets(medians: dict[tuple[int, int], dict[str, float]], flat: dict[int, float]) -> list[str]:
    """The issue's targets, judged on this run: ratios at K=100 and N=1e4..1e5."""
    lines = []
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
        for n, k in sorted(medians):
            row = medians[(n, k)]
            if k == 100 and n >= 10_000 and top in row and bottom in row:
                ratio = row[top] / row[bottom]
                met = ratio <= goal if sense == "<=" else ratio >= goal
                verdict = "met" if met else "MISSED"
                lines.append(f"- {label} at N={n:,}: {ratio:.2f} ({sense} {goal}): {verdict}")
    if len(flat) > 1:
        sizes = list(flat)
        growth = max(flat.values()) / flat[sizes[0]]
        shown = ", ".join(f"{cost:.2f}" for cost in flat.values())
        verdict = "met" if growth <= 1.2 else "MISSED"
        lines.append(
            f"- flat cost per subtask, Supervisor.run at K=100, N={sizes[0]:,}..{sizes[-1]:,} "
            f"(equal work per sample, interleaved): {shown} µs; the most any N costs over "
            f"N={sizes[0]:,}: {growth:.2f}x (<= 1.2): {verdict}"
        )
    return lines


def default_reps(n: int) -> int:
    return 5 if n <= 1_000 else 3 if n <= 10_000 else 2


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000], metavar="N")
    p.add_argument("--workers", type=int, nargs="+", default=[8, 100], metavar="K")
    p.add_argument(
        "--reps", type=int, help="repetitions per size (default 5 at N=1e3, 3 at 1e4, 2 at 1e5)"
    )
    p.add_argument("--memory-n", type=int, default=100_000, help="N for the memory table")
    p.add_argument("--rounds", type=int, default=3, help="rounds of the flat-cost check (3)")
    p.add_argument("--only", nargs="+", choices=list(CONTENDERS), help="run only these")
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke run")
    p.add_argument("--memory", nargs=3, metavar=("NAME", "N", "K"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.memory:
        name, n, k = args.memory
        print(json.dumps({"bytes_per_subtask": peak_memory(name, int(n), int(k))}))
        return 0
    if args.quick:
        args.sizes, args.workers, args.reps, args.memory_n, args.rounds = [200], [8], 1, 2_000, 1

    names = args.only or list(CONTENDERS)
    print(f"# machine: {machine()}")
    print("# median µs per subtask; contenders take turns within each repetition, one process\n")
    medians: dict[tuple[int, int], dict[str, float]] = {}
    for k in args.workers:
        for n in args.sizes:
            reps = args.reps or default_reps(n)
            samples: dict[str, list[float]] = {name: [] for name in names}
            for rep in range(reps):
                shift = rep % len(names)
                for name in names[shift:] + names[:shift]:
                    samples[name].append(measure(name, n, k) / n * 1e6)
            row = {name: statistics.median(values) for name, values in samples.items()}
            medians[(n, k)] = row
            print(f"## N={n:,} K={k} ({reps} rep{'s' if reps > 1 else ''})\n")
            print("| contender | µs/subtask | vs hand loop |")
            print("|---|---:|---:|")
            for name in names:
                base = BASELINE.get(name, "hand loop")
                ratio = f"{row[name] / row[base]:.2f}x" if base in row else "-"
                if base != "hand loop" and base in row:
                    ratio += " (vs hand loop timeout)"
                print(f"| {name} | {row[name]:.2f} | {ratio} |")
            print()
            sys.stdout.flush()
    k_memory = max(args.workers)
    print(f"## peak memory per subtask (N={args.memory_n:,}, K={k_memory}, fresh process each)\n")
    print("| contender | peak bytes/subtask |")
    print("|---|---:|")
    for name in names:
        print(f"| {name} | {memory_in_fresh_process(name, args.memory_n, k_memory):,.0f} |")
    print()
    flat: dict[int, float] = {}
    if "Supervisor.run" in names and 100 in args.workers:
        flat = flatness(100, sorted(args.sizes), args.rounds)
    lines = targets(medians, flat)
    if lines:
        print("## targets (K=100)\n")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
