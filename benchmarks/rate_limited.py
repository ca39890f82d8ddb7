"""Goodput against an endpoint with a hidden capacity: fixed concurrency against adaptive.

A loopback server (``python -m trio_supervisor.testing.devserver``, in its own process) answers at
most ``--concurrency`` requests at once and ``--rpm`` requests a minute, each after its prompt's
latency, and answers 429 with Retry-After beyond. Each contender sends ``--subtasks`` chat requests
through it, to a fresh server, and is measured by goodput (answers a second) as a share of the
server's capacity (``concurrency / mean latency``, or the rpm if lower), the share of requests
answered 429, the p50 and p99 time per subtask (first attempt to last answer), and the subtasks lost
(no answer at the end). Beside them, the client process's CPU time as a share of one core and the
machine's load average: this machine's 2 cores serve client, server and whatever else runs, and a
client short of CPU answers late whatever its policy.

Contenders: ``Supervisor`` with a fixed ``max_workers`` (8 and 128, and 32: the capacity the
server hides, a reference no client could know), retrying ``TRANSIENT`` failures after the
server's Retry-After; aiometer's ``run_all(max_at_once=128)`` over the SDK as it comes (its own
two retries, which also honour Retry-After); and ``Supervisor`` with
``meters=[Adaptive(128, latency=False)]``, its refusal rule alone (a 429 fits the limit to one
under what was in flight), and with ``fit=False`` too (plain AIMD: halves on a 429); the labels
keep their names from before the latency rule became the default, so the stored results still
read as they were measured (``benchmarks/endpoints.py`` measures the default against servers that
queue).

``--virtual`` runs the same contenders against the same server in this process
(``httpx2.ASGITransport``) on a ``trio.testing.MockClock``: the server's latencies are virtual
and CPU time costs none, so the figures are each policy's own, without the machine's.
``--reps N`` runs every contender N times, taking turns, and ends with the spread.

Run: ``python benchmarks/rate_limited.py`` (about eight minutes on 2 cores; ``--subtasks 200``
for a smoke run, ``--json`` for the figures as JSON).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiometer
import httpx2
import openai
import trio
import trio.testing
from _machine import machine

from trio_supervisor import Adaptive, Retry, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing.devserver import app, drawn_latency

KEY = "benchmark"  # the loopback server checks none
ATTEMPTS = 1000  # a fixed supervisor retries until answered: nothing is lost to a 429
IN_PROCESS = "http://devserver/v1"


@dataclass
class Figures:
    contender: str
    seconds: float
    goodput: float  # answers a second
    share: float  # of the server's capacity
    requests: int
    rate_limited: int
    rate_limited_share: float
    p50: float
    p99: float
    lost: int
    peak_in_flight: int
    client_cpu: float | None  # the client process's CPU seconds over the run's (None: virtual)
    load: float  # the machine's 1-minute load average at the end


@contextmanager
def server(args: argparse.Namespace) -> Iterator[str]:
    """A fresh devserver in its own process; yields its base URL."""
    command = [
        sys.executable,
        "-m",
        "trio_supervisor.testing.devserver",
        "--port",
        "0",
        "--seed",
        str(args.seed),
        "--latency",
        str(args.latency[0]),
        str(args.latency[1]),
        "--concurrency",
        str(args.concurrency),
        "--rpm",
        str(args.rpm),
    ]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if "http://" not in line:
                raise RuntimeError(f"the devserver did not start: {line!r}")
            yield line.split(" on ", 1)[1].split()[0]
        finally:
            process.terminate()
            process.wait(timeout=10)


def endpoint(args: argparse.Namespace) -> httpx2.ASGITransport:
    """The same server, to run in this process (``--virtual``), as a transport."""
    served = app(
        seed=args.seed,
        latency=tuple(args.latency),
        concurrency=args.concurrency,
        rpm=args.rpm,
        model="devserver",
    )
    return httpx2.ASGITransport(app=served)


async def stats(url: str, transport: Transport = None) -> dict[str, Any]:
    async with httpx2.AsyncClient(transport=transport) as client:
        found: dict[str, Any] = (await client.get(url.removesuffix("/v1") + "/stats")).json()
    return found


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Transport = httpx2.AsyncBaseTransport | None
Run = Callable[[str, list[str], Transport], Awaitable[tuple[list[float], int]]]
"""A contender: given the URL, the prompts and the transport (None: the network), the time of
each answered subtask and how many were lost."""


async def fixed_or_adaptive(
    url: str,
    prompts: list[str],
    transport: Transport,
    *,
    max_workers: int,
    adaptive: dict[str, Any] | None = None,
) -> tuple[list[float], int]:
    meters = [] if adaptive is None else [Adaptive(max_workers, **adaptive)]
    async with ChatAgent(
        "devserver", base_url=url, api_key=KEY, max_connections=max_workers, transport=transport
    ) as agent:
        sup = Supervisor(
            agent,
            max_workers=max_workers,
            retry=Retry(attempts=ATTEMPTS, on=TRANSIENT, seed=0),
            meters=meters,
        )
        aggregate = await sup.run(prompts)
    times = [r.finished - r.started for r in aggregate if r.ok and r.started and r.finished]
    return times, len(prompts) - aggregate.succeeded


async def aiometer_sdk(
    url: str, prompts: list[str], transport: Transport
) -> tuple[list[float], int]:
    http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=128), transport=transport)
    client = openai.AsyncOpenAI(api_key=KEY, base_url=url, http_client=http)  # 2 retries
    times: list[float] = []
    lost = 0

    async def job(prompt: str) -> None:
        nonlocal lost
        began = trio.current_time()
        try:
            await client.chat.completions.create(
                model="devserver", messages=[{"role": "user", "content": prompt}]
            )
        except openai.APIError:
            lost += 1
            return
        times.append(trio.current_time() - began)

    try:
        await aiometer.run_all([functools.partial(job, p) for p in prompts], max_at_once=128)
    finally:
        await http.aclose()
    return times, lost


CONTENDERS: dict[str, Run] = {
    "Supervisor max_workers=8": functools.partial(fixed_or_adaptive, max_workers=8),
    "Supervisor max_workers=128": functools.partial(fixed_or_adaptive, max_workers=128),
    # the best fixed setting, which needs the capacity the server hides: a reference
    "Supervisor max_workers=32 (oracle)": functools.partial(fixed_or_adaptive, max_workers=32),
    "aiometer max_at_once=128": aiometer_sdk,
    "Supervisor Adaptive(128)": functools.partial(
        fixed_or_adaptive, max_workers=128, adaptive={"latency": False}
    ),
    "Supervisor Adaptive(128, fit=False) (halves on a 429)": functools.partial(
        fixed_or_adaptive, max_workers=128, adaptive={"fit": False, "latency": False}
    ),
}


def capacity(args: argparse.Namespace, prompts: list[str]) -> float:
    """Answers a second the server can give at most: Little's law over the prompts' latencies
    at its concurrency, or its rpm, whichever is lower."""
    latency = tuple(args.latency)
    mean = statistics.fmean(drawn_latency(p, seed=args.seed, latency=latency) for p in prompts)
    return min(float(args.concurrency) / mean, float(args.rpm) / 60)


def figures(
    name: str,
    args: argparse.Namespace,
    prompts: list[str],
    outcome: tuple[list[float], int],
    seconds: float,
    seen: dict[str, Any],
    cpu: float | None,
) -> Figures:
    times, lost = outcome
    goodput = (len(prompts) - lost) / seconds
    return Figures(
        contender=name,
        seconds=seconds,
        goodput=goodput,
        share=goodput / capacity(args, prompts),
        requests=seen["requests"],
        rate_limited=seen["rate_limited"],
        rate_limited_share=seen["rate_limited"] / max(1, seen["requests"]),
        p50=percentile(times, 0.5),
        p99=percentile(times, 0.99),
        lost=lost,
        peak_in_flight=seen["peak_in_flight"],
        client_cpu=None if cpu is None else cpu / seconds,
        load=os.getloadavg()[0],
    )


def measure(name: str, run: Run, args: argparse.Namespace, prompts: list[str]) -> Figures:
    """One contender against a fresh server: in its own process, or in this one on virtual
    time (``--virtual``)."""
    if args.virtual:

        async def virtual() -> Figures:
            began = trio.current_time()
            transport = endpoint(args)
            outcome = await run(IN_PROCESS, prompts, transport)
            seconds = trio.current_time() - began  # CPU time takes none of it
            seen = await stats(IN_PROCESS, transport)
            return figures(name, args, prompts, outcome, seconds, seen, None)

        return trio.run(virtual, clock=trio.testing.MockClock(autojump_threshold=0))

    with server(args) as url:

        async def real() -> Figures:
            began, cpu = time.perf_counter(), time.process_time()
            outcome = await run(url, prompts, None)
            seconds = time.perf_counter() - began
            cpu = time.process_time() - cpu
            return figures(name, args, prompts, outcome, seconds, await stats(url), cpu)

        return trio.run(real)


def spread(results: list[Figures]) -> list[str]:
    """Each contender's median and range over the repetitions."""
    lines = []
    for name in dict.fromkeys(f.contender for f in results):
        mine = [f for f in results if f.contender == name]
        shares = [f.share for f in mine]
        limited = [f.rate_limited_share for f in mine]
        lines.append(
            f"{name:36s} share median {statistics.median(shares):6.1%} "
            f"({min(shares):.1%}-{max(shares):.1%}); 429s median "
            f"{statistics.median(limited):5.1%} ({min(limited):.1%}-{max(limited):.1%}); "
            f"lost at most {max(f.lost for f in mine)}"
        )
    return lines


