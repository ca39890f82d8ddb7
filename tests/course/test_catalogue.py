"""The course's record of each step (``lessons/_course/steps.py``) says what its module is.

Everything else reads the records and never asks a module what it can do; this test alone looks
inside the modules, so that a step edited without its record fails here, naming what differs.
"""

from __future__ import annotations

import dataclasses
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest

import lessons
from lessons._course import laws
from lessons._course.steps import PART_TWO, STEPS, Step, load_step

ENTRIES = ("supervise", "stream")


def test_every_step_file_has_a_record_and_every_record_a_file() -> None:
    found = {
        int(match.group(1)): module.name
        for module in pkgutil.iter_modules(lessons.__path__)
        if (match := re.fullmatch(r"step(\d\d)_\w+", module.name))
    }
    assert {number: step.name for number, step in STEPS.items()} == found


def keyword_options(function: Any) -> dict[str, Any]:
    """Each keyword-only option of ``function`` and its default (None for a required one);
    ``trace``, which a step records its run into, is no option of the run."""
    return {
        name: None if parameter.default is inspect.Parameter.empty else parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "trace"
    }


@pytest.mark.parametrize("step", STEPS.values(), ids=lambda step: step.name)
def test_the_record_says_what_the_module_offers(step: Step) -> None:
    module = load_step(step.name)
    title = (module.__doc__ or "").splitlines()[0]
    assert title.startswith(f"Step {step.number}: {step.title}. ")
    exported = [name for name in ENTRIES if callable(getattr(module, name, None))]
    # a step that streams has both: it is run as a stream, but one from step 17 on, run by its
    # supervise, whose stream (Part I's, kept) is recorded beside its entry
    assert step.entry == ("supervise" if step.stream_options is not None else exported[-1])
    entry = getattr(module, step.entry)
    assert list(step.options.items()) == list(keyword_options(entry).items())
    beside = module.stream if step.number > PART_TWO and "stream" in exported else None
    assert (step.stream_options is None) == (beside is None)
    if beside is not None:
        assert step.stream_options is not None
        assert list(step.stream_options.items()) == list(keyword_options(beside).items())
    parameters = inspect.signature(entry).parameters
    task = next(iter(parameters.values()))
    # a step that awaits its input takes an async iterable; one that reads it whole cannot
    assert step.awaits == ("AsyncIterable" in str(task.annotation))
    assert step.lazy or not step.awaits  # an input awaited is pulled lazily
    assert step.replans == ("max_rounds" in inspect.signature(module.supervise).parameters)
    assert step.records_trace == ("trace" in inspect.signature(module.supervise).parameters)
    assert step.synthesizes == callable(getattr(module, "synthesize", None))
    if step.check_task is not None:
        assert callable(getattr(module, step.check_task, None))
    hook = getattr(module, "open_worker", None)
    if step.hook is None:
        assert hook is None
    else:
        assert hook is not None
        named, forwards = hook_keywords(hook)
        if not forwards:
            assert step.hook == named & HOOK_KEYWORDS
        else:  # it passes what it does not name on to the step before's: it takes those too
            assert named & HOOK_KEYWORDS <= step.hook <= named | accepted(step.number - 1)


HOOK_KEYWORDS = frozenset(
    {"virtual", "max_workers", "endpoint", "model", "plan", "crash", "serving"}
)
"""The keywords the runner may give an ``open_worker`` (``hooks.worker_of``)."""


def hook_keywords(hook: Any) -> tuple[set[str], bool]:
    """The keywords ``hook`` names, and whether it takes others too (``**options``)."""
    parameters = inspect.signature(hook).parameters.values()
    named = {each.name for each in parameters if each.kind is inspect.Parameter.KEYWORD_ONLY}
    return named, any(each.kind is inspect.Parameter.VAR_KEYWORD for each in parameters)


def accepted(number: int) -> set[str]:
    """The keywords step ``number``'s ``open_worker`` takes, those it passes on included."""
    hook = getattr(load_step(STEPS[number].name), "open_worker", None)
    if hook is None:  # the steps before step 17: the worker is the simulated sub-agent
        return set()
    named, forwards = hook_keywords(hook)
    return named | accepted(number - 1) if forwards else named


def test_a_record_that_differs_from_its_module_is_caught() -> None:
    wrong = Step(3, "step03_capacity_limiter", "a capacity limiter")  # it takes max_workers
    with pytest.raises(AssertionError):
        test_the_record_says_what_the_module_offers(wrong)
    for number, hook in ((26, {"plan"}), (32, {"plan"}), (26, set())):  # none passes on a plan
        record = STEPS[number]
        assert record.hook is not None
        changed = frozenset(record.hook | hook if hook else record.hook - {"crash"})
        with pytest.raises(AssertionError):
            test_the_record_says_what_the_module_offers(dataclasses.replace(record, hook=changed))


# --- every law a step's page lists is in the one catalogue ---------------------------------------

PAGES = Path(__file__).resolve().parents[2] / "docs" / "steps"
BULLET_LAW = re.compile(r"^- \[[^\]]*\]\(\.\./laws\.md#(?P<anchor>[\w-]+)\)", re.M)
FLAW_ONLY = {"order-leaks", "no-bound", "one-failure-sinks-the-batch", "tree-deadlock"}
"""Entries of the laws page that tell a step's flaw, not a law it keeps: what the step shows
going wrong (its law is the one of the step that fixes it)."""


def _kept_and_flaws(page: Path, number: int) -> tuple[set[str], set[str]]:
    """The anchors of the laws the page's "Its laws" lists as kept by its step, and of those it
    lists as the step's flaws (a flaw-only entry, or a law of the catalogue the step fails)."""
    from tools.docs.laws_page import ANCHORS

    section = page.read_text().split("\n## Its laws\n", 1)[1].split("\n## ", 1)[0]
    failing = {
        ANCHORS[name]
        for name, law in vars(laws).items()
        if isinstance(law, laws.Law) and law.flaw is not None and law.flaw[0] == number
    }
    kept: set[str] = set()
    flaws: set[str] = set()
    for match in BULLET_LAW.finditer(section):
        anchor = match["anchor"]
        (flaws if anchor in FLAW_ONLY or anchor in failing else kept).add(anchor)
    return kept, flaws


@pytest.mark.parametrize("step", STEPS.values(), ids=lambda step: step.name)
def test_every_law_a_steps_page_lists_is_in_the_catalogue_and_checked_on_it(step: Step) -> None:
    from tools.docs.laws_page import ANCHORS

    kept, _ = _kept_and_flaws(PAGES / f"{step.name}.md", step.number)
    graded = {
        ANCHORS[name]
        for name, law in vars(laws).items()
        if isinstance(law, laws.Law) and step.number in law.steps
    }
    missing = sorted(kept - graded)
    assert missing == [], f"step {step.number}'s page lists laws its check never runs: {missing}"
