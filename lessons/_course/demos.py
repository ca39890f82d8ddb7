"""The demos: the tasks each step runs on, and what the simulated sub-agent does on them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trio_supervisor import decompose
from trio_supervisor.testing import SimulatedAgent


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
    crash: frozenset[int] = field(default_factory=frozenset)  # slots whose process dies (14-)
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    take: int | None = None  # a streaming step's caller leaves after this many results

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
TREE = "acme: pricing, reviews; globex: pricing, reviews failing"  # globex's reviews fail
STEP_DEMOS: dict[int, tuple[Demo, ...]] = {
    5: (RESEARCH, Demo("a sub-agent hangs", FIVE, hang=frozenset({1}))),
    6: (
        Demo(
            "a sub-agent hangs, another fails once",
            FIVE,
            flaky={3: 1},  # supplier risk fails its first call: a second would succeed
            hang=frozenset({1}),  # the reviews sub-agent never answers
            options={"worker_timeout": 1.5},
        ),
        Demo(LARGE.title + ", cut short by a deadline", LARGE.task, options={"deadline": 1.5}),
    ),
    7: (
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
    8: (
        Demo(
            "four sub-agents down for good, the run gives up past 3 restarts in 10s",
            FIVE,
            fail=frozenset(range(1, 5)),  # every sub-agent but the pricing one fails every call
            options={"attempts": 4, "intensity": (3, 10.0)},
        ),
        Demo(
            "one slow subtask, every result waits for it",
            FIVE,
            slow={4: 4.0},  # hiring trends takes 4 s: the other four wait for it, done
        ),
    ),
    9: (
        Demo(
            "20 reviews, one slow early: finished results pile up behind it",
            FEED,
            slow={1: 3.0},  # head-of-line: review 02 holds back everything after it
        ),
        Demo("the same reviews, left after 8", FEED, slow={1: 3.0}, take=8),
    ),
    10: (
        Demo(
            "a lazy feed of 20 reviews, one slow early: the window fills",
            FEED,
            slow={1: 3.0},  # head-of-line: the window fills behind review 02, workers idle
        ),
        Demo("the same feed, left after 8 reviews", FEED, slow={1: 3.0}, take=8),
    ),
    11: (  # through the loopback server, which answers two requests at once (429 beyond)
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
    12: (  # the planner's rules: the step's RULES (a competitor named, the reviews rerouted)
        Demo(
            "research this company, re-planned from what comes back",
            RESEARCH.task,
            fail=frozenset({1}),  # the reviews sub-agent fails: rerouted to another source
            outputs={0: "Acme undercuts our list price by 10%"},  # names a competitor
        ),
        Demo(
            "the same research, one round allowed",
            RESEARCH.task,
            fail=frozenset({1}),
            outputs={0: "Acme undercuts our list price by 10%"},
            options={"max_rounds": 1},
        ),
    ),
    13: (  # at most --workers leaves in all: a tie for a place would go to either tree
        Demo(
            "two companies, one child supervisor each; a leaf fails, its company is degraded",
            TREE,
        ),
        Demo(
            "a child gives up past 1 restart in 10s: it fails its parent's slot, which retries",
            TREE,
            options={"attempts": 3, "intensity": (1, 10.0)},
        ),
        Demo(
            "rest_for_one: a failed child restarts the children after it, which depend on it",
            "acme: pricing; globex: filings failing, numbers, summary",
            options={"attempts": 2, "strategy": "rest_for_one"},
        ),
    ),
    14: (
        Demo(
            "a sub-agent's process dies, another sub-agent fails",
            FIVE,
            crash=frozenset({1}),  # the reviews sub-agent's body calls os._exit
            fail=frozenset({3}),  # supplier risk raises: an exception, for comparison
        ),
        Demo(
            "a sub-agent hangs: its timeout kills its process",
            FIVE,
            hang=frozenset({1}),
            options={"worker_timeout": 1.5},
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
