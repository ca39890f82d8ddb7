"""Per-subtask overhead of the supervisor against the floor, a hand-written loop and the peers.

Every contender runs N subtasks, at most K at a time, each ``await sleep(0); return i``, and
keeps every result. The floor is the least any bounded fan-out on trio can cost: K tasks taking
subtasks from one shared iterator, no isolation, no result objects; every contender is reported
against it. Repetitions are interleaved (each repetition runs every contender once, in a rotated
order) in one process, and the median time per subtask is reported with its ratios to the floor
and to the hand-written trio loop. Peak memory per subtask is measured separately, each contender
in a fresh process (``--memory``), as its peak RSS above the RSS it started the run with, divided
by N. What failures cost is measured apart: N slots that all fail with ``Retry(attempts=2)``
against the same supervisor with every slot succeeding, time and peak RSS, each run in a fresh
process.
Whether Supervisor.run's cost per subtask is flat in N is checked apart, with the same work in
every sample and the sizes taking turns. The Targets section judges the ratios of this one run.

Run: ``python benchmarks/overhead.py`` (``--check`` to exit 1 unless every target is met,
``--quick`` for a smoke run, ``--help`` for options).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio
from _machine import machine

from trio_supervisor import Aggregate, Backoff, Retry, Status, SubResult, Supervisor

TIMEOUT = 60.0  # never fires: the benchmark measures what a timeout costs, not what it does
NO_WAIT = Backoff(initial=0, maximum=0)  # retry at once: time the retry path, not its sleeps


# --8<-- [start:work]
async def work(i: int) -> int:
    await trio.sleep(0)  # noqa: ASYNC115  # the subtask the issue benchmarks
    return i


# --8<-- [end:work]


async def failing_work(i: int) -> int:
    """Like `work`, but every attempt fails after its checkpoint."""
    await trio.sleep(0)  # noqa: ASYNC115
    raise RuntimeError(f"subtask {i} failed")


# --- the floor -------------------------------------------------------------------------------


# --8<-- [start:floor]
async def floor(n: int, k: int) -> list[Any]:
    """The least a bounded fan-out on trio can cost: K tasks take subtasks from one shared
    iterator and store each output in its slot. No isolation (one failure would sink the run),
    no result objects, no timeout: anything a supervisor adds costs on top of this."""
    results: list[Any] = [None] * n
    subtasks = iter(range(n))

    async def take() -> None:
        for i in subtasks:
            results[i] = await work(i)

    async with trio.open_nursery() as nursery:
        for _ in range(min(k, n)):
            nursery.start_soon(take)
    return results


# --8<-- [end:floor]


# --- trio: the supervisor --------------------------------------------------------------------


async def supervisor_run(n: int, k: int) -> list[Any]:
    aggregate = await Supervisor(work, max_workers=k).run(range(n))
    return [result.output for result in aggregate.results]


async def supervisor_run_timeout(n: int, k: int) -> list[Any]:
    aggregate = await Supervisor(work, max_workers=k, timeout=TIMEOUT).run(range(n))
    return [result.output for result in aggregate.results]


async def supervisor_run_attempts(n: int, k: int) -> list[Any]:
    """Retries allowed, none needed: what ``Retry(attempts=3)`` costs when nothing fails."""
    aggregate = await Supervisor(work, max_workers=k, retry=Retry(attempts=3)).run(range(n))
    return [result.output for result in aggregate.results]


async def supervisor_stream(n: int, k: int) -> list[Any]:
    outputs = []
    async with Supervisor(work, max_workers=k).stream(range(n)) as results:
        async for result in results:
            outputs.append(result.output)
    return outputs


# --- what failures cost ------------------------------------------------------------------------


async def supervisor_all_succeeding(n: int, k: int) -> list[Any]:
    supervisor = Supervisor(work, max_workers=k, retry=Retry(attempts=2, backoff=NO_WAIT))
    aggregate = await supervisor.run(range(n))
    return [result.output for result in aggregate.results]


async def supervisor_all_failing(n: int, k: int) -> list[Any]:
    """The same supervisor, every attempt failing; returns the subtasks of the slots that failed
    after both attempts, so a correct run returns the plan."""
    supervisor = Supervisor(failing_work, max_workers=k, retry=Retry(attempts=2, backoff=NO_WAIT))
    aggregate = await supervisor.run(range(n))
    return [
        result.subtask
        for result in aggregate.results
        if result.status is Status.FAILED and result.attempts == 2
    ]


async def floor_all_failing(n: int, k: int) -> list[Any]:
    """For scale, not a contender of the targets: the floor making the calls the failing
    supervisor makes, two per slot, each raising, the last exception kept in the slot."""
    results: list[Any] = [None] * n
    subtasks = iter(range(n))

    async def take() -> None:
        for i in subtasks:
            for _ in range(2):
                try:
                    results[i] = await failing_work(i)
                except RuntimeError as exc:
                    results[i] = exc

    async with trio.open_nursery() as nursery:
        for _ in range(min(k, n)):
            nursery.start_soon(take)
    return [i for i, result in enumerate(results) if isinstance(result, RuntimeError)]


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
    "floor": ("trio", floor),
    "Supervisor.run": ("trio", supervisor_run),
    "Supervisor.run timeout": ("trio", supervisor_run_timeout),
    "Supervisor.run attempts=3": ("trio", supervisor_run_attempts),
    "Supervisor.stream": ("trio", supervisor_stream),
    "hand loop": ("trio", hand_loop),
    "hand loop timeout": ("trio", functools.partial(hand_loop, subtask_timeout=TIMEOUT)),
    "raw nursery": ("trio", raw_nursery),
    "aiometer run_all": ("trio", aiometer_run_all),
    "anyio TaskGroup+Limiter": ("trio", anyio_task_group),
    "asyncio TaskGroup+Semaphore": ("asyncio", asyncio_task_group),
}
BASELINE = {"Supervisor.run timeout": "hand loop timeout"}  # the rest compare to "hand loop"
SUCCEEDING = "all succeeding (attempts=2)"
FAILING = "all failing (attempts=2)"
FLOOR_SUCCEEDING = "floor, all succeeding (1 call)"
FLOOR_FAILING = "floor, all failing (2 calls)"
FAILURE_CONTENDERS: dict[str, tuple[str, Contender]] = {
    SUCCEEDING: ("trio", supervisor_all_succeeding),
    FAILING: ("trio", supervisor_all_failing),
    # for scale: what the same calls cost with no supervision at all
    FLOOR_SUCCEEDING: ("trio", floor),
    FLOOR_FAILING: ("trio", floor_all_failing),
}
EVERY_CONTENDER = CONTENDERS | FAILURE_CONTENDERS
FAILURE_BUDGET = 30.0  # seconds after which the failure section starts no more turns


def measure(name: str, n: int, k: int) -> float:
    """Seconds one run of ``name`` takes, timed inside its event loop (startup excluded).

    Raises:
      AssertionError: if the contender did not return ``0..n-1`` in order.
    """
    loop, contender = EVERY_CONTENDER[name]
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


@dataclass(frozen=True)
class Footprint:
    """One run of a contender in a fresh process: its time, and its peak RSS."""

    seconds: float
    peak_mib: float  # the whole process's peak RSS during the run
    bytes_per_subtask: float  # the peak RSS above the RSS before the run, divided by N


def footprint(name: str, n: int, k: int) -> Footprint:
    """Time and peak RSS of one run of ``name`` in this (fresh) process, after a warm-up."""
    measure(name, 1000, k)  # warm up: imports, allocator arenas
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # the peak is now the current RSS
    before = peak_rss_kib()
    seconds = measure(name, n, k)
    peak = peak_rss_kib()
    return Footprint(seconds, peak / 1024, (peak - before) * 1024 / n)


def footprint_in_fresh_process(name: str, n: int, k: int) -> Footprint:
    out = subprocess.run(
        [sys.executable, __file__, "--memory", name, str(n), str(k)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Footprint(**json.loads(out))


def memory_in_fresh_process(name: str, n: int, k: int) -> float:
    return footprint_in_fresh_process(name, n, k).bytes_per_subtask


def failure_cost(n: int, k: int, reps: int) -> dict[str, Footprint]:
    """Median footprint of the succeeding and the failing supervisor, a fresh process per run,
    the two taking turns; no more turns once the section has taken `FAILURE_BUDGET` seconds."""
    samples: dict[str, list[Footprint]] = {name: [] for name in FAILURE_CONTENDERS}
    names = list(FAILURE_CONTENDERS)
    start = time.perf_counter()
    for rep in range(reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            samples[name].append(footprint_in_fresh_process(name, n, k))
        if time.perf_counter() - start > FAILURE_BUDGET:
            break
    return {
        name: Footprint(
            statistics.median(f.seconds for f in runs),
            statistics.median(f.peak_mib for f in runs),
            statistics.median(f.bytes_per_subtask for f in runs),
        )
        for name, runs in samples.items()
    }


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


@dataclass(frozen=True)
class Target:
    """One target of the issue, judged on this run: ``top / bottom`` against ``goal``."""

    label: str
    top: float | None  # None: not measured in this run
    bottom: float | None
    unit: str
    sense: str  # "<=" or ">="
    goal: float

    @property
    def ratio(self) -> float | None:
        if self.top is None or not self.bottom:
            return None
        return self.top / self.bottom

    @property
    def met(self) -> bool:
        ratio = self.ratio
        if ratio is None:
            return False
        return ratio <= self.goal if self.sense == "<=" else ratio >= self.goal

    def line(self) -> str:
        ratio = self.ratio
        if ratio is None or self.top is None or self.bottom is None:
            return f"- {self.label}: not measured in this run ({self.sense} {self.goal}): NOT met"
        figures = f"{self.top:,.2f} / {self.bottom:,.2f} {self.unit} = {ratio:.2f}x"
        verdict = "met" if self.met else "NOT met"
        return f"- {self.label}: {figures} ({self.sense} {self.goal}): {verdict}"


# --8<-- [start:targets]
TIME_TARGETS = [  # (top, bottom, sense, goal): ratios of µs per subtask at one N and K
    ("Supervisor.run", "floor", "<=", 1.8),
    ("Supervisor.run timeout", "Supervisor.run", "<=", 1.5),
    ("Supervisor.run attempts=3", "Supervisor.run", "<=", 1.3),
    ("Supervisor.stream", "Supervisor.run", "<=", 1.2),
    ("aiometer run_all", "Supervisor.run", ">=", 5.0),
]
EVERYWHERE = {"Supervisor.run", "Supervisor.stream"}  # judged at every N and K, the rest at one
FAILURE_GOAL = 2.0  # all failing / the floor's all failing (time), all failing / all succeeding
# (peak RSS), at most
FLAT_GOAL = 1.2  # the most any N may cost per subtask over the smallest N
# --8<-- [end:targets]


def targets(
    medians: dict[tuple[int, int], dict[str, float]],
    at: tuple[int, int],
    failures: dict[str, Footprint],
    flat: dict[int, float],
) -> list[Target]:
    """The issue's targets, judged on this run: ``medians`` holds the µs per subtask at each N
    and K; a time target whose top is in EVERYWHERE is judged at each, the others at ``at``;
    ``failures`` holds the footprints of the failure section, ``flat`` the flat-cost check."""
    judged = [
        Target(
            f"{top} / {bottom} (N={n:,}, K={k})",
            row.get(top),
            row.get(bottom),
            "µs",
            sense,
            goal,
        )
        for top, bottom, sense, goal in TIME_TARGETS
        for (n, k), row in medians.items()
        if (n, k) == at or top in EVERYWHERE
    ]
    fail, succeed = failures.get(FAILING), failures.get(SUCCEEDING)
    floor_fail = failures.get(FLOOR_FAILING)
    judged.append(  # what supervising a failure costs, not what raising costs
        Target(
            "all failing / the floor's all failing, time",
            None if fail is None else fail.seconds,
            None if floor_fail is None else floor_fail.seconds,
            "s",
            "<=",
            FAILURE_GOAL,
        )
    )
    judged.append(  # a failed slot keeps no worker's frames
        Target(
            "all failing / all succeeding, peak RSS",
            None if fail is None else fail.peak_mib,
            None if succeed is None else succeed.peak_mib,
            "MiB",
            "<=",
            FAILURE_GOAL,
        )
    )
    if len(flat) > 1:
        sizes = list(flat)
        shown = ", ".join(f"{cost:.2f}" for cost in flat.values())
        judged.append(
            Target(
                f"flat cost, Supervisor.run at N={sizes[0]:,}..{sizes[-1]:,} ({shown} µs): "
                f"the dearest N / N={sizes[0]:,}",
                max(flat.values()),
                flat[sizes[0]],
                "µs",
                "<=",
                FLAT_GOAL,
            )
        )
    return judged


def default_reps(n: int) -> int:
    return 5 if n <= 1_000 else 3 if n <= 10_000 else 2


def ratio(top: float, bottom: float | None) -> str:
    return f"{top / bottom:.2f}x" if bottom else "-"


def print_times(row: dict[str, float]) -> None:
    print("| contender | µs/subtask | / floor | vs hand loop |")
    print("|---|---:|---:|---:|")
    for name, cost in row.items():
        base = BASELINE.get(name, "hand loop")
        versus = ratio(cost, row.get(base))
        if base != "hand loop" and base in row:
            versus += " (vs hand loop timeout)"
        print(f"| {name} | {cost:.2f} | {ratio(cost, row.get('floor'))} | {versus} |")
    print()


def print_failures(failures: dict[str, Footprint], n: int) -> None:
    print("| contender | s per run | µs/slot | peak RSS (MiB) | peak bytes/slot above start |")
    print("|---|---:|---:|---:|---:|")
    for name, f in failures.items():
        print(
            f"| {name} | {f.seconds:.2f} | {f.seconds / n * 1e6:.2f} | {f.peak_mib:,.1f} | "
            f"{f.bytes_per_subtask:,.0f} |"
        )
    print()


def for_scale(failures: dict[str, Footprint]) -> str:
    """What the floor's own failing run costs against its succeeding one: the same calls (two
    per slot, each raising, against one), with no supervision at all. Why the failure time
    target is judged against the floor's failing run, not against a succeeding run, is in
    benchmarks/README.md."""
    fail, succeed = failures.get(FLOOR_FAILING), failures.get(FLOOR_SUCCEEDING)
    if fail is None or succeed is None:
        return ""
    return (
        "For scale, not a target: the floor making the same calls, all failing / all "
        f"succeeding: time {fail.seconds / succeed.seconds:.2f}x, peak RSS "
        f"{fail.peak_mib / succeed.peak_mib:.2f}x.\n"
    )


def write_results(path: Path, machine: str, rows: list[dict[str, Any]]) -> None:
    """The run's figures as data, the docs site's performance page draws its tables and charts
    from: when and where they were measured, and a row per figure (``table`` says which)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    measured = datetime.now(UTC).isoformat(timespec="seconds")
    about = {"benchmark": "overhead.py", "command": "python benchmarks/overhead.py --check"}
    data = {"measured": measured, "machine": machine, **about, "rows": rows}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def target_row(target: Target) -> dict[str, Any]:
    return {
        "table": "targets",
        "target": target.label,
        "top": target.top,
        "bottom": target.bottom,
        "unit": target.unit,
        "ratio": target.ratio,
        "goal": f"{target.sense} {target.goal}",
        "met": target.met,
    }


