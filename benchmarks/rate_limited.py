"""Goodput against an endpoint with a hidden capacity: fixed concurrency against adaptive.

A loopback server (``python -m trio_supervisor.devserver``, in its own process) answers at most
``--concurrency`` requests at once and ``--rpm`` requests a minute, each after its prompt's
latency, and answers 429 with Retry-After beyond. Each contender sends ``--subtasks`` chat
requests through it, to a fresh server, and is measured by goodput (answers a second) as a share
of the server's capacity (``concurrency / mean latency``, or the rpm if lower), the share of
requests answered 429, the p50 and p99 time per subtask (first attempt to last answer), and the
subtasks lost (no answer at the end).

Contenders: ``Supervisor`` with a fixed ``max_workers`` (8 and 128), retrying ``TRANSIENT``
failures after the server's Retry-After; aiometer's ``run_all(max_at_once=128)`` over the
SDK as it comes (its own two retries, which also honour Retry-After); and ``Supervisor`` with
``meters=[Adaptive(128)]``, which starts at one request at a time and adapts.

Run: ``python benchmarks/rate_limited.py`` (about two minutes on 2 cores; ``--subtasks 200``
for a smoke run, ``--json`` for the figures as JSON).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import aiometer
import httpx2
import openai
import trio

from trio_supervisor import Adaptive, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.devserver import _unit

KEY = "benchmark"  # the loopback server checks none
ATTEMPTS = 1000  # a fixed supervisor retries until answered: nothing is lost to a 429


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


@contextmanager
def server(args: argparse.Namespace) -> Iterator[str]:
    """A fresh devserver in its own process; yields its base URL."""
    command = [
        sys.executable,
        "-m",
        "trio_supervisor.devserver",
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


async def stats(url: str) -> dict[str, Any]:
    async with httpx2.AsyncClient() as client:
        found: dict[str, Any] = (await client.get(url.removesuffix("/v1") + "/stats")).json()
    return found


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


Run = Callable[[str, list[str]], Awaitable[tuple[list[float], int]]]
"""A contender: given the URL and the prompts, the time of each answered subtask and the lost."""


async def fixed_or_adaptive(
    url: str, prompts: list[str], *, max_workers: int, decrease: float | None = None
) -> tuple[list[float], int]:
    meters = [] if decrease is None else [Adaptive(max_workers, decrease=decrease)]
    async with ChatAgent(
        "devserver", base_url=url, api_key=KEY, max_connections=max_workers
    ) as agent:
        sup = Supervisor(
            agent,
            max_workers=max_workers,
            attempts=ATTEMPTS,
            retry_on=TRANSIENT,
            meters=meters,
            seed=0,
        )
        aggregate = await sup.run(prompts)
    times = [r.finished - r.started for r in aggregate if r.ok and r.started and r.finished]
    return times, len(prompts) - aggregate.succeeded


async def aiometer_sdk(url: str, prompts: list[str]) -> tuple[list[float], int]:
    http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=128))
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
    "Supervisor Adaptive(128)": functools.partial(fixed_or_adaptive, max_workers=128, decrease=0.5),
    "Supervisor Adaptive(128, decrease=0.9)": functools.partial(
        fixed_or_adaptive, max_workers=128, decrease=0.9
    ),
}


def capacity(args: argparse.Namespace, prompts: list[str]) -> float:
    """Answers a second the server can give at most: Little's law over the prompts' latencies
    at its concurrency, or its rpm, whichever is lower."""
    low, high = args.latency
    mean = statistics.fmean(low + (high - low) * _unit(args.seed, "latency", p) for p in prompts)
    return min(float(args.concurrency) / mean, float(args.rpm) / 60)


def measure(name: str, run: Run, args: argparse.Namespace, prompts: list[str]) -> Figures:
    with server(args) as url:

        async def main() -> Figures:
            began = time.perf_counter()
            times, lost = await run(url, prompts)
            seconds = time.perf_counter() - began
            seen = await stats(url)
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
            )

        return trio.run(main)


def main(argv: list[str] | None = None) -> list[Figures]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subtasks", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rpm", type=float, default=12000)
    parser.add_argument("--latency", type=float, nargs=2, default=(0.1, 0.3))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", action="append", help="run only contenders with this text")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    prompts = [f"subtask {i}" for i in range(args.subtasks)]
    print(
        f"{args.subtasks} subtasks; server: {args.concurrency} at once, {args.rpm:g} rpm, "
        f"latency {args.latency[0]:g}-{args.latency[1]:g}s; capacity "
        f"{capacity(args, prompts):.1f} answers/s",
        file=sys.stderr,
    )
    results = []
    for name, run in CONTENDERS.items():
        if args.only and not any(text in name for text in args.only):
            continue
        figures = measure(name, run, args, prompts)
        results.append(figures)
        print(
            f"{name:28s} {figures.share:6.1%} of capacity  {figures.goodput:6.1f}/s  "
            f"429s {figures.rate_limited:6d} ({figures.rate_limited_share:5.1%})  "
            f"p50 {figures.p50:6.3f}s  p99 {figures.p99:6.3f}s  lost {figures.lost:4d}  "
            f"peak {figures.peak_in_flight}  ({figures.seconds:.1f}s)",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps([asdict(f) for f in results], indent=2))
    return results


if __name__ == "__main__":
    main()
