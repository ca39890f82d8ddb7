"""The site's shape: the laws page's grid holds every law of the catalogue and links each to
its entry; the nav keeps a how-to guide or an optional reference page only once it exists; every
step page carries a picture of its own idea."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lessons._course.laws import LAWS
from lessons._course.steps import steps
from tools.docs import laws_page, site, tree

ROOT = Path(__file__).resolve().parents[2]


def test_every_law_of_the_catalogue_has_its_entry_on_the_laws_page() -> None:
    page = (ROOT / "docs" / "laws.md").read_text()
    anchors = set(re.findall(r"\{#([\w-]+)\}", page))
    named = laws_page.names()
    missing = [
        named[id(law)] for law in LAWS if laws_page.ANCHORS.get(named[id(law)]) not in anchors
    ]
    assert missing == [], f"tools/docs/laws_page.py ANCHORS: give these an entry: {missing}"


def test_the_grid_has_a_row_per_law_marking_its_steps_and_its_flaw() -> None:
    grid = laws_page.grid()
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</tr>", grid)
    assert len(rows) == len(LAWS)
    for law, row in zip(LAWS, rows, strict=True):
        cells = re.findall(r"<td[^>]*>", row)
        numbers = sorted(steps())  # a column per step of the course, in order
        kept = [n for n, found in zip(numbers, cells, strict=True) if 'class="keeps"' in found]
        fails = [n for n, found in zip(numbers, cells, strict=True) if 'class="fails"' in found]
        assert kept == list(law.steps)
        assert fails == ([law.flaw[0]] if law.flaw else [])


def test_the_laws_page_opens_with_the_grid_and_folds_each_laws_tests() -> None:
    page = (ROOT / "docs" / "laws.md").read_text()
    first = page.index("\n## ")
    assert page[first:].startswith("\n## The laws by step")
    assert '--8<-- "docs/generated/laws/grid.md"' in page
    assert not re.search(r"^\[`test_", page, re.MULTILINE), "a test link outside its fold"


def test_the_nav_keeps_a_page_still_to_come_only_once_it_exists(tmp_path: Path) -> None:
    (tmp_path / "how-to").mkdir()
    (tmp_path / "how-to" / "endpoint.md").write_text("# Call a real OpenAI-compatible endpoint\n")
    nav = [
        {"Home": "index.md"},
        {"How-to guides": ["how-to/index.md", "how-to/endpoint.md", "how-to/ray.md"]},
        {"Reference": ["reference/supervisor.md", "reference/ray.md"]},
    ]
    assert (
        site.present(nav, tmp_path)
        == [
            {"Home": "index.md"},
            {"How-to guides": ["how-to/index.md", "how-to/endpoint.md"]},
            {"Reference": ["reference/supervisor.md"]},  # a core page is kept, missing or not
        ]
        or site.OPTIONAL[3].exists()
    )
    assert site.how_to_list(tmp_path).startswith(
        "- [Call a real OpenAI-compatible endpoint](endpoint.md): "
    )


def test_an_optional_reference_page_is_made_only_for_a_name_that_exists(tmp_path: Path) -> None:
    there = site.OptionalPart("reference/x.md", "trio_supervisor.Supervisor", "X", "A line.")
    gone = site.OptionalPart("reference/y.md", "trio_supervisor.NoSuchName", "Y", "A line.")
    module = site.OptionalPart("reference/z.md", "trio_supervisor.no_such_module", "Z", "A line.")
    assert there.exists()
    assert not gone.exists()
    assert not module.exists()
    assert there.content() == "# X\n\nA line.\n\n::: trio_supervisor.Supervisor\n"
    (tmp_path / "reference").mkdir()
    made = site.optional_references(tmp_path)
    assert set(made) == {part.page for part in site.OPTIONAL if part.exists()}


@pytest.mark.parametrize("name", list(steps().values()))
def test_every_step_page_carries_a_picture_of_its_own_idea(name: str) -> None:
    """A step page draws its idea: a mermaid diagram in its prose, or a picture generated from
    its own run (a tree step's tree of supervisors), included by the page itself."""
    page = (ROOT / "docs" / "steps" / f"{name}.md").read_text()
    diagram = re.search(r"^```mermaid$", page, re.MULTILINE) is not None
    drawn = f'--8<-- "docs/generated/steps/{name}.{tree.FILE}"' in page
    assert diagram or drawn, f"docs/steps/{name}.md has no picture of its idea"


def test_every_link_to_a_how_to_guide_names_it_by_its_pages_title() -> None:
    """The guides' list said "Export spans" for "See a run in Phoenix", a guide "Stay within
    rate limits" for "Stay within an endpoint's rate limits": a link names the page it opens."""
    docs = ROOT / "docs"
    titles = {guide.page: site.page_title(docs / "how-to" / guide.page) for guide in site.HOW_TO}
    assert all(titles.values())
    assert [(guide.title, guide.page) for guide in site.HOW_TO] == [
        (titles[guide.page], guide.page) for guide in site.HOW_TO
    ]
    listed = re.findall(r"- \[([^\]]+)\]\(([\w-]+\.md)\)", site.how_to_list(docs))
    assert listed == [(titles[page], page) for _, page in listed]
    link = re.compile(r"\[([^\]]+)\]\(([^)#\s]+)(?:#[^)]*)?\)")
    for page in docs.rglob("*.md"):
        if "generated" in page.parts:
            continue
        for text, target in link.findall(page.read_text()):
            opened = (page.parent / target).resolve()
            if opened.parent == docs / "how-to" and opened.name in titles:
                assert " ".join(text.split()) == titles[opened.name], (page.name, text)
