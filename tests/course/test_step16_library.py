"""Step 16: step 15 on the library's ``Supervisor``, the bridge into Part II.

Every Part I law runs on step 16 too: the laws whose ``steps`` name 15 are proven by each
step's own test file (``cases(law)``), and here every one of them is checked to be there. Two
laws are of step 15's code, not of the pattern, and the library keeps them in its own form: its
lanes keep a waiting retry's place (with a restart intensity it frees it, as step 15 does), and
its jitter is its own seeded generator (the same seed, the same waits, each within its bound).
What is particular to 15 besides: the knobs map as the page's table says, and the two flaws of
step 15's stream the library fixes. All on virtual time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import trio

from lessons import step16_library
from lessons._course import laws
from lessons._course.demos import STEP_DEMOS
from lessons._course.steps import STEPS
from tests.course.probing import STEP14, Probe
from tests.course.step_laws import cases, run_virtual
from trio_supervisor import Backoff, Restarts, Retry
from trio_supervisor.testing import SimulatedAgent

STEP16 = step16_library
PAGE = Path(__file__).resolve().parents[2] / "docs" / "steps" / "step16_library.md"


def test_every_part_one_law_runs_on_step_16_but_one_the_library_keeps_in_its_own_form() -> None:
    """Every Part I law names step 16: the waits' law asks for draws within the bound that the
    seed replays, not step 15's exact sequence, so the library's generator per slot keeps it."""
    part_one = [law for law in laws.LAWS if any(step < 16 for step in law.steps)]
    on_16 = {law.rule for law in laws.laws_of(16) if any(step < 16 for step in law.steps)}
    assert {law.rule for law in part_one} == on_16


@pytest.mark.parametrize("step", [STEP14, STEP16])
def test_step_14s_draws_and_the_librarys_both_keep_the_waits_law(step: ModuleType) -> None:
    laws.WAITS_ARE_SEEDED_DRAWS.verify(step)


def test_with_an_intensity_a_waiting_retry_holds_no_place_as_in_step_13() -> None:
    """One worker; s0 fails once and waits a 4 s backoff: bounded restarts free its place, so
    s1 starts the moment s0 failed."""
    agent = SimulatedAgent(latencies={"s0": 1.0, "s1": 2.0}, flaky={"s0": 1})

    async def main() -> None:
        probe = Probe(agent)
        await STEP16.supervise(
            "s0; s1",
            probe,
            max_workers=1,
            attempts=2,
            backoff=(4.0, 4.0),
            seed=0,
            intensity=(5, 60.0),
        )
        first, _ = probe.of("s0")
        assert probe.of("s1")[0].start == first.end

    run_virtual(main)


def test_the_same_seed_replays_the_same_waits_each_within_its_bound() -> None:
    def waits(seed: int) -> list[float]:
        async def main() -> list[float]:
            probe = Probe(SimulatedAgent(seed, fail={"b"}))
            await STEP16.supervise(
                "a; b; c", probe, max_workers=3, attempts=6, backoff=(0.5, 2.0), seed=seed
            )
            calls = probe.of("b")
            return [
                after.start - (before.end or math.inf)
                for before, after in itertools.pairwise(calls)
            ]

        return run_virtual(main)

    first = waits(7)
    assert waits(7) == first
    assert waits(8) != first
    assert all(0 <= wait <= Backoff(0.5, 2.0).bound(n) for n, wait in enumerate(first, start=1))


def test_the_knobs_map_as_the_pages_table_says() -> None:
    chosen = STEP16.supervisor(
        SimulatedAgent(),
        max_workers=3,
        worker_timeout=1.5,
        attempts=2,
        intensity=(2, 10.0),
        backoff=(0.5, 8.0),
        seed=7,
    )
    assert chosen.timeout == 1.5
    assert chosen.retry == Retry(attempts=2, backoff=Backoff(0.5, 8.0), seed=7)
    assert chosen.restarts == Restarts(max_restarts=2, within=10.0)
    plain = STEP16.supervisor(SimulatedAgent(), max_workers=3)
    assert (plain.timeout, plain.restarts, plain.retry) == (
        None,
        None,
        Retry(backoff=Backoff(0.25, 4.0)),
    )
    table = PAGE.read_text()
    for row in (
        "`worker_timeout`",
        "`Backoff(first, most)`",
        "`Restarts(max_restarts=R, within=T)`",
    ):
        assert row in table


@pytest.mark.parametrize(("step", "window"), [(STEP14, 2 * 2), (STEP16, 4 * 2)])
def test_the_default_window_is_2k_in_step_14_and_4k_in_the_library(
    step: ModuleType, window: int
) -> None:
    """Two workers, slot 0 takes an hour: the line stalls behind it once the window is full."""
    pulled = 0

    def lazy() -> Iterator[str]:
        nonlocal pulled
        for slot in itertools.count():
            pulled += 1
            yield f"s{slot}"

    async def main() -> None:
        agent = SimulatedAgent(latencies={"s0": 3600.0}, min_latency=0.25, max_latency=0.25)
        with trio.move_on_after(60):
            async with step.stream(lazy(), agent, max_workers=2) as results:
                async for _ in results:
                    pass
        assert pulled == window

    run_virtual(main)


def ids(step: ModuleType) -> str:
    return step.__name__.rsplit(".", 1)[1]


@pytest.mark.parametrize("step", cases(laws.THE_CALLERS_EXCEPTION_COMES_OUT_BARE), ids=ids)
def test_an_exception_in_the_callers_block_comes_out_bare_only_from_the_library(
    step: ModuleType,
) -> None:
    laws.THE_CALLERS_EXCEPTION_COMES_OUT_BARE.verify(step)


@pytest.mark.parametrize("step", cases(laws.AN_ENDLESS_INPUT_ENDS_AT_THE_DEADLINE), ids=ids)
def test_an_endless_input_under_a_deadline_ends_at_the_deadline(step: ModuleType) -> None:
    laws.AN_ENDLESS_INPUT_ENDS_AT_THE_DEADLINE.verify(step)


def test_step_16_runs_step_14s_demos_and_one_more_for_each_flaw() -> None:
    assert STEP_DEMOS[16][:2] == STEP_DEMOS[14]
    endless, raising = STEP_DEMOS[16][2:]
    assert endless.endless
    assert raising.raises is not None
    assert endless.against == raising.against == 15


@pytest.mark.parametrize("step", cases(laws.STREAMED_AS_EACH_IS_FINAL))
def test_results_stream_in_plan_order_as_each_is_final_from_step_16_to_the_last(
    step: ModuleType,
) -> None:
    """Part II's supervisor keeps Part I's stream to the last step: step 16's, then beside each
    step's supervise its own through step 19 (its supervisor's retries, rate and adaptive
    limit), and step 19's beside the rounds from step 20 on."""
    laws.STREAMED_AS_EACH_IS_FINAL.verify(step)


def test_the_last_step_takes_every_option_of_the_course() -> None:
    """No idea a step brought is dropped by a later one: every option any step's entry takes,
    the last step takes too, in its rounds' entry or in the stream beside them, but for one a
    later step's entry does instead (`Step.replaces`)."""
    last = STEPS[max(STEPS)]
    every = {option for record in STEPS.values() for option in record.options}
    replaced = {option for record in STEPS.values() for option in record.replaces}
    kept = {*last.options, *(last.stream_options or {}), *replaced}
    assert sorted(every - kept) == []
