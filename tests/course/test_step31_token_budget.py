"""Step 31: a token budget. What the leaves spend, hedges included, is reserved before each
request and never exceeds ``budget_tokens``. The step before bounds nothing the leaves spend."""

from __future__ import annotations

import io
import json
from types import ModuleType

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json


@pytest.mark.parametrize("step", cases(laws.THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET))
def test_the_tokens_spent_never_exceed_the_budget(step: ModuleType) -> None:
    laws.THE_TOKENS_SPENT_NEVER_EXCEED_THE_BUDGET.verify(step)


def test_the_demo_ends_the_leaves_the_budget_cannot_afford() -> None:
    generous, run = run_json(31)
    spans = [
        span
        for company in run["trace"]["slots"]
        for leaf in company["child"]["slots"]
        for span in leaf["spans"]
    ]
    ended = [span["status"] for span in spans]  # 90 tokens pay for acme's three requests
    assert ended[:3] == ["ok"] * 3
    assert set(ended[3:]) == {"over budget"}, "a leaf past the budget sent a request"
    assert run["options"]["budget_tokens"] == 90
    assert "over budget" not in json.dumps(generous["trace"])  # 400 tokens pay for every leaf


def test_a_token_budget_is_never_overshot_and_ends_the_slots_it_cannot_afford() -> None:
    task = "acme: pricing, reviews, news; globex: pricing, reviews"
    (run,) = run_json(31, "--task", task, "--budget-tokens", "100")
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
        main(["31", "--budget-tokens=0", "--virtual"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("--budget-tokens: must be an integer from 1 to 1000000000, got '0'")
    )
