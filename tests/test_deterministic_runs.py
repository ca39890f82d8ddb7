"""Every demo the docs draw runs the same however trio orders the tasks that wake at one instant.

Trio runs the tasks woken at the same (virtual) instant in an order it picks at random: a
module-level ``random.Random`` in ``trio._core._run`` (``_r``) reverses each batch with
probability 1/2, or, when Hypothesis is loaded (as in these tests), shuffles it. Seeding ``_r``
picks the order, so several seeds in both modes run the same ties in several orders. Each step's
demos are run as the docs hook runs them (``lessons._course.docs.pictures``, which calls
``lessons._course.runner.run_demo`` on virtual time) under each order, and must record the same
trace and draw the same SVG. So two builds of the site draw the same pictures.

What may differ is only what the step shows on purpose: steps 2 and 3 append results in
completion order, so results that ended at the same instant come back in either order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import groupby
from typing import Any

import pytest
import trio._core._run as trio_run

from lessons._course import docs as _docs
from lessons._course.runner import Run, result_slots
from lessons._course.steps import steps

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


def ties_in_slot_order(run: Run) -> dict[str, Any]:
    """``run`` as plain data, each group of adjacent results that ended at the same instant put
    in slot order: the one order a run may leave to the scheduler."""
    data = run.to_dict()
    if run.aggregate is None or run.trace is None:
        return data
    trace = run.trace
    ends = [(trace.slots[slot].ended, slot) for slot in result_slots(run)]
    ordered: list[Any] = []
    pairs = zip(ends, data["aggregate"]["results"], strict=True)
    for _, tied in groupby(pairs, key=lambda pair: pair[0][0]):
        ordered += [result for _, result in sorted(tied, key=lambda pair: pair[0][1])]
    data["aggregate"]["results"] = ordered
    return data


def runs_of(name: str) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """Step ``name``'s demos as the docs hook runs them: title, SVG, trace, run."""
    return [
        (
            picture.demo.title,
            picture.svg,
            picture.run.trace.to_dict() if picture.run.trace is not None else {},
            ties_in_slot_order(picture.run),
        )
        for picture in _docs.pictures(name)
    ]


@pytest.mark.parametrize("name", STEPS)
def test_every_demo_records_and_draws_the_same_run_whatever_order_ties_run_in(
    name: str, order_ties: Callable[[str, int], None]
) -> None:
    order_ties(*SCHEDULES[0])
    first = runs_of(name)
    for mode, seed in SCHEDULES[1:]:
        order_ties(mode, seed)
        for (title, svg, trace, run), (_, other_svg, other_trace, other_run) in zip(
            first, runs_of(name), strict=True
        ):
            where = f"{name} · {title}, ties {mode} with seed {seed}"
            assert json.dumps(other_trace) == json.dumps(trace), f"{where}: the trace differs"
            assert other_svg == svg, f"{where}: the SVG differs"
            assert other_run == run, f"{where}: the run differs beyond the order of ties"


def test_the_schedules_order_ties_differently(order_ties: Callable[[str, int], None]) -> None:
    """The seeds reach trio's scheduler: step 2 appends results as they complete, and its
    dozen-subtask demo has results that end at the same instant, in an order that changes."""
    orders = set()
    for mode, seed in SCHEDULES:
        order_ties(mode, seed)
        for picture in _docs.pictures("step02_fan_out"):
            if picture.demo.title == "a dozen subtasks":
                assert picture.run.aggregate is not None
                orders.add(tuple(result.subtask for result in picture.run.aggregate.results))
    assert len(orders) > 1
