"""Each public class of the core opens with a short example, and the example runs as shown."""

from __future__ import annotations

import doctest

import pytest
import trio
import trio.testing

import trio_supervisor
import trio_supervisor.testing

EXAMPLED = [
    "Supervisor",
    "Stream",
    "Aggregate",
    "SubResult",
    "Status",
    "Backoff",
    "Capacity",
    "RateLimit",
    "Meter",
    "Trace",
    "SlotTrace",
    "Span",
    "Restarts",
    "decompose",
    "Adaptive",
    "Planner",
    "Batch",
    "Done",
    "Ledger",
    "Entry",
    "Round",
    "Answer",
    "Approved",
    "AwaitingApproval",
    "Rejected",
]


#: the test doubles' classes of ``trio_supervisor.testing``, whose examples run beside the core's
TESTING_EXAMPLED = ["SimulatedAgent"]


@pytest.mark.parametrize("name", [*EXAMPLED, *(f"testing.{name}" for name in TESTING_EXAMPLED)])
def test_the_docstring_example_runs_as_shown(name: str) -> None:
    testing = trio_supervisor.testing
    obj = (
        getattr(testing, name.removeprefix("testing."))
        if name.startswith("testing.")
        else getattr(trio_supervisor, name)
    )
    globs = {**{key: getattr(trio_supervisor, key) for key in trio_supervisor.__all__}}
    globs |= {key: getattr(testing, key) for key in testing.__all__}
    globs["trio"] = trio
    (test,) = doctest.DocTestFinder(recurse=False).find(obj, name, globs=globs)
    assert test.examples, f"{name}'s docstring has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"{name}'s example does not print what it shows"


@pytest.mark.parametrize("name", EXAMPLED)
def test_the_example_comes_first_after_the_idea(name: str) -> None:
    """Idea first, short: the example comes before any ``Args:`` section."""
    doc = getattr(trio_supervisor, name).__doc__ or ""
    assert ">>>" in doc
    if "Args:" in doc:
        assert doc.index(">>>") < doc.index("Args:")
