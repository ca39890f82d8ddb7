"""The "dispatch" player's scenarios: real runs of a step, recorded for the browser to replay.

Trio does not run in a browser, so a step page cannot run its step. It replays runs instead: when
the site is built, each step runs on a few scenarios (1-4 workers, a failing slot, a slot that
fails once and is retried, a hanging slot) through the runner on ``trio.testing.MockClock``,
exactly as ``python -m lessons <n> --virtual`` runs it, and each run is written as the runner's
``--json`` data (``recording.run_dict``) into ``generated/steps/<step>/dispatch.json``.
``docs/javascripts/dispatch.js`` reads that file and plays a run back: the sub-agents as cards,
the results list filling in, the timeline drawing itself as virtual time advances.

A scenario is offered only where the step can tell it apart: a step without ``max_workers`` has
one "workers" scenario, not four identical ones, and a step without ``attempts`` no retried one.
A step with ``worker_timeout`` runs its hanging slot with one; a step without shows the hang as
it is: the run never returns, and the runner's guard stops it
(``lessons._course.running.run_guarded``).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from lessons._course.arguments import parser
from lessons._course.demos import FIVE, Demo
from lessons._course.recording import run_dict
from lessons._course.running import Run, final_statuses, run_demo
from lessons._course.steps import step, step_number
from trio_supervisor.timeline import render_svg

#: Each slot's latency in the scenarios, in whole 1/32 s. No two sums of them are equal, so no
#: two slots ever end at the same virtual instant, whatever the number of workers: trio runs
#: tasks woken together in no fixed order, and a step that appends results (steps 2 and 3) would
#: otherwise return them in another order on another build. Slot 1 is the quickest (failing, it
#: fails before its siblings end) and slot 2 the slowest (the later slots finish before it).
LATENCIES = {0: 18 / 32, 1: 12 / 32, 2: 26 / 32, 3: 22 / 32, 4: 24 / 32}
WORKERS = (1, 2, 3, 4)
#: The workers of the failing and the hanging scenario: few enough that a slot waits for a place.
TROUBLE_WORKERS = 2
FAILING = 1  # the slot that fails, in the failing scenario
HANGING = 1  # the slot that never answers, in the hanging scenario
RETRIED = 2  # calls per slot at most, in the scenario where a slot fails once (steps with retries)
TIMEOUT = 1.5  # seconds: the hanging slot's worker_timeout, for a step that takes one
DEFAULT = "fails"  # the scenario a page shows first: one sub-agent fails, the others carry on
FILE = "dispatch.json"


@dataclass(frozen=True)
class Scenario:
    """One run a step page's player offers: its key, its label, and what runs."""

    key: str
    label: str
    demo: Demo
    workers: int

    def run(self, name: str) -> Run:
        """Run step ``name`` on this scenario on virtual time, as the runner does."""
        number = step_number(name)
        args = parser().parse_args([str(number), "--virtual", "--workers", str(self.workers)])
        return run_demo(name, self.demo, args)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def scenarios(name: str) -> list[Scenario]:
    """The scenarios step ``name``'s player offers, in the order its menu lists them."""
    record = step(name)
    plan = "5 subtasks"
    chosen = []
    if record.takes("max_workers"):
        for workers in WORKERS:
            demo = Demo(f"{plan}, {_plural(workers, 'worker')}", FIVE, slow=LATENCIES)
            chosen.append(Scenario(f"workers-{workers}", demo.title, demo, workers))
        crowd = f", {_plural(TROUBLE_WORKERS, 'worker')}"
    else:
        demo = Demo(f"{plan} (this step takes no max_workers)", FIVE, slow=LATENCIES)
        chosen.append(Scenario("workers", demo.title, demo, WORKERS[-1]))
        crowd = ""
    fails = Demo(f"slot {FAILING} fails{crowd}", FIVE, fail=frozenset({FAILING}), slow=LATENCIES)
    chosen.append(Scenario("fails", fails.title, fails, TROUBLE_WORKERS))
    if record.takes("attempts"):
        flaky = Demo(
            f"slot {FAILING} fails its first call{crowd}, attempts={RETRIED}",
            FIVE,
            flaky={FAILING: 1},
            slow=LATENCIES,
            options={"attempts": RETRIED},
        )
        chosen.append(Scenario("retried", flaky.title, flaky, TROUBLE_WORKERS))
    timed = record.takes("worker_timeout")
    hangs = Demo(
        f"slot {HANGING} hangs{crowd}"
        + (f", worker_timeout={TIMEOUT:g}s" if timed else ", no timeout"),
        FIVE,
        hang=frozenset({HANGING}),
        slow={slot: latency for slot, latency in LATENCIES.items() if slot != HANGING},
        options={"worker_timeout": TIMEOUT} if timed else {},
    )
    chosen.append(Scenario("hangs", hangs.title, hangs, TROUBLE_WORKERS))
    if record.takes_crash:  # a worker process to end: step 22 on
        title = f"slot {FAILING}'s process dies{crowd}"
        crashes = Demo(title, FIVE, crash=frozenset({FAILING}), slow=LATENCIES)
        chosen.append(Scenario("crashes", crashes.title, crashes, TROUBLE_WORKERS))
    return chosen


def recorded(name: str) -> tuple[dict[str, Any], Run]:
    """Every scenario of step ``name`` run once: the data of ``dispatch.json``, and the run of
    the scenario the page shows first (its timeline is what a reader without JavaScript sees)."""
    runs = {scenario.key: (scenario, scenario.run(name)) for scenario in scenarios(name)}
    data = {
        "step": name,
        "default": DEFAULT,
        "scenarios": [
            {"key": scenario.key, "label": scenario.label, "run": run_dict(run)}
            for scenario, run in runs.values()
        ],
    }
    return data, runs[DEFAULT][1]


def to_json(data: dict[str, Any]) -> str:
    """``dispatch.json``'s text: the same bytes for the same runs."""
    return json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"


def player(name: str) -> tuple[str, str]:
    """Step ``name``'s player: the text of its ``dispatch.json`` and the markdown of its place
    on the step's page (see `fragment`)."""
    data, first = recorded(name)
    return to_json(data), fragment(name, first)


def fragment(name: str, first: Run) -> str:
    """The player's place on a step page: a container ``dispatch.js`` fills in, holding what a
    reader without JavaScript sees instead (the first scenario's timeline, drawn as every
    timeline of the site is) and the link to the recorded runs, which the script reads."""
    assert first.trace is not None
    title = f"{name} · {first.demo.title}: the player's first scenario, on virtual time"
    svg = render_svg(first.trace, final_statuses(first), title=title)
    number = step_number(name)
    return (
        "### Dispatch\n\n"
        f"Choose a scenario and press **Dispatch**: the page replays a real run of step {number}, "
        "recorded on virtual time when this site was built (Trio does not run in a browser). "
        "The cards are the sub-agents, the list is what the run returns, each result shown from "
        "the instant it is in, and the timeline draws itself as the virtual clock advances. "
        "The keyboard works too: Tab to a control, Enter or Space to press it.\n\n"
        f'<div class="dispatch" data-step="{html.escape(name)}" markdown>\n'
        '<figure class="dispatch-fallback">\n'
        f"{svg}"
        f"<figcaption>{html.escape(first.demo.title)}: the run the player starts with, as a "
        "timeline (the player itself needs JavaScript).</figcaption>\n</figure>\n\n"
        f"[The recorded runs, as the runner's JSON](../generated/steps/{name}/{FILE})"
        "{ .dispatch-data }\n\n"
        "</div>\n"
    )
