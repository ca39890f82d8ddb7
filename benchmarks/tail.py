"""The tail of a run's makespan, with and without hedged requests, from one run of this script.

A supervisor's wall time is its slowest slot. Each run here is 100 slots at once against a
sub-agent with a heavy-tailed latency: a lognormal body (median ``BODY`` seconds, sigma
``SIGMA``) and 1% stragglers that take 10 times as long. Two sections:

- **Simulated, on virtual time**: the sub-agent is a coroutine sleeping its drawn latency, on
  ``trio.testing.MockClock``, so the 1,000 runs per contender take seconds and their makespans
  are exact; enough runs for p99 and p99.9.
- **Loopback, on real time**: the same latency law, served by the loopback OpenAI-compatible
  server (``trio_supervisor.testing.devserver``, on ``127.0.0.1``, a free port), each request of
  a prompt drawing its own latency, called by ``ChatAgent``; fewer runs (bounded), scaled down.

Each contender runs the same latencies draw for draw (the n-th call of slot s of run r): without
a hedge, and with ``HEDGE`` on one supervisor that serves all its runs (so its
percentile is of the durations it has seen). Reported: p50, p99 and p99.9 of the makespan, the
extra attempts (hedges over the first attempts), and the p99 cut. Target: p99 cut by at least
50% for at most 5% extra attempts. The figures go to stdout and to
``benchmarks/results/tail.json`` (``{"measured", "machine", "rows"}``) for the site.

A budget-overshoot section (naive check-then-spend against reservation) comes from
``benchmarks/budget.py``'s ``overshoot_rows()`` when that file exists: see ``budget_rows``.

Run: ``python benchmarks/tail.py`` (``--quick`` for a smoke run, ``--help`` for options).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
import trio.testing
from _machine import machine

from trio_supervisor import Hedge, Retry, Supervisor

SLOTS = 100
BODY = 1.0  # the body's median latency, in seconds (virtual time)
SIGMA = 0.25  # the lognormal body's sigma
STRAGGLERS = 0.01  # the share of calls that straggle
SLOWDOWN = 10.0  # how much longer a straggler takes
HEDGE = Hedge("p98", max_extra=2)  # a second hedge for a hedge that itself straggles
REAL_SCALE = 0.2  # the loopback's latencies: BODY * REAL_SCALE = 200 ms median
RESULTS = Path(__file__).resolve().parent / "results" / "tail.json"


def latency(seed: int, run: int, slot: int, call: int) -> float:
    """The latency of the ``call``-th call of ``slot`` in ``run``: the same for every
    contender, whatever order they make their calls in."""
    draw = random.Random(hash((seed, run, slot, call)) & 0xFFFFFFFF)
    seconds = BODY * math.exp(SIGMA * draw.gauss(0.0, 1.0))
    return seconds * SLOWDOWN if draw.random() < STRAGGLERS else seconds


def quantile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0 to 1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered) - 1e-9)) - 1]


def summary(
    name: str, section: str, makespans: list[float], first: int, hedges: int
) -> dict[str, Any]:
    return {
        "section": section,
        "contender": name,
        "runs": len(makespans),
        "p50": quantile(makespans, 0.50),
        "p99": quantile(makespans, 0.99),
        "p99.9": quantile(makespans, 0.999),
        "mean": statistics.fmean(makespans),
        "attempts": first + hedges,
        "extra_attempts": hedges / first if first else 0.0,
    }


# --- simulated, on virtual time ----------------------------------------------------------------


def simulated(runs: int, seed: int, hedge: Hedge | None) -> tuple[list[float], int, int]:
    """``runs`` runs of SLOTS slots on one supervisor: their makespans, first attempts, hedges."""
    makespans: list[float] = []
    counts = [0, 0]

    async def main() -> None:
        calls: dict[tuple[int, int], int] = {}
        current = [0]

        async def agent(slot: int) -> int:
            key = (current[0], slot)
            call = calls.get(key, 0)
            calls[key] = call + 1
            await trio.sleep(latency(seed, current[0], slot, call))
            return slot

        supervisor = Supervisor(agent, max_workers=SLOTS, hedge=hedge)
        for run in range(runs):
            current[0] = run
            start = trio.current_time()
            aggregate = await supervisor.run(range(SLOTS))
            makespans.append(trio.current_time() - start)
            counts[0] += len(aggregate)
            counts[1] += sum(result.hedges for result in aggregate)
            assert aggregate.succeeded == SLOTS

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return makespans, counts[0], counts[1]


# --- loopback, on real time --------------------------------------------------------------------


retried = [0]  # the loopback section's retries of dropped connections, of the last contender


def loopback_runs(
    runs: int, seed: int, hedge: Hedge | None, budget: float
) -> tuple[list[float], int, int]:
    """``runs`` runs against the loopback server on 127.0.0.1, each request of a prompt drawing
    its own latency (scaled by REAL_SCALE); no run starts once ``budget`` seconds have passed."""
    from trio_supervisor import Backoff
    from trio_supervisor.agents import ChatAgent, TransientError
    from trio_supervisor.testing.devserver import Script, loopback

    makespans: list[float] = []
    counts = [0, 0]
    current = [0]
    retried[0] = 0
    seen: dict[str, int] = {}

    def script(prompt: str) -> Script:
        call = seen.get(prompt, 0)
        seen[prompt] = call + 1
        slot = int(prompt.rsplit(" ", 1)[-1])
        return Script(latency=latency(seed, current[0], slot, call) * REAL_SCALE)

    async def main() -> None:
        began = time.perf_counter()
        async with (
            loopback(in_process=False, script=script, latency=(0.0, 0.0)) as server,
            ChatAgent(
                "devserver",
                base_url=server.base_url,
                api_key=server.api_key,
                max_connections=2 * SLOTS,
            ) as agent,
        ):
            # a connection the busy server drops is retried at once (both contenders alike)
            supervisor = Supervisor(
                agent,
                max_workers=SLOTS,
                hedge=hedge,
                timeout=30,
                retry=Retry(attempts=3, on=TransientError, backoff=Backoff(initial=0, maximum=0)),
            )
            warm = await supervisor.run([f"warm {slot}" for slot in range(SLOTS)])
            assert warm.succeeded == SLOTS
            for run in range(runs):
                if time.perf_counter() - began > budget:
                    break
                current[0] = run
                seen.clear()
                start = trio.current_time()
                aggregate = await supervisor.run(
                    [f"run {run} slot {slot}" for slot in range(SLOTS)]
                )
                makespans.append(trio.current_time() - start)
                counts[0] += len(aggregate)
                counts[1] += sum(result.hedges for result in aggregate)
                retried[0] += sum(r.attempts - 1 - r.hedges for r in aggregate)
                assert aggregate.succeeded == SLOTS, [r.error for r in aggregate if not r.ok][:3]

    trio.run(main)
    return makespans, counts[0], counts[1]


# --- the budget section, another file's ----------------------------------------------------------


def budget_rows() -> list[dict[str, Any]]:
    """HOOK: the budget-overshoot rows (widths 8, 32, 128, 256, naive check-then-spend against
    reservation) from ``benchmarks/budget.py``'s ``overshoot_rows()``, when that file exists;
    none otherwise. Each row is written to the JSON as it comes, under ``section: "budget"``
    unless it names its own."""
    path = Path(__file__).resolve().parent / "budget.py"
    if not path.exists():
        return []
    spec = importlib.util.spec_from_file_location("budget_benchmark", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows: list[dict[str, Any]] = list(module.overshoot_rows())
    return [{"section": "budget", **row} for row in rows]


def table(rows: list[dict[str, Any]], unit: Callable[[float], str]) -> None:
    print("| contender | runs | p50 | p99 | p99.9 | extra attempts |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['contender']} | {row['runs']} | {unit(row['p50'])} | {unit(row['p99'])} | "
            f"{unit(row['p99.9'])} | {row['extra_attempts']:.2%} |"
        )
    print()


def judged(plain: dict[str, Any], hedged: dict[str, Any]) -> dict[str, Any]:
    cut = 1 - hedged["p99"] / plain["p99"]
    met = cut >= 0.5 and hedged["extra_attempts"] <= 0.05
    return {
        "section": plain["section"],
        "contender": "target",
        "p99_cut": cut,
        "extra_attempts": hedged["extra_attempts"],
        "met": met,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=1000, help="simulated runs per contender (1000)")
    p.add_argument("--real-runs", type=int, default=40, help="loopback runs per contender (40)")
    p.add_argument("--real-budget", type=float, default=60.0, help="seconds per loopback contender")
    p.add_argument("--seed", type=int, default=2013)
    p.add_argument("--no-real", action="store_true", help="skip the loopback section")
    p.add_argument("--quick", action="store_true", help="a smoke run: few runs, no JSON written")
    p.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.real_runs, args.real_budget = 20, 3, 10.0
    hedge = HEDGE
    print(f"# machine: {machine()}")
    print(
        f"# {SLOTS} slots at once per run; latency lognormal (median {BODY:g}s, sigma {SIGMA:g}),"
        f" {STRAGGLERS:.0%} stragglers at {SLOWDOWN:g}x; {hedge!r}\n"
    )
    rows: list[dict[str, Any]] = []
    targets: list[dict[str, Any]] = []
    print(f"## simulated sub-agent, virtual time ({args.runs} runs each)\n")
    section = []
    for name, policy in (("no hedge", None), ("hedge", hedge)):
        makespans, first, hedges = simulated(args.runs, args.seed, policy)
        section.append(summary(name, "simulated", makespans, first, hedges))
    table(section, lambda seconds: f"{seconds:.2f}s")
    targets.append(judged(*section))
    rows += section
    if not args.no_real:
        print(f"## loopback server on 127.0.0.1, real time (up to {args.real_runs} runs each)\n")
        section = []
        for name, policy in (("no hedge", None), ("hedge", hedge)):
            makespans, first, hedges = loopback_runs(
                args.real_runs, args.seed, policy, args.real_budget
            )
            row = summary(name, "loopback", makespans, first, hedges)
            row["retries"] = retried[0]
            section.append(row)
        table(section, lambda seconds: f"{seconds * 1000:.0f} ms")
        dropped = ", ".join(f"{row['contender']} {row['retries']}" for row in section)
        print(f"connections the server dropped, retried at once: {dropped}\n")
        targets.append(judged(*section))
        rows += section
    budget = budget_rows()
    if budget:
        print("## budget overshoot (benchmarks/budget.py)\n")
        for row in budget:
            print(f"- {row}")
        print()
        rows += budget
    print("## targets (p99 cut >= 50% for <= 5% extra attempts)\n")
    for target in targets:
        print(
            f"- {target['section']}: p99 cut {target['p99_cut']:.0%}, extra attempts "
            f"{target['extra_attempts']:.2%}: {'met' if target['met'] else 'NOT met'}"
        )
    rows += targets
    if not args.quick:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        measured = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        document = {"measured": measured, "machine": machine(), "rows": rows}
        args.out.write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nwritten: {args.out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
