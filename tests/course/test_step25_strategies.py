"""Step 25: restart strategies. Children whose leaves depend on each other keep no stale read
with ``rest_for_one`` or ``one_for_all``, and do with ``one_for_one``, the only restart step 24
knows.

All on virtual time.
"""

from __future__ import annotations

from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lessons import step25_strategies as step25
from lessons._course import laws
from lessons._course.laws import ASPECTS, Board
from tests.course.step_laws import cases, run_virtual
from tests.course.test_step20_rounds import run_json
from trio_supervisor import Strategy


@pytest.mark.parametrize("step", cases(laws.A_STRATEGY_RESTARTS_WHAT_IT_NAMES))
def test_a_strategy_restarts_what_it_names(step: ModuleType) -> None:
    laws.A_STRATEGY_RESTARTS_WHAT_IT_NAMES.verify(step)


def stale_reads(task: str, board: Board, strategy: Strategy, k: int) -> list[str]:
    async def main() -> list[str]:
        answer = await step25.supervise(
            task, board, max_workers=k, attempts=2, backoff=(0, 0), strategy=strategy
        )
        (entry,) = answer.ledger.entries
        assert entry.result.ok
        return sorted(note for note in board.stale if note in str(entry.result.output))

    return run_virtual(main)


@pytest.mark.parametrize("strategy", ["rest_for_one", "one_for_all"])
@settings(max_examples=40, deadline=None)
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
    """The flaw the strategies fix: b read a's note from a call that then failed, and with
    one_for_one nothing restarts b."""
    latencies = {"acme a": 1.0, "acme b": 0.5}
    stale = stale_reads("acme: a, b", Board(latencies, {"acme a"}), "one_for_one", 2)
    assert stale == ["acme a#1"]
    fixed = stale_reads("acme: a, b", Board(latencies, {"acme a"}), "rest_for_one", 2)
    assert fixed == []


def test_the_demo_restarts_the_leaves_after_the_failed_one() -> None:
    (run,) = run_json(25)
    assert run["options"]["strategy"] == "rest_for_one"
    globex = next(slot for slot in run["trace"]["slots"] if slot["subtask"].startswith("globex"))
    restarted = [leaf["subtask"] for leaf in globex["child"]["slots"] if len(leaf["spans"]) > 1]
    assert "globex numbers" in restarted  # after the failed filings: restarted with it
