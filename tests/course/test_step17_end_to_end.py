"""Step 17 end to end, on real sockets and real time (a few seconds in all, nothing asserted
about how long anything took): the runner starts the loopback server itself, points the step at
any endpoint with ``--endpoint``, and says what went wrong there in one line, never the key."""

from __future__ import annotations

import functools
import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from rich.console import Console

from lessons._course.arguments import parser
from lessons._course.demos import demos
from lessons._course.runner import main
from lessons._course.running import step_options
from lessons._course.steps import PART_TWO, step, steps
from trio_supervisor.testing.devserver import serve

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-SENTINEL-step17-5f0e9a1c"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``main(argv)``'s exit status, and everything it printed: its console, stdout, stderr."""
    out = io.StringIO()
    status = main(argv, console=Console(file=out, width=200, color_system=None))
    captured = capsys.readouterr()
    return status, out.getvalue() + captured.out + captured.err


def test_step_12_runs_against_the_loopback_server_it_starts_with_no_set_up() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "lessons", "17", "--task", "pricing; reviews; inventory"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "120"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "step17_http_subagents · your task" in done.stdout
    assert "3 ok, 0 failed" in done.stdout  # the third request, over the limit, was retried
    assert done.stderr == ""


def test_an_endpoint_nothing_listens_on_is_one_line_before_any_demo_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreachable server is found before the demos (a bounded TCP connect), not as every
    slot's retried ``ConnectError`` in runs that end with exit 0."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        main(["17", "--endpoint", url, "--model", "m"], console=Console(file=out))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m lessons: error: cannot reach {url}: ")
    assert err.endswith(f"(is a server listening on 127.0.0.1:{port}?)\n")
    assert err.count("\n") == 1
    assert out.getvalue() == ""  # no demo ran
    assert KEY not in err


def test_under_an_endpoint_the_demo_titles_say_what_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demos' titles describe the loopback server's script (a 500 once, a stalled
    request); against a real server that script does not run, and the titles say what does."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    given = parser().parse_args(["17", "--endpoint", "http://127.0.0.1:8000/v1", "--model", "m"])
    titles = [demo.title for demo in demos(given, 17)]
    assert titles == ["the demo's 3 subtasks", "the demo's 5 subtasks"]
    assert all(not (demo.fail or demo.hang or demo.flaky) for demo in demos(given, 17))


async def test_a_wrong_key_is_one_line_per_slot_and_the_key_never_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The server wants another key: each slot fails once with a 401 (permanent: not retried),
    said in one line, and the key is in no output, ``--json`` included."""
    async with trio.open_nursery() as nursery:
        url: str = await nursery.start(
            lambda task_status: serve(api_key="the-right-key", task_status=task_status)
        )
        os.environ["OPENAI_API_KEY"] = KEY
        try:
            for json_too in ([], ["--json"]):
                argv = ["17", "--task", "a; b", "--endpoint", url, "--model", "m", *json_too]
                call = functools.partial(run_main, argv, capsys)
                status, printed = await trio.to_thread.run_sync(call)
                assert status == 0
                assert KEY not in printed
                assert "Traceback" not in printed
                if json_too:
                    runs = json.loads(printed)["runs"]
                    assert [(run["endpoint"], run["model"]) for run in runs] == [(url, "m")]
                else:
                    said = f"PermanentError: 401 Unauthorized from {url}/: check the API key"
                    lines = [line for line in printed.splitlines() if said in line]
                    assert len(lines) == 4  # each slot: its result row and its answer line
                    assert "attempts that failed and were tried again" not in printed
        finally:
            del os.environ["OPENAI_API_KEY"]
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (
            ["--endpoint", "127.0.0.1:8000/v1", "--model", "m"],
            {"OPENAI_API_KEY": KEY},
            "argument --endpoint: must be an http(s) base URL such as "
            "http://127.0.0.1:8000/v1, got '127.0.0.1:8000/v1'",
        ),
        (
            ["--endpoint", "http://127.0.0.1:99999/v1", "--model", "m"],
            {"OPENAI_API_KEY": KEY},
            "argument --endpoint: must be an http(s) base URL such as "
            "http://127.0.0.1:8000/v1, got 'http://127.0.0.1:99999/v1'",
        ),
        (
            ["--endpoint", "http://127.0.0.1:8000/v1"],
            {"OPENAI_API_KEY": KEY},
            "--endpoint needs --model NAME: the model to ask there",
        ),
        (
            ["--model", "m"],
            {},
            "--model names the model of an --endpoint: give --endpoint URL too",
        ),
        (
            ["--endpoint", "http://127.0.0.1:8000/v1", "--model", "m"],
            {},
            "--endpoint reads its API key from OPENAI_API_KEY, which is not set "
            "(any non-empty value for a server that checks none)",
        ),
        (
            ["--endpoint", "http://127.0.0.1:8000/v1", "--model", "m", "--virtual"],
            {"OPENAI_API_KEY": KEY},
            "--endpoint runs on real time: a real server cannot follow --virtual's clock",
        ),
        (
            ["--endpoint", "http://127.0.0.1:8000/v1", "--model", "m", "--fail", "1"],
            {"OPENAI_API_KEY": KEY},
            "--fail scripts the loopback server; an --endpoint does what it does: "
            "leave out --fail or --endpoint",
        ),
        (["--rate", "0"], {}, "argument --rate: must be a number of attempts a second from 0.01"),
    ],
)
def test_an_endpoint_that_cannot_be_used_is_one_line_up_front_and_exit_2(
    argv: list[str],
    env: dict[str, Any],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        main(["17", *argv], console=Console(file=out))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"python -m lessons: error: {message}")
    assert err.count("\n") == 1
    assert out.getvalue() == ""
    assert KEY not in err


@pytest.mark.parametrize("number", [number for number in steps() if number < PART_TWO])
def test_the_options_of_step_12_change_no_step_before_it(
    number: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--rate``, ``--endpoint`` and ``--model`` are ignored by the steps before 11, as every
    later step's options are: the same demos, the same options, no endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    given = ["--rate", "2", "--endpoint", "http://127.0.0.1:8000/v1", "--model", "m"]
    plain = parser().parse_args([str(number)])
    changed = parser().parse_args([str(number), *given])
    assert demos(changed, number) == demos(plain, number)
    record = step(number)
    for demo in demos(changed, number):
        assert step_options(record, changed, demo) == step_options(record, plain, demo)
    assert not record.takes_endpoint
