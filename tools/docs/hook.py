"""The docs site's mkdocs hooks: its generated parts, made from real runs at build time.

``mkdocs.yml`` loads this file as a hook. Before every build it reruns each step's demos through
the same code path as ``python -m lessons --virtual`` (`lessons._course.running.run_demo` on
``trio.testing.MockClock``) and writes, under ``docs/generated/`` (never committed):

- ``steps/<step>/<demo>.svg``: the run's timeline (`trio_supervisor.timeline.render_svg`),
  drawn from the same trace as the terminal timeline it prints;
- ``steps/<step>.md``: the markdown a step page includes, the SVGs inlined and the terminal output,
  after the "dispatch" player's container (``tools.docs.dispatch``);
- ``steps/<step>/dispatch.json``: the runs that player replays, recorded on virtual time;
- ``steps/<step>.idea.md``: the step's docstring as prose (its idea, what is still wrong);
- ``steps/<step>.code.md``: the fenced block that includes the step's code, from the line after
  its docstring, with the code lines that changed since the step before highlighted (Part II's
  too: each of its steps imports the step before and adds one idea);
- ``steps/<step>.diff``: the step's code against the code of the step before it;
- ``steps/<step>.tree.md``: for a step that runs a tree of supervisors, a picture of the tree of
  its first demo's run (``tools.docs.tree``);
- ``course.md``: the home page's list of steps, from the steps' docstrings;
- ``laws/smallest-leak.md``: a real Hypothesis search for latencies that make step 2 return its
  results out of plan order, shrunk to the smallest, with its timeline;
- ``exercises/sample.md``: what the exercises' commands print on step 4's untouched starter;
- ``exercises/home.md``, ``page.md``, ``part-two.md``, ``first-step.md``: the sentence each page
  says which steps have an exercise in, from ``lessons._course.exercises.exercisable``.
- ``journal/cli.md``: what the journal's command line (``runs``, ``show``, ``gc``) prints for a
  real run two supervisors shared through leases (``tools.docs.journal_cli``).

It also fills the nav's ``Tutorial`` section (after the primer) with one page per step found by
``lessons._course.steps.STEPS`` and adds the generated ``tests.md`` page, a section per test
module with its laws and each test's code folded until opened (the laws page links there); on
the laws page it follows each link to a Hypothesis test with how many inputs that test draws,
read from the test. Files are written only when the code they come from changed, so ``mkdocs
serve`` does not rebuild forever, and two builds draw byte-identical SVGs.

On every build it also writes the performance page's tables and charts from
``benchmarks/results/*.json`` (``performance/``, `tools.docs.performance`), the laws page's grid
of laws by step (``laws/grid.md``, `tools.docs.laws_page`) and the how-to guides' list
(``how-to.md``) with the reference index's rows of the optional parts (``reference-rows.md``);
and it keeps the site whole while parts of it are still to come
(`tools.docs.site`): a how-to guide in the nav is kept only once its page exists, and a reference
page of an optional part of the library (``trio_supervisor.otel``, ``.ray``, ``Hedge``,
``Budget``) is generated once the name it documents exists.
"""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lessons._course import exercises
from lessons._course.steps import steps
from tools.docs import imports, journal_cli, performance, site
from tools.docs.dispatch import FILE as PLAYER_DATA
from tools.docs.dispatch import player
from tools.docs.laws_page import grid
from tools.docs.leak import find_leak, leak_page
from tools.docs.pages import (
    code_block,
    code_diff,
    course,
    demos_fragment,
    idea,
    offered_fragments,
    pages,
    pictures,
    slug,
    write_if_changed,
)
from tools.docs.paths import GENERATED, LESSONS, MERMAID, ROOT, TOOLS, WIDTH
from tools.docs.tests_page import page_of_tests, with_drawn_inputs
from tools.docs.tree import is_tree, tree_fragment

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page


COURSE = "Tutorial"  # the nav section this hook fills with the step pages, after the primer
SAMPLE, SAMPLE_STEP = "exercises/sample.md", 4  # the exercises page's sample: step 4's exercise
JOURNAL_CLI = "journal/cli.md"  # what the journal's command line prints, for its pages


