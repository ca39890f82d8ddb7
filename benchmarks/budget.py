"""Budget overshoot at fan-out widths 8, 32, 128 and 256: check-then-spend against reservation.

Every contender runs ``4 * width`` slots at most ``width`` at a time against one token limit of
``150 * width`` (enough for about two waves of calls). Each attempt may use up to 100 tokens (a
20-token prompt and ``max_tokens`` of 80) and really uses between 40 and 100 (drawn from a fixed
seed), after a latency drawn from a lognormal. The naive contender does what most agent
frameworks do: each call checks the budget before it starts (anything left?) and is charged
after it ends. The reserving one is a ``trio_supervisor.Budget``: each attempt reserves its
worst case before it starts and settles what it used after. The overshoot is what was spent
beyond the limit; reservation's is 0 by construction, check-then-spend's grows with the width.

Everything runs on virtual time (``trio.testing.MockClock``), so the figures are the same on
every machine and every run.

Run: ``python benchmarks/budget.py`` (writes ``benchmarks/results/budget.json`` too;
``--no-write`` to only print).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import random
import sys
from pathlib import Path
from typing import Any

import trio
import trio.testing

from trio_supervisor import Budget, Status, Supervisor, Usage, report_usage

WIDTHS = (8, 32, 128, 256)
PROMPT = 20  # tokens of each request's prompt
MAX_TOKENS = 80  # each request's max_tokens: its reply holds at most this many
WORST = Usage(input_tokens=PROMPT, output_tokens=MAX_TOKENS)
SEED = 23
RESULTS = Path(__file__).resolve().parent / "results" / "budget.json"


def workload(width: int, seed: int = SEED) -> list[tuple[float, int]]:
    """``4 * width`` calls: each one's latency (seconds) and the completion tokens it uses."""
    draw = random.Random(seed * 1000 + width)
    return [
        (
            round(draw.lognormvariate(0.0, 0.5), 3),
            draw.randint(MAX_TOKENS // 2 - PROMPT, MAX_TOKENS),
        )
        for _ in range(4 * width)
    ]


class NaiveBudget:
    """Check-then-spend: a call starts while anything is left, and is charged when it ends."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.spent = 0

    def check(self) -> bool:
        """Whether a call may start: the spent total is under the limit."""
        return self.spent < self.tokens

    def spend(self, tokens: int) -> None:
        """Charge a call that ended."""
        self.spent += tokens


class NaiveOverBudget(Exception):
    """The naive budget said no before the call started."""


async def naive_run(width: int, calls: list[tuple[float, int]], limit: int) -> tuple[int, int]:
    """The spent total and the completed calls, under check-then-spend."""
    budget = NaiveBudget(limit)

    async def call(index: int) -> int:
        latency, completion = calls[index]
        if not budget.check():
            raise NaiveOverBudget(f"spent {budget.spent} of {budget.tokens}")
        await trio.sleep(latency)
        budget.spend(PROMPT + completion)
        return completion

    aggregate = await Supervisor(call, max_workers=width).run(range(len(calls)))
    return budget.spent, aggregate.succeeded


async def reserved_run(width: int, calls: list[tuple[float, int]], limit: int) -> tuple[int, int]:
    """The spent total and the completed calls, under a reserving ``Budget``."""
    budget = Budget(tokens=limit, name="tokens", reserve=lambda index: WORST)

    async def call(index: int) -> int:
        latency, completion = calls[index]
        await trio.sleep(latency)
        report_usage(input_tokens=PROMPT, output_tokens=completion)
        return completion

    supervisor = Supervisor(call, max_workers=width, meters=[budget])
    aggregate = await supervisor.run(range(len(calls)))
    assert budget.outstanding == 0
    assert budget.reservations == budget.settlements
    assert all(r.status in (Status.OK, Status.OVER_BUDGET) for r in aggregate)
    return budget.spent.tokens, aggregate.succeeded


def _virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


def overshoot_rows(widths: tuple[int, ...] = WIDTHS, seed: int = SEED) -> list[dict[str, Any]]:
    """One row per width: the limit, and for each contender what it spent, by how much it
    overshot the limit (tokens and percent of the limit) and how many calls completed."""
    rows = []
    for width in widths:
        calls = workload(width, seed)
        limit = 150 * width
        naive_spent, naive_done = _virtual(naive_run, width, calls, limit)
        reserved_spent, reserved_done = _virtual(reserved_run, width, calls, limit)
        rows.append(
            {
                "width": width,
                "slots": len(calls),
                "limit_tokens": limit,
                "naive_spent": naive_spent,
                "naive_overshoot": max(0, naive_spent - limit),
                "naive_overshoot_pct": round(100 * max(0, naive_spent - limit) / limit, 1),
                "naive_completed": naive_done,
                "reserved_spent": reserved_spent,
                "reserved_overshoot": max(0, reserved_spent - limit),
                "reserved_completed": reserved_done,
            }
        )
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| width | slots | limit (tokens) | check-then-spend: spent | overshoot | completed "
        "| reservation: spent | overshoot | completed |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['width']} | {row['slots']} | {row['limit_tokens']:,} "
            f"| {row['naive_spent']:,} | {row['naive_overshoot']:,} "
            f"({row['naive_overshoot_pct']}%) | {row['naive_completed']} "
            f"| {row['reserved_spent']:,} | {row['reserved_overshoot']} "
            f"| {row['reserved_completed']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    options = parser.parse_args(argv)
    rows = overshoot_rows()
    print("# budget overshoot: check-then-spend vs reservation (virtual time)")
    print()
    print(table(rows))
    met = all(row["reserved_overshoot"] == 0 for row in rows)
    print()
    print(f"- reservation overshoot 0 at every width: {'met' if met else 'NOT met'}")
    if not options.no_write:
        RESULTS.parent.mkdir(exist_ok=True)
        measured = {
            "measured": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "machine": f"{platform.processor() or platform.machine()}, Python "
            f"{platform.python_version()}, trio {trio.__version__} (virtual time)",
            "rows": rows,
        }
        RESULTS.write_text(json.dumps(measured, indent=2) + "\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
