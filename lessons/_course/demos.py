"""The demos: the tasks each step runs on, what the simulated sub-agent does on them, and what
the command line (``--task``, ``--fail``, ..., a step's options) makes of them."""

from __future__ import annotations

import argparse
import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lessons._course.steps import STEPS, Step
from trio_supervisor import decompose
from trio_supervisor.testing import SimulatedAgent

if TYPE_CHECKING:  # the loopback server (openai, Starlette...) is imported by the demos using it
    from trio_supervisor.testing.devserver import Serving


@dataclass(frozen=True)
class Demo:
    """A task to run a step on, what the simulated sub-agent does on its slots, and the options
    (keyword arguments of the step's ``supervise``) it runs with unless the command line says."""

    title: str
    task: str
    fail: frozenset[int] = field(default_factory=frozenset)
    hang: frozenset[int] = field(default_factory=frozenset)
    flaky: Mapping[int, int] = field(default_factory=dict, hash=False)  # slot -> failing calls
    slow: Mapping[int, float] = field(default_factory=dict, hash=False)  # slot -> its latency
    outputs: Mapping[int, str] = field(default_factory=dict, hash=False)  # slot -> its answer
    crash: frozenset[int] = field(default_factory=frozenset)  # slots whose process dies (26)
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    take: int | None = None  # a streaming step's caller leaves after this many results
    raises: int | None = None  # a streaming step's caller raises after this many results
    endless: bool = False  # a lazy step's input never ends: the plan over and over, numbered
    arrives: bool = False  # its input arrives as it is made: one subtask every ARRIVES_EVERY s
    against: int | None = None  # the step before, whose flaw this demo shows: the docs run both
    killed_at: float | None = None  # the supervisor is killed then, and resumed (27): seconds
    answers: str | None = None  # "approve" or "reject": its questions answered, resumed (28)
    supervisors: int = 1  # supervisors sharing the run, the first killed at killed_at (33)
    # a leaf (by its text: a tree's leaves are no slots of the plan) -> its first call's latency
    straggle: Mapping[str, float] = field(default_factory=dict, hash=False)
    # how the loopback server works through the requests (its `Serving` mode); None: the
    # step's own
    serves: Literal["batching", "sequential"] | None = None

    @functools.cached_property
    def serving(self) -> Serving | None:
        """How the loopback server works through the requests, None: the step's own. Made when
        first asked (once), so that a run that starts no server does not import it."""
        if self.serves is None:
            return None
        from trio_supervisor.testing.devserver import Serving

        return Serving(self.serves)

    def agent(self, seed: int) -> SimulatedAgent:
        """The simulated sub-agent for this demo, its latencies picked by ``seed``."""
        plan = decompose(self.task)
        return SimulatedAgent(
            seed,
            fail={plan[slot] for slot in self.fail},
            hang={plan[slot] for slot in self.hang},
            flaky={plan[slot]: calls for slot, calls in self.flaky.items()},
            latencies={plan[slot]: latency for slot, latency in self.slow.items()},
            outputs={plan[slot]: output for slot, output in self.outputs.items()},
            straggle=self.straggle,
        )