def main(argv: list[str] | None = None) -> list[Figures]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subtasks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rpm", type=float, default=12000)
    parser.add_argument("--latency", type=float, nargs=2, default=(0.4, 1.2))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--virtual", action="store_true", help="in process, on virtual time")
    parser.add_argument("--only", action="append", help="run only contenders with this text")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--results",
        type=Path,
        metavar="FILE",
        help="also write the figures there as JSON (benchmarks/results/rate_limited.json, "
        "rate_limited_virtual.json with --virtual)",
    )
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error(f"--reps must be >= 1, got {args.reps}")
    prompts = [f"subtask {i}" for i in range(args.subtasks)]
    print(
        f"{args.subtasks} subtasks; server: {args.concurrency} at once, {args.rpm:g} rpm, "
        f"latency {args.latency[0]:g}-{args.latency[1]:g}s; capacity "
        f"{capacity(args, prompts):.1f} answers/s"
        + ("; in process, virtual time" if args.virtual else ""),
        file=sys.stderr,
    )
    results = []
    for rep in range(args.reps):
        for name, run in CONTENDERS.items():
            if args.only and not any(text in name for text in args.only):
                continue
            found = measure(name, run, args, prompts)
            results.append(found)
            cpu = "" if found.client_cpu is None else f"client cpu {found.client_cpu:4.0%}  "
            print(
                f"{f'[{rep + 1}] ' if args.reps > 1 else ''}{name:36s} "
                f"{found.share:6.1%} of capacity  {found.goodput:6.1f}/s  "
                f"429s {found.rate_limited:5d} ({found.rate_limited_share:5.1%})  "
                f"p50 {found.p50:6.3f}s  p99 {found.p99:6.3f}s  lost {found.lost:4d}  "
                f"peak {found.peak_in_flight}  {cpu}load {found.load:4.1f}  ({found.seconds:.1f}s)",
                file=sys.stderr,
            )
    if args.reps > 1:
        print("\n".join(["spread over the repetitions:", *spread(results)]), file=sys.stderr)
    if args.json:
        print(json.dumps([asdict(f) for f in results], indent=2))
    if args.results:
        write_results(args.results, args, capacity(args, prompts), results)
    return results


def write_results(
    path: Path, args: argparse.Namespace, most: float, results: list[Figures]
) -> None:
    """The figures as data, the docs site's performance page draws from: when and where they
    were measured, against which server, and a row per contender and repetition."""
    where = "in process, virtual time" if args.virtual else "client and server in two processes"
    data = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{machine()}; {where}",
        "benchmark": "rate_limited.py",
        "command": "python benchmarks/rate_limited.py" + (" --virtual" if args.virtual else ""),
        "server": {
            "concurrency": args.concurrency,
            "rpm": args.rpm,
            "latency": list(args.latency),
            "capacity": most,
            "subtasks": args.subtasks,
        },
        "rows": [
            {"rep": i * args.reps // len(results) + 1, **asdict(f)} for i, f in enumerate(results)
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
