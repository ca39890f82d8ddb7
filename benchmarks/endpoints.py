"""Concurrency against the endpoints GPU servers are: fixed K, adaptive, and the SDK.

The loopback server (``trio_supervisor.testing.devserver``), served in this process on a
``trio.testing.MockClock`` (so each figure is the policy's own, exact, and costs no real
time), plays five endpoints, each reply taking 0.59 s alone (a 222M model's 32 tokens on one
H200):

- ``batching32`` and ``batching256``: continuous batching of up to 32 or 256 requests, each
  slower the larger the batch (``Serving("batching")``, fitted to the H200's figures), the
  rest queued with no bound, as vLLM's default;
- ``sequential``: one request at a time, the rest queued (``transformers serve``'s default);
- ``queue_bounded``: batches of 32 and at most 32 queued; beyond, 503 with Retry-After (as
  SGLang's ``--max-queued-requests``);
- ``rate_limited``: every request at once, but at most ``--rpm`` a minute; beyond, 429 with
  Retry-After.

Contenders, each against a fresh server, every failure that asks for a wait retried after it:
``Supervisor`` with a fixed ``max_workers`` K (1, 2, 4, ..., 256), with
``Adaptive(256)`` (the default: the latency-fitted rule) and ``Adaptive(256, latency=False)``
(the refusals alone, the rule before it), and
the SDK as it comes (``AsyncOpenAI``, its own two retries) under a semaphore at the best K
found (a ``trio.Semaphore``: the run is trio's, on virtual time, as ``asyncio.Semaphore`` on
asyncio). Four *oracles* run beside them: bounds, not policies, each as if it knew the
endpoint batches 256. Each starts at ``L0`` in flight and, at its first answer, goes to the
ceiling: from ``L0`` the largest start the sequential target allows for the run's size (see
``largest_start``), and from ``L0 = 2``, the least start whose first answers can show a batch
(two answered at once); or, from 2, first to the most in flight the batching32 target allows
(``largest_probe``), and to the ceiling as soon as no answer shows the batch is over 32 (a
batch of 32's time after), or, as a rule that learns the batch from its answers must, when the
probe's first answers come (more than 32 of them together).
What *any* policy can reach, whatever its rule, under the two constraints the oracles obey
(the sequential target bounds the start, the batching32 target the probe), is computed from the
server's curve by ``reach.py`` beside this script, and written with the figures (``reach``).
Each is measured by throughput (answers a second), p50/p95/p99 per subtask (its first attempt
to its answer), the share of requests refused, and the subtasks lost. The targets
checked: an adaptive run's throughput >= 90% of the best fixed K's, its p95 <= 2x the p95 of
the smallest fixed K within 90% of the best throughput, <= 2% refusals against the rate limit,
nothing lost; and a ``--makespan`` run (256 requests against ``batching256``) within 1.2x of a
fixed K=256.

With ``--spread S``, every mode runs again (named ``"<mode> spread=S"``, its rows and targets
beside the fixed-length ones) with each reply's time alone drawn from ``0.59 * (1 +- S)`` s
(uniform, fixed per prompt by the server's seed), as replies of varied length take: a rule that
reads latency must not take their spread for a queue. ``--contender TEXT`` runs only the
contenders (besides the fixed K) whose name holds it.

Run: ``python benchmarks/endpoints.py --subtasks 512`` (in process, virtual time: CPU only, a
few minutes on 2 cores; ``--subtasks 64 --only sequential`` for a smoke run).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import openai
import trio
import trio.testing
from _machine import machine
from reach import allowed, bound, largest_probe, largest_start

from trio_supervisor import Adaptive, Capacity, Retry, Supervisor
from trio_supervisor.agents import TRANSIENT, ChatAgent
from trio_supervisor.testing.devserver import SLOWDOWN, Serving, app

KEY = "benchmark"  # the loopback server checks none
URL = "http://devserver/v1"
ALONE = 0.59  # seconds a reply takes alone
ATTEMPTS = 1000  # every refusal is retried after its wait: nothing is lost to one
FIXED = (1, 2, 4, 8, 16, 32, 64, 128, 256)
CEILING = 256

MODES: dict[str, dict[str, Any]] = {
    "batching32": {"serving": Serving("batching", batch=32)},
    "batching256": {"serving": Serving("batching", batch=256)},
    "sequential": {"serving": Serving("sequential")},
    "queue_bounded": {"serving": Serving("batching", batch=32, queue=32)},
    "rate_limited": {"rpm": 600.0, "burst": 10},
}


@dataclass
class Figures:
    mode: str
    contender: str
    seconds: float
    throughput: float  # answers a second
    p50: float
    p95: float
    p99: float
    requests: int
    refused: int  # answered 429 or 503
    refused_share: float
    lost: int
    peak_running: int
    peak_queued: int


Run = Callable[[list[str], httpx2.ASGITransport], Awaitable[list[float | None]]]
"""A contender: given the prompts and the server, each subtask's time (None: lost)."""


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