RESEARCH = Demo(
    "research this company",
    "competitor pricing; customer reviews; inventory",
    fail=frozenset({1}),  # the reviews sub-agent fails on purpose
)
LARGE = Demo(
    "a dozen subtasks",
    "market size; competitor pricing; customer reviews; inventory; hiring trends; "
    "social sentiment; board members; supplier risk; regulatory exposure; partner network; "
    "analyst coverage; web traffic",
)  # no two slots end at one instant in steps 2-4: completion order is the same in every run
DEMOS = (RESEARCH, LARGE)
FIVE = "competitor pricing; customer reviews; inventory; supplier risk; hiring trends"
FEED = "; ".join(f"review {number:02}" for number in range(1, 21))
STALL = "competitor pricing; supplier risk; inventory"  # supplier risk has no other source
TREE = "acme: pricing, reviews; globex: pricing, reviews failing"  # globex's reviews fail
REFUNDS = "acme: pricing, refund $500 to order 1234; globex: refund $40 to order 77"
TYPED = "acme: pricing, reviews prose 1; globex: pricing, news prose 3"  # prose k times (32)
STEP_13 = (  # step 14's demos, which step 16 runs too
    Demo(
        "a lazy feed of the same reviews: each pulled only when the window has room",
        FEED,
        slow={1: 3.0},  # the window fills behind review 02: nothing more is pulled
    ),
    Demo(
        "the same feed, left after 8: no more pulled than the window holds past them",
        FEED,
        slow={1: 3.0},
        take=8,
    ),
)
STEP_DEMOS: dict[int, tuple[Demo, ...]] = {
    3: (
        Demo(
            "a dozen subtasks, more than the workers: never more than max_workers run at once",
            LARGE.task,
        ),  # each later slot starts when a worker gives its token back
        Demo(
            "five subtasks, one fails: the fifth waits for a token, and one failure sinks them all",
            FIVE,
            fail=frozenset({1}),  # customer reviews fails: the whole batch raises
        ),
    ),
    5: (RESEARCH, Demo("a sub-agent hangs", FIVE, hang=frozenset({1}))),
    6: (
        Demo(
            "a dozen subtasks, one hangs: its timeout frees its worker for the next",
            LARGE.task,
            hang=frozenset({1}),  # competitor pricing never answers
            options={"worker_timeout": 1.5},
        ),
        Demo(
            "a dozen subtasks, four hang: their timeouts add up, and the run waits them all out",
            LARGE.task,
            hang=frozenset({0, 2, 4, 6}),  # each holds a worker for its whole timeout
            options={"worker_timeout": 1.5},
        ),
    ),
    7: (
        Demo(
            "the same dozen, four hang, cut short by a deadline",
            LARGE.task,
            hang=frozenset({0, 2, 4, 6}),
            options={"worker_timeout": 1.5, "deadline": 2.0},
        ),
        Demo(
            "a dozen subtasks, one fails once: a second call would succeed, but it is final",
            LARGE.task,
            flaky={3: 1},  # inventory fails its first call only
            options={"deadline": 5.0},
        ),
    ),
    8: (
        Demo(
            "flaky sub-agents, retried",
            FIVE,
            flaky={1: 2, 3: 1},  # reviews fails its first two calls, supplier risk its first
            options={"attempts": 3},
        ),
        Demo(
            "four sub-agents down for good, each retried to its last attempt",
            FIVE,
            fail=frozenset(range(1, 5)),  # every sub-agent but the pricing one fails every call
            options={"attempts": 4},
        ),
    ),
    9: (
        Demo(
            "four sub-agents down for good, the run gives up past 3 restarts in 10s",
            FIVE,
            fail=frozenset(range(1, 5)),  # every sub-agent but the pricing one fails every call
            options={"attempts": 4, "intensity": (3, 10.0)},
        ),
        Demo(
            "four sub-agents fail once, close together: a 3rd restart within 1s, the run gives up",
            FIVE,
            flaky=dict.fromkeys(range(1, 5), 1),  # each fails its first call only
            slow={1: 0.4, 2: 0.5, 3: 0.6, 4: 0.7},  # the failures end 0.1 s apart
            options={"attempts": 2, "intensity": (2, 1.0)},
        ),
        Demo(
            "the same four, failing 0.6s apart: older restarts age out of the 1s, the run goes on",
            FIVE,
            flaky=dict.fromkeys(range(1, 5), 1),
            slow={1: 0.4, 2: 1.0, 3: 1.6, 4: 2.2},  # never more than 2 failures within 1 s
            options={"attempts": 2, "intensity": (2, 1.0)},
        ),
        Demo(
            "one slow subtask, every result waits for it",
            FIVE,
            slow={4: 4.0},  # hiring trends takes 4 s: the other four wait for it, done
        ),
    ),
    10: (
        Demo(
            "one slow subtask, handed over in order: every other result comes without waiting",
            FIVE,
            slow={4: 4.0},  # step 9's demo again: hiring trends takes 4 s, the rest come first
        ),
        Demo(
            "20 reviews, one slow early: the results done behind it are held until it is",
            FEED,
            slow={1: 3.0},  # head-of-line: review 02 holds back everything after it
        ),
    ),
    11: (
        Demo(
            "20 reviews, one slow early, the stream left after 8: the workers run on to the end",
            FEED,
            slow={1: 3.0},
            take=8,
        ),
    ),
    12: (
        Demo(
            "the same reviews, left after 8: the rest are cancelled",
            FEED,
            slow={1: 3.0},
            take=8,
        ),
        Demo(
            "20 reviews, one slow early: finished results pile up behind it",
            FEED,
            slow={1: 3.0},  # head-of-line: review 02 holds back everything after it
        ),
    ),
    13: (
        Demo(
            "the same 20 reviews, one slow early: the window fills behind it, the workers idle",
            FEED,
            slow={1: 3.0},  # head-of-line: the window fills behind review 02, workers idle
        ),
        Demo(
            "the same reviews, left after 8: the whole list was read before any worker started",
            FEED,
            slow={1: 3.0},
            take=8,
        ),
    ),
    14: STEP_13,
    15: (
        Demo(
            "a feed of 20 reviews that arrives as it is made: each starts as it comes",
            FEED,
            arrives=True,  # step 14's caller must read it whole before the stream starts
        ),
    ),
    16: (  # step 14's demos, then the flaws of step 15's stream that the library fixes
        *STEP_13,
        Demo(
            "an endless feed under a 1s deadline: step 15 never ends, the library ends at 1s",
            FEED,
            endless=True,  # the reviews over and over, numbered: a feed that never ends
            options={"deadline": 1.0},
            against=15,
        ),
        Demo(
            "the caller's block raises after 4 results: step 15 wraps it, the library does not",
            FEED,
            raises=4,  # 4, not 3: the 4th is handed over with the 3rd, no tie when it raises
            against=15,
        ),
    ),
    17: (  # through the loopback server, which answers two requests at once (429 beyond)
        Demo(
            "research this company through a server that takes two at once",
            RESEARCH.task,
            flaky={1: 1},  # the reviews request is answered 500 once: transient, retried
        ),
        Demo(
            "five sub-agents, one stalls: cut at 1.5s and tried again, it holds a server place",
            FIVE,
            hang=frozenset({1}),  # the server never answers the reviews request
            options={"worker_timeout": 1.5},
        ),
    ),
    18: (  # the same server, which takes two at once, on 4 workers
        Demo(
            "a dozen at 2 requests a second: a token bucket spaces them, no 429 at all",
            LARGE.task,
            options={"rate": 2.0},
            against=17,  # step 17 on the same dozen: four at once, 429s all the way
        ),
    ),
    19: (  # the same server, which takes two at once, on 4 workers
        Demo(
            "a dozen on 4 workers, adaptive: the first 429s cut it to 2, and the 429s all but end",
            LARGE.task,
            options={"adaptive": True, "backoff": (1.0, 2.0)},  # no two retries tie
            against=18,  # step 18 on the same dozen, no rate given: 429s all the way
        ),
        Demo(
            "20 reviews through a server that answers one at a time: step 18's 4 workers keep 3 "
            "ahead of each, adaptive 1 after its first round",
            FEED,
            options={"adaptive": True},
            against=18,  # step 18 on the same server: every request waits behind the other 3
            serves="sequential",
        ),
    ),
    20: (  # the planner's rules: step 20's RULES (a competitor named, the reviews rerouted)
        Demo(
            "research this company, re-planned from what comes back",
            RESEARCH.task,
            fail=frozenset({1}),  # the reviews request always fails: rerouted to another source
        ),
        Demo(
            "the same research, one round allowed",
            RESEARCH.task,
            fail=frozenset({1}),
            options={"max_rounds": 1},
        ),
    ),
    21: (
        Demo(
            "a round brings nothing new: a stall, then a fresh plan that finds what was missing",
            STALL,
            flaky={1: 4},  # supplier risk fails its first 4 requests: all of round 1's attempts
            options={"max_stalls": 0},
        ),
        Demo(
            "a sub-agent hangs: the deadline ends the run, and the answer names it",
            RESEARCH.task,
            hang=frozenset({1}),  # the server never answers the reviews request
            options={"deadline": 3.0},
        ),
    ),
    22: (
        Demo(
            "research this company, each round decided by a chat model",
            RESEARCH.task,
            fail=frozenset({1}),
            options={"planner": "llm"},
        ),
        Demo(
            "a stall and a fresh plan, decided by a chat model",
            STALL,
            flaky={1: 4},
            options={"planner": "llm", "max_stalls": 0},
        ),
    ),
    23: (  # at most --workers leaves in all: a tie for a place would go to either tree
        Demo(
            "two companies, one child supervisor each, in rounds; a leaf fails, its company is "
            "degraded",
            TREE,
        ),
        Demo(
            "a child past 3 restarts in 10s (429s and 500s) gives up, and still answers its parent",
            TREE,
            options={"intensity": (3, 10.0)},
        ),
    ),
    24: (
        Demo(
            "a child past 3 restarts in 10s gives up: it fails its parent's slot, which is rerouted"
            " in the next round",
            TREE,
            options={"intensity": (3, 10.0)},
        ),
    ),
    25: (  # the step before runs it too: a failed leaf restarts alone, its readers keep going
        Demo(
            "rest_for_one: a failed leaf restarts the leaves after it, which depend on it",
            "acme: pricing; globex: filings failing, numbers, summary",
            options={"attempts": 2, "strategy": "rest_for_one"},
            against=24,
        ),
    ),
    26: (
        Demo(
            "a leaf's process dies, another leaf fails: each fails its own slot alone",
            "acme: competitor pricing, reviews crashing; globex: pricing, reviews failing",
        ),
        Demo(
            "the same tree, its children giving up past 3 restarts in 10s",
            "acme: competitor pricing, reviews crashing; globex: pricing, reviews failing",
            options={"intensity": (3, 10.0)},
        ),
    ),
    27: (  # on real time a child Python killed with SIGKILL; on virtual time a simulated kill
        Demo(
            "the supervisor is killed part way, then resumed: what it had finished comes back "
            "from the journal",
            RESEARCH.task,
            fail=frozenset({1}),
            killed_at=1.0,
        ),
        Demo(
            "a tree killed part way: its finished companies and leaves come back from the journal",
            TREE,
            killed_at=2.0,
        ),
    ),
    29: (  # the step before runs it too: the straggler holds its answer
        Demo(
            "a straggling request is hedged: its second request answers while the first still "
            "waits, and the first is cancelled",
            TREE.replace(" failing", ""),
            straggle={"globex reviews": 12.0},
            options={"hedge": 1.5},
            against=28,
        ),
    ),
    30: (  # the second's step before runs it too: the company waits for its third leaf
        Demo(  # first: need=1 fits any task given with --task, whose companies have a leaf at least
            "the first of two: the company answers with its quickest leaf and cancels the other",
            "acme: pricing, reviews",  # two requests: as many as the loopback server takes
            straggle={"acme reviews": 12.0},
            options={"need": 1},
        ),
        Demo(
            "the first two of three: a company keeps the first two leaves that answer and "
            "cancels the third",
            "acme: pricing, reviews, news",
            straggle={"acme news": 12.0},
            options={"need": 2},
            against=29,
        ),
    ),
    31: (  # the second's step before runs it too: every leaf sends its request, whatever it costs
        Demo(  # first: its options fit any task given with --task, on any workers
            "a budget of 400 tokens: each request's worst case reserved before it is sent, what "
            "it used settled after; no request waits for what is left",
            "acme: pricing, reviews",  # two requests: as many as the loopback server takes
            options={"budget_tokens": 400},
        ),
        Demo(  # one worker: leaves waiting together for what is left would take it in any order
            "a budget of 90 tokens, one worker: each request's worst case reserved before it is "
            "sent; the leaves it can no longer afford end over budget, sending nothing",
            "acme: pricing, reviews, news; globex: pricing, reviews",
            options={"budget_tokens": 90, "max_workers": 1},
            against=30,
        ),
    ),
    32: (  # the step before runs each too: it asks for text, and takes the prose as it is
        Demo(
            "prose once is asked again and answers a Finding; prose three times fails, "
            "InvalidReply",
            TYPED,
            against=31,
        ),
        Demo(  # a leaf reserves 2,214 to 2,238 tokens: three requests, re-asks included
            "a budget of 2,220 tokens pays for one leaf's three requests: the others send nothing",
            "acme: pricing, reviews prose 1, news prose 3",
            options={"budget_tokens": 2220},
            against=31,
        ),
    ),
    33: (  # on real time three child Pythons, the first killed with SIGKILL; else simulated
        Demo(
            "three supervisors share one run: each slot runs once; the first is killed part "
            "way, and its slots are taken over once its lease ran out",
            "; ".join(LARGE.task.split("; ")[:4]),  # a supervisor's first claim: all of them
            killed_at=1.0,
            supervisors=3,
            options={"lease": 2.0},
        ),
    ),
    28: (  # the answer given in this process, as `python -m lessons approve` gives it
        Demo(
            "a refund over $100 waits for a yes; a second command approves it; the resume "
            "finishes it",
            REFUNDS,
            answers="approve",
        ),
        Demo(
            "the same refund, rejected: the resume ends its slot rejected, the rest kept",
            REFUNDS,
            answers="reject",
        ),
    ),
}
"""Each step's own demos (the steps not named here run `DEMOS`); each shows what is still
wrong with its step."""
NEVER_RETURNS = {
    number: f"step {number} has no timeout (step 6 adds one)" for number in range(1, 6)
}
"""Why a step's run with a hung worker never returns, as the runner says when its guard stops it;
`NO_TIMEOUT` for the steps from 6 on."""
NO_TIMEOUT = "a worker hangs, and no --timeout or --deadline was given"
ENDLESS = "its input never ends, and its deadline does not end the stream (step 16's does)"
"""Why a run of an endless feed never returns (see `Demo.endless`)."""
ARRIVES_EVERY = 0.25
"""Seconds between two subtasks of a feed that arrives as it is made (see `Demo.arrives`): a
step that awaits it starts each as it comes; the caller of one that cannot reads it whole first."""
ENDLESS_EVERY = 0.05
"""Seconds between two subtasks of an endless feed: it arrives over time, as a queue's would, so
that a run that pulls it forever still moves the clock (and its guard fires, on virtual time)."""

