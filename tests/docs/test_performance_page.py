"""The performance page is drawn from the benchmarks' results: every file under
``benchmarks/results/`` says when and where it was measured and is rendered as real tables (a new
file too, by the generic renderer), its charts are drawn the same on every build, and no part
of the page holds a Markdown table inside a code fence."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools.docs import performance

ROOT = Path(__file__).resolve().parents[2]
RESULTS = sorted((ROOT / "benchmarks" / "results").glob("*.json"))
# a fenced block (``` or ~~~) one of whose lines is a Markdown table's row
FENCED_TABLE = re.compile(
    r"^( *)(`{3,}|~{3,})[^\n]*\n(?:(?!\1\2)[^\n]*\n)*?\1? *\|[^\n]*\|\s*$", re.M
)


@pytest.mark.parametrize("path", RESULTS, ids=lambda path: path.name)
def test_each_results_file_says_when_and_where_it_was_measured(path: Path) -> None:
    data = json.loads(path.read_text())
    assert re.match(r"\d{4}-\d\d-\d\d", data["measured"]), "measured: an ISO date"
    assert isinstance(data["machine"], str)
    assert data["machine"]
    assert data["rows"]
    assert all(isinstance(row, dict) for row in data["rows"])


def test_every_results_file_is_on_the_page_with_when_it_was_measured() -> None:
    made = performance.parts(performance.load())
    text = "\n".join(made.fragments.values())
    for path in RESULTS:
        assert f"(`benchmarks/results/{path.name}`)" in text, path.name
    assert text.count("Measured on ") == len(RESULTS)


def test_the_page_includes_every_fragment_drawn() -> None:
    page = (ROOT / "docs" / "performance.md").read_text()
    for name in (*performance.KNOWN, "others"):
        assert f'--8<-- "docs/generated/performance/{name}.md"' in page, name


def test_the_journal_tables_are_narrow_enough_for_the_pages_column() -> None:
    """The stores side by side and the processes on one run: a column of names, then four
    figures at most (a table as wide as the column of 832 px holds about five)."""
    results = performance.load()
    drawn = [
        performance.journal_stores(results["journal_stores"])[0],
        performance.journal_processes(results["journal_processes"])[0],
    ]
    headers = [line for text in drawn for line in text.splitlines() if line.startswith("|---")]
    assert headers
    assert all(line.count("|") - 1 <= 5 for line in headers), headers
    assert "| processes | wall (s) | slots per process | every slot once |" in drawn[1]


def test_a_new_results_file_appears_as_a_table_without_editing_the_page(tmp_path: Path) -> None:
    (tmp_path / "tail.json").write_text(
        json.dumps(
            {
                "measured": "2026-12-02T01:00:00+00:00",
                "machine": "a test's machine",
                "benchmark": "tail.py",
                "rows": [
                    {"table": "latency", "contender": "plain", "p99_s": 1.5, "hedged": False},
                    {"table": "latency", "contender": "hedged", "p99_s": 0.25, "hedged": True},
                ],
            }
        )
    )
    others = performance.parts(performance.load(tmp_path)).fragments["others"]
    assert others.startswith("## More benchmarks\n")
    assert "### `tail.py` {#results-tail}" in others
    assert "Measured on 2026-12-02, on a test's machine" in others
    assert "| contender | p99 s | hedged |\n|---|---:|---|\n| plain | 1.50 | no |\n" in others


def test_no_results_file_means_no_section_of_more_benchmarks(tmp_path: Path) -> None:
    assert performance.parts(performance.load(tmp_path)).fragments["others"] == ""


def test_a_file_that_is_not_results_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(TypeError, match=r"^bad\.json: a results file is an object"):
        performance.load(tmp_path)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "–"),
        (True, "yes"),
        (100_000, "100,000"),
        (5.61, "5.61"),
        (61.17, "61.2"),
        (0.804, "0.804"),
        (1168.0, "1,168"),
        ("a | b", "a \\| b"),
    ],
)
def test_a_cell_shows_three_significant_digits(value: object, shown: str) -> None:
    assert performance.cell(value) == shown


def test_the_charts_are_drawn_byte_identical_with_the_pages_colour() -> None:
    first = performance.parts(performance.load()).charts
    second = performance.parts(performance.load()).charts
    assert [chart.name for chart in first] == [
        "overhead.svg",
        "stream_memory.svg",
        "rate_limited.svg",
    ]
    for one, other in zip(first, second, strict=True):
        assert one.svg == other.svg, one.name
        assert one.svg.startswith("<svg")
        assert "currentColor" in one.svg
        assert "<text" in one.svg  # text kept as text, in the page's font


def fenced_tables(text: str) -> list[str]:
    return [match[0][:80] for match in FENCED_TABLE.finditer(text)]


def test_a_fenced_table_is_found() -> None:
    assert fenced_tables("a\n\n```text\n# run\n| a | b |\n|---|---|\n```\n")
    assert not fenced_tables("| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n```\n")


def test_no_part_of_the_page_holds_a_markdown_table_in_a_code_fence() -> None:
    page = (ROOT / "docs" / "performance.md").read_text()
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    parts = [page, *performance.parts(performance.load()).fragments.values()]
    for section in re.findall(r'--8<-- "benchmarks/README\.md:(\w+)"', page):
        parts.append(readme.split(f"[start:{section}]")[1].split(f"[end:{section}]")[0])
    assert [found for part in parts for found in fenced_tables(part)] == []


def test_the_bound_of_any_policy_is_drawn_from_the_endpoints_results() -> None:
    """The page states what any default can reach against batches of 256 with the figures
    ``benchmarks/reach.py`` wrote into the endpoints' results, none typed by hand: other
    figures there, other figures on the page."""
    reach = {
        "largest_start": 27,
        "largest_probe": 89,
        "makespan_ratio": 1.2345,
        "makespan_schedule": [3, 41, 0, 0.0],
        "throughput_share": 0.6789,
    }
    said = performance.any_policy(reach)
    for figure in ("27 before", "at most 89", "67.9%", "1.23x", "starting at 3", "probing 41"):
        assert figure in said, figure
    assert performance.any_policy(None) == ""