BATCH32 = ALONE * 32**SLOWDOWN
"""Seconds a batch of 32 takes: when 32 of a larger count in flight would have answered under
``batching32``, the first moment that tells it from ``batching256``."""


class Oracle:
    """A bound, not a policy: ``start`` places until the first answer, then ``probe`` places,
    or the ceiling at once, as only a client that knew the endpoint could go (a meter: see
    ``Meter``). With ``probe``, the ceiling comes ``BATCH32`` after the probe began (``leap``):
    as soon as no answer by then shows that the endpoint batches more than 32. With ``told``,
    it comes at the first answer to a request of the probe instead: the soonest a client that
    does not know how long a batch takes can see that more than 32 answered together, so the
    bound of a rule that learns the batch from its answers."""

    def __init__(
        self, start: int, ceiling: int, probe: int | None = None, *, told: bool = False
    ) -> None:
        self.capacity = Capacity(start)
        self.ceiling = ceiling
        self.probe = probe
        self.told = told
        self.answered = trio.Event()
        self.probing = float("inf")  # since when the probe's places are open
        self.sent: dict[trio.lowlevel.Task, float] = {}  # each attempt's start

    async def acquire(self) -> None:
        await self.capacity.acquire()
        self.sent[trio.lowlevel.current_task()] = trio.current_time()

    def release(self) -> None:
        self.capacity.release()

    def observe(self, failure: Exception | None) -> None:
        sent = self.sent.pop(trio.lowlevel.current_task(), -float("inf"))
        if failure is not None:
            return
        if not self.answered.is_set():
            self.answered.set()
            self.capacity.limit = self.ceiling if self.probe is None else self.probe
            self.probing = trio.current_time()
        elif self.told and sent >= self.probing:  # the probe's first answer: the batch shows
            self.capacity.limit = self.ceiling

    async def leap(self) -> None:
        await self.answered.wait()
        await trio.sleep(BATCH32)
        self.capacity.limit = self.ceiling


def oracle_name(start: int, probe: int | None = None, *, told: bool = False) -> str:
    until = "its first answers come" if told else "a batch of 32 would answer"
    between = "" if probe is None else f"{probe} until {until}, "
    return f"oracle L0={start}, then {between}{CEILING} (a bound)"


def oracles(subtasks: int) -> dict[str, Run]:
    """The oracles for a run of ``subtasks``: from the largest start the sequential target
    allows, from 2, and from 2 through the largest probe the batching32 target allows, to the
    ceiling when a batch of 32 would have answered or when the probe's answers come."""
    largest, probe = largest_start(subtasks), largest_probe(subtasks)
    return {
        oracle_name(largest): supervised(CEILING, oracle=(largest, None, False)),
        oracle_name(2): supervised(CEILING, oracle=(2, None, False)),
        oracle_name(2, probe): supervised(CEILING, oracle=(2, probe, False)),
        oracle_name(2, probe, told=True): supervised(CEILING, oracle=(2, probe, True)),
    }


def supervised(
    workers: int,
    adaptive: dict[str, Any] | None = None,
    oracle: tuple[int, int | None, bool] | None = None,
) -> Run:
    async def run(prompts: list[str], transport: httpx2.ASGITransport) -> list[float | None]:
        meters: list[Any] = [] if adaptive is None else [Adaptive(workers, **adaptive)]
        bound = None if oracle is None else Oracle(oracle[0], workers, oracle[1], told=oracle[2])
        if bound is not None:
            meters.append(bound)
        async with ChatAgent(
            "devserver",
            base_url=URL,
            api_key=KEY,
            max_connections=workers,
            transport=transport,
            request_timeout=None,  # a queue's wait is no failure here
        ) as agent:
            sup = Supervisor(
                agent,
                max_workers=workers,
                retry=Retry(attempts=ATTEMPTS, on=TRANSIENT, seed=0),
                meters=meters,
            )
            async with trio.open_nursery() as nursery:
                if bound is not None and bound.probe is not None and not bound.told:
                    nursery.start_soon(bound.leap)
                aggregate = await sup.run(prompts)
                nursery.cancel_scope.cancel()
        return [
            r.finished - r.started
            if r.ok and r.started is not None and r.finished is not None
            else None
            for r in aggregate
        ]

    return run