def generate(out: Path = GENERATED) -> list[Path]:
    """Write every step's generated files under ``out``; returns the paths, written or not."""
    paths = [out / "course.md", out / "laws" / "smallest-leak.md", out / SAMPLE, out / JOURNAL_CLI]
    write_if_changed(paths[0], course())
    write_if_changed(paths[1], leak_page(find_leak(steps()[2])))
    write_if_changed(paths[2], exercises.sample(SAMPLE_STEP, width=WIDTH))
    write_if_changed(paths[3], journal_cli.sample())
    for name in steps().values():
        made = pictures(name)
        for picture in made:
            path = out / "steps" / name / f"{slug(picture.demo)}.svg"
            write_if_changed(path, picture.svg)
            paths.append(path)
        recorded, placed = player(name)
        for path, text in (
            (out / "steps" / name / PLAYER_DATA, recorded),
            (out / "steps" / f"{name}.md", placed + "\n" + demos_fragment(name, made)),
            (out / "steps" / f"{name}.diff", code_diff(name)),
            (out / "steps" / f"{name}.code.md", code_block(name)),
            (out / "steps" / f"{name}.idea.md", idea(name)),
        ):
            write_if_changed(path, text)
            paths.append(path)
        if is_tree(name):  # a picture of the tree of supervisors
            path = out / "steps" / f"{name}.tree.md"
            write_if_changed(path, tree_fragment(name))
            paths.append(path)
    return paths


# -- the mkdocs hooks --------------------------------------------------------------------------


def on_config(config: MkDocsConfig, **_: Any) -> MkDocsConfig:
    """Fill the nav's ``Course`` section with ``steps/<step>.md`` for every step in ``lessons/``,
    after the pages ``mkdocs.yml`` lists there (the primer), so a step without a page fails a
    strict build; check that mermaid was vendored."""
    if not MERMAID.exists():
        from mkdocs.exceptions import PluginError

        raise PluginError(
            f"{MERMAID.relative_to(ROOT)} is missing: run `make docs` (or `make docs-build`), "
            "which vendors mermaid from its npm package"
        )
    for item in config.nav or []:
        if isinstance(item, dict) and COURSE in item:
            kept = [page for page in item[COURSE] or [] if not str(page).startswith("steps/")]
            at = kept.index("primer.md") + 1 if "primer.md" in kept else 0
            item[COURSE] = [*kept[:at], *(f"steps/{name}.md" for name in pages()), *kept[at:]]
            break
    else:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"mkdocs.yml's nav needs a '{COURSE}: [...]' section for the step pages")
    config.nav = site.present(config.nav or [], Path(config.docs_dir))
    return config


def inputs_digest() -> str:
    """A digest of the code the generated files come from: the lessons, the course's machinery
    (its runner, laws and exercises), this docs tooling and the library."""
    digest = hashlib.sha256()
    for path in sorted(
        [*LESSONS.rglob("*.py"), *(TOOLS / "docs").rglob("*.py"), *(ROOT / "src").rglob("*.py")]
    ):
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def on_pre_build(config: MkDocsConfig, **_: Any) -> None:
    """Rerun every step's demos and write the generated files the pages include.

    Skipped while the code they come from is unchanged (``generated/.inputs`` holds its digest):
    results that end at the same virtual instant come back in any order in steps 2 and 3, so a
    rerun may print their rows in another order, which would make ``mkdocs serve`` rebuild again.
    """
    out = Path(config.docs_dir) / "generated"
    stamp = out / ".inputs"
    digest = inputs_digest()
    wanted = [
        out / "course.md",
        out / "laws" / "smallest-leak.md",
        out / SAMPLE,
        out / JOURNAL_CLI,
        *(out / "steps" / f"{name}.md" for name in steps().values()),
        *(out / "steps" / name / PLAYER_DATA for name in steps().values()),
        *(out / "steps" / f"{name}.tree.md" for name in steps().values() if is_tree(name)),
    ]
    for fragment, text in offered_fragments().items():  # which steps have an exercise
        write_if_changed(out / "exercises" / fragment, text)
    write_if_changed(out / "laws" / "grid.md", grid())
    write_if_changed(out / "imports.md", imports.drawing())  # the architecture page's floors
    write_if_changed(out / "how-to.md", site.how_to_list(Path(config.docs_dir)))
    write_if_changed(out / "reference-rows.md", site.reference_rows(Path(config.docs_dir)))
    performance.generate(out / "performance")
    if stamp.exists() and stamp.read_text() == digest and all(path.exists() for path in wanted):
        return
    # what the build holds so far (mkdocs, its plugins, the course) lives to its end: out of the
    # garbage collector's full passes, which the demos' runs set off again and again
    gc.collect()
    gc.freeze()
    generate(out)
    write_if_changed(stamp, digest)


def on_page_markdown(markdown: str, page: Page, **_: Any) -> str:
    """On the laws page, say after each link to a Hypothesis test how many inputs it draws."""
    if page.file.src_uri == "laws.md":
        return with_drawn_inputs(markdown)
    return markdown


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    """Add the generated ``tests.md`` page, and the reference page of each optional part of
    the library that exists and has no page of its own."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "tests.md", content=page_of_tests()))
    for uri, content in site.optional_references(Path(config.docs_dir)).items():
        files.append(File.generated(config, uri, content=content))
    return files


def on_post_build(config: MkDocsConfig, **_: Any) -> None:
    """Send a reader of the old one-page API reference to the reference's pages."""
    site.redirect(Path(config.site_dir) / "api" / "index.html", "../reference/")
