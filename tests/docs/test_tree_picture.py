"""The picture of a tree of supervisors: every node of a real run, each by its own outcome, in
the timelines' colours and words, and the tree step's page includes it."""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lessons._course.running import final_statuses
from lessons._course.steps import steps
from tools.docs import tree
from trio_supervisor.timeline import ENDINGS, timeline_rows

SVG = "{http://www.w3.org/2000/svg}"
TREES = [name for name in steps().values() if tree.is_tree(name)]
ROOT = Path(__file__).resolve().parents[2]


def test_the_tree_steps_are_found_by_their_records() -> None:
    assert "step23_trees" in TREES
    assert "step22_llm_planner" not in TREES


@pytest.mark.parametrize("name", TREES[:1])
def test_the_tree_draws_every_node_of_the_run_by_its_own_outcome(name: str) -> None:
    run = tree.tree_run(name)
    assert run.trace is not None
    fragment = tree.tree_fragment(name)
    assert fragment == tree.tree_fragment(name), "two builds draw the same bytes"
    svg = re.search(r"<svg .*?</svg>", fragment, re.DOTALL)
    assert svg is not None
    root = ET.fromstring(svg[0])
    nodes = [g for g in root.iter(f"{SVG}g") if "ts-tree-node" in (g.get("class") or "")]
    rows = timeline_rows(run.trace, final_statuses(run))
    assert len(nodes) == len(rows) + 1, "the parent supervisor, and a node per row"
    assert [g.get("data-ending") for g in nodes[1:]] == [row.ending.word for row in rows]
    names = [
        next(t for t in g.iter(f"{SVG}title")).text
        for g in nodes[1:]  # the full names
    ]
    assert names == [row.subtask for row in rows]
    # each node by its own outcome: a company that answered is ok though a leaf failed
    assert "failed" in {row.ending.word for row in rows if row.depth}
    assert {row.ending.word for row in rows if not row.depth} == {"ok"}
    edges = [p for p in root.iter(f"{SVG}path") if p.get("class") == "ts-edge"]
    assert len(edges) == len(rows), "an edge from each node to its parent"
    legend = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "ts-legend")
    listed = {r.get("class") for r in legend.iter(f"{SVG}rect")}
    assert listed == {row.ending.css for row in rows}
    assert listed <= {drawn.css for drawn in ENDINGS.values()}


def test_the_trees_step_page_includes_its_picture_before_its_walk_through() -> None:
    page = (ROOT / "docs" / "steps" / "step23_trees.md").read_text()
    include = '--8<-- "docs/generated/steps/step23_trees.tree.md"'
    assert include in page
    # after the page's opening (before and after, the player, the code), before the prose
    assert page.index('--8<-- "docs/generated/steps/step23_trees.md"') < page.index(include)
    assert page.index(include) < page.index("## The change, walked through")


def test_a_node_cut_to_fit_ends_on_a_whole_word_and_keeps_its_whole_text_on_hover() -> None:
    """Nodes were cut inside a word ("globex: pricing, …", "the parent: 2…"): a cut line now
    ends after a whole word, never on a count without its noun, its whole text on hover."""
    cuts = 0
    for name in ("step23_trees", "step24_escalation"):
        for inner in re.findall(r"<text [^>]*>(.*?)</text>", tree.tree_fragment(name)):
            if not inner.endswith("…"):
                continue
            cuts += 1
            found = re.fullmatch(r"<title>([^<]*)</title>([^<]*)…", inner)
            assert found is not None, inner  # its whole text on hover
            whole, kept = html.unescape(found[1]), html.unescape(found[2])
            assert whole.startswith(kept), (whole, kept)
            assert whole[len(kept)] in " ,;:", (whole, kept)  # a word ended there
            assert not kept.split()[-1].replace(".", "").isdigit(), kept
    assert cuts  # the trees' narrow nodes do cut some lines
