"""Peak memory of Supervisor.stream over a million lazy subtasks: it must stay flat.

A generator yields N subtasks (``await sleep(0); return i``), K workers run them through
``Supervisor.stream``, and the consumer drops each result. The peak RSS of the process is sampled
as results are consumed; the report gives it at every tenth of the run and the growth from the
first 10% to the end. A stream that kept its results, or pulled ahead of its window, would grow
with N; a bounded one stays flat.

Run: ``python benchmarks/stream_memory.py`` (``--n 100000`` for a shorter run).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import trio
from _machine import machine

from trio_supervisor import Supervisor


def peak_rss_mib() -> float:
    """This process image's peak RSS (VmHWM, not inherited from a parent). Linux only."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def subtasks(n: int) -> Iterator[int]:
    yield from range(n)


async def work(i: int) -> int:
    await trio.sleep(0)  # noqa: ASYNC115  # the subtask the issue benchmarks
    return i


async def stream(n: int, k: int, checkpoints: list[int]) -> list[tuple[int, float]]:
    samples = []
    seen = 0
    marks = iter(checkpoints)
    mark = next(marks, None)
    async with Supervisor(work, max_workers=k).stream(subtasks(n)) as results:
        async for result in results:
            if result.output != seen:
                raise AssertionError(f"result {seen} came out of order")
            seen += 1
            if seen == mark:
                samples.append((seen, peak_rss_mib()))
                mark = next(marks, None)
    if seen != n:
        raise AssertionError(f"the stream yielded {seen} of {n} results")
    return samples


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--n", type=int, default=1_000_000, help="subtasks (1,000,000)")
    p.add_argument("--k", type=int, default=100, help="max_workers (100)")
    p.add_argument(
        "--results",
        type=Path,
        metavar="FILE",
        help="also write the figures there as JSON (benchmarks/results/stream_memory.json)",
    )
    args = p.parse_args(argv)
    checkpoints = [args.n * tenth // 10 for tenth in range(1, 11)]
    before = peak_rss_mib()
    start = time.perf_counter()
    samples = trio.run(stream, args.n, args.k, checkpoints)
    elapsed = time.perf_counter() - start
    print(f"# {args.n:,} lazy subtasks through Supervisor.stream, K={args.k}")
    print(f"# peak RSS before the run: {before:.1f} MiB; run took {elapsed:.1f} s")
    print("| results consumed | peak RSS (MiB) |")
    print("|---:|---:|")
    for seen, rss in samples:
        print(f"| {seen:,} | {rss:.1f} |")
    first, last = samples[0][1], samples[-1][1]
    print(
        f"\ngrowth from {samples[0][0]:,} to {samples[-1][0]:,} results: "
        f"{last - first:+.1f} MiB ({(last - first) * 2**20 / (samples[-1][0] - samples[0][0]):.2f}"
        " bytes per extra subtask)"
    )
    if args.results:
        rows = [{"N": args.n, "K": args.k, "consumed": 0, "peak_rss_mib": before}]
        rows += [{"N": args.n, "K": args.k, "consumed": n, "peak_rss_mib": r} for n, r in samples]
        write_results(args.results, rows, seconds=elapsed)
    return 0


def write_results(path: Path, rows: list[dict[str, float]], seconds: float) -> None:
    """The figures as data, the docs site's performance page draws from: when and where they
    were measured, and the peak RSS after each tenth of the results (0: before the run)."""
    data = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "benchmark": "stream_memory.py",
        "command": "python benchmarks/stream_memory.py",
        "seconds": seconds,
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    sys.exit(main())
