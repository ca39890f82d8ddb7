"""The how-to page on budgets: its example runs, and does what the page says it does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import trio
import trio.testing

ROOT = Path(__file__).resolve().parents[2]


def test_the_budget_example_caps_its_tokens_as_the_page_says() -> None:
    spec = importlib.util.spec_from_file_location(
        "howto_budgets", ROOT / "docs" / "examples" / "howto_budgets.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = trio.run(module.main, clock=trio.testing.MockClock(autojump_threshold=0))
    page = (ROOT / "docs" / "how-to" / "budgets.md").read_text()
    assert seen["spent tokens"] <= seen["limit"] == 600
    assert seen["in plan order"]
    said = "40 questions against 600 tokens: about half are answered, the rest are over budget"
    assert said in " ".join(page.split())
    assert 0.3 < seen["answered"] / len(module.QUESTIONS) < 0.7
    assert seen["answered"] + seen["over budget"] == len(module.QUESTIONS)
    assert "budget 'report tokens' is spent" in str(seen["first refusal"])
    for include in ("howto_budgets.py:budget", "howto_budgets.py:read"):
        assert f'--8<-- "docs/examples/{include}"' in page
