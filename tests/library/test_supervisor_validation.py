"""Supervisor misuse: every bad input is refused with the rule, before any work starts."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import trio

from tests.library.scripted_worker import Script, ok
from trio_supervisor import Retry, Supervisor
from trio_supervisor.testing import ScriptedPlanner, SimulatedAgent

SCRIPT = Script([ok(1)])


def sync_worker(subtask: str) -> str:
    return subtask


class SyncCallable:
    def __call__(self, subtask: str) -> str:
        return subtask


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_workers": 0}, ValueError, r"max_workers must be >= 1, got 0"),
        ({"max_workers": -3}, ValueError, r"max_workers must be >= 1, got -3"),
        ({"max_workers": 2.0}, TypeError, r"max_workers must be an int >= 1, got float 2\.0"),
        ({"max_workers": "4"}, TypeError, r"max_workers must be an int >= 1, got str '4'"),
        ({"max_workers": True}, TypeError, r"max_workers must be an int >= 1, got bool True"),
        ({"timeout": 0}, ValueError, r"timeout must be a positive number, got 0"),
        ({"timeout": -1.5}, ValueError, r"timeout must be a positive number, got -1\.5"),
        ({"timeout": float("nan")}, ValueError, r"timeout must be a positive number, got nan"),
        ({"timeout": "1"}, TypeError, r"timeout must be a positive number, got str '1'"),
        (
            {"retry": 3},
            TypeError,
            r"retry must be a Retry \(Retry\(attempts=\.\.\., on=\.\.\., backoff=\.\.\., "
            r"seed=\.\.\.\)\), got int 3",
        ),
    ],
)
def test_bad_options_are_refused_with_the_rule(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}$"):
        Supervisor(SCRIPT, **{"max_workers": 2, **options})


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"attempts": 0}, ValueError, r"Retry attempts must be >= 1, got 0"),
        ({"attempts": 1.5}, TypeError, r"Retry attempts must be an int >= 1, got float 1\.5"),
        (
            {"on": KeyboardInterrupt},
            TypeError,
            r"Retry on must be an Exception subclass or a tuple of them \(cancellation and "
            r"KeyboardInterrupt are never retried\), got <class 'KeyboardInterrupt'>",
        ),
        (
            {"on": (ValueError, "KeyError")},
            TypeError,
            r"Retry on must be an Exception subclass or a tuple of them \(cancellation and "
            r"KeyboardInterrupt are never retried\), got 'KeyError'",
        ),
        ({"backoff": 0.5}, TypeError, r"Retry backoff must be a Backoff, got float 0\.5"),
        (
            {"on": ()},
            ValueError,
            r"Retry on must be an Exception subclass or a non-empty tuple of them, got \(\): "
            r"give the classes to retry, or leave on= out to retry every Exception",
        ),
        (
            {"seed": 1.5},
            TypeError,
            r"Retry seed must be an int, a random.Random or None, got float",
        ),
    ],
)
def test_a_bad_retry_is_refused_with_the_rule_when_made(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}$"):
        Retry(**options)


def test_a_retry_keeps_its_exceptions_as_a_tuple_and_shows_them_by_name() -> None:
    assert Retry(on=KeyError) == Retry(on=(KeyError,))
    assert Retry(on=KeyError).on == (KeyError,)
    shown = repr(Retry(attempts=3, on=(KeyError, ValueError), seed=7))
    assert shown.startswith("Retry(attempts=3, on=(KeyError, ValueError), backoff=Backoff(")
    assert shown.endswith(", seed=7)")


def test_a_non_callable_worker_is_refused() -> None:
    with pytest.raises(
        TypeError,
        match=(
            r"^worker must be a callable that takes one subtask and returns an awaitable "
            r"\(an async def function\), got str 'agent'$"
        ),
    ):
        Supervisor("agent", max_workers=1)  # type: ignore[arg-type]


async def async_worker(subtask: str) -> str:
    return subtask


@pytest.mark.parametrize(
    "worker",
    [
        async_worker,
        SimulatedAgent(),
        functools.partial(async_worker),
        functools.wraps(async_worker)(lambda subtask: async_worker(subtask)),
    ],
    ids=["async def", "async __call__", "partial", "wrapped"],
)
def test_async_callables_are_accepted(worker: Any) -> None:
    assert Supervisor(worker, max_workers=1).worker is worker


async def async_subtasks() -> AsyncIterator[int]:
    yield 0


@pytest.mark.parametrize(
    ("task", "error", "message"),
    [
        (42, TypeError, r"task must be a str or an iterable of subtasks, got int"),
        (None, TypeError, r"task must be a str or an iterable of subtasks, got NoneType"),
        (
            async_subtasks(),
            TypeError,
            r"run\(\) needs a str or a sync iterable of subtasks, got the async iterable "
            r"async_generator: use supervisor\.stream\(\.\.\.\) for async or lazy inputs",
        ),
    ],
)
async def test_a_bad_task_is_refused_before_any_work(
    task: Any, error: type[Exception], message: str
) -> None:
    script = Script([ok(1)])
    with pytest.raises(error, match=f"^{message}$"):
        await Supervisor(script, max_workers=1).run(task)
    assert not script.calls
    if hasattr(task, "aclose"):
        await task.aclose()


WHOLE_PLANS = {
    "bytes": (
        b"a;b",
        r"a plan of subtasks is a str or an iterable of subtasks, not bytes, whose items are "
        r"numbers \(b'a;b' would run 97, 59, 98\): decode it \(\.decode\(\)\) for a str to "
        r"split into subtasks, or pass a list of subtasks",
    ),
    "bytearray": (bytearray(b"a;b"), r"a plan of subtasks is a str .*, not bytearray, "),
    "memoryview": (memoryview(b"a;b"), r"a plan of subtasks is a str .*, not memoryview, "),
    "dict": (
        {"a": 1, "b": 2},
        r"a plan of subtasks is an iterable of subtasks, not a dict, whose iteration gives its "
        r"keys alone: pass list\(d\), list\(d\.values\(\)\) or list\(d\.items\(\)\)",
    ),
    "set": (
        {"a", "b"},
        r"a plan of subtasks is an ordered iterable of subtasks, not a set, which has no "
        r"order: results come back in plan order, so pass a list \(sorted\(s\), say\)",
    ),
    "frozenset": (frozenset("ab"), r"a plan of subtasks is an ordered .*, not a frozenset"),
}


@pytest.mark.parametrize("kind", list(WHOLE_PLANS))
async def test_a_plan_that_iterates_but_not_as_subtasks_is_refused_naming_what_to_pass(
    kind: str,
) -> None:
    """Bytes iterate as numbers, a dict as its keys alone, a set in no order: each is refused
    by run and stream, before any work, with what to pass instead."""
    task: Any
    task, message = WHOLE_PLANS[kind]
    script = Script([ok(1)])
    supervisor: Supervisor[Any, Any] = Supervisor(script, max_workers=1)
    with pytest.raises(TypeError, match=f"^{message}"):
        await supervisor.run(task)
    with pytest.raises(TypeError, match=f"^{message}"):
        supervisor.stream(task)
    with pytest.raises(TypeError, match=r"^task must be a str \(what the planner reads\)"):
        await supervisor.replan(task, ScriptedPlanner())
    assert not script.calls


async def test_a_dicts_ordered_views_are_plans(autojump_clock: object) -> None:
    table = {"a": 1, "b": 2}
    supervisor: Supervisor[Any, str] = Supervisor(SimulatedAgent(0), max_workers=2)
    views: tuple[Iterable[Any], ...] = (table.keys(), table.values(), table.items())
    for view in views:
        aggregate = await supervisor.run(view)
        assert [result.subtask for result in aggregate] == list(view)


@pytest.mark.parametrize("task", [[], (), "", " ; ", "\n;\n"])
async def test_a_plan_with_no_subtask_returns_an_empty_aggregate_at_once(
    task: Any, autojump_clock: object
) -> None:
    """``run([])`` and ``run("")`` agree: no subtask, no work, an empty aggregate at once; a
    stream over either yields nothing."""
    script = Script([ok(1)])
    supervisor = Supervisor(script, max_workers=1)
    aggregate = await supervisor.run(task)
    assert (aggregate.results, aggregate.gave_up, aggregate.degraded) == ([], None, False)
    async with supervisor.stream(task) as results:
        assert [result async for result in results] == []
    assert not script.calls
    assert trio.current_time() == 0


async def test_a_round_is_refused_by_run_naming_replan_which_sets_it() -> None:
    script = Script([ok(1)])
    run: Any = Supervisor(script, max_workers=1).run
    with pytest.raises(
        TypeError,
        match=r"^round= is no option of Supervisor\.run: rounds are set by Supervisor\.replan, "
        r"which runs each round's batch under its number$",
    ):
        await run([0], round=1)
    assert not script.calls


async def test_an_unknown_option_of_run_is_refused_as_python_refuses_one() -> None:
    script = Script([ok(1)])
    run: Any = Supervisor(script, max_workers=1).run
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'deadlin'"):
        await run([0], deadlin=1)
    assert not script.calls


async def test_a_bad_trace_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^trace must be a Trace or None, got list$"):
        await Supervisor(SCRIPT, max_workers=1).run([0], trace=[])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("subtasks", "options", "error", "message"),
    [
        (
            42,
            {},
            TypeError,
            r"subtasks must be a str or a sync or async iterable of subtasks, got int",
        ),
        (
            [0],
            {"window": 1},
            ValueError,
            r"window must be >= max_workers \(2\), got 1: a smaller window leaves workers idle",
        ),
        ([0], {"window": 0}, ValueError, r"window must be >= 1, got 0"),
        ([0], {"window": 2.5}, TypeError, r"window must be an int >= 1, got float 2\.5"),
        ([0], {"trace": "yes"}, TypeError, r"trace must be a Trace or None, got str"),
    ],
)
def test_a_bad_stream_is_refused_when_it_is_made(
    subtasks: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    script = Script([ok(1)])
    with pytest.raises(error, match=f"^{message}$"):
        Supervisor(script, max_workers=2).stream(subtasks, **options)
    assert not script.calls


@pytest.mark.parametrize("name", ["attempts", "timeout", "max_workers", "retry_on", "seed"])
def test_a_setting_is_fixed_at_construction_and_the_error_names_the_fix(name: str) -> None:
    supervisor = Supervisor(SCRIPT, max_workers=2)
    with pytest.raises(
        AttributeError,
        match=(
            rf"^{name} is fixed when a Supervisor is made \(its runs may be going on\): make "
            rf"another one, Supervisor\(\.\.\., {name}=\.\.\.\)$"
        ),
    ):
        setattr(supervisor, name, 3)


def test_the_repr_shows_a_single_retried_class_as_a_tuple() -> None:
    assert "retry=Retry(attempts=1, on=(Exception,)," in repr(Supervisor(SCRIPT, max_workers=2))
