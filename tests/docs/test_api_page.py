"""The reference renders its docstrings' cross references as links: a docstring writes them as
mkdocstrings autorefs links (``[`Trace`][trio_supervisor.Trace]``), and a Sphinx role
(``:func:`decompose```), which mkdocs shows as raw text, or a link to nothing fails here.

The reference's pages (``docs/reference/*.md``) are built on their own, with the project's
``mkdocs.yml`` (theme, plugins, markdown extensions) but none of the course's hooks, so the check
needs neither the step runs nor mermaid; a cross reference from one page to a name on another
resolves as it does on the site. Links to the site's other pages are the whole build's to check.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config

from tools.docs import journal_cli, site
from tools.docs.hook import JOURNAL_CLI

ROOT = Path(__file__).resolve().parents[2]
# a role as written (:func:`x`) or as markdown renders its backticks (:func:<code>x</code>)
ROLE = re.compile(r":(?:func|class|meth|attr|data|exc|mod|obj|const):(?:`|<code>)")
# an autorefs link left unresolved: the markdown [title][identifier], or autorefs' own element
UNRESOLVED = re.compile(r"\]\[[A-Za-z_][\w.]*\]|<autoref\b")
# one worker runs the module when the tests run on several cores: the reference is built once
pytestmark = pytest.mark.xdist_group("api page")


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def build_api_page(root: Path, out: Path) -> tuple[str, list[str]]:
    """Build ``root/docs/reference/*.md`` from the library in ``root/src`` into ``out``, with
    this project's ``mkdocs.yml``; returns the pages' HTML, one after the other, and the
    warnings the build logged."""
    docs = out / "docs"
    (docs / "reference").mkdir(parents=True)
    # the index's rows of the optional parts, which the site's hook writes before a build
    generated = ROOT / "docs" / "generated"
    generated.mkdir(parents=True, exist_ok=True)
    rows = site.reference_rows(root / "docs")
    if not (generated / "reference-rows.md").is_file() or (
        (generated / "reference-rows.md").read_text() != rows
    ):
        (generated / "reference-rows.md").write_text(rows)
    # what the journal's command line prints, which the journal's page includes
    if not (generated / JOURNAL_CLI).is_file():
        (generated / JOURNAL_CLI).parent.mkdir(parents=True, exist_ok=True)
        (generated / JOURNAL_CLI).write_text(journal_cli.sample())
    pages = sorted((root / "docs" / "reference").glob("*.md"))
    for page in pages:
        (docs / "reference" / page.name).write_text(page.read_text())
    config = load_config(
        str(ROOT / "mkdocs.yml"),
        docs_dir=str(docs),
        site_dir=str(out / "site"),
        hooks=[],
        nav=[{"Reference": [f"reference/{page.name}" for page in pages]}],
        extra_javascript=[],
        extra_css=[],
        validation={"links": {"not_found": "info", "unrecognized_links": "info"}},
        strict=False,  # the warnings are collected and shown, not raised one by one
    )
    handlers = config.plugins["mkdocstrings"].config.handlers
    handlers["python"]["paths"] = [str(root / "src")]
    caught = _Warnings()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(caught)
    try:
        build(config)
    finally:
        logger.removeHandler(caught)
    built = out / "site" / "reference"
    html = "\n".join(
        (built / ("" if page.stem == "index" else page.stem) / "index.html").read_text()
        for page in pages
    )
    return html, caught.messages


def raw_roles(html: str) -> list[str]:
    """Each Sphinx role in ``html``, with a little of the text after it."""
    return [html[match.start() : match.end() + 30] for match in ROLE.finditer(html)]


def unresolved_links(html: str) -> list[str]:
    """Each cross reference in ``html`` that autorefs left unresolved, with its context."""
    return [html[max(0, match.start() - 30) : match.end()] for match in UNRESOLVED.finditer(html)]


@pytest.fixture(scope="module")
def api_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    return build_api_page(ROOT, tmp_path_factory.mktemp("api"))


def test_api_page_builds_without_a_warning(api_page: tuple[str, list[str]]) -> None:
    _, warnings = api_page
    assert warnings == []


def test_api_page_holds_no_raw_sphinx_role(api_page: tuple[str, list[str]]) -> None:
    html, _ = api_page
    assert raw_roles(html) == [], "write cross references as [`name`][trio_supervisor.name]"


def test_api_page_holds_no_unresolved_cross_reference(api_page: tuple[str, list[str]]) -> None:
    html, _ = api_page
    assert unresolved_links(html) == []


def test_api_page_links_its_cross_references(api_page: tuple[str, list[str]]) -> None:
    """The docstrings' references are links on the page (what the two tests above guard)."""
    html, _ = api_page
    for target in ("trio_supervisor.Trace", "trio_supervisor.decompose", "trio_supervisor.Status"):
        link = rf'<a class="autorefs[^"]*"[^>]*href="[^"#]*#{re.escape(target)}"'
        assert re.search(link, html), target


def test_a_role_and_an_unresolved_link_are_found_as_the_page_renders_them() -> None:
    rendered = "<p>Split with :func:<code>decompose</code>, see :class:`Trace`.</p>"
    assert [found[:7] for found in raw_roles(rendered)] == [":func:<", ":class:"]
    assert raw_roles("<p>a dict: {1: 2} and <code>x:y</code></p>") == []
    left = "<p>see [<code>Trace</code>][trio_supervisor.Trace] and <autoref identifier='x'>"
    assert len(unresolved_links(left)) == 2
    assert unresolved_links('<a href="#trio_supervisor.Trace">Trace</a> [1]') == []


@pytest.mark.parametrize("tree", ["src", "lessons", "tools", "benchmarks"])
def test_no_source_writes_a_sphinx_role(tree: str) -> None:
    """Private modules are not on the API page, but the next one to be may be any of them: every
    cross reference in the project's sources is already written as the site renders it."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / tree).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if ROLE.search(line)
    ]
    assert not found, f"Sphinx roles, which the site shows as raw text: {found}"


DIRECTIVE = re.compile(r"^::: (trio_supervisor(?:\.\w+)*)$", re.MULTILINE)


def directives() -> dict[str, list[str]]:
    """Each reference page's mkdocstrings directives, by page, in their order on it."""
    return {
        page.name: DIRECTIVE.findall(page.read_text())
        for page in sorted((ROOT / "docs" / "reference").glob("*.md"))
    }


def test_every_public_name_of_the_core_has_its_place_on_one_reference_page() -> None:
    """A name added to ``__all__`` without a directive on a page fails here, and a name shown
    on two pages would give autorefs two targets."""
    import trio_supervisor

    shown = [name for found in directives().values() for name in found]
    assert len(shown) == len(set(shown)), "a name is documented on two reference pages"
    public = {f"trio_supervisor.{name}" for name in trio_supervisor.__all__} - {
        "trio_supervisor.__version__"
    }
    # the optional parts' pages are generated by the docs hook once their names exist
    from tools.docs.site import OPTIONAL

    missing = public - set(shown) - {part.name for part in OPTIONAL}
    assert not missing, f"give these a directive on a page of docs/reference/: {sorted(missing)}"


def test_the_reference_opens_with_the_supervisor() -> None:
    nav = load_config(str(ROOT / "mkdocs.yml"), hooks=[]).nav or []
    (reference,) = [item["Reference"] for item in nav if "Reference" in item]
    assert reference[:2] == ["reference/index.md", "reference/supervisor.md"]
    assert directives()["supervisor.md"][0] == "trio_supervisor.Supervisor"
    listed = {page.removeprefix("reference/") for page in reference}
    assert set(directives()) <= listed, "a reference page the nav does not list"
