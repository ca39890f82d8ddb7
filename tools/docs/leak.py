"""The laws page's sample: a real Hypothesis search for latencies that make step 2 return its
results out of plan order, shrunk to the smallest, with its timeline."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio
import trio.testing
from hypothesis import find, settings
from hypothesis import strategies as st
from rich.console import Console

from lessons._course import probes
from lessons._course.arguments import parser
from lessons._course.demos import Demo
from lessons._course.running import final_statuses, run_demo
from lessons._course.showing import ConsoleWatch, show
from lessons._course.steps import load_step, step, step_number
from tools.docs.paths import WIDTH
from trio_supervisor import Aggregate
from trio_supervisor.timeline import render_svg

if TYPE_CHECKING:
    pass


# -- the laws page: the smallest input that breaks step 2 ------------------------------------

#: How many inputs Hypothesis may draw while it looks for a leak, as in the test of the law.
SEARCH = 500


def exact_latencies() -> st.SearchStrategy[list[float]]:
    """Distinct latencies in whole 1/32 s (exact in binary), in any order: what the law of plan
    order draws (``lessons/_course/laws.py``), so the page shows the same search."""
    return probes.exact_latencies()


@dataclass(frozen=True)
class Leak:
    """A Hypothesis search for latencies whose results come back out of plan order, and where
    it ended: every input it ran, in order, whether each leaked, and the smallest leak."""

    step: str
    runs: list[tuple[list[float], bool]]
    smallest: list[float]

    @property
    def first(self) -> list[float]:
        """The first input that leaked, before any shrinking."""
        return next(latencies for latencies, leaked in self.runs if leaked)

    @property
    def shrinking(self) -> tuple[int, int]:
        """Of the runs after the first leak (Hypothesis shrinking it), how many there were and
        how many of them still leaked."""
        start = next(index for index, (_, leaked) in enumerate(self.runs) if leaked) + 1
        after = self.runs[start:]
        return len(after), sum(leaked for _, leaked in after)


def find_leak(name: str) -> Leak:
    """Let Hypothesis search, on virtual time, for latencies that make step ``name`` return its
    results out of plan order, and shrink them to the smallest such input. Derandomized, so
    every build finds the same inputs in the same order.

    Raises:
      hypothesis.errors.NoSuchExample: if no input leaks: the step keeps plan order.
    """
    module = load_step(name)
    options = step(name).accepted(max_workers=2)
    runs: list[tuple[list[float], bool]] = []

    def leaks(latencies: list[float]) -> bool:
        plan = [f"s{slot}" for slot in range(len(latencies))]
        by_subtask = dict(zip(plan, latencies, strict=True))

        async def worker(subtask: str) -> str:
            await trio.sleep(by_subtask[subtask])
            return f"out:{subtask}"

        async def run() -> Aggregate[str, str]:
            result: Aggregate[str, str] = await module.supervise("; ".join(plan), worker, **options)
            return result

        aggregate = trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
        leaked = [result.subtask for result in aggregate.results] != plan
        runs.append((list(latencies), leaked))
        return leaked

    found = find(
        exact_latencies(),
        leaks,
        settings=settings(database=None, max_examples=SEARCH, derandomize=True),
    )
    return Leak(name, runs, found)


def _why(latencies: list[float]) -> str:
    """Why these latencies leak, when they are the two the search ends on."""
    if len(latencies) == 2 and latencies[0] > latencies[1]:
        return (
            "Subtask 0 is the slower, so its result is appended second, and the two come back "
            "swapped:"
        )
    return "Their results come back out of plan order:"


def _least(latencies: list[float]) -> str:
    """Whether these are the smallest distinct latencies the strategy can draw, as a clause."""
    drawn = sorted(round(latency * 32) for latency in latencies)
    return ", the smallest distinct ones it can draw" if drawn == [1, 2][: len(drawn)] else ""


def _seconds(latencies: list[float]) -> str:
    """Latencies as the strategy draws them, whole 1/32 s: ``[0.0625] -> "2/32 s"``."""
    return ", ".join(f"{round(latency * 32)}/32 s" for latency in latencies)


def leak_page(leak: Leak) -> str:
    """The markdown the laws page includes: the search in numbers, the smallest leak drawn as a
    timeline by the same code as every step's demos, and what the runner prints for it."""
    smallest = leak.smallest
    number = step_number(leak.step)
    demo = Demo(
        "the smallest leak",
        "; ".join(f"subtask {slot}" for slot in range(len(smallest))),
        slow=dict(enumerate(smallest)),
    )
    args = parser().parse_args([str(number), "--virtual"])
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system=None, highlight=False)
    run = run_demo(leak.step, demo, args, ConsoleWatch(console))
    assert run.trace is not None
    show(console, run)
    output = "\n".join(line.rstrip() for line in out.getvalue().strip("\n").splitlines())
    title = f"{leak.step} on the smallest leak Hypothesis found, on virtual time"
    svg = render_svg(run.trace, final_statuses(run), title=title)
    tried, leaked = leak.shrinking
    return (
        f"While this site was built, Hypothesis ran step {number}'s `supervise` on "
        f"{len(leak.runs)} inputs. The first that leaked had {len(leak.first)} latencies "
        f"({_seconds(leak.first)}). It then shrank it: of the {tried} simpler inputs it tried "
        f"next (fewer latencies, smaller numbers), {leaked} still leaked, and it went on from "
        f"each of those, until no simpler input leaked: **{len(smallest)} latencies, "
        f"{_seconds(smallest)}**{_least(smallest)}. {_why(smallest)}\n\n"
        f'<figure class="timeline" data-step="{leak.step}" data-demo="smallest-leak">\n'
        f"{svg}"
        f"<figcaption>Step {number} on the smallest leak: rows in plan order, <em>done #</em> "
        "is the completion order, and the results below follow it.</figcaption>\n</figure>\n\n"
        f'???+ example "What step {number} returns for it"\n\n'
        "    ```text\n"
        + "".join(f"    {line}\n" if line else "\n" for line in output.splitlines())
        + "    ```\n"
    )
