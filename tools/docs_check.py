"""The docs site, checked as a reader sees it: every page loaded in headless Chromium.

``make docs-check`` builds the site and runs this. It serves ``site/`` on 127.0.0.1, opens every
page in Debian's Chromium (driven by Playwright, which downloads no browser here), and checks:

- on every page: the console shows no error, no request fails, and nothing is fetched from
  anywhere but the local server (no CDN: mermaid and the theme's assets are in the site);
- on every page with mermaid diagrams: each one was rendered to an SVG with text in it;
- on the tests page: it is at most ``TESTS_PAGE_MAX_PX_PER_TEST`` a test tall, every test's
  code folded, every test is a closed block whose code opens with its summary, and a link to a
  test (as the laws page makes them) opens that test's block;
- on every step page: its step's file is included whole in its code block, the block highlights
  as many lines as the step changed, no code block on the page (the file, the diff, the sample
  outputs) scrolls sideways at the viewport's 1280 px, and each demo's timeline SVG is displayed
  with one row per subtask, its text readable (contrast >= 4.5) in the light and in the dark
  scheme;
- on every step page, the "dispatch" player: each recorded scenario is chosen, dispatched (the
  first from the keyboard: Tab reaches the Dispatch button, outlined, and Enter presses it) and
  replayed at the highest speed, and the finished player's cards, results, clock and outcome
  must say what the run recorded in ``dispatch.json`` says; its text is readable (contrast >=
  4.5) in both schemes; with JavaScript off, its container still shows a timeline.

It saves a full-page screenshot of each page (and of each step page in the dark scheme) under
``build/screenshots/``, one of each step's finished player (``player-<step>.png``, and
``player-<step>-dark.png``), and ends with a line ``docs-check: N passed, M failed``.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import threading
from collections.abc import Iterator
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
    """Every page of the built site, as a path relative to its root ("" for the home page)."""
    found = []
    for index in sorted(site.rglob("index.html")):
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
    """Each code block of the page that is wider than its box (a reader would scroll it
    sideways), named by its title or first line, with its widths in pixels. Collapsed blocks
    (``???`` admonitions) are opened to be measured, then closed again."""
    found: list[str] = page.evaluate(
        """() => {
            const closed = [...document.querySelectorAll(".md-content details:not([open])")];
            closed.forEach((details) => { details.open = true; });
            const wide = [];
            for (const code of document.querySelectorAll(".md-content pre > code")) {
                if (code.scrollWidth > code.clientWidth) {
                    const title = code.closest(".highlight")?.querySelector(".filename");
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
        if spans and spans[-1]["end"] is None:  # a hung worker, still running when it stopped
            again = f"attempt {len(spans)}, " if len(spans) > 1 else ""
            when = f"{again}from {_seconds(spans[-1]['start'])} · still running"
            state = "running"
        elif spans:
            when = f"{_seconds(slot['started'])} → {_seconds(slot['finished'])}"
            state = shown_status(slot["status"], spans[-1]["error"])
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
    blocks = page.locator(".highlight").filter(has=page.locator("span.filename", has_text=path))
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
    figures = page.locator("figure.timeline")
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


def check_page(browser: Browser, base: str, path: str, shots: Path) -> Result:
    """Load one page (light, and dark for step pages), check it, and screenshot it."""
    result = Result(path or "/")
    step = path.removeprefix("steps/").rstrip("/") if path.startswith("steps/") else None
    if step not in steps().values():  # a page written ahead of its step: no code, no runs yet
        step = None
    schemes: list[Literal["light", "dark"]] = ["light", "dark"] if step else ["light"]
    slug = path.strip("/").replace("/", "-") or "home"
    for scheme in schemes:
        context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme)
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
        if step is not None:
            contrast = label_contrast(page)
            if contrast < MIN_CONTRAST:
                errors.append(f"timeline text contrast {contrast:.1f} < {MIN_CONTRAST}: unreadable")
            result.notes.append(f"{scheme} contrast {contrast:.1f}")
            player = f"player-{step}.png" if scheme == "light" else f"player-{step}-{scheme}.png"
            check_player(page, base, step, result, shots / player)
        if scheme == "light":
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
            if step is not None:
                check_step(page, step, result)
            if path == "tests/":
                check_tests_page(page, base, result)
        shot = shots / (f"{slug}.png" if scheme == "light" else f"{slug}-{scheme}.png")
        page.screenshot(path=str(shot), full_page=True, timeout=SCREENSHOT_TIMEOUT_MS)
        result.problems.extend(f"[{scheme}] {error}" for error in errors)
        context.close()
    if step is not None:
        check_without_javascript(browser, base, path, result)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--site", type=Path, default=Path("site"), help="the built site (site)")
    p.add_argument("--screenshots", type=Path, default=Path("build/screenshots"))
    p.add_argument("--chromium", default="/usr/bin/chromium", help="the browser to drive")
    args = p.parse_args(argv)
    if not (args.site / "index.html").exists():
        p.error(f"{args.site}/index.html is missing: build the site first (make docs-build)")
    args.screenshots.mkdir(parents=True, exist_ok=True)
    found = pages(args.site)
    missing = [name for name in steps().values() if f"steps/{name}/" not in found]
    results = [Result(f"steps/{name}/", [f"step {name} has no page"]) for name in missing]
    with serve(args.site) as base, sync_playwright() as playwright:
        # launch() gives the browser a fresh, temporary profile of its own
        browser = playwright.chromium.launch(
            executable_path=args.chromium, headless=True, args=CHROMIUM_ARGS
        )
        try:
            for path in found:
                result = check_page(browser, base, path, args.screenshots)
                results.append(result)
                verdict = "FAIL" if result.problems else "ok"
                print(f"{verdict:4} /{path}  {'; '.join(result.notes)}", flush=True)
                for problem in result.problems:
                    print(f"       {problem}", flush=True)
        finally:
            browser.close()
    failed = sum(1 for result in results if result.problems)
    print(f"screenshots in {args.screenshots}/")
    print(f"docs-check: {len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