OPTIONS = {
    "worker_timeout": "timeout",
    "deadline": "deadline",
    "attempts": "attempts",
    "intensity": "intensity",
    "window": "window",
    "strategy": "strategy",
    "seed": "seed",
    "rate": "rate",
    "max_rounds": "max_rounds",
    "max_subtasks": "max_subtasks",
    "max_stalls": "max_stalls",
    "max_resets": "max_resets",
    "planner": "planner",
    "endpoint": "endpoint",
    "model": "model",
    "hedge": "hedge",
    "need": "need",
    "budget_tokens": "budget_tokens",
    "lease": "lease",
}
"""Keyword option of a step's ``supervise`` -> the command-line option that sets it."""


def demos(args: argparse.Namespace, step: int | None = None) -> list[Demo]:
    """The tasks to run: ``--task`` alone (with the step's demo options), or the step's demos.

    ``--fail``, ``--hang``, ``--flaky`` and ``--slow`` replace what the sub-agent does, and a slot
    the command line gives one of fail, hang or flaky does only that (the demo's own behaviour for
    that slot is dropped). ``--take`` replaces when the caller leaves a stream, and the options
    of the step's ``supervise`` given on the command line replace the demo's. A demo the command
    line changed is no longer what its title says: it is titled by what runs (see
    ``changed_title``), and two demos the command line made the same run once (under the
    demo's own title if one of them is that demo unchanged). ``--take`` and the options change
    only a step that takes them: a step that does not stream has no caller that leaves.
    """
    defaults = STEP_DEMOS.get(step, DEMOS) if step is not None else DEMOS
    chosen = list(defaults)
    if args.task is not None:
        chosen = [
            Demo(
                "your task",
                args.task,
                options=defaults[0].options,
                killed_at=defaults[0].killed_at,
                answers=defaults[0].answers,
            )
        ]
    record = STEPS.get(step) if step is not None else None
    given = given_options(args, record)
    take = getattr(args, "take", None)
    unique: list[Demo] = []
    for demo in chosen:
        replaced = dataclasses.replace(
            demo, options={**demo.options, **given}, **sub_agent(args, demo)
        )
        if take is not None and (record is None or record.streams):
            replaced = dataclasses.replace(replaced, take=take)
        against = getattr(args, "endpoint", None) is not None
        if against and record is not None and record.takes_endpoint:
            # a real server does what it does: the loopback server's script does not reach it
            replaced = dataclasses.replace(
                replaced, fail=frozenset(), hang=frozenset(), flaky={}, slow={}
            )
        if replaced != demo and args.task is None:  # "your task" says what runs already
            replaced = dataclasses.replace(replaced, title=changed_title(replaced))
        same = [
            index
            for index, other in enumerate(unique)
            if dataclasses.replace(other, title="") == dataclasses.replace(replaced, title="")
        ]
        if not same:
            unique.append(replaced)
        elif replaced.title == demo.title:
            unique[same[0]] = replaced
    chosen = unique
    for demo in chosen:
        try:
            size = len(decompose(demo.task))
        except ValueError as exc:
            raise ValueError(f"--task: {exc}") from None
        for option, slots in (
            ("--fail", demo.fail),
            ("--hang", demo.hang),
            ("--flaky", demo.flaky),
            ("--slow", demo.slow),
            ("--crash", demo.crash),
        ):
            for slot in sorted(slots):
                if not 0 <= slot < size:
                    raise ValueError(
                        f"{option} {slot} is not a slot of the task: slots are 0-{size - 1}"
                    )
    return chosen


