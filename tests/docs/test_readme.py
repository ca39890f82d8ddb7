"""The README's example runs, on virtual time, and prints what the README says it prints."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import trio
import trio.testing

import trio_supervisor

README = Path(__file__).resolve().parents[2] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(), re.M | re.S)


def test_the_readme_example_prints_what_the_readme_shows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (example,) = blocks("python")
    printed = next(block for block in blocks("text") if "degraded" in block)
    virtual = functools.partial(trio.run, clock=trio.testing.MockClock(autojump_threshold=0))
    monkeypatch.setattr(trio, "run", virtual)
    exec(compile(example, str(README), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out == printed


def test_the_readme_names_every_public_name() -> None:
    """The paragraph that says "The public names are few" lists every name of
    ``trio_supervisor.__all__``, so a new public name cannot go unmentioned."""
    (paragraph,) = [
        block for block in README.read_text().split("\n\n") if "The public names are few" in block
    ]
    named = set(re.findall(r"`(\w+)`", paragraph))
    missing = sorted(set(trio_supervisor.__all__) - {"__version__"} - named)
    assert missing == [], f"README.md's list of public names lacks {missing}"


def test_git_ignores_what_the_readme_commands_write() -> None:
    """The README's commands write ``runs.db`` (SQLite's ``-wal`` and ``-shm`` files beside it)
    and ``runs.json`` in the repository: none of them shows up as untracked."""
    import fnmatch

    ignored = [
        line.lstrip("/")
        for line in (README.parent / ".gitignore").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    commands = "".join(blocks("sh"))
    written = set(re.findall(r"--(?:journal|trace-out) (\S+)", commands))
    assert written == {"runs.db", "runs.json"}
    for name in [*written, "runs.db-wal", "runs.db-shm"]:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in ignored), name


def test_the_readme_gives_each_port_one_purpose_and_names_what_the_set_up_needs() -> None:
    text = README.read_text()
    served = set(re.findall(r"^make docs .*127\.0\.0\.1:(\d+)", text, re.M))
    asked = set(re.findall(r"--endpoint http://127\.0\.0\.1:(\d+)", text))
    assert served
    assert asked
    assert not served & asked, "make docs and the --endpoint example share a port"
    setup = text.split("## The course")[0]
    for needed in ("npm", "Chromium", "apt-get", "root", "minutes"):
        assert needed in setup, needed


def test_the_readme_course_table_has_a_row_for_every_step_in_order() -> None:
    """The table under "## The course" lists each ``lessons/stepNN_*.py``, by number and
    module, in the course's order: a step added to the course cannot go unmentioned."""
    modules = sorted(path.stem for path in (README.parent / "lessons").glob("step[0-9][0-9]_*.py"))
    rows = re.findall(r"^\| (\d+) \| `(step\d\d_\w+)` \|", README.read_text(), re.M)
    assert [module for _, module in rows] == modules
    assert [int(number) for number, _ in rows] == [int(module[4:6]) for module in modules]
