"""What a journaled run checks when it begins or resumes: a run_id names one plan, whatever
journaled it first (a run, a stream, lazy or not, or a re-planning run), and another plan under
it is refused, in one line, before any work; a lazy stream's input is checked as it is pulled.
A re-planning run's batches come back from the journal exactly as the planner made them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from trio_supervisor import Batch, Done, Durable, Journal, Ledger, Supervisor
from trio_supervisor._digest import read_subtasks, subtask_texts


def virtual(fn: Any, *args: Any) -> Any:
    return trio.run(fn, *args, clock=trio.testing.MockClock(autojump_threshold=0))


class Worker:
    """Answers ``findings on <subtask>`` after a second; counts its calls."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    async def __call__(self, subtask: Any) -> str:
        self.calls[repr(subtask)] += 1
        await trio.sleep(1)
        return f"findings on {subtask}"


async def streamed(
    supervisor: Supervisor[Any, Any], subtasks: Iterable[Any], journal: Journal, run_id: str
) -> list[Any]:
    """The outputs of a stream of ``subtasks``, failing (not hanging) if it never ends."""
    outputs: list[Any] = []
    with trio.fail_after(1000):
        async with supervisor.stream(subtasks, durable=Durable(run_id, journal)) as results:
            outputs.extend([result.output async for result in results])
    return outputs


async def cut_short(
    supervisor: Supervisor[Any, Any], subtasks: Iterable[Any], journal: Journal, run_id: str
) -> None:
    """A stream of ``subtasks`` left after its first result, its input not pulled to the end."""
    async with supervisor.stream(subtasks, durable=Durable(run_id, journal)) as results:
        async for _ in results:
            break
    await journal.committed()


# -- 1. a lazy stream resumed with another input ----------------------------------------------


