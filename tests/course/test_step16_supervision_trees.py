"""Step 16: supervision trees. The shared-budget deadlock and its fix, the bound on the leaves,
deadlines that flow down, escalation, and the restart strategies on children that depend on
each other.

All on virtual time.
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from lessons import step16_supervision_trees as step16
from lessons._course.runner import main
from tests.course.probing import Probe
from tests.course.step_laws import run_virtual
from trio_supervisor import Status, Strategy, Trace
from trio_supervisor.testing import SimulatedAgent, SubAgentError

ASPECTS = ["a", "b", "c", "d"]
GUARD = 1000.0  # seconds of virtual time: a tree still running then never ends


@st.composite
def trees(draw: st.DrawFn) -> str:
    """A task of 1-5 companies, each with 1-4 subtasks of its own."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=5))
    return "; ".join(
        f"c{company}: {', '.join(ASPECTS[:size])}" for company, size in enumerate(sizes)
    )


def leaves_of(task: str) -> list[list[str]]:
    return [step16.subtasks_of(company.strip()) for company in task.split(";")]


@settings(max_examples=40)
@given(task=trees(), k=st.integers(1, 4))
def test_parents_drawing_from_the_leaves_budget_never_finish(task: str, k: int) -> None:
    """The broken tree: with at least K companies, K parents hold every place of the shared
    budget while their children wait for one, and no leaf ever runs."""
    companies = len(leaves_of(task))
    probe = Probe(SimulatedAgent())

    async def main() -> bool:
        with trio.move_on_after(GUARD):
            await step16.supervise_broken(task, probe, max_workers=k)
            return True
        return False

    finished = run_virtual(main)
    if companies >= k:
        assert not finished
        assert probe.calls == []
    else:  # fewer parents than places: the children get the rest, and it ends
        assert finished


