"""The "Scale out with Ray" page's example runs on a real local Ray cluster and does what the page
says: the calls run in the cluster's worker processes, an exception and a crash each fail their
own slot, and the others answer.

The example runs as the page tells a reader to run it, as a script, in a process of its own (its
cluster ends with that process), bounded by a timeout.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.test_howto_examples import EXAMPLES, run_example

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "howto_ray.py"
PAGE = ROOT / "docs" / "how-to" / "ray.md"
# after or before tests/library/test_ray.py, on the same worker: one cluster at a time
pytestmark = pytest.mark.xdist_group("ray")


def test_the_example_scores_its_plan_on_the_cluster_and_a_crash_fails_one_slot() -> None:
    """The one run of the example (test_howto_examples.py runs every other guide's the same
    way): it exits 0 and prints what the page says."""
    assert EXAMPLE in EXAMPLES
    done = run_example(EXAMPLE)
    assert done.returncode == 0, done.stderr
    # Ray copies its own processes' logs to the program's output, (raylet) lines among them
    lines = [line for line in done.stdout.splitlines() if "(raylet)" not in line]
    assert lines[:3] == [
        "'the quick brown fox': 4 words, 'quick'",
        "'jumps over': 2 words, 'jumps'",
        "'': ValueError: nothing to score",  # the function's exception, as itself
    ]
    assert lines[3].startswith("'crash': WorkerCrashed: the Ray task died with its process")
    assert lines[4] == "'the lazy dog': 3 words, 'lazy'"
    last = re.fullmatch(
        r"62 of 64 answered, in (\d+) worker processes on 1 node\(s\); "
        r"none in this process: True",
        lines[5],
    )
    assert last is not None, lines[5]
    assert int(last.group(1)) >= 1
    assert len(lines) == 6


def test_the_page_shows_the_example_from_its_file() -> None:
    page = PAGE.read_text()
    code = EXAMPLE.read_text()
    for section in re.findall(r'--8<-- "docs/examples/howto_ray\.py:(\w+)"', page):
        assert f"# --8<-- [start:{section}]" in code
        assert f"# --8<-- [end:{section}]" in code
    assert '--8<-- "docs/examples/howto_ray.py:run"' in page
