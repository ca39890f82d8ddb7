"""Step 29: hedged requests. A straggling leaf is answered by a second request of the same
subtask, the straggler cancelled. The step before waits for every first request, however slow."""

from __future__ import annotations

import io
from types import ModuleType
from typing import Any

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.runner import main
from tests.course.step_laws import cases
from tests.course.test_step20_rounds import run_json


@pytest.mark.parametrize("step", cases(laws.A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE))
def test_a_straggler_is_answered_by_its_hedge(step: ModuleType) -> None:
    laws.A_STRAGGLER_IS_ANSWERED_BY_ITS_HEDGE.verify(step)


def leaves(run: dict[str, Any], company: int) -> list[dict[str, Any]]:
    children: list[dict[str, Any]] = run["trace"]["slots"][company]["child"]["slots"]
    return children


def test_the_demo_hedges_the_straggler() -> None:
    (hedged,) = run_json(29)
    straggler = leaves(hedged, 1)[1]  # globex reviews: its first request straggles
    assert [span.get("hedge", False) for span in straggler["spans"]][-2:] == [False, True]
    assert straggler["spans"][-2].get("lost")  # the first request, cancelled as it lost
    assert straggler["spans"][-1]["status"] == "ok"
    assert hedged["trace"]["wall"] < 12  # not the straggler's 12 seconds


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
    ],
)
def test_the_runner_refuses_a_bad_hedge_in_one_line(
    option: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["29", option, "--virtual"], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].endswith(message)
