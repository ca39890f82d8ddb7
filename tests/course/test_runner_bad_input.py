"""Bad command lines: every one is refused in one line that states the rule (exit 2), before any
demo runs; no value lets a run go on forever, no value prints a traceback."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import lessons._course.runner as runner
from lessons._course.arguments import ATTEMPTS, COUNT, SECONDS, TOKENS, WORKERS
from lessons._course.runner import main
from lessons._course.steps import steps

HUGE = "99999999999999999999"
LAST = max(steps())  # the last step, as the refusal names it
NAMED = "a step name, or 'all'"

SECONDS_RULE = f"must be a number of seconds above 0 and at most {SECONDS:g}"
SLOW_RULE = f"must be I:S (slot I takes S seconds, from 0 to {SECONDS:g}), e.g. 1:3"
INTENSITY_RULE = (
    f"must be R/T (at most R restarts, from 0 to {COUNT}, in T seconds, above 0 and at most "
    f"{SECONDS:g}), e.g. 3/5"
)
FLAKY_RULE = f"must be a slot I or I:K (slot I fails its first K calls, K from 1 to {COUNT})"
HEDGE_RULE = f"must be seconds above 0 and at most {SECONDS:g}, or a percentile such as p95"
RATE_RULE = "must be a number of attempts a second from 0.01 to 1000"


def refused(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """The one line ``python -m lessons <argv>`` is refused with; nothing may run first."""

    def ran(*args: object, **kwargs: object) -> None:
        raise AssertionError("a demo ran before the command line was refused")

    monkeypatch.setattr(runner, "run_demo", ran)
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        main(argv, console=Console(file=out, width=100))
    assert exit_.value.code == 2
    assert out.getvalue() == ""
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("python -m lessons: error: ")
    return err.removeprefix("python -m lessons: error: ").removesuffix("\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # a number that is not finite, or past the option's range, never reaches a run
        (["8", "--slow", "1:inf"], f"argument --slow: {SLOW_RULE}, got '1:inf'"),
        (["8", "--slow", "1:1e308"], f"argument --slow: {SLOW_RULE}, got '1:1e308'"),
        (["8", "--slow", "1:nan"], f"argument --slow: {SLOW_RULE}, got '1:nan'"),
        (["8", "--slow", "1:-1"], f"argument --slow: {SLOW_RULE}, got '1:-1'"),
        (["6", "--timeout", "inf"], f"argument --timeout: {SECONDS_RULE}, got 'inf'"),
        (["6", "--timeout", "1e9"], f"argument --timeout: {SECONDS_RULE}, got '1e9'"),
        (["16", "--deadline", "inf"], f"argument --deadline: {SECONDS_RULE}, got 'inf'"),
        (["16", "--deadline", "3000"], f"argument --deadline: {SECONDS_RULE}, got '3000'"),
        (["9", "--intensity", "1/inf"], f"argument --intensity: {INTENSITY_RULE}, got '1/inf'"),
        (["9", "--intensity", "1/nan"], f"argument --intensity: {INTENSITY_RULE}, got '1/nan'"),
        (
            ["9", "--intensity", f"{HUGE}/5"],
            f"argument --intensity: {INTENSITY_RULE}, got '{HUGE}/5'",
        ),
        (["18", "--rate", "1e-300"], f"argument --rate: {RATE_RULE}, got '1e-300'"),
        (["18", "--rate", "inf"], f"argument --rate: {RATE_RULE}, got 'inf'"),
        (["29", "--hedge", "inf"], f"argument --hedge: {HEDGE_RULE}, got 'inf'"),
        (["29", "--hedge", "1e9"], f"argument --hedge: {HEDGE_RULE}, got '1e9'"),
        (["29", "--hedge", "nan"], f"argument --hedge: {HEDGE_RULE}, got 'nan'"),
        (["8", "--flaky", f"1:{HUGE}"], f"argument --flaky: {FLAKY_RULE}, got '1:{HUGE}'"),
        # every count has a stated maximum
        (
            ["8", "--attempts", HUGE],
            f"argument --attempts: must be an integer from 1 to {ATTEMPTS}, got '{HUGE}'",
        ),
        (
            ["3", "--workers", HUGE],
            f"argument --workers: must be an integer from 1 to {WORKERS}, got '{HUGE}'",
        ),
        (
            ["13", "--window", HUGE],
            f"argument --window: must be an integer from 1 to {COUNT}, got '{HUGE}'",
        ),
        (
            ["10", "--take", HUGE],
            f"argument --take: must be an integer from 1 to {COUNT}, got '{HUGE}'",
        ),
        (
            ["20", "--max-rounds", HUGE],
            f"argument --max-rounds: must be an integer from 1 to {COUNT}, got '{HUGE}'",
        ),
        (
            ["21", "--max-subtasks", HUGE],
            f"argument --max-subtasks: must be an integer from 1 to {COUNT}, got '{HUGE}'",
        ),
        (
            ["21", "--max-stalls", HUGE],
            f"argument --max-stalls: must be an integer from 0 to {COUNT}, got '{HUGE}'",
        ),
        (
            ["21", "--max-resets", "-1"],
            f"argument --max-resets: must be an integer from 0 to {COUNT}, got '-1'",
        ),
        (
            ["31", "--budget-tokens", HUGE],
            f"argument --budget-tokens: must be an integer from 1 to {TOKENS}, got '{HUGE}'",
        ),
        (
            ["30", "--need", HUGE],
            f"argument --need: must be an integer from 1 to {COUNT}, got '{HUGE}'",
        ),
        (
            ["3", "--workers", ""],
            f"argument --workers: must be an integer from 1 to {WORKERS}, got ''",
        ),
        (["3", "--seed", "1.5"], "argument --seed: invalid int value: '1.5'"),
    ],
)
def test_a_number_out_of_its_range_is_refused_with_its_rule(
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert refused([*argv, "--virtual"], monkeypatch, capsys) == message


@pytest.mark.parametrize("option", ["--fail", "--hang", "--crash", "--flaky", "--slow"])
def test_a_slot_given_the_same_option_twice_is_refused(
    option: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    value = "1:2" if option == "--slow" else "1"
    argv = ["26", "--virtual", "--timeout", "2", option, value, option, value]
    assert refused(argv, monkeypatch, capsys) == (
        f"slot 1 is given {option} twice: give each slot once"
    )


@pytest.mark.parametrize(
    ("argv", "company", "leaves"),
    [
        (["--need", "99"], "acme: pricing, reviews", 2),  # the first demo's company has two
        (["--need", "3"], "acme: pricing, reviews", 2),
        (["--task", "acme: pricing, reviews, news; globex", "--need", "2"], "globex", 1),
    ],
)
def test_need_past_a_company_s_leaves_is_refused_not_clamped(
    argv: list[str],
    company: str,
    leaves: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    need = argv[argv.index("--need") + 1]
    assert refused(["30", "--virtual", *argv], monkeypatch, capsys) == (
        f"--need must be at most the leaves of each company (a company keeps its first K), "
        f"and {company!r} has {leaves}, got {need}"
    )


def test_need_within_every_company_s_leaves_runs() -> None:
    out = io.StringIO()
    argv = ["30", "--virtual", "--task", "acme: pricing, reviews; globex: a, b, c", "--need", "2"]
    assert main(argv, console=Console(file=out, width=100)) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["²"], f"unknown step '²': choose a number 1-{LAST}, a step name, or 'all'"),
        (["9" * 5000], f"unknown step '{'9' * 5000}': choose a number 1-{LAST}, {NAMED}"),
        (["--task", "a; b"], "--task is for a step's runs: name the step (such as 3), or 'all'"),
        (["--virtual"], "--virtual is for a step's runs: name the step (such as 3), or 'all'"),
        (
            ["--json", "--workers", "2"],
            "--workers is for a step's runs: name the step (such as 3), or 'all'",
        ),
    ],
)
def test_an_odd_command_line_is_refused_with_one_line(
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert refused(argv, monkeypatch, capsys) == message
