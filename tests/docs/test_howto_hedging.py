"""The how-to page on hedging runs its example, and the example does what the page says."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import trio
import trio.testing

ROOT = Path(__file__).resolve().parents[2]


def example() -> ModuleType:
    path = ROOT / "docs" / "examples" / "howto_hedging.py"
    spec = importlib.util.spec_from_file_location("howto_hedging", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hedge_cuts_the_slowest_run_for_a_few_percent_more_calls() -> None:
    results = trio.run(example().main, clock=trio.testing.MockClock(autojump_threshold=0))
    plain, plain_extra = results["no hedge"]
    hedged, extra = results["Hedge('p98')"]
    assert plain >= 10  # a straggler held the slowest run without a hedge
    assert hedged <= plain / 2  # the page: its hedge overtakes it
    assert plain_extra == 0
    assert 0 < extra <= 0.05  # a few percent more calls


def test_the_page_includes_the_example_and_pastes_no_code() -> None:
    page = (ROOT / "docs" / "how-to" / "hedging.md").read_text()
    included = re.findall(r'--8<-- "([^"]+)"', page)
    assert "docs/examples/howto_hedging.py" in included
    assert {"docs/examples/howto_hedging.py:agent", "docs/examples/howto_hedging.py:hedge"} <= set(
        included
    )
    source = (ROOT / "docs" / "examples" / "howto_hedging.py").read_text()
    for marker in ("agent", "hedge"):
        assert f"# --8<-- [start:{marker}]" in source
        assert f"# --8<-- [end:{marker}]" in source
    fenced = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert all(block.strip().startswith("--8<--") for block in fenced)