def sdk(workers: int) -> Run:
    async def run(prompts: list[str], transport: httpx2.ASGITransport) -> list[float | None]:
        http = httpx2.AsyncClient(
            limits=httpx2.Limits(max_connections=workers), transport=transport, timeout=None
        )
        client = openai.AsyncOpenAI(api_key=KEY, base_url=URL, http_client=http)  # 2 retries
        # The SDK looks up its platform in a worker thread at its first request, and every
        # request sent before that lookup ends waits for it: a real thread, while the virtual
        # clock jumps to the server's next instant, so that under load the first requests went
        # out seconds late (a share of 0.2 of fixed K=256's throughput in one run, 1.0 in the
        # next). One model list first, alone, which the server answers at once and does not
        # count, lets the SDK look it up while nothing else waits.
        await client.models.list()
        gate = trio.Semaphore(workers)
        times: list[float | None] = [None] * len(prompts)

        async def job(i: int, prompt: str) -> None:
            async with gate:
                began = trio.current_time()
                try:
                    await client.chat.completions.create(
                        model="devserver", messages=[{"role": "user", "content": prompt}]
                    )
                except openai.APIError:
                    return
                times[i] = trio.current_time() - began

        try:
            async with trio.open_nursery() as nursery:
                for i, prompt in enumerate(prompts):
                    nursery.start_soon(job, i, prompt)
        finally:
            await http.aclose()
        return times

    return run


SPREAD = " spread="
"""What a mode's name carries after it when its replies vary in length (``--spread``)."""


def alone(mode: str) -> tuple[float, float]:
    """The range each reply's time alone is drawn from under ``mode``: ``ALONE`` itself, or
    ``ALONE`` times ``1 - s`` to ``1 + s`` (uniform, fixed per prompt by the server's seed) for
    a mode named with ``SPREAD`` and ``s``."""
    if SPREAD not in mode:
        return (ALONE, ALONE)
    spread = float(mode.split(SPREAD)[1])
    return (ALONE * (1 - spread), ALONE * (1 + spread))


def measure(mode: str, name: str, run: Run, prompts: list[str]) -> Figures:
    async def virtual() -> Figures:
        settings = MODES[mode.split(SPREAD)[0]]
        transport = httpx2.ASGITransport(
            app=app(latency=alone(mode), model="devserver", **settings)
        )
        began = trio.current_time()
        times = await run(prompts, transport)
        seconds = trio.current_time() - began
        async with httpx2.AsyncClient(transport=transport, base_url="http://devserver") as c:
            seen: dict[str, Any] = (await c.get("/stats")).json()
        done = [t for t in times if t is not None]
        refused = seen["rate_limited"] + seen["overloaded"]
        return Figures(
            mode=mode,
            contender=name,
            seconds=seconds,
            throughput=len(done) / seconds,
            p50=percentile(done, 0.5),
            p95=percentile(done, 0.95),
            p99=percentile(done, 0.99),
            requests=seen["requests"],
            refused=refused,
            refused_share=refused / max(1, seen["requests"]),
            lost=len(times) - len(done),
            peak_running=seen["peak_running"],
            peak_queued=seen["peak_queued"],
        )

    return trio.run(virtual, clock=trio.testing.MockClock(autojump_threshold=0))


def show(found: Figures) -> None:
    print(
        f"{found.mode:14s} {found.contender:30s} {found.throughput:7.2f}/s  "
        f"p50 {found.p50:7.2f}s  p95 {found.p95:7.2f}s  p99 {found.p99:7.2f}s  "
        f"refused {found.refused:5d} ({found.refused_share:5.1%})  lost {found.lost}  "
        f"running<={found.peak_running} queued<={found.peak_queued}  ({found.seconds:.1f}s)",
        file=sys.stderr,
        flush=True,
    )


