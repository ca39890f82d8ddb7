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
