"""The benchmark scripts run at a tiny size and check their outputs; nothing is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from types import ModuleType

import pytest
import trio

from tests.library.benchmark_scripts import BENCHMARKS, load


def test_every_overhead_contender_returns_every_result_in_order() -> None:
    overhead = load("overhead")
    for name in overhead.EVERY_CONTENDER:
        assert overhead.measure(name, 300, 7) >= 0  # measure() raises on a wrong output


def test_the_failing_contender_fails_every_slot_after_both_attempts() -> None:
    overhead = load("overhead")
    assert trio.run(overhead.supervisor_all_failing, 300, 7) == list(range(300))
    succeeding = trio.run(overhead.supervisor_all_succeeding, 300, 7)
    assert trio.run(overhead.floor, 300, 7) == succeeding == list(range(300))


def test_the_overhead_table_names_every_contender_against_the_floor(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    overhead = load("overhead")
    fast = ["floor", "Supervisor.run", "Supervisor.run timeout", "hand loop", "hand loop timeout"]
    monkeypatch.setattr(overhead, "memory_in_fresh_process", lambda name, n, k: 0.0)
    assert overhead.main(["--sizes", "50", "--workers", "100", "--reps", "1", "--only", *fast]) == 0
    out = capsys.readouterr().out
    assert "| contender | µs/subtask | / floor | vs hand loop |" in out
    assert "| floor |" in out
    for name in fast:
        assert f"| {name} |" in out


def test_the_memory_mode_reports_one_runs_time_and_peak(
    capsys: pytest.CaptureFixture[str],
) -> None:
    overhead = load("overhead")
    assert overhead.main(["--memory", overhead.FAILING, "500", "7"]) == 0
    footprint = json.loads(capsys.readouterr().out)
    assert set(footprint) == {"seconds", "peak_mib", "bytes_per_subtask"}
    assert footprint["seconds"] > 0
    assert footprint["peak_mib"] > 0


# µs per subtask that meet every target of the script, for runs that measure nothing
MEETING = {
    "floor": 2.0,
    "Supervisor.run": 3.0,
    "Supervisor.run timeout": 4.0,
    "Supervisor.run attempts=3": 3.5,
    "Supervisor.stream": 3.5,
    "aiometer run_all": 30.0,
}


def fake_run(
    monkeypatch: pytest.MonkeyPatch,
    costs: dict[str, float],
    failing: tuple[float, float] = (1.5, 80.0),
) -> ModuleType:
    """The overhead module, its timings replaced by ``costs`` (µs per subtask) and the failing
    run's (seconds, peak MiB) against a succeeding run of (1.0 s, 60 MiB)."""
    overhead = load("overhead")
    footprints = {
        overhead.SUCCEEDING: overhead.Footprint(1.0, 60.0, 100.0),
        overhead.FAILING: overhead.Footprint(*failing, 200.0),
        overhead.FLOOR_SUCCEEDING: overhead.Footprint(0.5, 40.0, 50.0),
        overhead.FLOOR_FAILING: overhead.Footprint(2.0, 100.0, 600.0),
    }
    monkeypatch.setattr(overhead, "measure", lambda name, n, k: costs[name] * n / 1e6)
    monkeypatch.setattr(overhead, "memory_in_fresh_process", lambda name, n, k: 0.0)
    monkeypatch.setattr(overhead, "footprint_in_fresh_process", lambda name, n, k: footprints[name])
    return overhead


ONE_RUN = ["--sizes", "1000", "--workers", "100", "--reps", "1", "--failure-reps", "1"]


