"""What any concurrency policy can reach against batches of 256 while it keeps the targets of
batches of 32 and of one at a time: a bound computed from the loopback server's batching curve.

A default knows neither how long a reply takes alone nor how a batch slows it: all it learns is
its answers. Against the loopback server (``Serving("batching")``: ``b`` requests decoding
together each advance at ``1 / b ** SLOWDOWN`` of their pace alone, ``ALONE`` seconds), that
constrains every policy, whatever its rule:

- **Before its first answer it sends at most** ``largest_start(n)``: until then a server that
  answers one at a time (as slowly as this one's first answer will come) looks the same, and
  the sequential target (p95 within 2x one reply) lets only ``allowed(n)`` of ``n`` wait behind
  more than one other. A start of one teaches nothing (one at a time answers it alike), so the
  start ``a`` is 2 or more.
- **Until more than 32 answers come together it holds at most** ``largest_probe(n)`` **in
  flight**: until then a server that batches 32 (with a curve of its own) looks the same, and
  the batching32 target (p95 within 2x one batch of 32) lets each request wait at most two
  batches, and ``allowed(n)`` more. So the policy *probes*: ``p`` requests, 33 or more, whose
  answers come together, after which it may keep the ceiling (256) in flight.

Stages that follow each other, each sent when the one before has answered, run ``a``, then
``p``, then the rest at once: 256 requests take ``ALONE * (a**s + p**s + (256 - a - p)**s)``
(``s = SLOWDOWN``). A power under 1 is concave, so the sum is least with the stages as unequal
as the constraints let them be: the least start (2) and the least probe (33). Requests sent
beside a stage that tells (the start, the probe) make it answer later, as a larger stage does:
``search`` tries them too (``beside``, sent a share of the probe's time after it), and none
does better. ``bound`` is the least makespan of 256 requests and the best throughput of ``n``
over every such schedule, as shares of fixed K=256's (the best fixed K against batches of
256). What no policy can do under these constraints, no rule can: the targets of batching256
(90% of the throughput, 1.2x the makespan) are out of reach of any default that keeps the
other two.

What it leaves out: a client that knew the curve could read silence (no answer when a batch of
32 would have answered) and leap sooner; that is a client tuned to one server, not a default.

Run: ``python benchmarks/reach.py [--subtasks 512]`` (pure arithmetic, a second).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

from trio_supervisor.testing.devserver import SLOWDOWN

ALONE = 0.59  # seconds a reply takes alone (as endpoints.py's)
CEILING = 256  # the batch of batching256, and the ceiling
SMALL = 32  # the batch of batching32
SHARES = (0.0, 0.25, 0.5, 0.75)  # when requests beside the probe are sent: shares of its time


def allowed(subtasks: int) -> int:
    """How many of a run's ``subtasks`` may answer later than its p95 does: endpoints.py's
    ``percentile`` takes the answer at index ``int(0.95 n)`` in order, so those after it."""
    return subtasks - 1 - int(0.95 * subtasks)


def largest_start(subtasks: int) -> int:
    """The most requests a default may send before its first answer and keep the sequential
    target: the i-th of them answers after ``i`` replies, so all but two wait behind more
    than one other, and at most ``allowed`` may."""
    return allowed(subtasks) + 2


def largest_probe(subtasks: int) -> int:
    """The most requests in flight that keep the batching32 target until more than 32 answer
    together: two batches of 32, each answered within two batches' time, and ``allowed``
    more."""
    return 2 * SMALL + allowed(subtasks)


def staged(requests: int, start: int, probe: int) -> float:
    """The makespan of ``requests`` (at most ``start + probe + CEILING``) in three stages
    that follow each other: ``start``, ``probe``, then the rest, each all at once."""
    rest = requests - start - probe
    return ALONE * sum(math.pow(size, SLOWDOWN) for size in (start, probe, rest) if size > 0)


def simulate(requests: int, start: int, probe: int, beside: int = 0, after: float = 0.0) -> float:
    """When the last of ``requests`` answers against batches of ``CEILING``: ``start`` sent
    at 0; when they have answered, ``probe``, and ``beside`` more ``after`` (a share) of the
    probe's time alone later; when more than ``SMALL`` answer together, as many as keep
    ``CEILING`` in flight, again at each answer. With ``probe`` 0: a fixed K of ``start``.

    Every request needs ``ALONE`` of work; ``b`` running do it at ``b ** -SLOWDOWN`` each."""
    now = 0.0
    left: list[list[float]] = []  # each running request's work left, and its stage
    sent = 0
    stage = 0  # 0: the start runs; 1: the probe; 2: the ceiling
    due = float("inf")  # when ``beside`` is sent

    def send(count: int, tag: int) -> None:
        nonlocal sent
        count = max(0, min(count, requests - sent))
        left.extend([ALONE, tag] for _ in range(count))
        sent += count

    if probe == 0:  # fixed K=start: as many as keep it in flight, from the first
        stage = 2
    send(start, 0)
    answered = 0
    while answered < requests:
        if not left:
            now = due
        else:
            pace = len(left) ** -SLOWDOWN
            step = min(work for work, _ in left) / pace
            step = min(step, max(0.0, due - now))
            now += step
            for row in left:
                row[0] -= step * pace
        if now >= due:
            due = float("inf")
            send(beside, 1)
        ended = [row for row in left if row[0] <= 1e-12]
        if not ended:
            continue
        left = [row for row in left if row[0] > 1e-12]
        answered += len(ended)
        if stage == 0 and not any(tag == 0 for _, tag in left):
            stage = 1
            send(probe, 1)
            if beside:
                due = now + after * ALONE * probe**SLOWDOWN
        elif stage == 1 and len(ended) > SMALL:
            stage = 2
            due = float("inf")
        if stage == 2:
            send((start if probe == 0 else CEILING) - len(left), 2)
    return now


@dataclass
class Bound:
    subtasks: int
    largest_start: int
    largest_probe: int
    fixed_makespan: float  # fixed K=256, 256 requests, seconds
    makespan: float  # the least of any schedule, 256 requests
    makespan_ratio: float
    makespan_schedule: tuple[int, int, int, float]  # start, probe, beside, after
    fixed_throughput: float  # fixed K=256, ``subtasks`` requests, answers a second
    throughput: float  # the best of any schedule
    throughput_share: float
    throughput_schedule: tuple[int, int, int, float]


def search(subtasks: int) -> Bound:
    """The least makespan (256 requests) and the best throughput (``subtasks``) over every
    start, probe and requests beside it that the two constraints allow."""
    top, probe_top = largest_start(subtasks), largest_probe(subtasks)
    fixed_span = ALONE * CEILING**SLOWDOWN
    fixed_rate = subtasks / simulate(subtasks, CEILING, 0)
    best_span: tuple[float, tuple[int, int, int, float]] = (float("inf"), (0, 0, 0, 0.0))
    best_rate: tuple[float, tuple[int, int, int, float]] = (0.0, (0, 0, 0, 0.0))
    for start in range(2, top + 1):
        for probe in range(SMALL + 1, probe_top + 1):
            for beside in range(0, probe_top - probe + 1, 8):
                for after in SHARES if beside else (0.0,):
                    schedule = (start, probe, beside, after)
                    span = simulate(CEILING, *schedule)
                    rate = subtasks / simulate(subtasks, *schedule)
                    best_span = min(best_span, (span, schedule))
                    best_rate = max(best_rate, (rate, schedule))
    return Bound(
        subtasks=subtasks,
        largest_start=top,
        largest_probe=probe_top,
        fixed_makespan=fixed_span,
        makespan=best_span[0],
        makespan_ratio=best_span[0] / fixed_span,
        makespan_schedule=best_span[1],
        fixed_throughput=fixed_rate,
        throughput=best_rate[0],
        throughput_share=best_rate[0] / fixed_rate,
        throughput_schedule=best_rate[1],
    )


def bound(subtasks: int) -> dict[str, object]:
    """``search``'s figures, as endpoints.py's results hold them."""
    return asdict(search(subtasks))


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subtasks", type=int, default=512)
    args = parser.parse_args(argv)
    if args.subtasks < 1:
        parser.error(f"--subtasks must be at least 1, got {args.subtasks}")
    found = bound(args.subtasks)
    print(json.dumps(found, indent=2), file=sys.stderr)
    return found


if __name__ == "__main__":
    main()
