"""The site's shape while parts of it are still to come: which pages the nav keeps.

The nav in ``mkdocs.yml`` lists every how-to guide and every reference page the site is meant to
have. A how-to guide is kept once its page exists (`HOW_TO`); a reference page of an optional
part of the library (`OPTIONAL`) is kept once the page exists or the name it documents does, in
which case this module writes the page: a title, a line and the mkdocstrings directive. So the
strict build passes before those parts land and shows them as soon as they do, and any other
page the nav names and the docs lack still fails it.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Guide:
    """A how-to guide: its page, its title (the page's own first heading, which the list
    links it by), and the task it does."""

    page: str
    title: str
    task: str


HOW_TO = (
    Guide(
        "endpoint.md",
        "Call a real OpenAI-compatible endpoint",
        "a sub-agent over an OpenAI-compatible API",
    ),
    Guide(
        "rate-limits.md",
        "Stay within an endpoint's rate limits",
        "429s, Retry-After and adaptive limits",
    ),
    Guide(
        "durable-runs.md",
        "Make a run durable, and gate it on a person's yes",
        "a journal, resuming, and an approval gate",
    ),
    Guide(
        "budgets.md",
        "Cap a run's tokens without overshoot",
        "reserve before a call, settle after it",
    ),
    Guide("hedging.md", "Cut the tail with a hedge", "a second attempt for the tail"),
    Guide(
        "opentelemetry.md", "See a run in Phoenix", "a run, its slots and attempts to OpenTelemetry"
    ),
    Guide("ray.md", "Scale out with Ray", "a worker whose calls run as Ray tasks"),
    Guide("processes.md", "Run workers in processes", "calls in worker processes"),
)


@dataclass(frozen=True)
class OptionalPart:
    """A reference page of an optional part of the library: its name, shown once it exists."""

    page: str
    name: str  # a module (trio_supervisor.otel) or a public name (trio_supervisor.Hedge)
    title: str
    line: str

    def exists(self) -> bool:
        module, _, attribute = self.name.rpartition(".")
        if attribute[:1].islower():  # a module
            try:
                return importlib.util.find_spec(self.name) is not None
            except ImportError:
                return False
        try:
            return hasattr(importlib.import_module(module), attribute)
        except ImportError:
            return False

    def content(self) -> str:
        return f"# {self.title}\n\n{self.line}\n\n::: {self.name}\n"


OPTIONAL = (
    OptionalPart(
        "reference/budget.md",
        "trio_supervisor.Budget",
        "Budget",
        "A meter that reserves what an attempt may spend before it starts and settles what it "
        "spent after it.",
    ),
    OptionalPart(
        "reference/hedge.md",
        "trio_supervisor.Hedge",
        "Hedge",
        "A second call of a slow attempt, the first to succeed ending the other.",
    ),
    OptionalPart(
        "reference/otel.md",
        "trio_supervisor.otel",
        "OpenTelemetry",
        "A run, its slots and their attempts as OpenTelemetry spans.",
    ),
    OptionalPart(
        "reference/ray.md",
        "trio_supervisor.ray",
        "Ray",
        "A worker whose calls run as Ray tasks.",
    ),
)


def optional_references(docs: Path) -> dict[str, str]:
    """The reference pages to generate: each optional part that exists and has no page."""
    return {
        part.page: part.content()
        for part in OPTIONAL
        if not (docs / part.page).exists() and part.exists()
    }


def reference_rows(docs: Path) -> str:
    """The reference index's rows of the optional parts that exist: a row per page."""
    return "".join(
        f"| [{part.title}]({part.page.removeprefix('reference/')}) | `{part.name}`: "
        f"{part.line[0].lower()}{part.line[1:].rstrip('.')} |\n"
        for part in OPTIONAL
        if (docs / part.page).exists() or part.exists()
    )


def wanted(page: str, docs: Path) -> bool:
    """Whether the nav keeps ``page``: any page but a how-to guide or an optional reference
    page, which are kept only once they exist."""
    if page.startswith("how-to/") and page != "how-to/index.md":
        return (docs / page).exists()
    for part in OPTIONAL:
        if page == part.page:
            return (docs / page).exists() or part.exists()
    return True


def present(nav: list[Any], docs: Path) -> list[Any]:
    """``nav`` without the pages still to come (see `wanted`), at any depth."""
    kept: list[Any] = []
    for item in nav:
        if isinstance(item, str):
            if wanted(item, docs):
                kept.append(item)
        elif isinstance(item, dict):
            entry = {}
            for title, value in item.items():
                if isinstance(value, list):
                    entry[title] = present(value, docs)
                elif not isinstance(value, str) or wanted(value, docs):
                    entry[title] = value
            if entry:
                kept.append(entry)
        else:
            kept.append(item)
    return kept


def how_to_list(docs: Path) -> str:
    """The how-to guides' index: a line per guide whose page exists, linked by the page's own
    title (its first heading; the guide's `Guide.title` for a page without one), so that a
    link never names a guide otherwise than the page it opens does."""
    lines = []
    for guide in HOW_TO:
        page = docs / "how-to" / guide.page
        if page.exists():
            lines.append(f"- [{page_title(page) or guide.title}]({guide.page}): {guide.task}.")
    return "\n".join(lines) + "\n" if lines else "No guide is written yet.\n"


def page_title(page: Path) -> str | None:
    """A markdown page's first ``# `` heading, None for a page without one."""
    for line in page.read_text().splitlines():
        if line.startswith("# "):
            return line.removeprefix("# ").strip()
    return None


def redirect(path: Path, to: str) -> None:
    """A page at ``path`` that sends its reader on to ``to``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'<!doctype html>\n<meta charset="utf-8">\n<title>Reference</title>\n'
        f'<meta http-equiv="refresh" content="0; url={to}">\n'
        f'<link rel="canonical" href="{to}">\n'
        f'<p>The reference is now <a href="{to}">here</a>.</p>\n'
    )
