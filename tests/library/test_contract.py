"""The shared contract: decompose, SubResult, Aggregate, the simulated sub-agent and the trace."""

from __future__ import annotations

import gc
import pickle
import weakref

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from trio_supervisor import Aggregate, Status, SubResult, Supervisor, Trace, decompose
from trio_supervisor._contract import describe, ok_result
from trio_supervisor.testing import SimulatedAgent, SubAgentError

# --- decompose ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "plan"),
    [
        (
            "competitor pricing; customer reviews; inventory",
            ["competitor pricing", "customer reviews", "inventory"],
        ),
        ("one subtask", ["one subtask"]),
        ("  a  \n b ;c\r\n", ["a", "b", "c"]),
        ("a;;  ;\n\nb", ["a", "b"]),
        ("a; a", ["a", "a"]),
    ],
)
def test_decompose_splits_on_semicolons_and_newlines_and_drops_empties(
    task: str, plan: list[str]
) -> None:
    assert decompose(task) == plan


@pytest.mark.parametrize("task", ["", "   ", ";", " ; \n ;; ", "\n\r\n"])
def test_decompose_refuses_a_task_with_no_subtask(task: str) -> None:
    with pytest.raises(ValueError, match=r"^task must hold at least one non-blank subtask, got "):
        decompose(task)


@pytest.mark.parametrize("task", [None, 3, b"a; b", ["a", "b"]])
def test_decompose_refuses_a_non_str(task: object) -> None:
    with pytest.raises(TypeError, match=rf"^task must be a str, got {type(task).__name__}$"):
        decompose(task)  # type: ignore[arg-type]


part = st.text(st.characters(exclude_characters=";\r\n"), min_size=1).filter(str.strip)


@given(parts=st.lists(part, min_size=1), separator=st.sampled_from(["; ", ";", "\n", " ;\n "]))
def test_decompose_round_trips_non_empty_parts(parts: list[str], separator: str) -> None:
    assert decompose(separator.join(parts)) == [p.strip() for p in parts]


@given(text=st.text())
def test_decompose_never_yields_a_blank_or_separated_subtask(text: str) -> None:
    try:
        plan = decompose(text)
    except ValueError:
        assert not text.replace(";", "").strip()
        return
    assert plan
    for subtask in plan:
        assert subtask == subtask.strip() != ""
        assert not set(subtask) & set(";\r\n")


# --- SubResult and Aggregate --------------------------------------------------------------------


def test_a_sub_result_holds_an_output_or_an_error() -> None:
    ok = SubResult("a", output="x")
    failed: SubResult[str, str] = SubResult("b", error="ValueError: no")
    assert (ok.ok, ok.status, ok.error) == (True, Status.OK, None)
    assert (failed.ok, failed.status, failed.output) == (False, Status.FAILED, None)
    with pytest.raises(ValueError, match=r"^a SubResult holds an output or an error, not both"):
        SubResult("c", output="x", error="y")


def test_a_sub_result_status_must_fit_output_or_error() -> None:
    with pytest.raises(ValueError, match=r"^status TIMED_OUT does not fit an output"):
        SubResult("a", output="x", status=Status.TIMED_OUT)
    with pytest.raises(ValueError, match=r"^status OK does not fit an error"):
        SubResult("a", error="boom", status=Status.OK)
    assert SubResult("a", error="late", status=Status.TIMED_OUT).status is Status.TIMED_OUT


def test_from_exception_names_the_type_and_the_message() -> None:
    exc = KeyError("k")
    result: SubResult[str, str] = SubResult.from_exception("a", exc)
    assert result.error == "KeyError: 'k'"
    assert result.status is Status.FAILED
    assert result.exception is exc


def test_describe_records_an_exception_group_whole() -> None:
    group = ExceptionGroup("two", [ValueError("a"), ExceptionGroup("inner", [KeyError("b")])])
    assert describe(group) == (
        "ExceptionGroup: two (2 sub-exceptions) "
        "[ValueError: a; ExceptionGroup: inner (1 sub-exception) [KeyError: 'b']]"
    )


async def test_a_run_keeps_plain_successes_where_the_garbage_collector_never_looks() -> None:
    # a run of many slots keeps a result per slot: those of plain values (text, numbers) must
    # not be objects the collector walks, or count toward the passes that walk every task
    async def echo(subtask: int) -> str:
        await trio.lowlevel.checkpoint()
        return f"answer {subtask}"

    gc.collect()
    gc.disable()  # so that the count of objects made since the last pass only grows
    try:
        made = gc.get_count()[0]
        aggregate = await Supervisor(echo, max_workers=4).run(range(3000))
        made = gc.get_count()[0] - made
    finally:
        gc.enable()
    assert [result.output for result in aggregate] == [f"answer {i}" for i in range(3000)]
    assert not any(gc.is_tracked(result) for result in aggregate)
    assert made < 300, f"{made} objects the collector counts were kept by a run of 3000 slots"


async def test_a_success_holding_a_container_is_collected_even_in_a_cycle() -> None:
    # an output that refers back to its own result makes a cycle: only the collector frees it,
    # so a result holding anything but plain values must stay where the collector sees it
    freed = trio.Event()

    class Output(list[object]):
        pass

    async def worker(subtask: str) -> Output:
        await trio.lowlevel.checkpoint()
        return Output()

    aggregate = await Supervisor(worker, max_workers=1).run(["a"])
    result = aggregate[0]
    output = result.output
    assert isinstance(output, Output)
    output.append(result)  # the cycle: result -> output -> result
    weakref.finalize(output, freed.set)
    del aggregate, result, output
    gc.collect()
    assert freed.is_set()