def verdict(mode: str, rows: list[Figures]) -> dict[str, Any]:
    """The targets, for one mode: each adaptive contender against the fixed K's."""
    fixed = [r for r in rows if r.contender.startswith("fixed")]
    best = max(fixed, key=lambda r: r.throughput)
    enough = min(
        (r for r in fixed if r.throughput >= 0.9 * best.throughput),
        key=lambda r: int(r.contender.split("=")[1]),
    )
    checks: dict[str, Any] = {"best_fixed": best.contender, "reference": enough.contender}
    for row in rows:
        if not row.contender.startswith(("Adaptive", "SDK", "oracle")):
            continue
        checks[row.contender] = {
            "throughput_share": round(row.throughput / best.throughput, 3),
            "p95_ratio": round(row.p95 / enough.p95, 3),
            "refused_share": round(row.refused_share, 4),
            "lost": row.lost,
        }
    return checks


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subtasks", type=int, default=512)
    parser.add_argument("--only", action="append", help="run only the modes with this text")
    parser.add_argument("--fixed", type=int, nargs="*", default=list(FIXED))
    parser.add_argument("--no-makespan", action="store_true")
    parser.add_argument(
        "--spread",
        type=float,
        nargs="*",
        default=[],
        metavar="S",
        help="also run each mode with each reply's time alone drawn from ALONE * (1 +- S)",
    )
    parser.add_argument(
        "--contender",
        action="append",
        help="run only the contenders (besides fixed K) with this text",
    )
    parser.add_argument(
        "--results", type=Path, metavar="FILE", help="also write the figures there as JSON"
    )
    args = parser.parse_args(argv)
    prompts = [f"subtask {i}" for i in range(args.subtasks)]
    rows: list[Figures] = []
    verdicts: dict[str, Any] = {}
    for spread in args.spread:
        if not 0 <= spread < 1:
            parser.error(
                f"--spread must be in [0, 1) (a reply's time varies by at most that share), "
                f"got {spread}"
            )
    modes = [*MODES, *(f"{mode}{SPREAD}{spread:g}" for spread in args.spread for mode in MODES)]
    for mode in modes:
        if args.only and not any(text in mode for text in args.only):
            continue
        mine: list[Figures] = []
        for k in args.fixed:
            mine.append(measure(mode, f"fixed K={k}", supervised(k), prompts))
            show(mine[-1])
        best = max(mine, key=lambda r: r.throughput).contender.split("=")[1]
        contenders = {
            "Adaptive(256)": supervised(CEILING, {}),
            "Adaptive(256, latency=False)": supervised(CEILING, {"latency": False}),
            f"SDK + semaphore K={best}": sdk(int(best)),
            **oracles(args.subtasks),
        }
        for name, run in contenders.items():
            if args.contender and not any(text in name for text in args.contender):
                continue
            mine.append(measure(mode, name, run, prompts))
            show(mine[-1])
        rows.extend(mine)
        verdicts[mode] = verdict(mode, mine)
        print(json.dumps(verdicts[mode]), file=sys.stderr)
    makespan: dict[str, float] = {}
    if not args.no_makespan:
        burst = [f"subtask {i}" for i in range(CEILING)]
        for name, run in {
            "fixed K=256": supervised(CEILING),
            "Adaptive(256)": supervised(CEILING, {}),
            "Adaptive(256, latency=False)": supervised(CEILING, {"latency": False}),
            **oracles(CEILING),
        }.items():
            makespan[name] = measure("batching256", name, run, burst).seconds
        print(f"256 requests against batching256, makespan: {makespan}", file=sys.stderr)
    data = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "benchmark": "endpoints.py",
        "machine": machine(f"openai {openai.__version__}"),
        "where": "in process, virtual time",
        "subtasks": args.subtasks,
        "bounds": {
            str(size): {
                "allowed": allowed(size),
                "largest_start": largest_start(size),
                "largest_probe": largest_probe(size),
            }
            for size in (args.subtasks, CEILING)
        },
        "reach": bound(args.subtasks),
        "rows": [asdict(r) for r in rows],
        "targets": verdicts,
        "makespan_256": makespan,
    }
    if args.results:
        args.results.write_text(json.dumps(data, indent=2) + "\n")
    return data


if __name__ == "__main__":
    main()
