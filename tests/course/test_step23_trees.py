"""Step 23: a tree of supervisors. The shared-budget deadlock and its fix, the bound on the
leaves, deadlines that flow down, a malformed company refused, and the tree drawn from the trace
the re-planning run records, each company's leaves under it.

All on virtual time.
"""

from __future__ import annotations

import io
import re
from types import ModuleType

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from lessons import step23_trees as step23
from lessons._course import laws
from lessons._course.arguments import parser
from lessons._course.demos import STEP_DEMOS
from lessons._course.runner import main
from lessons._course.running import run_demo
from tests.course.probing import Probe
from tests.course.step_laws import cases, run_virtual
from trio_supervisor import Trace
from trio_supervisor.testing import SimulatedAgent

GUARD = 1000.0  # seconds of virtual time: a tree still running then never ends


@pytest.mark.parametrize("step", cases(laws.A_COMPANY_IS_A_CHILD_SUPERVISOR))
def test_a_company_is_a_child_supervisor_under_one_bound_for_the_leaves(step: ModuleType) -> None:
    laws.A_COMPANY_IS_A_CHILD_SUPERVISOR.verify(step)


@settings(max_examples=40)
@given(task=laws.companies(), k=st.integers(1, 4))
def test_parents_drawing_from_the_leaves_budget_never_finish(task: str, k: int) -> None:
    """The broken tree: with at least K companies, K parents hold every place of the shared
    budget while their children wait for one, and no leaf ever runs."""
    companies = len(task.split(";"))
    probe = Probe(SimulatedAgent())

    async def run() -> bool:
        with trio.move_on_after(GUARD):
            await step23.supervise_broken(task, probe, max_workers=k)
            return True
        return False

    finished = run_virtual(run)
    if companies >= k:
        assert not finished
        assert probe.calls == []
    else:  # fewer parents than places: the children get the rest, and it ends
        assert finished


@pytest.mark.parametrize("step", cases(laws.NO_LEAF_OUTLIVES_THE_DEADLINE))
def test_no_leaf_outlives_the_runs_deadline(step: ModuleType) -> None:
    laws.NO_LEAF_OUTLIVES_THE_DEADLINE.verify(step)


def test_the_demo_draws_each_companys_leaves_under_it_one_slot_per_ledger_entry() -> None:
    run = run_demo("step23_trees", STEP_DEMOS[23][0], parser().parse_args(["23", "--virtual"]))
    assert run.trace is not None
    assert run.replanned is not None
    entries = [entry.subtask for entry in run.replanned.ledger.entries]
    assert [slot.subtask for slot in run.trace.slots] == entries
    children = [slot.child for slot in run.trace.slots]
    assert all(isinstance(child, Trace) for child in children)
    assert [slot.subtask for slot in run.trace.slots[1].child.slots] == [  # type: ignore[union-attr]
        "globex pricing",
        "globex reviews failing",
    ]
    # the failed leaf leaves its company degraded, not failed: a child always answers (still
    # wrong: step 24 escalates)
    globex = run.replanned.ledger.entries[1].result
    assert globex.ok
    assert str(globex.output).endswith("globex reviews failing: missing")


@pytest.mark.parametrize(
    ("task", "said"),
    [
        (": x, y", "got ': x, y': it has no name"),
        ("acme: ", "got 'acme:': nothing follows its colon"),
        ("acme: pricing; : reviews", "got ': reviews': it has no name"),
    ],
)
def test_a_malformed_company_is_refused_in_one_line_before_any_work(
    task: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        step23.check_task(task)
    with pytest.raises(SystemExit) as exit_:
        main(["23", "--virtual", "--task", task], console=Console(file=io.StringIO()))
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "python -m lessons: error: --task: a company is 'name' or 'name: subtask, subtask', "
        f"{said}\n"
    )