@pytest.mark.parametrize(
    ("again", "said"),
    [
        ("xyz", "slot 0 was 'a', now 'x'"),
        ("abz", "slot 2 was 'c', now 'z'"),
        ("ab", "it had 3 slots, now 2"),
        ("abcd", "it had 3 slots, now at least 4"),
    ],
)
def test_a_lazy_stream_resumed_with_another_input_says_so_instead_of_hanging(
    tmp_path: Path, again: str, said: str
) -> None:
    worker = Worker()

    async def main() -> None:
        with Journal(tmp_path / "runs.db", writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            await streamed(supervisor, iter("abc"), journal, "s")
            worker.calls.clear()
            with pytest.raises(ValueError, match="journaled with another input") as raised:
                await streamed(supervisor, iter(again), journal, "s")
            assert str(raised.value) == (
                f"run 's' was journaled with another input ({said}): give this input a run_id "
                "of its own, or the input it was journaled with"
            )
            assert await streamed(supervisor, iter("abc"), journal, "s") == [
                "findings on a",
                "findings on b",
                "findings on c",
            ]

    virtual(main)
    assert not worker.calls  # the same input resumed: every slot from the journal


# -- 2. another plan under a known run_id, whatever journaled it first --------------------------


async def by_run(supervisor: Supervisor[Any, Any], plan: list[str], journal: Journal) -> list[Any]:
    return [r.output for r in await supervisor.run(plan, durable=Durable("x", journal))]


async def by_listed_stream(
    supervisor: Supervisor[Any, Any], plan: list[str], journal: Journal
) -> list[Any]:
    return await streamed(supervisor, plan, journal, "x")


async def by_lazy_stream(
    supervisor: Supervisor[Any, Any], plan: list[str], journal: Journal
) -> list[Any]:
    return await streamed(supervisor, iter(plan), journal, "x")


async def by_killed_lazy_stream(
    supervisor: Supervisor[Any, Any], plan: list[str], journal: Journal
) -> list[Any]:
    await cut_short(supervisor, iter(plan), journal, "x")
    return []


WAYS: dict[str, Callable[[Supervisor[Any, Any], list[str], Journal], Awaitable[list[Any]]]] = {
    "run": by_run,
    "listed stream": by_listed_stream,
    "lazy stream": by_lazy_stream,
    "lazy stream cut short": by_killed_lazy_stream,
}
CHECKED = [way for way in WAYS if way != "lazy stream cut short"]


class Planner:
    """Two rounds of tuple subtasks (tuples in lists in tuples among them), then done."""

    def __init__(self, rounds: list[list[Any]]) -> None:
        self.rounds = rounds
        self.asked = 0

    async def first(self, task: str) -> Batch[Any]:
        self.asked += 1
        return Batch(self.rounds[0], note="round 1")

    async def next(self, task: str, ledger: Ledger[Any, Any], *, fresh: bool) -> Any:
        self.asked += 1
        done = len(ledger.rounds)
        if done < len(self.rounds):
            return Batch(self.rounds[done], note=f"round {done + 1}")
        return Done(answer=" | ".join(str(e.result.output) for e in ledger.entries))


async def replanned(journal: Journal, planner: Planner, worker: Worker) -> Any:
    supervisor = Supervisor(worker, max_workers=2)
    return await supervisor.replan("research", planner, durable=Durable("x", journal))


def test_a_run_and_a_replan_never_share_a_run_id(tmp_path: Path) -> None:
    worker = Worker()
    planner = Planner([["a", "b"]])

    async def main() -> None:
        with Journal(tmp_path / "runs.db", writer="inline") as journal:
            supervisor = Supervisor(worker, max_workers=2)
            await supervisor.run(["a", "b"], durable=Durable("x", journal))
            worker.calls.clear()
            with pytest.raises(ValueError, match="'x' was journaled by a run of its own plan"):
                await replanned(journal, planner, worker)
            assert (planner.asked, worker.calls) == (0, {})  # refused before any work

        with Journal(tmp_path / "other.db", writer="inline") as journal:
            await replanned(journal, planner, worker)
            worker.calls.clear()
            for way in CHECKED:
                with pytest.raises(ValueError, match="'x' was journaled by a re-planning run"):
                    await WAYS[way](supervisor, ["a", "b"], journal)
            assert not worker.calls
            asked = planner.asked
            await replanned(journal, planner, worker)  # the same task resumes
            assert (planner.asked, worker.calls) == (asked, {})

    virtual(main)


# -- 3. a re-planning run's subtasks come back exactly --------------------------------------


ROUNDS: list[list[Any]] = [
    [("acme", "pricing"), ("acme", "reviews")],
    [("beta", ["eu", ("uk", 2)]), ("gamma", (1.5, None, True)), "plain"],
    [[("nested", ("deep",))], {"k": ("v", 1)}],
]


def test_tuples_in_a_replan_batch_resume_as_tuples_at_every_kill(tmp_path: Path) -> None:
    plain_worker = Worker()

    async def plain() -> Any:
        return await Supervisor(plain_worker, max_workers=2).replan("research", Planner(ROUNDS))

    expected = virtual(plain)
    assert not expected.degraded
    for kill in [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5]:
        path = tmp_path / f"kill-{kill}.db"

        async def killed(kill: float = kill, path: Path = path) -> None:
            journal = Journal(path, writer="inline", interval=100.0, count=1000)
            with trio.move_on_after(kill):
                await replanned(journal, Planner(ROUNDS), Worker())
            journal.close(flush=False)

        virtual(killed)
        worker = Worker()

        async def resumed(path: Path = path, worker: Worker = worker) -> Any:
            with Journal(path, writer="inline") as journal:
                return await replanned(journal, Planner(ROUNDS), worker)

        answer = virtual(resumed)
        assert (kill, answer.text, answer.degraded) == (kill, expected.text, False)
        assert [e.subtask for e in answer.ledger.entries] == [
            subtask for batch in ROUNDS for subtask in batch
        ]
        assert set(worker.calls) <= set(plain_worker.calls)


@pytest.mark.parametrize(
    "subtasks",
    [
        [("acme", "pricing")],
        [("a", ["b", ("c", 1)]), [("d",)], {"e": (1, 2.5)}, (), ("x",)],
        ["s", 1, 2.5, -3, None, True, b"bytes", 1j, -0.0, 10**30],
    ],
)
def test_subtasks_come_back_from_their_journaled_text_exactly(subtasks: list[Any]) -> None:
    back = read_subtasks(subtask_texts(subtasks))
    assert back == subtasks
    assert [repr(s) for s in back] == [repr(s) for s in subtasks]  # types too: 1 is not 1.0


class Point:
    def __repr__(self) -> str:
        return "Point(1, 2)"


@pytest.mark.parametrize("subtask", [Point(), float("nan"), float("inf")])
def test_a_subtask_whose_text_does_not_read_back_is_refused_with_the_rule(subtask: Any) -> None:
    with pytest.raises(TypeError, match="give subtasks of str, numbers, tuples"):
        subtask_texts(["fine", subtask])


def test_a_journaled_replan_refuses_a_batch_that_would_not_resume_before_dispatching_it(
    tmp_path: Path,
) -> None:
    worker = Worker()

    async def main() -> None:
        refused = pytest.raises(TypeError, match=r"the subtask Point\(1, 2\) does not read back")
        with Journal(tmp_path / "runs.db", writer="inline") as journal, refused:
            await replanned(journal, Planner([["fine", Point()]]), worker)

    virtual(main)
    assert not worker.calls
