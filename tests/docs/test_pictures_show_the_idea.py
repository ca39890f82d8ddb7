"""A step page's pictures show its idea and fit its column: the opening pair differs where the
step's idea does (step 4's rows say the order each run returned), shares one time scale, and no
picture is wider than the column at 1280 px (the browser check measures the same)."""

from __future__ import annotations

import re

import pytest

from tools.docs import pages, tree
from tools.docs.dispatch import fragment, recorded

WIDTH = re.compile(r'<svg [^>]*viewBox="0 0 ([\d.]+) ')


def test_step_4s_opening_pair_shows_the_order_each_run_returned() -> None:
    """Rows are in plan order on both steps, so without the returned places the two pictures
    were the same; with them, step 3's rows say completion order and step 4's plan order."""
    markdown = pages.comparison("step04_ordered_slots")
    before, after = markdown.split('data-compare="after"')
    row = re.compile(r'<g class="ts-row".*?<title>([^<]*)</title>', re.S)
    labels = [row.findall(part) for part in (before, after)]
    assert labels[0] != labels[1]
    assert [int(label.split()[0]) for label in labels[1]] == list(range(1, len(labels[1]) + 1))
    assert "place of its result in what the run returned" in markdown


def test_an_opening_pair_draws_a_second_as_wide_in_both() -> None:
    made = pages.compared("step08_retries")
    walls = [picture.run.trace.wall for picture in made if picture.run.trace is not None]
    axes = pages.one_scale(made)
    assert walls[0] != walls[1]
    assert all(axis is not None for axis in axes)
    scales = [axis / wall for axis, wall in zip(axes, walls, strict=True) if axis is not None]
    assert scales[0] == pytest.approx(scales[1])


@pytest.mark.parametrize("name", ["step23_trees", "step24_escalation", "step29_hedging"])
def test_a_tree_fits_the_column(name: str) -> None:
    drawn = tree.tree_fragment(name)
    assert float(WIDTH.search(drawn).group(1)) <= tree.COLUMN  # type: ignore[union-attr]
    # a child supervisor is named by its company, its whole name on hover
    assert re.search(r'class="ts-bold"[^>]*><title>acme: [^<]+</title>acme<', drawn)


@pytest.mark.parametrize("name", ["step28_approval_gate", "step29_hedging"])
def test_a_step_pages_timelines_fit_the_column(name: str) -> None:
    drawn = pages.pictures(name)
    widths = [float(found) for picture in drawn for found in WIDTH.findall(picture.svg)]
    assert widths
    assert max(widths) <= pages.COLUMN
    data, first = recorded(name)
    assert data["default"]
    assert all(float(w) <= pages.COLUMN for w in WIDTH.findall(fragment(name, first)))


def test_step_22s_opening_pair_differs_by_the_json_its_chat_model_replied() -> None:
    """Step 22's model plays step 21's rules, so the two timelines are the same rounds: what
    the step adds is the model's JSON, listed under its picture alone."""
    markdown = pages.comparison("step22_llm_planner")
    before, after = markdown.split('data-compare="after"')
    assert "ts-replies" not in before
    replies = re.findall(r"<li><code>([^<]*)</code></li>", after)
    assert len(replies) >= 3
    assert "&quot;done&quot;: true" in replies[-1]
    assert "a chat model decides each round" in markdown


def test_a_replanned_runs_caption_counts_its_first_round_and_its_total() -> None:
    """Step 21's opening run plans 3 subtasks and its later rounds add more: its caption says
    both, not the total alone as if the task had been planned into all of them at once."""
    run = pages.compared("step21_budgets")[-1].run
    assert run.replanned is not None
    dispatched = [len(done.entries) for done in run.replanned.ledger.rounds if done.entries]
    assert len(dispatched) > 1
    assert dispatched[0] < len(run.plan)
    said = pages.planned(run)
    assert said.startswith(f"planned into {dispatched[0]} subtasks, ")
    assert f"{len(run.plan)} after {len(dispatched)} rounds" in said
    flat = pages.compared("step19_adaptive")[-1].run
    assert pages.planned(flat) == f"planned into {len(flat.plan)} subtasks"