def given_options(args: argparse.Namespace, record: Step | None) -> dict[str, Any]:
    """The options of step ``record``'s entry the command line gives (every option when no
    step is named), which replace a demo's. ``--workers`` and ``--seed`` always have a value
    and change only how fast a demo runs, never what it shows: they reach the step (see
    ``running.step_options``) but change no demo.
    """
    given = {}
    for name, option in OPTIONS.items():
        value = getattr(args, option, None)
        if name != "seed" and value is not None and (record is None or record.takes(name)):
            given[name] = value
    return given


def sub_agent(args: argparse.Namespace, demo: Demo) -> dict[str, Any]:
    """What the sub-agent does on ``demo``'s slots with the command line's ``--fail``,
    ``--hang``, ``--flaky`` and ``--slow``: each given replaces the demo's, and a slot the
    command line gives one of fail, hang or flaky (or hang, for ``slow``) loses the demo's other
    behaviours, so that every slot does one thing."""
    fail = set(getattr(args, "fail", None) or ())
    hang = set(getattr(args, "hang", None) or ())
    flaky = dict(getattr(args, "flaky", None) or ())
    crash = getattr(args, "crash", None)
    named = fail | hang | set(flaky) | set(crash or ())
    slow = getattr(args, "slow", None)
    return {
        "fail": frozenset(fail) if args.fail is not None else demo.fail - named,
        "hang": frozenset(hang) if getattr(args, "hang", None) is not None else demo.hang - named,
        "flaky": flaky
        if getattr(args, "flaky", None) is not None
        else {slot: calls for slot, calls in demo.flaky.items() if slot not in named},
        "slow": dict(slow)
        if slow is not None
        else {slot: latency for slot, latency in demo.slow.items() if slot not in hang},
        "crash": frozenset(crash) if crash is not None else demo.crash - named,
    }


