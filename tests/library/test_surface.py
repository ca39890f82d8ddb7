"""The public surface: fixed settings, names that say where they live, and a wheel of its own."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import random
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

import trio_supervisor
from trio_supervisor import Aggregate, Backoff, Retry, Status, SubResult, Supervisor

ROOT = Path(__file__).resolve().parents[2]


async def fetch(subtask: int) -> str:
    await trio.sleep(subtask / 32)
    return str(subtask)


def supervisor() -> Supervisor[int, str]:
    return Supervisor(
        fetch,
        max_workers=3,
        timeout=1.5,
        retry=Retry(attempts=2, on=KeyError, backoff=Backoff(0.5, 2.0, 3.0), seed=7),
        meters=[trio_supervisor.Capacity(2)],  # an attribute: today's module has no Capacity
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("worker", fetch),
        ("max_workers", 10),
        ("timeout", -1),
        ("timeout", None),
        ("retry", Retry()),
        ("restarts", None),
        ("meters", ()),
    ],
)
def test_settings_are_read_only_after_construction(name: str, value: object) -> None:
    made = supervisor()
    before = getattr(made, name)
    with pytest.raises(AttributeError):
        setattr(made, name, value)
    assert getattr(made, name) == before


def test_repr_shows_every_option() -> None:
    text = repr(supervisor())
    for shown in (
        "fetch",
        "max_workers=3",
        "timeout=1.5",
        "retry=Retry(attempts=2, on=(KeyError,), ",
        f"backoff={Backoff(0.5, 2.0, 3.0)!r}",
        "seed=7)",
        "restarts=None",
        "meters=",
        "Capacity",
    ):
        assert shown in text, f"{shown!r} is not in {text!r}"


@given(st.lists(st.booleans(), max_size=8))
def test_an_aggregate_has_a_length_and_iterates_over_its_results(oks: list[bool]) -> None:
    results: list[SubResult[int, str]] = [
        SubResult(slot, output="out") if ok else SubResult(slot, error="E: no")
        for slot, ok in enumerate(oks)
    ]
    aggregate = Aggregate(results)
    assert len(aggregate) == len(oks)
    assert list(aggregate) == results
    assert [result.subtask for result in aggregate] == list(range(len(oks)))
    assert [aggregate[slot] for slot in range(len(oks))] == results
    assert aggregate[1:] == results[1:]
    assert list(reversed(aggregate)) == results[::-1]
    if oks:
        assert aggregate[-1] is results[-1]
    with pytest.raises(IndexError):
        aggregate[len(oks)]


def test_a_sub_result_is_generic_in_its_subtask_and_its_output() -> None:
    result = SubResult[int, str](3, output="three")
    assert (result.subtask, result.output, result.status) == (3, "three", Status.OK)


def test_a_stream_has_no_public_constructor() -> None:
    stream_type: Any = trio_supervisor.Stream
    with pytest.raises(TypeError, match=r"Supervisor\.stream"):
        stream_type([0])
    with pytest.raises(TypeError, match=r"Supervisor\.stream"):
        stream_type()


async def test_supervisor_stream_still_makes_a_stream(autojump_clock: Any) -> None:
    stream = Supervisor(fetch, max_workers=1).stream([1])
    assert isinstance(stream, trio_supervisor.Stream)
    async with stream as results:
        assert [result.output async for result in results] == ["1"]


def test_the_version_is_the_distributions() -> None:
    assert trio_supervisor.__version__ == importlib.metadata.version("trio-supervisor")


PUBLIC = {
    "Adaptive",
    "Aggregate",
    "Answer",
    "Approved",
    "AttemptKey",
    "AwaitingApproval",
    "Backoff",
    "Batch",
    "Budget",
    "Capacity",
    "Done",
    "Durable",
    "Entry",
    "Hedge",
    "Journal",
    "Ledger",
    "Meter",
    "OverBudget",
    "Planner",
    "RateLimit",
    "Rejected",
    "ReplanLimits",
    "Restarts",
    "Retry",
    "Round",
    "SlotTrace",
    "Span",
    "Status",
    "Strategy",
    "Stream",
    "SubResult",
    "Supervisor",
    "Trace",
    "Usage",
    "Worker",
    "approval",
    "attempt_key",
    "decompose",
    "report_latency",
    "report_usage",
    "__version__",
}


def test_the_public_names_are_exactly_what_production_code_needs() -> None:
    assert set(trio_supervisor.__all__) == PUBLIC
    assert len(trio_supervisor.__all__) == len(PUBLIC)
    assert not hasattr(trio_supervisor, "describe")
    for name in PUBLIC:
        assert hasattr(trio_supervisor, name), name


@pytest.mark.parametrize(
    "module",
    [
        "trio_supervisor",
        "trio_supervisor.timeline",
        "trio_supervisor.testing",
        "trio_supervisor.agents",
        "trio_supervisor.testing.devserver",
        "trio_supervisor.processes",
        "trio_supervisor.otel",
    ],
)
def test_public_names_say_the_module_they_are_public_in(module: str) -> None:
    namespace = importlib.import_module(module)
    checked = 0
    for name in namespace.__all__:
        value = getattr(namespace, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert value.__module__ == module, f"{module}.{name} says {value.__module__}"
            checked += 1
    assert checked >= 2


OPTIONAL = (
    "rich",
    "httpx2",
    "openai",
    "pydantic",
    "jsonschema",
    "hypercorn",
    "trio_parallel",
    "opentelemetry",
)
"""What the extras bring: the core loads none of them."""


def test_importing_the_library_loads_no_optional_dependency() -> None:
    probe = (
        "import sys, trio_supervisor; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {OPTIONAL!r}))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


def test_the_wheel_ships_the_library_alone(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "--target", "wheel", "--directory", tmp_path],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/")[0] for name in archive.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"trio_supervisor"}


def test_the_seed_draws_nothing_from_the_random_module_when_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("the process-wide random module was used")

    monkeypatch.setattr(random, "seed", refuse)
    monkeypatch.setattr(random, "random", refuse)
    Supervisor(fetch, max_workers=1, retry=Retry(seed=None))
    Supervisor(fetch, max_workers=1, retry=Retry(seed=3))
    Supervisor(fetch, max_workers=1, retry=Retry(seed=random.Random(3)))