def test_a_plain_success_is_a_sub_result_like_any_other() -> None:
    plain = ok_result("a", "x", 2, 1.0, 2.0, hedges=1)
    made = SubResult("a", output="x", attempts=2, started=1.0, finished=2.0, hedges=1)
    assert isinstance(plain, SubResult)
    assert plain == made
    assert made == plain
    assert hash(plain) == hash(made)
    assert repr(plain) == repr(made)
    assert pickle.loads(pickle.dumps(plain)) == made
    assert (plain.ok, plain.status, plain.attempts, plain.hedges) == (True, Status.OK, 2, 1)
    with pytest.raises(AttributeError):
        plain.output = "y"  # type: ignore[misc]


@given(st.lists(st.booleans()))
def test_aggregate_counts_are_derived_from_results(oks: list[bool]) -> None:
    results = [
        SubResult(str(i), output="x") if ok else SubResult(str(i), error="E: e")
        for i, ok in enumerate(oks)
    ]
    aggregate = Aggregate(results)
    assert aggregate.succeeded == sum(oks)
    assert aggregate.failed == len(oks) - sum(oks)
    assert aggregate.degraded == (not all(oks))


# --- the simulated sub-agent --------------------------------------------------------------------


@given(seed=st.integers(), subtask=st.text())
def test_simulated_latency_is_fixed_by_seed_and_subtask_and_exact(seed: int, subtask: str) -> None:
    agent = SimulatedAgent(seed)
    latency = agent.latency(subtask)
    assert latency == SimulatedAgent(seed).latency(subtask)
    assert agent.min_latency <= latency <= agent.max_latency
    assert (latency * 32).is_integer()


async def test_simulated_agent_returns_after_its_latency(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = SimulatedAgent(7)
    assert await agent("inventory") == "findings on inventory"
    assert trio.current_time() == agent.latency("inventory")


@pytest.mark.parametrize(
    ("subtask", "fail"),
    [("please panic", ()), ("this will FAIL", ()), ("reviews", ("reviews",))],
)
async def test_simulated_agent_fails_on_request_with_an_ordinary_exception(
    subtask: str, fail: tuple[str, ...], autojump_clock: trio.testing.MockClock
) -> None:
    agent = SimulatedAgent(fail=fail)
    with pytest.raises(SubAgentError, match=rf"^sub-agent failed on {subtask!r}$"):
        await agent(subtask)
    assert issubclass(SubAgentError, Exception)
    assert trio.current_time() == agent.latency(subtask)


@pytest.mark.parametrize(("subtask", "hang"), [("hang forever", ()), ("x", ("x",))])
async def test_simulated_agent_hangs_on_request(
    subtask: str, hang: tuple[str, ...], autojump_clock: trio.testing.MockClock
) -> None:
    agent = SimulatedAgent(hang=hang)
    with trio.move_on_after(1e6) as scope:
        await agent(subtask)
    assert scope.cancelled_caught


async def test_simulated_agent_flaky_fails_its_first_k_calls(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = SimulatedAgent(flaky={"a": 2})
    for attempt in (1, 2):
        with pytest.raises(SubAgentError, match=rf"\(attempt {attempt}\)$"):
            await agent("a")
    assert await agent("a") == "findings on a"


def test_simulated_agent_refuses_inverted_latency_bounds() -> None:
    with pytest.raises(
        ValueError, match=r"^latencies must satisfy 0 <= min_latency <= max_latency"
    ):
        SimulatedAgent(min_latency=2, max_latency=1)


# --- the trace ----------------------------------------------------------------------------------


async def test_watch_records_each_slot_in_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    agent = SimulatedAgent(fail=("b",))
    trace = Trace(["a", "b", "c"])
    watched = trace.watch(agent)
    assert await watched("a") == "findings on a"
    with pytest.raises(SubAgentError):
        await watched("b")
    trace.close()
    a, b, c = trace.slots
    assert (a.started, a.ended, a.status) == (0.0, agent.latency("a"), Status.OK)
    assert (b.started, b.status) == (agent.latency("a"), Status.FAILED)
    assert b.ended == agent.latency("a") + agent.latency("b")
    assert (c.started, c.ended, c.status) == (None, None, None)
    assert trace.completion_rank() == {0: 1, 1: 2}
    assert trace.wall == b.ended


async def test_watch_puts_a_retry_on_the_failed_slot_and_duplicates_on_their_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    trace = Trace(["a", "b", "b"])
    watched = trace.watch(SimulatedAgent(flaky={"a": 1}))
    with pytest.raises(SubAgentError):
        await watched("a")
    assert await watched("a") == "findings on a"  # a retry: the same slot
    assert await watched("b") == "findings on b"
    with trio.move_on_after(0.01):
        await watched("b")  # the duplicate: its own slot, cancelled
    a, b, b_again = trace.slots
    assert [span.status for span in a.spans] == [Status.FAILED, Status.OK]
    assert [span.status for span in b.spans] == [Status.OK]
    assert [span.status for span in b_again.spans] == [Status.CANCELLED]
    assert trace.to_dict()["slots"][2]["spans"][0]["status"] == "cancelled"