@settings(max_examples=60)
@given(task=trees(), k=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_the_fixed_tree_always_finishes_with_at_most_k_leaves_at_once(
    task: str, k: int, seed: int
) -> None:
    probe = Probe(SimulatedAgent(seed))

    async def main() -> list[Status]:
        with trio.fail_after(GUARD):
            aggregate = await step16.supervise(task, probe, max_workers=k)
        return [result.status for result in aggregate.results]

    statuses = run_virtual(main)
    assert statuses == [Status.OK] * len(leaves_of(task))
    assert probe.most <= k
    opened = sum(len(leaves) for leaves in leaves_of(task)[:k])  # the first K parents' leaves
    assert probe.most == min(k, opened)  # the bound is reached, not undercut


@settings(max_examples=60)
@given(
    task=trees(),
    k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    company_timeout=st.none() | st.integers(0, 40).map(lambda n: (2 * n + 1) / 64),
    deadline=st.none() | st.integers(0, 80).map(lambda n: (2 * n + 1) / 64),
)
def test_no_child_outlives_its_parents_timeout_or_the_runs_deadline(
    task: str, k: int, seed: int, company_timeout: float | None, deadline: float | None
) -> None:
    probe = Probe(SimulatedAgent(seed))

    async def main() -> Trace:
        trace = Trace([company.strip() for company in task.split(";")])
        await step16.supervise(
            task,
            probe,
            max_workers=k,
            company_timeout=math.inf if company_timeout is None else company_timeout,
            deadline=math.inf if deadline is None else deadline,
            trace=trace,
        )
        return trace

    trace = run_virtual(main)
    assert probe.calls, "some leaf ran"
    for call in probe.calls:
        assert call.end is not None
        if deadline is not None:
            assert call.end <= deadline
        if company_timeout is not None:
            company = call.subtask.split(" ")[0]
            spans = next(slot.spans for slot in trace.slots if slot.subtask.startswith(company))
            parent = [span for span in spans if span.start <= call.start][-1]  # its attempt
            assert call.end <= parent.start + company_timeout


@pytest.mark.parametrize("company_attempts", [1, 2])
async def test_a_child_past_its_intensity_fails_its_parents_slot_with_its_reason(
    company_attempts: int, autojump_clock: object
) -> None:
    agent = SimulatedAgent()
    aggregate = await step16.supervise(
        "acme; globex: pricing, reviews failing, hiring; initech",
        agent,
        max_workers=4,
        attempts=3,
        intensity=(1, 10.0),
        company_attempts=company_attempts,
    )
    assert [result.status for result in aggregate.results] == [
        Status.OK,
        Status.FAILED,
        Status.OK,
    ]
    assert (
        aggregate.results[1].error == "Escalated: globex: gave up: more than 1 restarts within 10s"
    )
    assert aggregate.results[1].attempts == company_attempts  # the parent's policy decides
    assert agent.calls["globex reviews failing"] == 2 * company_attempts  # R + 1 per child run


class Board:
    """Leaves that depend on each other: each publishes a note as it starts, and returns the
    notes of the subtasks before it in its company's plan as it ends. A flaky leaf fails its
    first call after publishing: a note from a failed call is stale."""

    def __init__(self, latencies: dict[str, float], flaky: set[str]) -> None:
        self.latencies = latencies
        self.flaky = flaky
        self.notes: dict[str, str] = {}
        self.calls: Counter[str] = Counter()
        self.stale: set[str] = set()

    async def __call__(self, leaf: str) -> str:
        self.calls[leaf] += 1
        note = f"{leaf}#{self.calls[leaf]}"
        self.notes[leaf] = note
        await trio.sleep(self.latencies[leaf])
        if leaf in self.flaky and self.calls[leaf] == 1:
            self.stale.add(note)
            raise SubAgentError(f"{leaf} failed")
        company, aspect = leaf.split(" ")
        earlier = [f"{company} {other}" for other in ASPECTS[: ASPECTS.index(aspect)]]
        return ",".join(self.notes[other] for other in earlier if other in self.notes)


def stale_reads(task: str, board: Board, strategy: Strategy, k: int) -> list[str]:
    async def main() -> list[str]:
        aggregate = await step16.supervise(
            task, board, max_workers=k, attempts=2, strategy=strategy
        )
        assert all(result.ok for result in aggregate.results)
        outputs = " ".join(str(result.output) for result in aggregate.results)
        return sorted(note for note in board.stale if note in outputs)

    return run_virtual(main)


@pytest.mark.parametrize("strategy", ["rest_for_one", "one_for_all"])
@settings(max_examples=60)
@given(
    ticks=st.lists(st.integers(1, 64), min_size=2, max_size=4, unique=True),
    flaky=st.integers(0, 3),
    k=st.integers(1, 4),
)
def test_children_restarted_with_the_one_they_depend_on_never_keep_a_stale_read(
    strategy: Strategy, ticks: list[int], flaky: int, k: int
) -> None:
    aspects = ASPECTS[: len(ticks)]
    task = f"acme: {', '.join(aspects)}"
    latencies = {f"acme {aspect}": tick / 32 for aspect, tick in zip(aspects, ticks, strict=True)}
    board = Board(latencies, {f"acme {aspects[flaky % len(aspects)]}"})
    assert stale_reads(task, board, strategy, k) == []


def test_one_for_one_keeps_a_read_of_a_failed_siblings_note() -> None:
    """The flaw the strategies fix: reviews read pricing's note from a call that then failed,
    and with one_for_one nothing restarts reviews."""
    latencies = {"acme a": 1.0, "acme b": 0.5}
    stale = stale_reads("acme: a, b", Board(latencies, {"acme a"}), "one_for_one", 2)
    assert stale == ["acme a#1"]
    fixed = stale_reads("acme: a, b", Board(latencies, {"acme a"}), "rest_for_one", 2)
    assert fixed == []


@pytest.mark.parametrize(
    ("task", "said"),
    [
        (": x, y", "got ': x, y': it has no name"),
        ("acme: ", "got 'acme:': nothing follows its colon"),
        ("acme: pricing; : reviews", "got ': reviews': it has no name"),
    ],
)
def test_a_malformed_company_is_refused_in_one_line_before_any_work(
    task: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A company is ``name`` or ``name: a, b``: one without a name, or with nothing after its
    colon, is refused up front (today's ``": x, y"`` would run subtasks named " x")."""
    with pytest.raises(ValueError, match=re.escape(said)):
        step16.check_task(task)
    with pytest.raises(SystemExit) as exit_:
        main(["16", "--virtual", "--task", task], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "python -m lessons: error: --task: a company is 'name' or 'name: subtask, subtask', "
        f"{said}\n"
    )
