"""A picture of the tree of supervisors, drawn from a real run of a tree step.

The timelines draw a tree as rows on a time axis; this draws its shape: the parent supervisor at
the top, a node per company (the parent's slot, whose worker is a child supervisor), and under
each its child run's leaves (each attempt's child run, when the company ran more than one), the
leaves' shared ``Capacity`` as a band behind them. Every node says how it ended, in the words,
glyph and colours of the timelines' table of endings (`trio_supervisor.timeline.ENDINGS`), each
by its own outcome: a company that answered is ok even when a leaf under it failed (step 23's
flaw, which the picture shows as it is). The run is the step's first demo, on virtual time, as
``python -m lessons <n> --virtual`` runs it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from lessons._course.arguments import parser
from lessons._course.running import Run, final_statuses, run_demo
from lessons._course.steps import step, step_number
from tools.docs.pages import step_demos
from trio_supervisor import Trace
from trio_supervisor.timeline import ENDINGS, Ending, Row, cut_label, svg_style, timeline_rows

FILE = "tree.md"  # generated/steps/<step>.tree.md: what a tree step's page includes
_CHAR = 7.3  # the advance of one 12px monospace character
_NODE = 26  # characters a node's widest line holds; a longer name is cut, its full one on hover
_WIDE = _NODE * _CHAR + 16  # a node's width, in pixels, at most
COLUMN = 832  # pixels: the page's column at 1280 px, which the tree fits (its nodes narrowed)
_GAP = 14.0  # pixels between two nodes side by side
_TALL = 56.0  # a node's height: three lines
_LEVEL = 96.0  # pixels from one level's top to the next's


def is_tree(name: str) -> bool:
    """Whether step ``name`` runs a tree of supervisors: it records its own run's trace (its
    child runs nested under their parents) and checks its task's form (companies)."""
    record = step(name)
    return record.records_trace and record.check_task is not None


@dataclass
class Node:
    """One node of the picture: its words, its ending, and its children."""

    name: str
    role: str
    ending: Ending | None  # None for the parent supervisor, whose run has no slot
    said: str  # how it ended, as the timelines' end label says it
    children: list[Node] = field(default_factory=list)
    x: float = 0.0
    depth: int = 0


def _nodes(rows: list[Row], top: Node) -> None:
    """Hang ``rows`` (a timeline's, in order: each child run's rows after its parent's) under
    ``top`` by their depth."""
    path = [top]
    for row in rows:
        running = [bar for bar in row.bars if bar.kind == "running"]
        ending = row.ending
        attempts = f", {len(running)} attempts" if len(running) > 1 else ""
        when = f" {running[-1].end:.2f}s" if running else ", never ran"
        name = row.subtask + ("" if row.attempt is None else f" (attempt {row.attempt})")
        del path[row.depth + 1 :]
        node = Node(name, "", ending, f"{ending.glyph} {ending.word}{when}{attempts}")
        path[-1].children.append(node)
        path.append(node)
    _roles(top)


def _roles(node: Node, depth: int = 0) -> None:
    node.depth = depth
    for child in node.children:
        child.role = "child supervisor" if child.children else "leaf: a sub-agent"
        _roles(child, depth + 1)


def _place(node: Node, next_x: list[float], wide: float = _WIDE) -> None:
    """Leaves left to right, ``wide`` pixels each, a parent centred over its children."""
    for child in node.children:
        _place(child, next_x, wide)
    if node.children:
        node.x = (node.children[0].x + node.children[-1].x) / 2
    else:
        node.x = next_x[0]
        next_x[0] += wide + _GAP


def _all(node: Node) -> list[Node]:
    return [node, *(n for child in node.children for n in _all(child))]


def _company(name: str) -> str:
    """A child supervisor's name as its node says it: the company (``"globex: pricing,
    reviews"`` -> ``"globex"``), its leaves being drawn under it; a leaf's name as it is."""
    return name.partition(":")[0] if ":" in name else name


