"""Every law of the catalogue is proven on each of its steps by a test of the course, at the law's
own budget, and shown to fail where it must: on the step before, where that step still has the
flaw, and on a wrong solution of ``tests/course/wrong/`` that makes the law's mistake.

A check of a step's own code in the tests (``test_exercises.sparing``) draws fewer examples for
a law a test proves here or in a step's own file. So that this sparing stays honest, the last
tests here hold every law of the catalogue to such a test: parametrized by ``cases(laws.NAME)``,
running ``laws.NAME.verify(step)`` at the law's own budget.

Steps and wrong solutions are found by their names, never by a number written here: the step
before a law's steps is the one the course puts before them (``steps.previous``), and a wrong
solution is known by its mistake (``step*_<mistake>.py``). All on virtual time.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings

from lessons._course import laws
from lessons._course.laws import NO_SHRINK, Law
from lessons._course.steps import STEPS, Step, load_step, previous, step_number
from tests.course.step_laws import cases, flawed

HERE = Path(__file__).parent
WRONG = HERE / "wrong"


def before(law: Law, flaw: str) -> list[Any]:
    """The step the course puts before ``law``'s first step, as a parameter on which the law
    must fail, strictly (see `flawed`): it still has ``flaw``, which the law's step fixes."""
    number = previous(min(law.steps))
    assert number is not None, f"no step comes before step {min(law.steps)}"
    return [flawed(load_step(STEPS[number].name), flaw, law.raises)]


# --- the laws the check alone graded, proven on each of their steps -------------------------------


@pytest.mark.parametrize("step", cases(laws.EVERY_SUBTASK_ANSWERED))
def test_each_subtask_is_answered_once_by_its_workers_output(step: ModuleType) -> None:
    laws.EVERY_SUBTASK_ANSWERED.verify(step)


@pytest.mark.parametrize("step", cases(laws.OLD_RESTARTS_ARE_FORGOTTEN))
def test_a_restart_older_than_t_no_longer_counts(step: ModuleType) -> None:
    laws.OLD_RESTARTS_ARE_FORGOTTEN.verify(step)


@pytest.mark.parametrize(
    "step",
    cases(laws.ADAPTIVE_ENDS_THE_429S)
    + before(
        laws.ADAPTIVE_ENDS_THE_429S,
        "the step before adaptive keeps its workers whatever the 429s say",
    ),
)
def test_with_adaptive_the_first_429s_cut_the_workers_and_the_429s_end(step: ModuleType) -> None:
    laws.ADAPTIVE_ENDS_THE_429S.verify(step)


@pytest.mark.parametrize(
    "step",
    cases(laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN)
    + before(
        laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN,
        "the step before budgets has max_rounds alone: no max_subtasks, no max_stalls",
    ),
)
def test_a_replanning_run_ends_by_the_budget_it_was_given(step: ModuleType) -> None:
    laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN.verify(step)


@pytest.mark.parametrize("step", cases(laws.A_PLANNER_THAT_FAILS_COSTS_ROUNDS))
def test_a_planner_that_cannot_be_reached_costs_each_round_never_the_run(
    step: ModuleType,
) -> None:
    laws.A_PLANNER_THAT_FAILS_COSTS_ROUNDS.verify(step)


# --- and each fails on a wrong solution that makes its mistake ------------------------------------

BROKEN_BY: dict[str, Law] = {
    "returns_before_the_results_come": laws.EVERY_SUBTASK_ANSWERED,
    "never_forgets_a_restart": laws.OLD_RESTARTS_ARE_FORGOTTEN,
    "takes_adaptive_but_ignores_it": laws.ADAPTIVE_ENDS_THE_429S,
    "keeps_the_default_stalls_and_subtasks": laws.ENDS_BY_THE_BUDGET_IT_WAS_GIVEN,
    "llm_quietly_plans_by_the_rules": laws.A_PLANNER_THAT_FAILS_COSTS_ROUNDS,
    "ignores_the_strategy": laws.A_STRATEGY_RESTARTS_WHAT_IT_NAMES,
}
"""A mistake of ``tests/course/wrong/`` (its file's name past the step number), and the law it
breaks: for a law whose step before keeps it (serial calls answer every subtask; retries without
a restart intensity have no restarts to forget), the only place it is seen failing."""


def wrong(mistake: str) -> tuple[ModuleType, Step]:
    """The wrong solution that makes ``mistake``, imported, and the record of its step."""
    (path,) = WRONG.glob(f"step[0-9][0-9]_{mistake}.py")
    spec = importlib.util.spec_from_file_location(f"wrong_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, STEPS[step_number(path.stem)]


@pytest.mark.parametrize(
    "mistake",
    [flawed(mistake, f"the wrong solution that {mistake}") for mistake in BROKEN_BY],
)
def test_each_law_fails_on_a_wrong_solution_that_makes_its_mistake(mistake: str) -> None:
    law = BROKEN_BY[mistake]
    module, record = wrong(mistake)
    assert record.number in law.steps
    law.verify(module, settings(law.budget, phases=NO_SHRINK), record=record)


# --- so that a check spares only what a test proves -----------------------------------------------


def _proofs(source: str) -> set[str]:
    """The laws ``laws.NAME`` that a test function of ``source`` proves on its steps: it is
    parametrized over ``step`` by ``cases(laws.NAME)`` (and maybe more), and its body runs
    ``laws.NAME.verify(step)``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith("test_"):
            continue
        over = {
            call.args[0].attr
            for decorator in node.decorator_list
            for call in ast.walk(decorator)
            if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "cases"
            and isinstance(call.args[0], ast.Attribute)
        }
        verified = {
            call.func.value.attr
            for statement in node.body
            for call in ast.walk(statement)
            if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "verify"
            and isinstance(call.func.value, ast.Attribute)
            and [ast.unparse(arg) for arg in call.args] == ["step"]
            and not call.keywords
        }
        found |= over & verified
    return found


def test_every_law_is_proven_on_each_of_its_steps_by_a_test_that_parametrizes_and_verifies() -> (
    None
):
    proven = set().union(*(_proofs(path.read_text()) for path in sorted(HERE.glob("test_*.py"))))
    named = {name for name, law in vars(laws).items() if isinstance(law, Law)}
    assert sorted(named - proven) == [], "laws no test proves on their steps: only a check grades"


def test_a_law_verified_outside_its_parametrized_test_is_not_counted_proven() -> None:
    apart = (
        "@pytest.mark.parametrize('step', cases(laws.A))\n"
        "def test_a(step):\n    pass\n"
        "def test_b(step):\n    laws.A.verify(step)\n"
        "@pytest.mark.parametrize('step', cases(laws.C))\n"
        "def test_c(step):\n    laws.C.verify(step, settings(max_examples=1))\n"
    )
    assert _proofs(apart) == set()
    together = "@pytest.mark.parametrize('step', cases(laws.A) + [])\ndef test_a(step):\n"
    assert _proofs(together + "    laws.A.verify(step)\n") == {"A"}