def changed_title(demo: Demo) -> str:
    """The title of a demo the command line changed, made of what runs: the task's size, what
    the sub-agent does on purpose and when the caller leaves (the header adds the options)."""

    def slots(chosen: Iterable[int]) -> str:
        ordered = sorted(chosen)
        return ("slot " if len(ordered) == 1 else "slots ") + ", ".join(map(str, ordered))

    said = [f"the demo's {len(decompose(demo.task))} subtasks"]
    if demo.fail:
        said.append(f"{slots(demo.fail)} {'fails' if len(demo.fail) == 1 else 'fail'}")
    if demo.hang:
        said.append(f"{slots(demo.hang)} {'hangs' if len(demo.hang) == 1 else 'hang'}")
    said += [
        f"slot {slot} fails its first {k} call{'s' if k > 1 else ''}"
        for slot, k in sorted(demo.flaky.items())
    ]
    if demo.crash:
        said.append(
            f"{slots(demo.crash)} {'kills its' if len(demo.crash) == 1 else 'kill their'} process"
        )
    said += [f"slot {slot} takes {t:g}s" for slot, t in sorted(demo.slow.items())]
    if demo.take is not None:
        said.append(f"left after {demo.take} results")
    if demo.raises is not None:
        said.append(f"the caller raises after {demo.raises} results")
    if demo.endless:
        said.append("fed endlessly")
    if demo.arrives:
        said.append(f"one subtask arriving every {ARRIVES_EVERY:g}s")
    return ", ".join(said)
