"""Every demo the docs draw runs the same however trio orders the tasks that wake at one instant.

Trio runs the tasks woken at the same (virtual) instant in an order it picks at random: a
module-level ``random.Random`` in ``trio._core._run`` (``_r``) reverses each batch with
probability 1/2, or, when Hypothesis is loaded (as in these tests), shuffles it. Seeding ``_r``
picks the order, so several seeds in both modes run the same ties in several orders. Each step's
demos are run as the docs hook runs them (``tools.docs.pages.pictures``, which calls
``lessons._course.runner.run_demo`` on virtual time) under each order, and must record the same
trace, draw the same SVG and print the same text. So two builds of the site are the same.

Steps 2 and 3 append results in completion order, so a demo of theirs where two slots end at
one instant would come back in either order: their demos have no such instant (see
``lessons._course.demos.LARGE``), and the test holds them to the same run, result order included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio
import trio._core._run as trio_run
import trio.testing

from lessons._course.recording import run_dict
from lessons._course.steps import steps
from tools.docs import pages as step_pages

STEPS = list(steps().values())
# (mode, seed): "shuffled" is trio's order under Hypothesis, "reversed" its order in a build
SCHEDULES = [("shuffled", seed) for seed in range(8)] + [("reversed", seed) for seed in range(2)]


@pytest.fixture
def order_ties(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, int], None]]:
    """A function that makes trio order each batch of tasks woken together as ``mode`` and
    ``seed`` say; trio's scheduling is as it was again after the test."""
    state = trio_run._r.getstate()

    def order(mode: str, seed: int) -> None:
        monkeypatch.setattr(trio_run, "_ALLOW_DETERMINISTIC_SCHEDULING", mode == "shuffled")
        trio_run._r.seed(seed)

    yield order
    trio_run._r.setstate(state)


def runs_of(name: str) -> list[tuple[str, str, dict[str, Any], dict[str, Any], str]]:
    """Step ``name``'s demos as the docs hook runs them: title, SVG, trace, run, printed text."""
    return [
        (
            picture.demo.title,
            picture.svg,
            picture.run.trace.to_dict() if picture.run.trace is not None else {},
            run_dict(picture.run),
            picture.output,
        )
        for picture in step_pages.pictures(name)
    ]


@pytest.mark.parametrize("name", STEPS)
def test_every_demo_records_and_draws_the_same_run_whatever_order_ties_run_in(
    name: str, order_ties: Callable[[str, int], None]
) -> None:
    order_ties(*SCHEDULES[0])
    first = runs_of(name)
    for mode, seed in SCHEDULES[1:]:
        order_ties(mode, seed)
        for (title, svg, trace, run, text), (
            _,
            other_svg,
            other_trace,
            other_run,
            other_text,
        ) in zip(first, runs_of(name), strict=True):
            where = f"{name} · {title}, ties {mode} with seed {seed}"
            assert json.dumps(other_trace) == json.dumps(trace), f"{where}: the trace differs"
            assert other_svg == svg, f"{where}: the SVG differs"
            assert other_run == run, f"{where}: the run differs"
            assert other_text == text, f"{where}: the printed run differs"


def test_the_schedules_order_ties_differently(order_ties: Callable[[str, int], None]) -> None:
    """The seeds reach trio's scheduler: tasks that wake at one instant append themselves to a
    list in an order that changes with the schedule (what a demo must not depend on)."""

    async def woken_together() -> tuple[int, ...]:
        order: list[int] = []

        async def wake(number: int) -> None:
            await trio.sleep(1)
            order.append(number)

        async with trio.open_nursery() as nursery:
            for number in range(4):
                nursery.start_soon(wake, number)
        return tuple(order)

    orders = set()
    for mode, seed in SCHEDULES:
        order_ties(mode, seed)
        orders.add(trio.run(woken_together, clock=trio.testing.MockClock(autojump_threshold=0)))
    assert len(orders) > 1
