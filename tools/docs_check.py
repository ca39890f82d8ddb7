"""The docs site, checked as a reader sees it: every page loaded in headless Chromium.

``make docs-check`` builds the site and runs this. It serves ``site/`` on 127.0.0.1, opens every
page in Debian's Chromium (driven by Playwright, which downloads no browser here), and checks:

- on every page: the console shows no error, no request fails, and nothing is fetched from
  anywhere but the local server (no CDN: mermaid and the theme's assets are in the site);
- on every page with mermaid diagrams: each one was rendered to an SVG with text in it, and at
  1280 px it fits the column (drawn at its own size, it would otherwise scroll);
- on the tests page: it is at most ``TESTS_PAGE_MAX_PX_PER_TEST`` a test tall, every test's
  code folded, every test is a closed block whose code opens with its summary, and a link to a
  test (as the laws page makes them) opens that test's block;
- on every step page: it opens with the step before and this step side by side at 1280 px,
  each timeline whole (neither under the other, neither scrolling inside its figure); its
  step's file is included whole in its code block, the block highlights
  as many lines as the step changed, no code block on the page (the file, the diff, the sample
  outputs) scrolls sideways at the viewport's 1280 px, and each demo's timeline SVG is displayed
  with one row per subtask, its text readable (contrast >= 4.5) in the light and in the dark
  scheme;
- on every step page, the "dispatch" player: each recorded scenario is chosen, dispatched (the
  first from the keyboard: Tab reaches the Dispatch button, outlined, and Enter presses it) and
  replayed at the highest speed, and the finished player's cards, results, clock and outcome
  must say what the run recorded in ``dispatch.json`` says; its text is readable (contrast >=
  4.5) in both schemes; with JavaScript off, its container still shows a timeline.

- on every page, as a reader anywhere sees it: no code block holds a Markdown table (a table
  pasted as text); no SVG text (a timeline's, a mermaid diagram's, in its shadow root too) is
  painted smaller than the body's small size (``SMALL_OF_BODY`` of the body text) nor wider than
  its column (cut at the picture's edge, or running into the next text of its row); no character
  is drawn by a font the page does not name (a missing glyph: each character is checked against
  the coverage of the fonts its element's ``font-family`` lists, as fontconfig resolves them, so
  a character only a fallback font has, or none, is found); no code name in a table is split
  across lines; the lines a step changed are marked plainly (a bar of contrast >= 3 against the
  code's background) in either scheme; and the page does not overflow sideways at 1280 px nor
  at 390 px (a block may scroll inside itself), where no terminal block wraps its lines;
- every how-to example (``docs/examples/howto_*.py``) runs, in a process of its own, while the
  pages are checked, and the docs test that runs them covers each one.

It saves a screenshot of each page in the light and the dark scheme at 1280 px, and in the
light one at 390 px (``<page>.png``, ``<page>-dark.png``, ``<page>-390.png``; a very long page
is cut at ``SCREENSHOT_MAX_PX``) under ``build/screenshots/``, one of each step's finished player
(``player-<step>.png``, and ``player-<step>-dark.png``), and ends with a line ``docs-check: N
passed, M failed``. ``--only`` checks the pages whose path holds a given text.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from playwright.sync_api import (
    Browser,
    ConsoleMessage,
    Error,
    Page,
    Request,
    Route,
    ViewportSize,
    sync_playwright,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from lessons._course.steps import step_path, steps
from tools.docs import pages as step_pages
from tools.docs import tests_page
from tools.docs.dispatch import deciding, unset_idea
from trio_supervisor import decompose
from trio_supervisor.timeline import crashed

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
NARROW: ViewportSize = {"width": 390, "height": 844}  # a phone, held upright
OPENING_AT_LEAST = 160  # px: an opening picture narrower than this is not really displayed
SMALL_OF_BODY = 0.75  # a diagram's text is at least this share of the body text (12 px of 16)
MIN_MARK_CONTRAST = 3.0  # WCAG's non-text contrast: the bar that marks a changed line
#: the changed line's tint against the code's background: the theme's own 10% tint, 1.11 in the
#: light scheme and 1.14 in the dark, is the one that all but vanished
MIN_TINT_CONTRAST = 1.18
SCREENSHOT_MAX_PX = 20_000  # a page taller than this is screenshot down to here
EXAMPLE_TIMEOUT = 300  # seconds a how-to example may take
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_MS = 20_000
# a full-page screenshot of a long page takes more than that on a busy machine
SCREENSHOT_TIMEOUT_MS = 120_000
# the tests page with every test's code folded, per test on it: a folded test is one line, about
# 56 px a test with its module's heading and first paragraph; a test whose code shows takes
# several times that (the page was 69,000 px when every test's code was shown)
TESTS_PAGE_MAX_PX_PER_TEST = 64
MIN_CONTRAST = 4.5  # WCAG AA for text: a timeline's labels against the page, in either scheme


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(site: Path) -> Iterator[str]:
    """Serve ``site`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Result:
    """What one page showed: the problems found, and what was counted on the way."""

    page: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def pages(site: Path) -> list[str]:
    """Every page of the built site, as a path relative to its root ("" for the home page); a
    page that only sends the reader on to another (an old address, ``http-equiv="refresh"``)
    is not one: its target is."""
    found = []
    for index in sorted(site.rglob("index.html")):
        if 'http-equiv="refresh"' in index.read_text(encoding="utf-8")[:2000]:
            continue
        relative = index.parent.relative_to(site).as_posix()
        found.append("" if relative == "." else relative + "/")
    return found


def mermaid_svgs(page: Page) -> list[dict[str, Any]]:
    """Each rendered mermaid diagram: the theme renders it into a *closed* shadow root, which
    page scripts cannot see, so the DOM is read over the DevTools protocol, shadow roots and all.
    """
    session = page.context.new_cdp_session(page)
    try:
        document = session.send("DOM.getDocument", {"depth": -1, "pierce": True})
        diagrams: list[dict[str, Any]] = []

        def texts(node: dict[str, Any]) -> Iterator[str]:
            if node.get("nodeType") == 3:
                yield node.get("nodeValue", "")
            for child in node.get("children", []):
                yield from texts(child)

        def walk(node: dict[str, Any]) -> None:
            attributes = node.get("attributes", [])
            classes = dict(zip(attributes[::2], attributes[1::2], strict=True)).get("class", "")
            if node.get("localName") == "div" and "mermaid" in classes.split():
                svgs = [
                    child
                    for root in node.get("shadowRoots", [])
                    for child in root.get("children", [])
                    if child.get("localName") == "svg"
                ]
                for svg in svgs:
                    box = session.send("DOM.getBoxModel", {"nodeId": svg["nodeId"]})["model"]
                    diagrams.append(
                        {
                            "width": box["width"],
                            "height": box["height"],
                            "text": " ".join(t.strip() for t in texts(svg) if t.strip()),
                        }
                    )
                if not svgs:
                    diagrams.append({"width": 0, "height": 0, "text": ""})
            for child in node.get("children", []):
                walk(child)
            for root in node.get("shadowRoots", []):
                walk(root)

        walk(document["root"])
        return diagrams
    finally:
        session.detach()


@dataclass
class Watch:
    """What goes wrong while a page loads: console errors, page errors, failed requests, and any
    request for something outside the local server (which is refused)."""

    errors: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console error: {message.text}")

    def page_error(self, error: Error) -> None:
        self.errors.append(f"page error: {error}")

    def request_failed(self, request: Request) -> None:
        self.errors.append(f"request failed: {request.url} ({request.failure})")

    def route(self, route: Route, request: Request) -> None:
        if urlsplit(request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.errors.append(f"fetched from outside the site: {request.url}")
            route.abort()


def _luminance(rgb: list[float]) -> float:
    def channel(value: float) -> float:
        value /= 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(value) for value in rgb[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def label_contrast(page: Page) -> float:
    """The contrast ratio of the first timeline's subtask labels against the page background,
    as the browser paints them (the SVG takes its text colour from the theme)."""
    colours = page.evaluate(
        """() => {
            const parse = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
            const label = document.querySelector("figure.timeline svg text.ts-label");
            let fill = parse(getComputedStyle(label).fill);
            let back = parse(getComputedStyle(document.body).backgroundColor);
            if (back.length === 4 && back[3] === 0) back = [255, 255, 255];
            if (fill.length === 4) {  // a translucent fill, blended over the background
                const a = fill[3];
                fill = fill.slice(0, 3).map((c, i) => c * a + back[i] * (1 - a));
            }
            return [fill, back];
        }"""
    )
    lighter, darker = sorted((_luminance(colour) for colour in colours), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def code_that_scrolls(page: Page) -> list[str]:
    """Each titled code block of the page (a file, a diff) that is wider than its box (a reader
    would scroll it sideways), named by its title, with its widths in pixels. Collapsed blocks
    (``???`` admonitions) are opened to be measured, then closed again."""
    found: list[str] = page.evaluate(
        """() => {
            const closed = [...document.querySelectorAll(".md-content details:not([open])")];
            closed.forEach((details) => { details.open = true; });
            const wide = [];
            for (const code of document.querySelectorAll(".md-content pre > code")) {
                const title = code.closest(".highlight")?.querySelector(".filename");
                if (!title) continue;  // a terminal's output may scroll; a file and a diff not
                if (code.scrollWidth > code.clientWidth) {
                    const name = title ? title.textContent : code.textContent.split("\\n")[0];
                    wide.push(`${name.trim().slice(0, 40)}: ${code.scrollWidth}px of content `
                        + `in ${code.clientWidth}px`);
                }
            }
            closed.forEach((details) => { details.open = false; });
            return wide;
        }"""
    )
    return found


def _seconds(value: float) -> str:
    return f"{value:.2f}s"


def shown_status(status: str, error: str | None) -> str:
    """A status as the player shows it: a failure whose worker process died (its error a
    ``WorkerCrashed``) is ``crashed``, as the site's timelines draw it."""
    return "crashed" if status == "failed" and crashed(error) else status


def expected_player(run: dict[str, Any]) -> dict[str, Any]:
    """What a finished replay of ``run`` (one run of ``dispatch.json``) must show, read from the
    recorded run alone: per card its state, times and attempts; per result its slot, status and
    text; the clock; and what the outcome must mention."""
    cards = []
    for slot in run["trace"]["slots"]:
        spans = slot["spans"]
        # a hung worker, still running when it stopped (the latest such of a hedged slot's)
        hung = [index for index, span in enumerate(spans) if span["end"] is None][-1:]
        if hung:
            again = f"attempt {hung[0] + 1}, " if hung[0] > 0 else ""
            when = f"{again}from {_seconds(spans[hung[0]]['start'])} · still running"
            state = "running"
        elif spans:  # how the deciding attempt ended: a hedged slot's last may have lost
            when = f"{_seconds(slot['started'])} → {_seconds(slot['finished'])}"
            state = shown_status(slot["status"], spans[deciding(spans) or 0]["error"])
        elif slot.get("journaled"):  # a resumed run took it from the journal
            when, state = "↺ from the journal, not run again", slot["status"] or "ok"
        else:
            when, state = "never ran", slot["status"] or "idle"
        tried = f"{len(spans)} attempts" if len(spans) > 1 else ""
        cards.append([state, when, tried])
    aggregate = run["aggregate"]
    results = [
        [
            str(item["slot"]),
            shown_status(item["status"], item["error"]),
            item["error"] or item["output"],
        ]
        for item in (aggregate["results"] if aggregate is not None else [])
    ]
    wall = _seconds(run["trace"]["wall"])
    mentions = [wall, run["error"] or f"{len(results)} result"]
    return {"cards": cards, "results": results, "clock": f"{wall} / {wall}", "mentions": mentions}


def shown_player(page: Page) -> dict[str, Any]:
    """What the player shows now: per card its state, times and attempts; per result shown
    (not a hole) its slot, status and text; the clock and the outcome."""
    shown: dict[str, Any] = page.evaluate(
        """() => {
            const root = document.querySelector(".dispatch");
            const text = (node, css) => node.querySelector(css).textContent;
            return {
                cards: [...root.querySelectorAll(".dispatch-card")].map((card) => [
                    card.dataset.state, text(card, ".dispatch-when"),
                    text(card, ".dispatch-attempts")]),
                results: [...root.querySelectorAll(".dispatch-result")]
                    .filter((item) => item.checkVisibility()
                        && !item.classList.contains("dispatch-hole"))
                    .map((item) => [item.dataset.slot, text(item, ".r-status"),
                        text(item, ".r-text")]),
                clock: text(root, ".dispatch-clock"),
                outcome: text(root, ".dispatch-outcome"),
            };
        }"""
    )
    return shown


def replay(page: Page, key: str, keyboard: bool = False) -> str | None:
    """Choose scenario ``key``, dispatch it and wait until the replay is done. From the
    keyboard: Tab from the scenario's menu must reach the Dispatch button and outline it, and
    Enter presses it; returns what is wrong with that, if anything."""
    root = page.locator(".dispatch")
    root.locator("select.dispatch-scenario").select_option(key)
    wrong = None
    if keyboard:
        root.locator("select.dispatch-scenario").focus()
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """() => {
                const active = document.activeElement;
                return [active.className, getComputedStyle(active).outlineStyle];
            }"""
        )
        if "dispatch-play" not in focused[0].split() or focused[1] == "none":
            wrong = f"Tab from the scenario's menu focuses {focused[0]!r}, outline {focused[1]}"
        page.keyboard.press("Enter")
    else:
        root.locator("button.dispatch-play").click()
    page.wait_for_function("document.querySelector('.dispatch').dataset.player === 'done'")
    return wrong


def player_contrast(page: Page) -> tuple[float, str]:
    """The lowest contrast ratio of the player's text against what is painted behind it (its
    nearest ancestor with a background; a translucent colour blended over it), and whose."""
    pairs: list[tuple[str, list[float], list[float]]] = page.evaluate(
        """() => {
            const parse = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
            const opaque = (colour) => colour.length === 3 || colour[3] > 0;
            const behind = (node) => {
                for (let at = node; at; at = at.parentElement) {
                    const colour = parse(getComputedStyle(at).backgroundColor);
                    if (colour.length && opaque(colour)) return colour.slice(0, 3);
                }
                return [255, 255, 255];
            };
            const texts = document.querySelectorAll(
                ".dispatch-player :is(span, p, h4, label, button, option)");
            return [...texts].filter((node) => node.checkVisibility() && node.textContent.trim())
                .map((node) => [node.className || node.tagName.toLowerCase(),
                    parse(getComputedStyle(node).color), behind(node)]);
        }"""
    )
    lowest, whose = math.inf, ""
    for name, colour, back in pairs:
        if len(colour) == 4:  # a translucent text colour, blended over what is behind it
            colour = [
                c * colour[3] + b * (1 - colour[3]) for c, b in zip(colour, back, strict=False)
            ]
        lighter, darker = sorted((_luminance(colour), _luminance(back)), reverse=True)
        ratio = (lighter + 0.05) / (darker + 0.05)
        if ratio < lowest:
            lowest, whose = ratio, name
    return lowest, whose


def check_player(page: Page, base: str, name: str, result: Result, shot: Path) -> None:
    """Replay every scenario of the step's player at its highest speed and compare the finished
    player with the recorded run; the default scenario goes last, and is screenshot."""
    root = page.locator(".dispatch")
    if root.count() != 1:
        result.problems.append(f"expected one dispatch player, found {root.count()}")
        return
    recorded = json.loads(page.request.get(f"{base}generated/steps/{name}/dispatch.json").text())
    try:
        page.wait_for_function("document.querySelector('.dispatch').dataset.player === 'ready'")
    except PlaywrightTimeoutError:
        result.problems.append("the dispatch player did not load its recorded runs")
        return
    if root.locator("figure.dispatch-fallback").is_visible():
        result.problems.append("the player's static timeline still shows beside the player")
    labels = root.locator("select.dispatch-scenario option").all_text_contents()
    wanted = [scenario["label"] for scenario in recorded["scenarios"]]
    if labels != wanted:
        result.problems.append(f"the player offers {labels}, the recorded runs are {wanted}")
    speeds = root.locator("select.dispatch-speed option").evaluate_all(
        "(options) => options.map((option) => option.value)"
    )
    root.locator("select.dispatch-speed").select_option(max(speeds, key=float))
    default = recorded["default"]
    unset = unset_idea(name, recorded)
    if unset:
        result.problems.append(
            f"the player starts with {default!r}, which leaves the step's {', '.join(unset)} "
            "unset: its first run does not show the step's idea"
        )
    ordered = sorted(recorded["scenarios"], key=lambda scenario: scenario["key"] == default)
    for index, scenario in enumerate(ordered):
        key = scenario["key"]
        try:
            wrong = replay(page, key, keyboard=index == 0)
        except PlaywrightTimeoutError:
            result.problems.append(f"the player's replay of {key!r} did not finish")
            continue
        if wrong is not None:
            result.problems.append(f"player, keyboard: {wrong}")
        expected, shown = expected_player(scenario["run"]), shown_player(page)
        for part in ("cards", "results", "clock"):
            if shown[part] != expected[part]:
                result.problems.append(
                    f"player {key!r}: its {part} show {shown[part]}, the run says {expected[part]}"
                )
        missing = [said for said in expected["mentions"] if said not in shown["outcome"]]
        if missing:
            result.problems.append(
                f"player {key!r}: its outcome {shown['outcome']!r} omits {missing}"
            )
    contrast, whose = player_contrast(page)
    if contrast < MIN_CONTRAST:
        result.problems.append(f"player text {whose!r} contrast {contrast:.1f} < {MIN_CONTRAST}")
    result.notes.append(f"player contrast {contrast:.1f}")
    # the theme's header is fixed at the top of the viewport: kept out of the player's picture
    root.screenshot(path=str(shot), style=".md-header, .md-tabs { visibility: hidden; }")
    result.notes.append(f"player {len(ordered)} scenarios")


def check_without_javascript(browser: Browser, base: str, path: str, result: Result) -> None:
    """With JavaScript off, the player's container still shows its timeline as an SVG."""
    context = browser.new_context(viewport=VIEWPORT, java_script_enabled=False)
    try:
        page = context.new_page()
        page.route("**/*", Watch().route)
        page.goto(base + path, wait_until="load")
        svg = page.locator(".dispatch figure.dispatch-fallback svg.ts-chart")
        box = svg.bounding_box() if svg.count() == 1 else None
        if box is None or box["width"] < 300 or box["height"] < 80:
            result.problems.append(f"without JavaScript the player shows no timeline ({box})")
    finally:
        context.close()


def check_step(page: Page, name: str, result: Result) -> None:
    """The step's code block (its file below the docstring, changed lines highlighted, no
    sideways scrolling at the viewport's width, nor in any other code block of the page) and its
    timelines."""
    path = f"lessons/{name}.py"
    page.evaluate(
        "document.querySelectorAll('.md-content details').forEach((d) => { d.open = true; })"
    )
    check_order(page, name, result)
    blocks = page.locator(".highlight").filter(
        has=page.locator("span.filename", has_text=re.compile(f"^{re.escape(path)}$"))
    )
    if blocks.count() != 1:
        result.problems.append(f"expected one code block titled {path}, found {blocks.count()}")
    else:
        block = blocks.first
        code = block.locator("td.code code").text_content() or ""
        source = step_path(name).read_text()
        if code.rstrip() != "\n".join(step_pages.code_of(source)).rstrip():
            result.problems.append(f"the code block does not hold {path}'s code as it is")
        if not block.is_visible():
            result.problems.append("the code block is not displayed")
        highlighted = block.locator(".hll").count()
        changed = len(step_pages.step_changes(name))
        if highlighted != changed:
            result.problems.append(f"{highlighted} lines highlighted, the step changed {changed}")
        lines = len(step_pages.code_of(source))
        result.notes.append(f"code {lines} lines, {highlighted} highlighted")
    width = VIEWPORT["width"]
    result.problems.extend(
        f"scrolls sideways at {width}px: {wide}" for wide in code_that_scrolls(page)
    )
    page.evaluate(
        "document.querySelectorAll('.md-content details').forEach((d) => { d.open = false; })"
    )
    figures = page.locator("figure.timeline:not([data-compare])")
    step_demos = [demo for _, demo in step_pages.demo_runs(name)]
    if figures.count() != len(step_demos):
        result.problems.append(f"expected {len(step_demos)} timelines, found {figures.count()}")
    for index, demo in enumerate(step_demos[: figures.count()]):
        figure = figures.nth(index)
        svg = figure.locator("svg.ts-chart")
        box = svg.bounding_box() if svg.count() == 1 else None
        if box is None or not svg.is_visible() or box["width"] < 300 or box["height"] < 80:
            result.problems.append(f"the timeline of {demo.title!r} is not displayed ({box})")
            continue
        # a tree's child runs are drawn as deeper rows under their parent's slot
        rows = svg.locator("g.ts-row:not([data-depth])").count()
        planned = len(decompose(demo.task))
        # a caller that leaves a stream early leaves the rest of the input unpulled: no rows
        fewest = planned if demo.take is None else demo.take
        if demo.raises is not None:  # a caller that raises leaves the stream as early
            fewest = min(fewest, demo.raises)
        # a re-planning run's later rounds, each under its heading, add rows to the first plan
        most = rows if svg.locator("g.ts-section").count() > 1 else planned
        if demo.endless:  # the plan over and over: as many rows as were pulled before it ended
            fewest, most = 1, rows
        if not fewest <= rows <= most:
            result.problems.append(
                f"the timeline of {demo.title!r} has {rows} rows for {planned} subtasks"
            )
        result.notes.append(f"timeline {rows} rows {box['width']:.0f}x{box['height']:.0f}px")


def check_order(page: Page, name: str, result: Result) -> None:
    """The page opens with its idea run (the step before and this step, on one task), then the
    player, then the changed code (a diff, or the first step's file)."""
    compared = page.locator("figure.timeline[data-compare]")
    wanted = 1 if step_pages.previous_step(name) is None else 2
    if compared.count() != wanted:
        result.problems.append(f"the page opens with {compared.count()} timelines, not {wanted}")
        return
    tops = page.evaluate(
        """() => {
            const top = (node) => node ? node.getBoundingClientRect().top + window.scrollY : null;
            const code = [...document.querySelectorAll(".md-content .highlight")]
                .find((block) => block.querySelector(".filename"));
            return [top(document.querySelector("figure.timeline[data-compare]")),
                top(document.querySelector(".dispatch")), top(code)];
        }"""
    )
    if None in tops or not tops[0] < tops[1] < tops[2]:
        result.problems.append(
            f"the page's order is not idea run, player, code (their tops: {tops})"
        )
    for index in range(compared.count()):
        box = compared.nth(index).locator("svg.ts-chart").bounding_box()
        # the pair shares one time scale: a run much shorter than the other is drawn narrower
        if box is None or box["width"] < OPENING_AT_LEAST:
            result.problems.append(f"the opening timeline {index + 1} is not displayed ({box})")
    if wanted == 2:
        result.problems.extend(apart(page))
        if same_opening_pictures(page):
            result.problems.append(
                "the page's two opening pictures are the same: the step before and this step "
                "draw the same run, so the picture shows nothing of the step's idea"
            )


def apart(page: Page) -> list[str]:
    """What keeps a step page's two opening timelines from standing side by side at this width,
    each whole: one under the other, or one scrolling sideways inside its figure."""
    found: list[str] = page.evaluate(
        """() => {
            const figures = [...document.querySelectorAll("figure.timeline[data-compare]")];
            const boxes = figures.map((figure) => figure.getBoundingClientRect());
            const out = [];
            if (Math.abs(boxes[0].top - boxes[1].top) > 1 || boxes[1].left < boxes[0].right) {
                out.push(`the step before and this step are not side by side (tops ${
                    Math.round(boxes[0].top)} and ${Math.round(boxes[1].top)})`);
            }
            figures.forEach((figure, index) => {
                if (figure.scrollWidth > figure.clientWidth + 1) {
                    out.push(`opening timeline ${index + 1} scrolls: ${
                        figure.scrollWidth}px in ${figure.clientWidth}px`);
                }
            });
            return out;
        }"""
    )
    return found


def check_tests_page(page: Page, base: str, result: Result) -> None:
    """The tests page is short, its tests folded, and a link to a test opens that test's code."""
    height = page.evaluate("document.documentElement.scrollHeight")
    tests = tests_page.find_tests()
    most = TESTS_PAGE_MAX_PX_PER_TEST * len(tests)
    result.notes.append(f"{height} px tall")
    if height > most:
        result.problems.append(
            f"the page is {height} px tall, more than {most} ({TESTS_PAGE_MAX_PX_PER_TEST} px "
            f"for each of its {len(tests)} tests): is some test's code not folded?"
        )
    blocks = page.locator("details.test")
    if blocks.count() != len(tests):
        result.problems.append(f"{len(tests)} tests, {blocks.count()} folded blocks")
    opened = page.locator("details.test[open]").count()
    if opened:
        result.problems.append(f"{opened} tests' code shown before it is opened")
    result.notes.append(f"{blocks.count()} tests folded")
    if not tests:
        return
    target = tests[len(tests) // 2]
    page.goto(f"{base}tests/#{target.anchor}", wait_until="load")
    block = page.locator("details.test").filter(has=page.locator(f'span[id="{target.anchor}"]'))
    if block.count() != 1 or block.get_attribute("open") is None:
        result.problems.append(f"following a link to {target.anchor} leaves its code folded")
    elif not block.locator("td.code").is_visible():
        result.problems.append(f"following a link to {target.anchor} shows no code")
    if page.evaluate("window.scrollY") < 1000:
        result.problems.append(f"following a link to {target.anchor} did not scroll to it")
    page.goto(f"{base}tests/", wait_until="load")  # the screenshot: every test folded


# -- a reader anywhere: tables, SVG text, glyphs, overflow, wrapping, highlights ------------------

#: Run on an <svg> (``this``): its text as painted, measured. Per text: the size it is painted
#: at (its font size times the picture's scale), whether it is cut at the picture's edge, and in
#: a timeline's row whether it runs into the next text; and the characters per font-family.
SVG_TEXT_JS = """function () {
    const out = {texts: 0, smallest: null, small: [], cut: [], overlaps: [], families: {}};
    const box = this.getBoundingClientRect();
    if (!box.width) return out;
    const leaves = [...this.querySelectorAll("text")];
    for (const object of this.querySelectorAll("foreignObject")) {
        for (const node of object.querySelectorAll("*")) {
            if ([...node.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim())) {
                leaves.push(node);
            }
        }
    }
    for (const node of leaves) {
        const text = node.textContent.trim();
        if (!text) continue;
        const rect = node.getBoundingClientRect();
        if (!rect.width) continue;
        const holder = node.closest("foreignObject") || node;
        const ctm = holder.getScreenCTM ? holder.getScreenCTM() : null;
        const scale = ctm ? Math.hypot(ctm.a, ctm.b) : 1;
        const style = getComputedStyle(node);
        const size = parseFloat(style.fontSize) * scale;
        out.texts += 1;
        if (out.smallest === null || size < out.smallest) out.smallest = size;
        out.small.push([text.slice(0, 30), size]);
        const edge = node.closest("foreignObject")?.getBoundingClientRect() || box;
        if (rect.right > edge.right + 1 || rect.left < edge.left - 1) {
            out.cut.push(text.slice(0, 30));
        }
        const family = style.fontFamily;
        out.families[family] = (out.families[family] || "") + text;
    }
    for (const row of this.querySelectorAll("g.ts-row")) {
        const texts = [...row.querySelectorAll(":scope > text")]
            .map((t) => [t.getBoundingClientRect(), t.textContent.trim()])
            .filter(([r, t]) => r.width && t).sort((a, b) => a[0].left - b[0].left);
        for (let i = 1; i < texts.length; i++) {
            if (texts[i - 1][0].right > texts[i][0].left + 1) {
                out.overlaps.push(`${texts[i - 1][1].slice(0, 24)} | ${texts[i][1].slice(0, 24)}`);
            }
        }
    }
    return out;
}"""


def svg_roots(page: Page) -> tuple[Any, list[str]]:
    """A DevTools session on the page and the object ids of every <svg> in it, those inside
    (closed) shadow roots too, as mermaid draws them."""
    session = page.context.new_cdp_session(page)
    document = session.send("DOM.getDocument", {"depth": -1, "pierce": True})
    found: list[int] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("localName") == "svg":
            found.append(node["backendNodeId"])
            return  # an svg inside an svg is measured with it
        for child in node.get("children", []):
            walk(child)
        for root in node.get("shadowRoots", []):
            walk(root)
        if "contentDocument" in node:
            walk(node["contentDocument"])

    walk(document["root"])
    ids = [
        session.send("DOM.resolveNode", {"backendNodeId": backend})["object"]["objectId"]
        for backend in found
    ]
    return session, ids


def measure_svgs(page: Page) -> list[dict[str, Any]]:
    """`SVG_TEXT_JS` on every <svg> of the page, shadow roots included."""
    session, ids = svg_roots(page)
    try:
        measured = []
        for object_id in ids:
            answer = session.send(
                "Runtime.callFunctionOn",
                {"objectId": object_id, "functionDeclaration": SVG_TEXT_JS, "returnByValue": True},
            )
            measured.append(answer["result"]["value"])
        return measured
    finally:
        session.detach()


def small_size(page: Page) -> float:
    """The body's small size, in px: `SMALL_OF_BODY` of the size of the page's body text."""
    body: float = page.evaluate(
        "parseFloat(getComputedStyle(document.querySelector('.md-typeset') || document.body)"
        ".fontSize)"
    )
    return SMALL_OF_BODY * body


def check_svg_text(page: Page, result: Result, where: str) -> dict[str, str]:
    """SVG text no smaller than the body's small size, not cut at its picture's edge and not
    running into the next text of its row; returns the characters it draws per font-family."""
    least = small_size(page)
    families: dict[str, str] = {}
    texts, smallest = 0, math.inf
    for number, svg in enumerate(measure_svgs(page), start=1):
        texts += svg["texts"]
        if svg["smallest"] is not None:
            smallest = min(smallest, svg["smallest"])
        small = [(text, size) for text, size in svg["small"] if size < least - 0.05]
        if small:
            text, size = min(small, key=lambda item: item[1])
            result.problems.append(
                f"{where}: picture {number} paints {len(small)} texts below {least:.1f}px, "
                f"the smallest {text!r} at {size:.1f}px"
            )
        if svg["cut"]:
            result.problems.append(
                f"{where}: picture {number} cuts {len(svg['cut'])} texts at its edge, "
                f"such as {svg['cut'][0]!r}"
            )
        if svg["overlaps"]:
            result.problems.append(
                f"{where}: picture {number} has text wider than its column: {svg['overlaps'][0]}"
            )
        for family, chars in svg["families"].items():
            families[family] = families.get(family, "") + chars
    if texts:
        result.notes.append(f"{where} svg text >= {smallest:.1f}px ({texts} texts)")
    return families


def page_text(page: Page) -> dict[str, str]:
    """The characters of the page's text (outside SVGs), per the font-family that draws them."""
    families: dict[str, str] = page.evaluate(
        """() => {
            const found = {};
            const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const parent = node.parentElement;
                if (!parent || parent.closest("script, style, svg, noscript, template")) continue;
                const text = node.textContent.trim();
                if (!text) continue;
                const family = getComputedStyle(parent).fontFamily;
                found[family] = (found[family] || "") + text;
            }
            return found;
        }"""
    )
    return families


GENERIC = {"serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui", "ui-monospace"}
IGNORED = {"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp", "Mn", "Me"}


class Fonts:
    """Which characters the fonts a ``font-family`` list names can draw, as fontconfig (which
    the browser asks) resolves each name: a name fontconfig has, or a generic family (its
    default font). Characters outside them all are drawn by a fallback font, or as a box."""

    def __init__(self) -> None:
        self._families: dict[str, set[int] | None] = {}

    def _charset(self, name: str) -> set[int] | None:
        if name in self._families:
            return self._families[name]
        answer = subprocess.run(
            ["fc-match", "-f", "%{family}\\n%{charset}", name],
            capture_output=True,
            text=True,
            check=False,
        )
        got: set[int] | None = None
        if answer.returncode == 0 and "\n" in answer.stdout:
            family, ranges = answer.stdout.split("\n", 1)
            names = {part.strip().lower() for part in family.split(",")}
            if name.lower() in GENERIC or name.lower() in names:
                got = set()
                for item in ranges.split():
                    first, _, last = item.partition("-")
                    got.update(range(int(first, 16), int(last or first, 16) + 1))
        self._families[name] = got
        return got

    def missing(self, family: str, text: str) -> set[str]:
        """The characters of ``text`` no font of ``family`` (a CSS ``font-family`` value) has."""
        names = [part.strip().strip("\"'") for part in family.split(",") if part.strip()]
        covered: set[int] = set()
        for name in names:
            covered |= self._charset(name) or set()
        return {
            char
            for char in set(text)
            if ord(char) not in covered and unicodedata.category(char) not in IGNORED
        }


def check_glyphs(fonts: Fonts, families: dict[str, str], result: Result) -> None:
    missing: dict[str, set[str]] = {}
    for family, text in families.items():
        for char in fonts.missing(family, text):
            missing.setdefault(char, set()).add(family.split(",")[0].strip("\"' "))
    if missing:
        said = ", ".join(
            f"{char!r} U+{ord(char):04X} ({'/'.join(sorted(names))})"
            for char, names in sorted(missing.items())[:6]
        )
        result.problems.append(f"{len(missing)} characters no font of the page has: {said}")


def markdown_tables_in_code(page: Page) -> list[str]:
    """Each code block holding a Markdown table (its rows and the ``|---|`` line under its head):
    a table pasted as text, where the page should render one."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll(".md-content pre > code")].filter((code) => {
            const lines = code.textContent.split("\\n");
            const rows = lines.filter((line) => /^\\s*\\|.*\\|\\s*$/.test(line)).length;
            return rows >= 2 && lines.some((line) => /^\\s*\\|?\\s*:?-{3,}:?\\s*\\|/.test(line));
        }).map((code) => code.textContent.split("\\n")[0].trim().slice(0, 40))"""
    )
    return found


def sideways(page: Page) -> list[str]:
    """What sticks out of the page's right edge without a box of its own that scrolls or clips
    it: the page itself would scroll sideways (the theme hides that, cutting the content)."""
    found: list[str] = page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const wide = [];
            for (const node of document.querySelectorAll(".md-container *")) {
                const rect = node.getBoundingClientRect();
                if (!rect.width || rect.right <= width + 1) continue;
                const style = getComputedStyle(node);
                if (style.visibility === "hidden" || style.position === "fixed") continue;
                let held = false;
                for (let up = node.parentElement; up && up !== document.body;
                     up = up.parentElement) {
                    const over = getComputedStyle(up).overflowX;
                    if (over !== "visible" && up.getBoundingClientRect().right <= width + 1) {
                        held = true;  // a box inside the page scrolls or clips it
                        break;
                    }
                }
                if (held) continue;
                const classes = typeof node.className === "string" ? node.className.trim() : "";
                const name = node.tagName.toLowerCase()
                    + (classes ? "." + classes.split(/\\s+/).join(".") : "");
                wide.push(`${name} reaches ${Math.round(rect.right)}px of ${width}`);
                if (wide.length >= 3) break;
            }
            return wide;
        }"""
    )
    return found


def wider_than_the_column(page: Page) -> list[str]:
    """Each picture (a timeline, a tree) and each table drawn wider than the page's column:
    it scrolls inside its box, or is scaled down until its labels are unreadable. An opening
    pair's pictures are held to their half of the column (`apart`)."""
    found: list[str] = page.evaluate(
        """() => {
            const body = document.querySelector(".md-content .md-typeset");
            if (!body) return [];
            const column = body.clientWidth;
            const out = [];
            const pictures = document.querySelectorAll(
                ".md-content figure:not([data-compare]) > svg, .md-content .ts-tree svg");
            for (const svg of pictures) {
                const drawn = parseFloat(svg.getAttribute("width") || "0")
                    || svg.viewBox.baseVal.width;
                if (drawn > column + 1) {
                    const title = svg.querySelector("title");
                    out.push(`a picture ${Math.round(drawn)}px wide in a ${column}px column: ${
                        (title ? title.textContent : svg.className.baseVal).slice(0, 60)}`);
                }
            }
            for (const table of document.querySelectorAll(".md-content table")) {
                if (table.scrollWidth > column + 1) {
                    const head = table.querySelector("th, td");
                    out.push(`a table ${table.scrollWidth}px wide in a ${column}px column: ${
                        head ? head.textContent.trim().slice(0, 40) : ""}`);
                }
            }
            return out;
        }"""
    )
    return found


def scrolls_without_a_hint(page: Page) -> list[str]:
    """Each picture box (a timeline, a tree, the player, a diagram, the laws grid) that scrolls
    sideways at this width with nothing that says so: no shadow on its edges (``extra.css``), so
    a reader sees a picture cut at the screen's edge and no sign there is more."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll(
                ".md-content figure.timeline, .md-content figure.ts-tree-figure, "
                + ".md-content .dispatch-player, .md-content .mermaid, .md-content .law-grid")]
            .filter((box) => box.scrollWidth > box.clientWidth + 1
                && !getComputedStyle(box).backgroundImage.includes("gradient"))
            .map((box) => `${box.tagName.toLowerCase()}.${
                String(box.className).trim().split(/\\s+/).join(".")} scrolls ${
                box.scrollWidth}px in ${box.clientWidth}px with no hint`)"""
    )
    return found


def same_opening_pictures(page: Page) -> bool:
    """Whether a step page's two opening pictures (the step before, this step) draw the same
    rows and say the same under them (a chat model's replies, step 22's): a before and after
    that show no difference show nothing of the step's idea."""
    same: bool = page.evaluate(
        """() => {
            const figures = [...document.querySelectorAll("figure.timeline[data-compare]")];
            if (figures.length !== 2) return false;
            const rows = (figure) => [...figure.querySelectorAll("g.ts-row")]
                .map((row) => row.textContent.replace(/\\s+/g, " ").trim()
                    + [...row.querySelectorAll("rect")].map((rect) =>
                        `${rect.getAttribute("x")},${rect.getAttribute("width")},${
                            rect.getAttribute("class")}`).join(";"))
                .concat([...figure.querySelectorAll(".ts-replies li")]
                    .map((reply) => reply.textContent));
            return JSON.stringify(rows(figures[0])) === JSON.stringify(rows(figures[1]));
        }"""
    )
    return same


def wrapped_terminals(page: Page) -> list[str]:
    """Code blocks whose lines wrap (``pre-wrap``) instead of scrolling: a terminal's columns
    broken into the next line."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll(".md-content pre > code")]
            .filter((code) => /^(pre-wrap|break-spaces|pre-line|normal)$/
                .test(getComputedStyle(code).whiteSpace))
            .map((code) => code.textContent.split("\\n")[0].trim().slice(0, 40))"""
    )
    return found


def split_code_names(page: Page) -> list[str]:
    """Inline code in a table cell drawn on more than one line: a name split mid-word."""
    found: list[str] = page.evaluate(
        """() => [...document.querySelectorAll(".md-content table code")]
            .filter((code) => code.getClientRects().length > 1)
            .map((code) => code.textContent.slice(0, 40))"""
    )
    return found


def changed_line_mark(page: Page) -> tuple[float, float] | None:
    """How plainly a changed line is marked: the contrast of its bar, and of its tint (its
    translucent background over the block's), against the code block's background; None on a
    page without one."""
    colours: list[list[float]] | None = page.evaluate(
        """() => {
            const line = document.querySelector(".md-content .highlight .hll");
            if (!line) return null;
            const parse = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
            const bar = parse(getComputedStyle(line).boxShadow.split(")")[0] + ")");
            const tint = parse(getComputedStyle(line).backgroundColor);
            let back = [255, 255, 255];
            for (let at = line.parentElement; at; at = at.parentElement) {
                const colour = parse(getComputedStyle(at).backgroundColor);
                if (colour.length === 3 || (colour.length === 4 && colour[3] > 0.5)) {
                    back = colour.slice(0, 3);
                    break;
                }
            }
            return [bar, tint, back];
        }"""
    )
    if not colours or len(colours[0]) < 3:
        return None
    bar, tint, back = colours
    if len(tint) == 4:  # translucent, blended over the block's background
        tint = [c * tint[3] + b * (1 - tint[3]) for c, b in zip(tint[:3], back, strict=True)]

    def ratio(one: list[float], other: list[float]) -> float:
        lighter, darker = sorted((_luminance(one), _luminance(other)), reverse=True)
        return (lighter + 0.05) / (darker + 0.05)

    return ratio(bar[:3], back), ratio(tint[:3], back)


def reader_checks(page: Page, result: Result, fonts: Fonts, where: str, full: bool) -> None:
    """What every page owes a reader at this width and scheme (``full``: the checks that do
    not depend on the width or the scheme, too)."""
    families = check_svg_text(page, result, where)
    result.problems.extend(f"{where}: {wide}" for wide in sideways(page))
    result.problems.extend(f"{where}: {box}" for box in scrolls_without_a_hint(page))
    result.problems.extend(
        f"{where}: a code block wraps its lines instead of scrolling: {name!r}"
        for name in wrapped_terminals(page)
    )
    mark = changed_line_mark(page)
    if mark is not None:
        bar, tint = mark
        result.notes.append(f"{where} changed lines: bar {bar:.1f}, tint {tint:.2f}")
        if bar < MIN_MARK_CONTRAST or tint < MIN_TINT_CONTRAST:
            result.problems.append(
                f"{where}: the changed lines are marked faintly: bar {bar:.1f} (at least "
                f"{MIN_MARK_CONTRAST}), tint {tint:.2f} (at least {MIN_TINT_CONTRAST})"
            )
    if full:
        result.problems.extend(f"{where}: {wide}" for wide in wider_than_the_column(page))
        result.problems.extend(
            f"a code block holds a Markdown table: {name!r}"
            for name in markdown_tables_in_code(page)
        )
        result.problems.extend(
            f"{where}: a code name in a table is split across lines: {name!r}"
            for name in split_code_names(page)
        )
        check_glyphs(fonts, {**page_text(page), **families}, result)


def screenshot(page: Page, path: Path) -> None:
    """The whole page, cut at `SCREENSHOT_MAX_PX`."""
    height = page.evaluate("document.documentElement.scrollHeight")
    width = page.viewport_size["width"] if page.viewport_size else VIEWPORT["width"]
    clip = {"x": 0, "y": 0, "width": width, "height": min(height, SCREENSHOT_MAX_PX)}
    page.screenshot(path=str(path), full_page=True, clip=clip, timeout=SCREENSHOT_TIMEOUT_MS)  # type: ignore[arg-type]


# -- the how-to examples -----------------------------------------------------------------------


def howto_examples() -> list[Path]:
    return sorted((ROOT / "docs" / "examples").glob("howto_*.py"))


def run_example(path: Path) -> str | None:
    """Run one how-to example as a reader does, from the repository; what went wrong, if any."""
    env = {
        key: value
        for key, value in __import__("os").environ.items()
        if not key.startswith(("OPENAI_", "OTEL_", "RAY_ADDRESS"))
    }
    env["PYTHONPATH"] = f"{ROOT / 'src'}:{ROOT}"
    try:
        ran = subprocess.run(
            [sys.executable, str(path.relative_to(ROOT))],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=EXAMPLE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"did not end within {EXAMPLE_TIMEOUT}s"
    if ran.returncode != 0:
        last = (ran.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"exited {ran.returncode}: {last}"
    return None


def examples_covered() -> list[str]:
    """What the docs test of the how-to examples leaves out: it must run each one."""
    sys.path.insert(0, str(ROOT))
    from tests.docs import test_howto_examples as tested

    ran = {path.resolve() for path in tested.EXAMPLES}
    return [path.name for path in howto_examples() if path.resolve() not in ran]


def open_page(
    browser: Browser, base: str, path: str, viewport: ViewportSize, scheme: Literal["light", "dark"]
) -> tuple[Any, Page, list[str], int]:
    """A fresh context at ``viewport`` in ``scheme``, the page loaded and its diagrams drawn:
    the context, the page, what went wrong while loading, and how many diagrams it has."""
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    watch = Watch()
    page.on("console", watch.console)
    page.on("pageerror", watch.page_error)
    page.on("requestfailed", watch.request_failed)
    page.route("**/*", watch.route)
    errors = watch.errors
    response = page.goto(base + path, wait_until="load")
    if response is None or not response.ok:
        errors.append(f"the page answered {None if response is None else response.status}")
    # diagrams in the page as served, before the theme's script replaces them with SVGs
    expected = 0 if response is None else response.text().count('<pre class="mermaid">')
    if expected:
        try:
            page.wait_for_function("document.querySelectorAll('pre.mermaid').length === 0")
        except PlaywrightTimeoutError:
            errors.append("mermaid did not render every diagram")
    page.wait_for_load_state("networkidle")
    return context, page, errors, expected


def diagram_widths(page: Page) -> list[tuple[int, int]]:
    """Each mermaid diagram's drawn width and the width of the column it is in, in px."""
    found: list[tuple[int, int]] = page.evaluate(
        """() => [...document.querySelectorAll(".md-content .mermaid")]
            .map((box) => [box.scrollWidth, box.clientWidth])"""
    )
    return found


def check_page(browser: Browser, base: str, path: str, shots: Path, fonts: Fonts) -> Result:
    """Load one page in the light and the dark scheme at 1280 px and in the light one at 390 px,
    check it, and screenshot it each time."""
    result = Result(path or "/")
    step = path.removeprefix("steps/").rstrip("/") if path.startswith("steps/") else None
    if step not in steps().values():  # a page written ahead of its step: no code, no runs yet
        step = None
    slug = path.strip("/").replace("/", "-") or "home"
    passes: list[tuple[ViewportSize, Literal["light", "dark"], str]] = [
        (VIEWPORT, "light", f"{slug}.png"),
        (VIEWPORT, "dark", f"{slug}-dark.png"),
        (NARROW, "light", f"{slug}-390.png"),
    ]
    for viewport, scheme, shot in passes:
        where = f"{viewport['width']}px {scheme}"
        context, page, errors, expected = open_page(browser, base, path, viewport, scheme)
        wide = viewport == VIEWPORT
        if step is not None and wide:
            contrast = label_contrast(page)
            if contrast < MIN_CONTRAST:
                errors.append(f"timeline text contrast {contrast:.1f} < {MIN_CONTRAST}: unreadable")
            result.notes.append(f"{scheme} contrast {contrast:.1f}")
            player = f"player-{step}.png" if scheme == "light" else f"player-{step}-{scheme}.png"
            check_player(page, base, step, result, shots / player)
        if scheme == "light" and wide:
            diagrams = mermaid_svgs(page)
            if len(diagrams) != expected:
                errors.append(f"{expected} mermaid diagrams in the page, {len(diagrams)} rendered")
            for number, diagram in enumerate(diagrams, start=1):
                if diagram["width"] < 50 or diagram["height"] < 50 or not diagram["text"]:
                    errors.append(f"mermaid diagram {number} was not rendered to an SVG")
                elif "Syntax error" in diagram["text"]:
                    errors.append(f"mermaid diagram {number} shows a syntax error")
            if diagrams:
                result.notes.append(f"{len(diagrams)} mermaid SVGs")
            errors.extend(
                f"mermaid diagram {number} scrolls sideways at {viewport['width']}px: "
                f"{scroll}px in {width}px"
                for number, (scroll, width) in enumerate(diagram_widths(page), start=1)
                if scroll > width + 1
            )
            if step is not None:
                check_step(page, step, result)
            if path == "tests/":
                check_tests_page(page, base, result)
        reader_checks(page, result, fonts, where, full=scheme == "light" and wide)
        screenshot(page, shots / shot)
        result.problems.extend(f"[{where}] {error}" for error in errors)
        context.close()
    if step is not None:
        check_without_javascript(browser, base, path, result)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--site", type=Path, default=Path("site"), help="the built site (site)")
    p.add_argument("--screenshots", type=Path, default=Path("build/screenshots"))
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the browser to drive")
    p.add_argument("--only", default=None, help="check only the pages whose path holds this")
    p.add_argument("--no-examples", action="store_true", help="do not run the how-to examples")
    args = p.parse_args(argv)
    if not (args.site / "index.html").exists():
        p.error(f"{args.site}/index.html is missing: build the site first (make docs-build)")
    args.screenshots.mkdir(parents=True, exist_ok=True)
    found = pages(args.site)
    missing = [name for name in steps().values() if f"steps/{name}/" not in found]
    results = [Result(f"steps/{name}/", [f"step {name} has no page"]) for name in missing]
    if args.only is not None:
        found = [path for path in found if args.only in path]
        results = []
    examples = [] if args.no_examples else howto_examples()
    fonts = Fonts()
    # the examples run beside the browser, two at a time: the check takes no longer for them
    with ThreadPoolExecutor(max_workers=2) as pool:
        running: dict[Path, Future[str | None]] = {
            path: pool.submit(run_example, path) for path in examples
        }
        with serve(args.site) as base, sync_playwright() as playwright:
            # launch() gives the browser a fresh, temporary profile of its own
            browser = playwright.chromium.launch(
                executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS
            )
            try:
                for path in found:
                    result = check_page(browser, base, path, args.screenshots, fonts)
                    results.append(result)
                    report(result)
            finally:
                browser.close()
        if examples:
            checked = Result("docs/examples/howto_*.py")
            for example, future in running.items():
                wrong = future.result()
                if wrong is not None:
                    checked.problems.append(f"{example.name} {wrong}")
            checked.problems.extend(
                f"{name} is not run by tests/docs/test_howto_examples.py"
                for name in examples_covered()
            )
            checked.notes.append(f"{len(examples)} how-to examples run")
            results.append(checked)
            report(checked)
    failed = sum(1 for result in results if result.problems)
    print(f"screenshots in {args.screenshots}/")
    print(f"docs-check: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def report(result: Result) -> None:
    verdict = "FAIL" if result.problems else "ok"
    print(f"{verdict:4} /{result.page}  {'; '.join(result.notes)}", flush=True)
    for problem in result.problems:
        print(f"       {problem}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
