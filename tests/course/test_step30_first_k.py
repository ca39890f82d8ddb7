"""Step 30: the first k of n. With ``need``, a company keeps its first k leaves and cancels the
rest. The step before waits for every leaf, the straggler included."""

from __future__ import annotations

import io
from types import ModuleType

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json
from tests.course.test_step29_hedging import leaves


@pytest.mark.parametrize("step", cases(laws.THE_FIRST_K_LEAVES_ANSWER))
def test_the_first_k_leaves_answer(step: ModuleType) -> None:
    laws.THE_FIRST_K_LEAVES_ANSWER.verify(step)


def test_the_demo_keeps_the_first_two() -> None:
    _, first_two = run_json(30)
    news = leaves(first_two, 0)[2]  # acme news: not needed
    assert news["spans"][-1]["status"] == "cancelled"
    assert "acme news" not in first_two["answer"].partition("\n")[0].split(": ", 1)[1]
    assert first_two["trace"]["wall"] < 12


def test_the_runner_passes_need_to_the_step() -> None:
    (run,) = run_json(30, "--task", "acme: pricing, reviews, news", "--need", "2")
    assert run["options"]["need"] == 2


def test_the_runner_refuses_a_bad_need_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["30", "--need=0", "--virtual"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].endswith("--need: must be an integer from 1 to 1000, got '0'")
