"""Every public class and function the reference renders opens with a short example (its idea
first, one paragraph, then the example, before any ``Args:``), and the example runs as shown.

The names are found, not listed: every class and function in the ``__all__`` of each module the
reference documents. An example is a doctest (``>>>``, run with ``ELLIPSIS``), or a ``python``
block run as the body of an async function on virtual time (the agents' form: it awaits).
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import textwrap
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

#: The modules the reference documents (``::: trio_supervisor.X``), whose ``__all__`` it renders.
MODULES = [
    "trio_supervisor",
    "trio_supervisor.agents",
    "trio_supervisor.journal",
    "trio_supervisor.otel",
    "trio_supervisor.processes",
    "trio_supervisor.ray",
    "trio_supervisor.testing",
    "trio_supervisor.testing.devserver",
    "trio_supervisor.timeline",
]

#: Names whose example is shown but not run here, each with the reason. Their docstrings are
#: still held to having an example, first.
NOT_RUN = {
    "trio_supervisor.processes.ProcessWorker": (
        "a whole program: its function must be importable by the worker processes (a module's "
        "top level, under `if __name__ == '__main__'`), which code run in the test's process is "
        "not; WorkerCrashed's and UnpicklableError's examples run a ProcessWorker"
    ),
    "trio_supervisor.ray.RayWorker": (
        "starts a Ray cluster (seconds of real time and a large share of memory); "
        "tests/library/test_ray.py runs RayWorker on one"
    ),
    "trio_supervisor.ray.start_local": (
        "starts a Ray cluster (seconds of real time and a large share of memory); "
        "tests/library/test_ray.py runs start_local"
    ),
}

SECTION = re.compile(r"^\s*(Args|Raises|Returns):\s*$", re.MULTILINE)
DOCTEST = re.compile(r"^\s*>>> ", re.MULTILINE)
PYTHON = re.compile(r"^\s*```python\n(.*?)```", re.MULTILINE | re.DOTALL)


def public(module: str) -> dict[str, Any]:
    """Every class and function in ``module``'s ``__all__``, by its qualified name."""
    found = importlib.import_module(module)
    return {
        f"{module}.{name}": obj
        for name in found.__all__
        if inspect.isclass(obj := getattr(found, name)) or inspect.isfunction(obj)
    }


DOCUMENTED = {name: obj for module in MODULES for name, obj in public(module).items()}


def check_opens_with_an_example(name: str, documented: object) -> None:
    """The idea (one paragraph), then an example, before any ``Args:``, ``Raises:`` or
    ``Returns:`` section: what the reference shows first."""
    doc = inspect.cleandoc(documented.__doc__ or "")
    starts = [found.start() for found in (DOCTEST.search(doc), PYTHON.search(doc)) if found]
    assert starts, f"{name}'s docstring has no example (a >>> doctest or a python block)"
    example = min(starts)
    idea = doc[:example].replace("```pycon", "").strip()
    assert idea, f"{name}'s docstring opens with its example, not with its idea"
    section = SECTION.search(doc)
    assert section is None or example < section.start(), (
        f"{name}'s example comes after its {section.group(1)}: section"
    )
    assert "\n\n" not in idea, f"{name}'s idea before its example is more than one paragraph"


def namespace(name: str) -> dict[str, Any]:
    """What an example may use unimported: every public name of the documented modules (its
    own module's first), trio, httpx2 and the devserver module, and a simulated ``agent``."""
    from trio_supervisor.testing import SimulatedAgent, devserver

    names: dict[str, Any] = {"trio": trio, "httpx2": httpx2, "devserver": devserver}
    for qualified, obj in DOCUMENTED.items():
        names.setdefault(qualified.rpartition(".")[2], obj)
    for module in MODULES:
        found = importlib.import_module(module)
        for key in found.__all__:
            names.setdefault(key, getattr(found, key))
    own = importlib.import_module(name.rpartition(".")[0])
    names |= {key: getattr(own, key) for key in own.__all__}
    names["agent"] = SimulatedAgent(0)
    return names


def run_example(name: str, documented: object) -> None:
    """Run ``documented``'s example: its doctest, or its python block on virtual time."""
    globs = namespace(name)
    doc = documented.__doc__ or ""
    if DOCTEST.search(doc):
        (test,) = doctest.DocTestFinder(recurse=False).find(documented, name, globs=globs)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.failures == 0, f"{name}'s example does not print what it shows"
        return
    found = PYTHON.search(doc)
    assert found is not None, f"{name}'s docstring has no example"
    body = textwrap.indent(textwrap.dedent(found.group(1)), "    ")
    exec(compile(f"async def example() -> None:\n{body}", f"<example of {name}>", "exec"), globs)
    trio.run(globs["example"], clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize("name", DOCUMENTED)
def test_each_public_name_opens_with_an_example(name: str) -> None:
    check_opens_with_an_example(name, DOCUMENTED[name])


@pytest.mark.parametrize("name", [name for name in DOCUMENTED if name not in NOT_RUN])
def test_the_docstring_example_runs_as_shown(name: str) -> None:
    run_example(name, DOCUMENTED[name])


def test_every_name_left_unrun_is_documented() -> None:
    """An exclusion names a documented name: one renamed or removed is not kept here."""
    assert set(NOT_RUN) <= set(DOCUMENTED)


def test_the_discovery_finds_the_modules_names() -> None:
    """Classes and functions of every module, by the names the reference renders them."""
    assert {
        "trio_supervisor.Supervisor",
        "trio_supervisor.agents.RateLimited",
        "trio_supervisor.journal.main",
        "trio_supervisor.testing.devserver.serve",
        "trio_supervisor.timeline.render_svg",
    } <= set(DOCUMENTED)
    assert "trio_supervisor.timeline.ENDINGS" not in DOCUMENTED  # a table, not a class


def without_example() -> None:
    """A function that says what it does.

    Args:
      nothing: none.
    """


def example_late() -> None:
    """A function whose example comes too late.

    Args:
      nothing: none.

    >>> 1 + 1
    2
    """


def example_after_two_paragraphs() -> None:
    """A function that says what it does.

    And then says more, before its example.

    >>> 1 + 1
    2
    """


def example_wrong() -> None:
    """A function whose example prints something else.

    >>> 1 + 1
    3
    """


def test_a_name_without_an_example_is_reported_by_name() -> None:
    with pytest.raises(AssertionError, match=r"trio_supervisor\.fake's docstring has no example"):
        check_opens_with_an_example("trio_supervisor.fake", without_example)
    with pytest.raises(AssertionError, match=r"example comes after its Args: section"):
        check_opens_with_an_example("trio_supervisor.fake", example_late)
    with pytest.raises(AssertionError, match=r"more than one paragraph"):
        check_opens_with_an_example("trio_supervisor.fake", example_after_two_paragraphs)


def test_an_example_that_prints_otherwise_fails() -> None:
    with pytest.raises(AssertionError, match="does not print what it shows"):
        run_example("trio_supervisor.fake", example_wrong)