def test_check_exits_0_when_every_target_is_met(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    overhead = fake_run(monkeypatch, MEETING)
    assert (
        overhead.main([*ONE_RUN, "--check", "--only", *MEETING, *overhead.FAILURE_CONTENDERS]) == 0
    )
    out = capsys.readouterr().out
    assert "NOT met" not in out
    assert "7 of 7 targets met" in out


@pytest.mark.parametrize(
    ("name", "cost", "line"),
    [
        (
            "Supervisor.run",
            4.5,
            "- Supervisor.run / floor (N=1,000, K=100): 4.50 / 2.00 µs = 2.25x (<= 1.8): NOT met",
        ),
        (
            "Supervisor.run timeout",
            4.8,
            "- Supervisor.run timeout / Supervisor.run (N=1,000, K=100): 4.80 / 3.00 µs = 1.60x "
            "(<= 1.5): NOT met",
        ),
        (
            "Supervisor.run attempts=3",
            4.2,
            "- Supervisor.run attempts=3 / Supervisor.run (N=1,000, K=100): 4.20 / 3.00 µs = 1.40x "
            "(<= 1.3): "
            "NOT met",
        ),
        (
            "Supervisor.stream",
            4.2,
            "- Supervisor.stream / Supervisor.run (N=1,000, K=100): 4.20 / 3.00 µs = 1.40x "
            "(<= 1.2): NOT met",
        ),
        (
            "aiometer run_all",
            14.0,
            "- aiometer run_all / Supervisor.run (N=1,000, K=100): 14.00 / 3.00 µs = 4.67x "
            "(>= 5.0): NOT met",
        ),
    ],
)
def test_check_exits_1_when_a_time_target_is_missed(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    cost: float,
    line: str,
) -> None:
    overhead = fake_run(monkeypatch, {**MEETING, name: cost})
    everything = ["--only", *MEETING, *overhead.FAILURE_CONTENDERS]
    assert overhead.main([*ONE_RUN, "--check", *everything]) == 1
    out = capsys.readouterr().out
    assert line in out
    assert out.count("NOT met") == 1
    assert overhead.main([*ONE_RUN, *everything]) == 0  # without --check, only a report


@pytest.mark.parametrize(
    ("failing", "line"),
    [
        (
            (4.5, 80.0),  # the floor's failing run takes 2.0 s
            "- all failing / the floor's all failing, time: 4.50 / 2.00 s = 2.25x (<= 2.0): "
            "NOT met",
        ),
        (
            (1.5, 150.0),
            "- all failing / all succeeding, peak RSS: 150.00 / 60.00 MiB = 2.50x (<= 2.0): "
            "NOT met",
        ),
    ],
)
def test_check_exits_1_when_failures_cost_too_much(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    failing: tuple[float, float],
    line: str,
) -> None:
    overhead = fake_run(monkeypatch, MEETING, failing)
    everything = ["--only", *MEETING, *overhead.FAILURE_CONTENDERS]
    assert overhead.main([*ONE_RUN, "--check", *everything]) == 1
    out = capsys.readouterr().out
    assert line in out
    assert out.count("NOT met") == 1


def test_check_counts_a_target_not_measured_as_not_met(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    overhead = fake_run(monkeypatch, MEETING)
    assert overhead.main([*ONE_RUN, "--check", "--only", *MEETING]) == 1
    out = capsys.readouterr().out
    assert (
        "- all failing / the floor's all failing, time: not measured in this run (<= 2.0): NOT met"
    ) in out


def test_the_stream_memory_report_covers_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("stream_memory").main(["--n", "500", "--k", "7"]) == 0
    out = capsys.readouterr().out
    assert "| 500 |" in out
    assert "growth from 50 to 500 results" in out


def test_the_failure_section_shows_the_floors_own_ratio_for_scale(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    overhead = fake_run(monkeypatch, MEETING)
    overhead.main([*ONE_RUN, "--only", *overhead.FAILURE_CONTENDERS])
    out = capsys.readouterr().out
    assert (
        "For scale, not a target: the floor making the same calls, all failing / all "
        "succeeding: time 4.00x, peak RSS 2.50x." in out
    )


def test_every_rate_limited_contender_runs_and_the_supervisors_lose_nothing() -> None:
    rate_limited = load("rate_limited")
    small = ["--subtasks", "40", "--concurrency", "4", "--latency", "0.005", "0.01"]
    figures = rate_limited.main(small)
    assert [f.contender for f in figures] == list(rate_limited.CONTENDERS)
    for f in figures:
        assert f.requests >= 40 - f.lost
        assert f.peak_in_flight <= 4  # the server's hidden capacity held
        if f.contender.startswith("Supervisor"):
            assert f.lost == 0


def test_in_process_no_contender_answers_faster_than_the_server_can(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On virtual time the measuring is exact: a run that loses nothing cannot beat the
    capacity (its requests' latencies, ``concurrency`` at a time), and the server's bound holds."""
    rate_limited = load("rate_limited")
    small = ["--virtual", "--subtasks", "40", "--concurrency", "4", "--latency", "0.1", "0.3"]
    figures = rate_limited.main([*small, "--reps", "2"])
    assert [f.contender for f in figures] == list(rate_limited.CONTENDERS) * 2
    for f in figures:
        assert f.client_cpu is None  # CPU time is no part of a virtual run
        assert f.peak_in_flight <= 4
        if f.contender.startswith("Supervisor"):
            assert f.lost == 0
            assert f.share <= 1 + 1e-9
    err = capsys.readouterr().err
    assert "in process, virtual time" in err
    spread = err.split("spread over the repetitions:\n", 1)[1].splitlines()
    assert [line.split(" share median ")[0].strip() for line in spread] == list(
        rate_limited.CONTENDERS
    )


def test_the_rate_limited_benchmark_refuses_no_repetitions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rate_limited = load("rate_limited")
    with pytest.raises(SystemExit) as exit_:
        rate_limited.main(["--reps", "0"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("error: --reps must be >= 1, got 0")


def test_the_process_benchmark_times_every_contender_on_every_function() -> None:
    # a subprocess: the worker processes import the functions from the script run as __main__
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "processes.py"), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    processes = load("processes")
    assert set(figures["us_per_subtask"]) == set(processes.FUNCTIONS)
    for row in figures["us_per_subtask"].values():
        assert list(row) == list(processes.CONTENDERS)
        assert all(micros > 0 for micros in row.values())
    assert figures["cold_start"] > 0


def test_the_journal_benchmark_reports_every_figure() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "journal.py"), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["N"] == 300
    for name in (
        "group / plain",
        "each / plain",
        "slow group / plain",
        "bytes per slot",
        "leases / none",
        "slow leases / none",
    ):
        assert figures[name] > 0
    assert figures["resume s"] >= 0


def test_the_journal_benchmark_runs_processes_on_one_run_each_slot_once() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "journal.py"), "--quick", "--json", "--processes", "1,2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [(row["worker"], row["processes"]) for row in rows] == [
        ("fast", 1),
        ("fast", 2),
        ("10 ms", 1),
        ("10 ms", 2),
    ]
    for row in rows:
        assert row["every slot once"] is True
        assert row["each gave the whole run"] is True
        assert sum(row["slots per process"]) == row["N"] == 300
        assert len(row["slots per process"]) == row["processes"]
        assert row["wall s"] > 0
