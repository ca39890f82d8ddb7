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

Then each step gets the scenarios built on the ideas it has, each offered where the step's record
says it takes what the scenario needs, never by its number, so that a step added or renumbered gets
what its record says: ``deadline`` a hung slot the run answers without, ``intensity`` a run that
gives up past its restart intensity, a stream a caller that leaves early (step 11 shows its workers
run on, step 12 on cancels them), ``window`` a window filling behind a slow slot, ``rate`` attempts
spaced out by a token bucket, ``adaptive`` the workers allowed fitted to what the server takes (one
that refuses beyond, one that queues), a flat re-planning step's ``max_rounds`` a second round that
follows a finding up and reroutes a failure, its ``max_subtasks`` that round cut at the budget, its
``planner`` a chat model that decides each round (the loopback server playing it), a lazy input a
feed pulled only as the window has room, an input it awaits a feed that arrives as it is made, a
tree (a step that records its own trace and checks its
task's form) two companies with a child supervisor each, a ``strategy`` a failed leaf that restarts
the leaves after it, a step whose workers run in processes one that dies, a step that journals its
runs a supervisor killed part way and resumed (its player shows the resume, the slots that came
from the journal drawn as such), ``hedge`` a straggling request answered by its hedge, ``need`` a
company that keeps its first k leaves, ``budget_tokens`` the leaves a token budget cannot afford,
and a step whose replies are typed leaves answered in prose, asked again and, past the bound,
failed.

A page's player starts with the scenario of its step's own idea (`default`): one that sets an
option the step adds, else one the step before does not offer, else one whose run returns
something else on the step before; `unset_idea` tells a recorded
player that starts with a run without it (``tools/docs_check.py`` fails such a page).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lessons._course.arguments import parser
from lessons._course.demos import ARRIVES_EVERY, FIVE, TREE, TYPED, Demo
from lessons._course.recording import run_dict
from lessons._course.running import Run, final_statuses, run_demo
from lessons._course.showing import round_sections
from lessons._course.steps import part_two, step, step_number, steps
from tools.docs.pages import fitted
from trio_supervisor import Status, Trace
from trio_supervisor.timeline import (
    ENDINGS,
    LABEL,
    MARKS,
    cut_label,
    legend_keys,
    ticks,
    timeline_rows,
)

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
DEFAULT = "fails"  # the scenario a page shows first when none shows its idea (see `default`)
DEADLINE = 2.0  # seconds: the run's deadline, in the scenario where a slot hangs past it
INTENSITY = (2, 10.0)  # the restarts allowed within seconds, where four slots fail for good
DOWN = frozenset(range(1, 5))  # the slots down for good, in the scenario that gives up
TAKEN = 2  # results the caller takes before it leaves, in the scenario where it leaves early
RATE = 2.0  # attempts a second, in the scenario of a step that takes a rate
WINDOW = 3  # the window of the scenarios that fill it: one place more than the workers
KILLED_AT = 1.0  # seconds: when the supervisor is killed, in the scenario that resumes it
SLOW = 1  # the slot that runs long, in the scenarios whose window fills behind it
#: The plan of the window and lazy scenarios: longer than the window, so that it fills.
FEED = "; ".join(f"review {number:02}" for number in range(1, 11))
FEED_LATENCIES = {
    SLOW: 64 / 32,
    **{slot: (8 + 2 * slot) / 32 for slot in range(10) if slot != SLOW},
}
#: The subtasks of the scenario whose server queues: enough to run on past the first round (8)
QUEUED = 16
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
    chosen += own_scenarios(name, crowd)
    return chosen


def sets(scenario: Scenario) -> set[str]:
    """The options ``scenario`` sets: its demo's, and ``max_workers`` for a choice of workers."""
    return {
        *scenario.demo.options,
        *(["max_workers"] if scenario.key.startswith("workers-") else []),
    }


def added(name: str) -> set[str]:
    """The options step ``name`` takes that the step before it does not: its idea's."""
    names = list(steps().values())
    at = names.index(name)
    before = set(step(names[at - 1]).options) if at else set()
    return set(step(name).options) - before


def unset_idea(name: str, data: Mapping[str, Any]) -> list[str]:
    """The options step ``name`` adds that a scenario of its recorded player (``data``, as
    ``dispatch.json`` holds it) sets and the scenario it starts with leaves as the step's
    default: a page whose player opens on a run without its own idea. Empty when it shows it."""
    defaults = step(name).options
    runs = {scenario["key"]: scenario["run"]["options"] for scenario in data["scenarios"]}

    def value(options: Mapping[str, Any], option: str) -> Any:
        return options.get(option, defaults.get(option))

    # an option every run sets alike (the runner's seed) is no scenario's choice
    chosen = {
        option
        for option in added(name)
        if len({repr(value(options, option)) for options in runs.values()}) > 1
    }

    def set_in(options: Mapping[str, Any]) -> set[str]:
        return {option for option in chosen if value(options, option) != defaults.get(option)}

    anywhere = set().union(*(set_in(options) for options in runs.values()))
    if not anywhere:
        return []
    first = set_in(runs[data["default"]])
    return [] if first else sorted(anywhere)


def default(name: str) -> str:
    """The scenario step ``name``'s page shows first: one that shows the step's idea. The first
    that sets an option the step adds (with `TROUBLE_WORKERS` where the workers are the choice),
    else the last scenario the step before does not offer, else the last built on an idea the
    step keeps (`own_scenarios`), else the first (`TROUBLE_WORKERS` first) whose run `returns`
    something else on the step before (step 4's plan order where step 3 returns completion
    order, step 5's results where step 4 raises), else `DEFAULT`."""
    chosen = scenarios(name)
    own = [scenario for scenario in chosen if sets(scenario) & added(name)]
    if own:
        crowded = [scenario for scenario in own if scenario.workers == TROUBLE_WORKERS]
        return (crowded or own)[0].key
    names = list(steps().values())
    at = names.index(name)
    before = {scenario.key for scenario in scenarios(names[at - 1])} if at else set()
    new = [scenario.key for scenario in chosen if scenario.key not in before]
    if new and at:
        return new[-1]
    ideas = [scenario.key for scenario in own_scenarios(name, "")]  # its ideas, kept since
    if ideas:
        return ideas[-1]
    if at:  # an idea with no option of its own (step 4's order, step 5's isolation): its run
        crowded = sorted(chosen, key=lambda scenario: scenario.workers != TROUBLE_WORKERS)
        for scenario in crowded:
            if returns(scenario.run(name)) != returns(scenario.run(names[at - 1])):
                return scenario.key
    return DEFAULT


def returns(run: Run) -> tuple[object, ...]:
    """What a run comes to, as a reader of the player sees it: whether it raised or never
    returned, and the results it returned, in their order, with how each ended."""
    results = [] if run.aggregate is None else run.aggregate.results
    return (
        run.error is not None,
        run.stopped is not None,
        tuple((result.subtask, result.status) for result in results),
    )


ROUNDS = 2  # the rounds allowed, in the scenario of a re-planning step: the planner needs two
SUBTASKS = 6  # subtasks dispatched at most, in the budget scenario: round 2 asks for a seventh
HEDGE_AFTER = 1.5  # seconds a leaf runs before its hedge starts
STRAGGLING = "acme: pricing, reviews; globex: pricing, reviews"
STRAGGLER = "globex reviews"  # its first request takes 12 seconds, its hedge does not
DEPENDING = "acme: pricing; globex: filings failing, numbers, summary"  # each reads the last
NEED = 2  # leaves a company keeps, in the scenario of a step that takes need
THREE_SOURCES = "acme: pricing, reviews, news"
SOURCE_STRAGGLER = "acme news"  # its request takes 12 seconds: the first two leave it out
TOKENS = 90  # the leaves' token budget, in the scenario of a step that takes budget_tokens
BUDGETED = "acme: pricing, reviews, news; globex: pricing, reviews"  # 90 tokens pay for 3


def own_scenarios(name: str, crowd: str) -> list[Scenario]:
    """The scenarios built on step ``name``'s own ideas, each where its record takes it (see
    the module's doc); ``crowd`` says the workers in a label."""
    record = step(name)
    chosen = []
    # the library's stream hands each result over once, so it cannot restart (step 16 refuses
    # an intensity there, as Supervisor.stream does): only a hand-written stream gives up; a
    # re-planning run reroutes a failed subtask instead (steps 20 on; 21 shows escalation)
    gives_up_here = not (record.streams and part_two(name)) and not record.replans
    if record.takes("deadline") and not record.replans and not record.streams:
        late = Demo(
            f"slot {HANGING} hangs{crowd}, deadline={DEADLINE:g}s: the run answers by then",
            FIVE,
            hang=frozenset({HANGING}),
            slow={slot: latency for slot, latency in LATENCIES.items() if slot != HANGING},
            options={"deadline": DEADLINE},
        )
        chosen.append(Scenario("deadline", late.title, late, TROUBLE_WORKERS))
    if record.takes("intensity") and record.takes("attempts") and gives_up_here:
        restarts, within = INTENSITY
        gives_up = Demo(
            f"slots 1-4 down for good{crowd}, intensity=({restarts}, {within:g}s): it gives up",
            FIVE,
            fail=DOWN,
            slow=LATENCIES,
            options={"attempts": 4, "intensity": INTENSITY},
        )
        chosen.append(Scenario("gives-up", gives_up.title, gives_up, TROUBLE_WORKERS))
    if record.streams:
        left = Demo(f"left after {TAKEN} results{crowd}", FIVE, slow=LATENCIES, take=TAKEN)
        chosen.append(Scenario("left", left.title, left, TROUBLE_WORKERS))
    if record.takes("window") and not record.lazy:
        fills = Demo(
            f"10 subtasks, slot {SLOW} slow{crowd}, window={WINDOW}: the window fills behind it",
            FEED,
            slow=FEED_LATENCIES,
            options={"window": WINDOW},
        )
        chosen.append(Scenario("window", fills.title, fills, TROUBLE_WORKERS))
    if record.lazy and record.takes("window"):
        pulled = Demo(
            f"a lazy feed of 10, slot {SLOW} slow{crowd}, window={WINDOW}: pulled as it has room",
            FEED,
            slow=FEED_LATENCIES,
            options={"window": WINDOW},
        )
        chosen.append(Scenario("lazy", pulled.title, pulled, TROUBLE_WORKERS))
    if record.awaits and record.takes("window"):
        made = Demo(
            f"a feed of 10 arriving one every {ARRIVES_EVERY:g}s{crowd}, window={WINDOW}: each "
            "starts as it comes",
            FEED,
            slow=FEED_LATENCIES,
            arrives=True,
            options={"window": WINDOW},
        )
        chosen.append(Scenario("arriving", made.title, made, TROUBLE_WORKERS))
    # a re-planning run adds follow-ups and reroutes to the slots; rate and adaptive are the
    # ideas of steps 18 and 19
    if record.takes("rate") and not record.replans:  # a token bucket spacing the attempts out
        spaced = Demo(
            f"rate={RATE:g} a second, {_plural(WORKERS[-1], 'worker')}: each call waits its turn",
            FIVE,
            slow=LATENCIES,
            options={"rate": RATE},
        )
        chosen.append(Scenario("rate", spaced.title, spaced, WORKERS[-1]))
    if (
        record.takes("adaptive") and not record.replans
    ):  # the workers allowed, fitted to what the server takes
        fitted = Demo(
            f"adaptive, {_plural(WORKERS[-1], 'worker')} against a server that takes fewer",
            FIVE,
            slow=LATENCIES,
            options={"adaptive": True},
        )
        chosen.append(Scenario("adaptive", fitted.title, fitted, WORKERS[-1]))
        # and a server that queues instead of refusing: the limit falls after its first round
        queued = Demo(
            f"adaptive, {_plural(WORKERS[-1], 'worker')}, {QUEUED} subtasks against a server "
            "that answers one at a time and queues the rest",
            "; ".join(f"review {number:02}" for number in range(1, QUEUED + 1)),
            options={"adaptive": True},
            serves="sequential",
        )
        chosen.append(Scenario("adaptive-queued", queued.title, queued, WORKERS[-1]))
    # a re-planning step's rounds, budgets and planner, where it is one flat supervisor (a tree
    # re-plans each company in its own child run: its scenario shows those rounds)
    flat = record.replans and not (record.records_trace and record.check_task is not None)
    if flat and record.takes("max_rounds"):  # rounds: a finding followed up, a failure rerouted
        rounds = Demo(
            f"slot {FAILING} fails{crowd}, max_rounds={ROUNDS}: round 2 follows a finding up "
            "and reroutes the failure",
            FIVE,
            fail=frozenset({FAILING}),
            slow=LATENCIES,
            options={"max_rounds": ROUNDS},
        )
        chosen.append(Scenario("rounds", rounds.title, rounds, TROUBLE_WORKERS))
    if flat and record.takes("max_subtasks"):  # a budget that ends what the planner asks for
        capped = Demo(
            f"slot {FAILING} fails{crowd}, max_subtasks={SUBTASKS}: round 2 is cut at the budget, "
            "and the answer says so",
            FIVE,
            fail=frozenset({FAILING}),
            slow=LATENCIES,
            options={"max_subtasks": SUBTASKS},
        )
        chosen.append(Scenario("budgets", capped.title, capped, TROUBLE_WORKERS))
    if flat and record.takes("planner"):  # a chat model decides each round, as JSON
        chat = Demo(
            f"slot {FAILING} fails{crowd}, planner=llm: a chat model decides each round",
            FIVE,
            fail=frozenset({FAILING}),
            slow=LATENCIES,
            options={"planner": "llm"},
        )
        chosen.append(Scenario("llm", chat.title, chat, TROUBLE_WORKERS))
    if record.records_trace and record.check_task is not None:  # a tree of supervisors
        # a worker for each of the four leaves: two trees tied for a place would take it in no
        # fixed order, and the recorded run would differ from build to build
        leaves = f", {_plural(WORKERS[-1], 'worker')}" if crowd else ""
        tree = Demo(f"two companies, a child supervisor each{leaves}; a leaf fails", TREE)
        chosen.append(Scenario("tree", tree.title, tree, WORKERS[-1]))
    if record.takes("strategy"):  # a failed leaf restarts the leaves after it, which read it
        leaves = f", {_plural(WORKERS[-1], 'worker')}" if crowd else ""
        title = f"globex's filings fail{leaves}, strategy=rest_for_one: the leaves after restart"
        restarted = Demo(title, DEPENDING, options={"attempts": 2, "strategy": "rest_for_one"})
        chosen.append(Scenario("strategy", restarted.title, restarted, WORKERS[-1]))
    if record.takes_crash:  # a worker process to end
        title = f"slot {FAILING}'s process dies{crowd}"
        crashes = Demo(title, FIVE, crash=frozenset({FAILING}), slow=LATENCIES)
        chosen.append(Scenario("crashes", crashes.title, crashes, TROUBLE_WORKERS))
    if record.journals:  # a supervisor killed part way, then resumed from its journal
        title = f"the supervisor killed at {KILLED_AT:g}s, then resumed{crowd}"
        killed = Demo(title, FIVE, fail=frozenset({FAILING}), slow=LATENCIES, killed_at=KILLED_AT)
        chosen.append(Scenario("killed", killed.title, killed, TROUBLE_WORKERS))
    if record.takes("hedge"):  # a straggling first request, and the second that wins
        title = f"a leaf's first request straggles, hedge={HEDGE_AFTER:g}s{crowd}: its hedge wins"
        hedged = Demo(title, STRAGGLING, straggle={STRAGGLER: 12.0}, options={"hedge": HEDGE_AFTER})
        chosen.append(Scenario("hedged", hedged.title, hedged, WORKERS[-1]))
    if record.takes("need"):  # a company keeps its first k leaves, the straggler cancelled
        title = (
            f"a company of 3 leaves, one straggling, need={NEED}{crowd}: it keeps the first {NEED}"
        )
        first = Demo(
            title, THREE_SOURCES, straggle={SOURCE_STRAGGLER: 12.0}, options={"need": NEED}
        )
        chosen.append(Scenario("first-k", first.title, first, WORKERS[-1]))
    # a budget reserved before each request, never overshot (a typed step reserves a leaf's
    # re-asks too, thirty times as much: its own scenario shows its replies instead)
    if record.takes("budget_tokens") and not record.typed:
        # one worker: leaves waiting together for what the budget has left would take it in no
        # fixed order, and the recorded run would differ from build to build
        title = f"budget_tokens={TOKENS}, 1 worker: the leaves it can no longer afford send nothing"
        capped = Demo(title, BUDGETED, options={"budget_tokens": TOKENS})
        chosen.append(Scenario("token-budget", capped.title, capped, 1))
    if record.typed:  # replies held to a contract: prose asked again, and past the bound failed
        # a worker for each of the four leaves, as the tree's: no two tie for a place
        leaves = f", {_plural(WORKERS[-1], 'worker')}" if crowd else ""
        title = f"leaves answered in prose once and three times{leaves}: asked again, then failed"
        typed = Demo(title, TYPED)
        chosen.append(Scenario("typed", typed.title, typed, WORKERS[-1]))
    if record.takes("lease"):  # several supervisors on one run, the first killed part way
        title = (
            f"3 supervisors on one run, lease={SHARED_LEASE:g}s, the first killed at "
            f"{KILLED_AT:g}s: its slots taken over once its lease ran out"
        )
        shared = Demo(
            title,
            FIVE,
            slow=LATENCIES,
            supervisors=3,
            killed_at=KILLED_AT,
            options={"lease": SHARED_LEASE},
        )
        chosen.append(Scenario("shared", shared.title, shared, WORKERS[-1]))
    return chosen


SHARED_LEASE = 2.0  # seconds a supervisor holds a slot, in the scenario of several on one run


def endings() -> dict[str, dict[str, str]]:
    """The table of endings and marks the player colours its timeline, cards and results from:
    `trio_supervisor.timeline.ENDINGS` and ``MARKS``, by class (``ts-timed-out``)."""
    table = {
        drawn.css: {
            "word": drawn.word,
            "glyph": drawn.glyph,
            "fill": drawn.fill,
            "ink": drawn.ink,
            "night": drawn.night,
            "legend": drawn.legend,
        }
        for drawn in ENDINGS.values()
    }
    for mark in MARKS.values():  # an attempt's own mark is drawn in its ending's colour
        said = {"word": mark.kind, "legend": mark.pictured or mark.legend}
        table.setdefault(mark.css, said if mark.fill is None else {**said, "fill": mark.fill})
    return table


def deciding(spans: list[dict[str, Any]]) -> int | None:
    """The index of the span, of a slot's spans as the runner's JSON holds them, that says how
    the slot ended: `trio_supervisor.SlotTrace.deciding`'s choice (the last attempt's; of a
    hedged race, one still open, else the one that succeeded, else the one that ended last),
    which the player's ``deciding`` makes too. None for a slot that never ran."""
    if not spans:
        return None
    first = len(spans) - 1
    while first > 0 and spans[first].get("hedge"):
        first -= 1
    race = range(first, len(spans))
    for index in race:
        if spans[index]["end"] is None:
            return index
    for index in race:
        if spans[index]["status"] == "ok" and not spans[index].get("lost"):
            return index
    return max(reversed(race), key=lambda index: spans[index]["end"])


def drawing(run: Run) -> dict[str, Any]:
    """A run's timeline as the player draws it: the rows of
    `trio_supervisor.timeline.timeline_rows` (a tree's child runs under their parents, with
    its connectors), each bar ``[start, end, class]`` (an attempt's class its ending's, another
    stretch's its mark's; a hedge's ``[start, end, class, k]``, for its attempt's k-th hedge,
    which the player draws as a lower bar), each row's ending class; the legend's keys; the
    axis ticks. Labels longer than `trio_supervisor.timeline.LABEL` characters are cut, the full
    one kept for the hover title."""
    assert run.trace is not None
    return trace_drawing(run.trace, final_statuses(run))


def trace_drawing(trace: Trace, final: Mapping[int, Status] | None = None) -> dict[str, Any]:
    """The player's drawing of ``trace`` (see `drawing`), ``final`` the statuses the run
    reported, as `trio_supervisor.timeline.timeline_rows` takes them."""
    rows = timeline_rows(trace, final)
    drawn = []
    for row in rows:
        bars: list[list[Any]] = [
            [bar.start, bar.end, bar.ending.css if bar.kind == "running" else MARKS[bar.kind].css]
            + ([bar.hedge] if bar.hedge else [])
            for bar in row.bars
        ]
        label = cut_label(row.label, LABEL)
        drawn.append(
            {
                "slot": row.slot,
                "depth": row.depth,
                "label": label,
                "title": row.label,
                "ending": row.ending.css,
                "bars": bars,
            }
        )
    return {
        "rows": drawn,
        "legend": [list(key) for key in legend_keys(rows)],
        "ticks": ticks(trace.wall or 1.0),
    }


def recorded(name: str) -> tuple[dict[str, Any], Run]:
    """Every scenario of step ``name`` run once: the data of ``dispatch.json``, and the run of
    the scenario the page shows first (its timeline is what a reader without JavaScript sees)."""
    runs = {scenario.key: (scenario, scenario.run(name)) for scenario in scenarios(name)}
    first = default(name)
    data = {
        "step": name,
        "default": first,
        "endings": endings(),
        "scenarios": [
            {
                "key": scenario.key,
                "label": scenario.label,
                "run": run_dict(run),
                "drawing": drawing(run),
            }
            for scenario, run in runs.values()
        ],
    }
    return data, runs[first][1]


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
    svg = fitted(first.trace, final_statuses(first), title=title, sections=round_sections(first))
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
