"""The benchmark scripts run at a tiny size and check their outputs; nothing is timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_overhead_contender_returns_every_result_in_order() -> None:
    overhead = load("overhead")
    for name in overhead.CONTENDERS:
        assert overhead.measure(name, 300, 7) >= 0  # measure() raises on a wrong output


def test_the_overhead_table_names_every_contender(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    overhead = load("overhead")
    fast = ["Supervisor.run", "Supervisor.run timeout", "hand loop", "hand loop timeout"]
    monkeypatch.setattr(overhead, "memory_in_fresh_process", lambda name, n, k: 0.0)
    assert overhead.main(["--sizes", "50", "--workers", "100", "--reps", "1", "--only", *fast]) == 0
    out = capsys.readouterr().out
    for name in fast:
        assert f"| {name} |" in out


def test_the_stream_memory_report_covers_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("stream_memory").main(["--n", "500", "--k", "7"]) == 0
    out = capsys.readouterr().out
    assert "| 500 |" in out
    assert "growth from 50 to 500 results" in out


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
