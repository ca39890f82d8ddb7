"""Step 25: hedged requests and the first k of n. A straggling leaf is answered by a second
request of the same subtask, the straggler cancelled; with ``need``, a company keeps its first k
leaves and cancels the rest. The step before waits for every first request, however slow."""

from __future__ import annotations

import io
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step17_rounds import run_json


@pytest.mark.parametrize("step", cases(laws.A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE))
def test_a_straggler_is_answered_by_its_hedge(step: ModuleType) -> None:
    laws.A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE.verify(step)


@pytest.mark.parametrize("step", cases(laws.THE_FIRST_K_LEAVES_ANSWER))
def test_the_first_k_leaves_answer(step: ModuleType) -> None:
    laws.THE_FIRST_K_LEAVES_ANSWER.verify(step)


@pytest.mark.parametrize("step", cases(laws.THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET))
def test_the_tokens_spent_never_exceed_the_budget(step: ModuleType) -> None:
    laws.THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET.verify(step)


def leaves(run: dict[str, Any], company: int) -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = run["trace"]["slots"][company]["child"]["slots"]
    return children


def test_the_demos_hedge_the_straggler_and_keep_the_first_two() -> None:
    hedged, first_two = run_json(25)
    straggler = leaves(hedged, 1)[1]  # globex reviews: its first request straggles
    assert [span.get("hedge", False) for span in straggler["spans"]][-2:] == [False, True]
    assert straggler["spans"][-2].get("lost")  # the first request, cancelled as it lost
    assert straggler["spans"][-1]["status"] == "ok"
    assert hedged["trace"]["wall"] < 12  # not the straggler's 12 seconds
    news = leaves(first_two, 0)[2]  # acme news: not needed
    assert news["spans"][-1]["status"] == "cancelled"
    assert "acme news" not in first_two["answer"].partition("\n")[0].split(": ", 1)[1]
    assert first_two["trace"]["wall"] < 12


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "--hedge=0",
            "--hedge: must be seconds above 0 and at most 300, or a percentile such as p95, "
            "got '0'",
        ),
        (
            "--hedge=p100",
            "--hedge: must be seconds above 0 and at most 300, or a percentile such as p95, "
            "got 'p100'",
        ),
        ("--need=0", "--need: must be an integer from 1 to 1000, got '0'"),
    ],
)
def test_the_runner_refuses_a_bad_hedge_or_need_in_one_line(
    option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["25", option, "--virtual"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].endswith(message)


def test_the_runner_passes_hedge_and_need_to_the_step() -> None:
    (run,) = run_json(25, "--task", "acme: pricing, reviews, news", "--need", "2")
    assert run["options"]["need"] == 2


def test_a_token_budget_is_never_overshot_and_ends_the_slots_it_cannot_afford() -> None:
    task = "acme: pricing, reviews, news; globex: pricing, reviews"
    (run,) = run_json(25, "--task", task, "--budget-tokens", "100")
    spans = [
        span
        for company in run["trace"]["slots"]
        for leaf in company["child"]["slots"]
        for span in leaf["spans"]
    ]
    spent = sum(
        span["usage"]["input_tokens"] + span["usage"]["output_tokens"]
        for span in spans
        if "usage" in span
    )
    assert 0 < spent <= 100
    assert any(span["status"] == "over budget" for span in spans)
    assert run["options"]["budget_tokens"] == 100


def test_the_runner_refuses_a_budget_of_no_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["25", "--budget-tokens=0", "--virtual"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--budget-tokens: must be an integer from 1 to 1000000000, got '0'")
    )