def tree_svg(trace: Trace, run: Run, title: str) -> str:
    """The tree of ``run`` (its trace), as an SVG; deterministic to the byte."""
    rows = timeline_rows(trace, final_statuses(run))
    said = "the parent supervisor"
    if run.replanned is not None:
        count = len(run.replanned.ledger.rounds)
        said = f"the parent: {count} round{'' if count == 1 else 's'}"
    top = Node(f"step {step_number(run.step)}: supervise", said, None, "")
    _nodes(rows, top)
    leaves_across = sum(1 for node in _all(top) if not node.children) or 1
    room = (COLUMN - 16 + _GAP) / leaves_across - _GAP  # a node's width that fits the column
    chars = max(12, min(_NODE, int((room - 16) / _CHAR)))
    wide = chars * _CHAR + 16
    _place(top, [8.0], wide)
    nodes = _all(top)
    depth = max(node.depth for node in nodes)
    width = max(node.x for node in nodes) + wide + 8
    used = [drawn for drawn in ENDINGS.values() if drawn in {n.ending for n in nodes}]
    legend_y = 20 + depth * _LEVEL + _TALL + 48
    height = legend_y + 16 * len(used) + 8
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="ts-chart ts-tree" role="img" '
        f'viewBox="0 0 {width:.2f} {height:.2f}" width="{width:.2f}" height="{height:.2f}">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{svg_style()}.ts-tree .ts-node{{fill:var(--md-default-bg-color,#fff);"
        "stroke:var(--md-default-fg-color--light,#57606a);stroke-width:1.5}"
        ".ts-tree .ts-edge{fill:none;stroke:var(--md-default-fg-color--light,#57606a)}"
        ".ts-tree .ts-places{fill:var(--md-default-fg-color--lightest,#d0d7de);"
        "fill-opacity:.5}</style>",
    ]
    leaves = [node for node in nodes if not node.children and node.depth]
    if leaves and run.options.get("max_workers") is not None:  # the leaves' shared places
        low = min(node.x for node in leaves) - 4
        high = max(node.x for node in leaves) + wide + 4
        y = 20 + depth * _LEVEL - 6
        out.append(
            f'<rect class="ts-places" x="{low:.2f}" y="{y:.2f}" width="{high - low:.2f}" '
            f'height="{_TALL + 30:.2f}" rx="6"/>'
            f'<text class="ts-head" x="{low + 6:.2f}" y="{y + _TALL + 24:.2f}">one Capacity of '
            f"{run.options['max_workers']} places, shared by every leaf</text>"
        )
    for node in nodes:
        y = 20 + node.depth * _LEVEL
        for child in node.children:
            middle = y + _TALL + (_LEVEL - _TALL) / 2
            out.append(
                f'<path class="ts-edge" d="M{node.x + wide / 2:.2f} {y + _TALL:.2f}'
                f'V{middle:.2f}H{child.x + wide / 2:.2f}V{y + _LEVEL:.2f}"/>'
            )
    for node in nodes:
        y = 20 + node.depth * _LEVEL
        css = "" if node.ending is None else f" {node.ending.css}"
        word = "" if node.ending is None else f' data-ending="{node.ending.word}"'
        stroke = "" if node.ending is None else f' style="stroke:{node.ending.fill}"'
        out.append(f'<g class="ts-tree-node{css}"{word}>')
        out.append(
            f'<rect class="ts-node" x="{node.x:.2f}" y="{y:.2f}" width="{wide:.2f}" '
            f'height="{_TALL:.2f}" rx="4"{stroke}/>'
        )
        shown = _company(node.name) if node.children and node.depth else node.name
        lines = [(shown, "ts-bold", node.name), (node.role, "ts-head", "")]
        if node.ending is not None:
            lines.append((node.said, f"ts-end{css}", ""))
        for index, (text, kind, whole) in enumerate(lines):
            shown_line = cut_label(text, chars)
            whole = whole or (text if shown_line != text else "")  # a cut line: whole on hover
            hover = f"<title>{html.escape(whole)}</title>" if whole else ""
            out.append(
                f'<text class="{kind}" x="{node.x + 8:.2f}" y="{y + 16 + 16 * index:.2f}">'
                f"{hover}{html.escape(shown_line)}</text>"
            )
        out.append("</g>")
    out.append('<g class="ts-legend">')
    for index, drawn in enumerate(used):
        y = legend_y + 16 * index
        out.append(
            f'<rect class="{drawn.css}" x="8" y="{y - 9:.2f}" width="16" height="10"/>'
            f'<text class="ts-tick" x="30" y="{y:.2f}">{drawn.glyph} '
            f"{html.escape(drawn.legend)}</text>"
        )
    out.append("</g></svg>")
    return "\n".join(out) + "\n"


def tree_run(name: str) -> Run:
    """Step ``name`` run on its first demo, virtually, as its page's first timeline is."""
    number = step_number(name)
    args = parser().parse_args([str(number), "--virtual"])
    return run_demo(name, step_demos(name)[0], args)


def tree_fragment(name: str) -> str:
    """The markdown a tree step's page includes: the tree of its first demo's run, and what
    it shows."""
    run = tree_run(name)
    assert run.trace is not None
    title = f"{name} · {run.demo.title}: the tree of supervisors of a real run, on virtual time"
    svg = tree_svg(run.trace, run, title)
    return (
        '<figure class="ts-tree-figure">\n'
        f"{svg}"
        f"<figcaption>The tree of supervisors of a real run ({html.escape(run.demo.title)}, on "
        "virtual time): the parent supervisor, a child supervisor per company, and its leaves, "
        "each by its own outcome; the leaves share one set of places.</figcaption>\n"
        "</figure>\n"
    )