def judged_at(sizes: list[int], workers: list[int]) -> tuple[int, int]:
    """Where the time targets are judged: the largest N, at K=100 where it ran."""
    return max(sizes), 100 if 100 in workers else max(workers)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000], metavar="N")
    p.add_argument("--workers", type=int, nargs="+", default=[8, 100], metavar="K")
    p.add_argument(
        "--reps", type=int, help="repetitions per size (default 5 at N=1e3, 3 at 1e4, 2 at 1e5)"
    )
    p.add_argument("--memory-n", type=int, default=100_000, help="N for the memory table")
    p.add_argument("--failure-n", type=int, default=100_000, help="slots of the failure section")
    p.add_argument(
        "--failure-reps",
        type=int,
        default=3,
        help=f"turns of the failure section (3; none more after {FAILURE_BUDGET:.0f} s)",
    )
    p.add_argument("--rounds", type=int, default=3, help="rounds of the flat-cost check (3)")
    p.add_argument(
        "--only",
        nargs="+",
        choices=list(EVERY_CONTENDER),
        metavar="NAME",
        help="run only these (quote each): " + ", ".join(EVERY_CONTENDER),
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repetition: a smoke run")
    p.add_argument("--check", action="store_true", help="exit 1 unless every target is met")
    p.add_argument(
        "--results",
        type=Path,
        metavar="FILE",
        help="also write the figures there as JSON (benchmarks/results/overhead.json)",
    )
    p.add_argument("--memory", nargs=3, metavar=("NAME", "N", "K"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.memory:
        name, n, k = args.memory
        print(json.dumps(vars(footprint(name, int(n), int(k)))))
        return 0
    if args.quick:
        args.sizes, args.workers, args.reps, args.rounds = [300], [100], 1, 1
        args.memory_n, args.failure_n, args.failure_reps = 2_000, 2_000, 1

    chosen = args.only or list(EVERY_CONTENDER)
    names = [name for name in CONTENDERS if name in chosen]
    failing = [name for name in FAILURE_CONTENDERS if name in chosen]
    rows: list[dict[str, Any]] = []
    print(f"# machine: {machine()}")
    print("# median µs per subtask; contenders take turns within each repetition, one process\n")
    medians: dict[tuple[int, int], dict[str, float]] = {}
    for k in args.workers:
        for n in args.sizes:
            reps = args.reps or default_reps(n)
            samples: dict[str, list[float]] = {name: [] for name in names}
            for rep in range(reps):
                shift = rep % len(names) if names else 0
                for name in names[shift:] + names[:shift]:
                    samples[name].append(measure(name, n, k) / n * 1e6)
            medians[(n, k)] = {name: statistics.median(values) for name, values in samples.items()}
            print(f"## N={n:,} K={k} ({reps} rep{'s' if reps > 1 else ''})\n")
            print_times(medians[(n, k)])
            rows += [
                {
                    "table": "time",
                    "N": n,
                    "K": k,
                    "reps": reps,
                    "contender": name,
                    "us_per_subtask": cost,
                }
                for name, cost in medians[(n, k)].items()
            ]
            sys.stdout.flush()
    k_memory = max(args.workers)
    print(f"## peak memory per subtask (N={args.memory_n:,}, K={k_memory}, fresh process each)\n")
    print("| contender | peak bytes/subtask |")
    print("|---|---:|")
    for name in names:
        peak = memory_in_fresh_process(name, args.memory_n, k_memory)
        print(f"| {name} | {peak:,.0f} |")
        rows.append({"table": "memory", "N": args.memory_n, "K": k_memory, "contender": name})
        rows[-1]["peak_bytes_per_subtask"] = peak
    print()
    failures: dict[str, Footprint] = {}
    if failing:
        print(
            f"## what failures cost: {args.failure_n:,} slots, attempts=2, no backoff wait, "
            f"K={k_memory}, fresh process each (medians)\n"
        )
        failures = failure_cost(args.failure_n, k_memory, args.failure_reps)
        print_failures(failures, args.failure_n)
        rows += [
            {"table": "failures", "N": args.failure_n, "K": k_memory, "contender": name}
            | {"s_per_run": f.seconds, "us_per_slot": f.seconds / args.failure_n * 1e6}
            | {"peak_rss_mib": f.peak_mib, "peak_bytes_per_slot": f.bytes_per_subtask}
            for name, f in failures.items()
        ]
        print(for_scale(failures))
        sys.stdout.flush()
    flat: dict[int, float] = {}
    if "Supervisor.run" in names and 100 in args.workers:
        flat = flatness(100, sorted(args.sizes), args.rounds)
        rows += [{"table": "flat", "N": n, "K": 100, "us_per_subtask": c} for n, c in flat.items()]
    n_judged, k_judged = judged_at(args.sizes, args.workers)
    judged = targets(medians, (n_judged, k_judged), failures, flat)
    print("## targets (all from this run)\n")
    print("\n".join(target.line() for target in judged))
    missed = [target for target in judged if not target.met]
    print(f"\n{len(judged) - len(missed)} of {len(judged)} targets met")
    if args.results:
        write_results(args.results, machine(), rows + [target_row(t) for t in judged])
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
