"""The docs site is held to the code: pages highlight what their step changed, and every picture
and sample output comes from a real run. (``make test`` also builds the site with ``--strict``.)"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from lessons._course import laws
from lessons._course.arguments import parser
from lessons._course.demos import LARGE, RESEARCH, STEP_DEMOS, demos
from lessons._course.runner import main
from lessons._course.steps import step_number, step_path, steps
from tools.docs import hook as docs_hook
from tools.docs import leak as docs_leak
from tools.docs import pages as step_pages
from tools.docs import paths as docs_paths
from tools.docs import tests_page
from trio_supervisor import decompose
from trio_supervisor.timeline import timeline_rows

PAGES = docs_paths.DOCS / "steps"
STEPS = list(steps().values())
# a fenced block that includes a file: its info string and the included path
INCLUDE = re.compile(r'^```(?P<info>[^\n]*)\n--8<-- "(?P<path>[^"]+)"\n```$', re.MULTILINE)
HL_LINES = re.compile(r'\bhl_lines="(?P<lines>[^"]*)"')
# the tests that read the module's one generation of every step's pictures (``pictures``): one
# worker runs them all when the tests run on several cores, so that it is made once
ONE_GENERATION = pytest.mark.xdist_group("pictures")


INCLUDED = re.compile(r'--8<-- "(?P<path>[^":]+):(?P<first>\d+):(?P<last>\d+)"')
LINENUMS = re.compile(r'\blinenums="(?P<start>\d+)"')
HUNK = re.compile(r"^@@ -\d+,\d+ \+(?P<start>\d+),\d+ @@$")


def added_lines(diff: str) -> list[int]:
    """The numbers, in the new file, of the non-blank lines a unified diff adds."""
    added, number = [], 0
    for line in diff.splitlines():
        hunk = HUNK.match(line)
        if hunk is not None:
            number = int(hunk["start"])
        elif line.startswith("+") and not line.startswith("+++"):
            if line[1:].strip():
                added.append(number)
            number += 1
        elif line.startswith(" "):
            number += 1
    return added


def docstring_end(source: str) -> int:
    """The last line of the module docstring, read with ``ast`` (0 without one)."""
    first = ast.parse(source).body[0]
    assert isinstance(first, ast.Expr)
    assert isinstance(first.value, ast.Constant)
    assert first.end_lineno is not None
    return first.end_lineno


@pytest.mark.parametrize("name", STEPS)
def test_step_page_includes_its_idea_its_code_and_its_runs(name: str) -> None:
    """The page includes its idea (the docstring, then the step before and this step on one
    task), then its runs: the player, the code (which includes the code block), the demos."""
    page = (PAGES / f"{name}.md").read_text()
    includes = [f'--8<-- "docs/generated/steps/{name}.{part}"' for part in ("idea.md", "md")]
    for include in includes:
        assert page.count(include) == 1, f"docs/steps/{name}.md must have {include} once"
    assert page.index(includes[0]) < page.index(includes[1]), "the idea comes first"
    assert "code.md" not in page, "the code block comes through the runs' fragment, once"
    blocks = [match for match in INCLUDE.finditer(page) if match["path"].startswith("lessons/")]
    assert blocks == [], "the page includes its code through the generated code block only"
    section = step_pages.code_section(name)
    assert section.count(f'--8<-- "docs/generated/steps/{name}.code.md"') == 1
    if step_pages.previous_step(name) is not None:
        assert section.count(f'--8<-- "docs/generated/steps/{name}.diff"') == 1
        assert section.index(".diff") < section.index(".code.md"), "the changed code first"
        assert '??? info "The whole file' in section, "the whole file is folded"


def test_a_page_opens_with_the_step_before_and_this_step_on_one_task() -> None:
    name = STEPS[5]  # a step whose step before never returns on its first demo
    made = step_pages.compared(name)
    assert [picture.run.step for picture in made] == [STEPS[4], name]
    assert made[0].demo == made[1].demo
    markdown = step_pages.comparison(name)
    assert markdown.count('<figure class="timeline" data-compare=') == 2
    assert markdown.index('data-compare="before"') < markdown.index('data-compare="after"')
    assert len(step_pages.compared(STEPS[0])) == 1, "the first step has no step before"


@pytest.mark.parametrize("name", STEPS)
def test_the_opening_pictures_are_narrow_enough_to_stand_side_by_side(name: str) -> None:
    """Each is drawn compact, no wider than `COMPARED_WIDTH`, so that the step before and this
    step fit the column side by side (the browser check sees them so at 1280 px)."""
    markdown = step_pages.comparison(name)
    widths = [float(w) for w in re.findall(r'<svg [^>]*viewBox="0 0 ([\d.]+) ', markdown)]
    assert len(widths) == (1 if step_pages.previous_step(name) is None else 2)
    assert all(width <= step_pages.COMPARED_WIDTH for width in widths), widths
    assert "done #" not in markdown  # the compact form
    assert ">#</text>" in markdown


def test_a_step_with_an_exercise_offers_it_before_its_code() -> None:
    """The exercise before its answer: the tip comes ahead of the code on every step that has
    an exercise, and nowhere else."""
    from lessons._course import exercises

    for name in STEPS:
        section = step_pages.code_section(name)
        number = step_number(name)
        if number in exercises.exercisable():
            assert f"$ python -m lessons exercise {number}\n" in section
            assert section.index("Write it yourself") < section.index("## The code")
        else:
            assert "Write it yourself" not in section
        page = (PAGES / f"{name}.md").read_text()
        assert "Write it yourself" not in page, "the tip is generated, once, before the code"


def test_a_run_the_guard_stopped_is_said_to_never_return_not_to_raise() -> None:
    made = step_pages.compared(STEPS[5])
    stopped = made[0].run
    assert stopped.stopped is not None
    said = step_pages.outcome(stopped)
    assert said.startswith("The run never returns (")
    assert "raised" not in said
    assert f"stopped it at {stopped.stopped:.2f}s" in said


@ONE_GENERATION
@pytest.mark.parametrize("name", STEPS)
def test_the_terminal_output_is_folded_and_the_timelines_shown(
    name: str, pictures: dict[str, list[step_pages.Picture]]
) -> None:
    fragment = step_pages.demos_fragment(name, pictures[name])
    assert "???+ example" not in fragment, "a terminal's output opens only when asked"
    assert fragment.count("??? example") == len(pictures[name])  # a picture per demo run


@pytest.mark.parametrize("name", STEPS)
def test_step_code_starts_after_the_docstring_and_highlights_exactly_the_changed_code(
    name: str,
) -> None:
    """The block shows the file from the first line after its docstring to its end, numbered as
    in the file, and highlights exactly the non-blank lines the page's code diff adds (in Part
    II, exactly the lines the step marks as its idea with a ``# step NN:`` comment)."""
    source = step_path(name).read_text()
    lines = source.splitlines()
    block = step_pages.code_block(name)
    included = INCLUDED.search(block)
    assert included is not None
    assert included["path"] == f"lessons/{name}.py"
    first, last = int(included["first"]), int(included["last"])
    assert first > docstring_end(source)
    assert all(not line.strip() for line in lines[docstring_end(source) : first - 1])
    assert lines[first - 1].strip()
    assert last == len(lines)
    linenums = LINENUMS.search(block)
    assert linenums is not None
    assert int(linenums["start"]) == first
    marks = HL_LINES.search(block)
    highlighted = [] if marks is None else step_pages.parse_lines(marks["lines"])
    in_file = [first - 1 + line for line in highlighted]
    if step_pages.previous_step(name) is None:
        assert marks is None, "the first step has no step before it: nothing is highlighted"
        return
    assert in_file == added_lines(step_pages.code_diff(name))
    assert in_file, "a step changes some code"
    assert all(lines[number - 1].strip() for number in in_file)


PREVIOUS = '''"""Step 1. The idea.

Sample run::

    out
"""

import trio


async def f() -> None:
    await trio.sleep(1)
'''


def test_a_docstring_edit_highlights_nothing_and_a_code_edit_highlights_its_line() -> None:
    longer_doc = PREVIOUS.replace("The idea.", "The idea.\n\nWhat is still wrong: much.")
    assert step_pages.code_changes(PREVIOUS, longer_doc) == []
    edited = longer_doc.replace("sleep(1)", "sleep(2)")
    number = edited.splitlines().index("    await trio.sleep(2)") + 1
    assert step_pages.code_changes(PREVIOUS, edited) == [number]
    blank_added = PREVIOUS.replace("import trio\n", "import trio\n\n")
    assert step_pages.code_changes(PREVIOUS, blank_added) == []  # a blank line is not code


def test_a_step_that_redefines_an_inherited_function_highlights_only_what_it_changed_in_it() -> (
    None
):
    """Step 28 imports step 27's ``supervise`` unchanged; step 29 defines its own, one option
    more. Its page highlights the lines of ``supervise`` that differ from step 27's (the function
    the reader last saw), not the whole function because step 28 had only an import."""
    name, defined_in = "step29_hedging", "lessons.step27_durable_runs"
    before = step_pages.previous_step(name)
    assert before is not None
    assert "import supervise as supervise" in step_path(before).read_text()
    source = step_path(name).read_text()
    node = next(
        statement
        for statement in ast.parse(source).body
        if isinstance(statement, ast.AsyncFunctionDef) and statement.name == "supervise"
    )
    assert node.end_lineno is not None
    mine = "\n".join(source.splitlines()[node.lineno - 1 : node.end_lineno])
    inherited = inspect.getsource(importlib.import_module(defined_in).supervise)
    expected = [
        node.lineno - 1 + line
        for line in step_pages.changed_lines(inherited, mine)
        if mine.splitlines()[line - 1].strip()
    ]
    highlighted = step_pages.step_changes(name)
    inside = [line for line in highlighted if node.lineno <= line <= node.end_lineno]
    assert inside == expected
    assert 0 < len(inside) < (node.end_lineno - node.lineno) // 4  # the option, not the function


@pytest.mark.parametrize("name", STEPS[1:])
def test_changing_one_code_line_of_a_step_changes_its_highlights(name: str) -> None:
    before = step_pages.previous_step(name)
    assert before is not None
    source = step_path(name).read_text()
    previous = step_pages.as_read_from(before, source)
    lines = source.splitlines(keepends=True)
    start = step_pages.code_start(source)
    changed = step_pages.step_changes(name)
    same = [n for n in range(start, len(lines) + 1) if n not in changed and lines[n - 1].strip()]
    edited = same[len(same) // 2]  # a code line the step did not change, now changed
    lines[edited - 1] = lines[edited - 1].rstrip("\n") + "  # edited\n"
    assert edited in step_pages.code_changes(previous, "".join(lines))
    assert edited not in changed


@pytest.mark.parametrize("name", STEPS)
def test_a_step_page_shows_its_docstring_as_prose_without_a_sample_run(name: str) -> None:
    idea = step_pages.idea(name)
    assert "Sample run" not in idea
    assert "``" not in idea
    after = step_pages.next_step(name)
    if "What is still wrong" in idea and after is not None:
        assert f"({after}.md)" in idea


def test_changed_lines_are_the_replaced_and_inserted_lines_of_the_new_file() -> None:
    previous = "a\nb\nc\nd\n"
    current = "a\nB\nc\nnew\nd\n"
    assert step_pages.changed_lines(previous, current) == [2, 4]
    assert step_pages.changed_lines(current, current) == []
    assert step_pages.changed_lines("a\nb\n", "a\n") == []  # a deletion leaves nothing to highlight


def test_hl_lines_format_and_parse_round_trip() -> None:
    assert step_pages.format_lines([7, 1, 2, 3, 9, 10]) == "1-3 7 9-10"
    assert step_pages.parse_lines("1-3 7 9-10") == [1, 2, 3, 7, 9, 10]
    assert step_pages.format_lines([]) == ""
    with pytest.raises(ValueError, match=r"^a hl_lines range runs upwards, got '5-3'$"):
        step_pages.parse_lines("5-3")
    with pytest.raises(
        ValueError, match=r"^hl_lines items are numbers or ranges like 3-5, got 'x'$"
    ):
        step_pages.parse_lines("1 x")


@pytest.fixture(scope="module")
def pictures() -> dict[str, list[step_pages.Picture]]:
    """Every step's demos, run and drawn once for the tests that read them (the longest part of
    a site's generation)."""
    return {name: step_pages.pictures(name) for name in STEPS}


@ONE_GENERATION
@pytest.mark.parametrize("name", STEPS)
def test_page_output_is_what_the_command_prints(
    name: str, pictures: dict[str, list[step_pages.Picture]]
) -> None:
    """The same lines; in steps 2 and 3 results that ended at the same virtual instant are
    appended in whichever order trio ran them, so the order of those rows may differ."""
    number = step_number(name)
    out = io.StringIO()
    console = Console(file=out, width=docs_paths.WIDTH, color_system=None, highlight=False)
    assert main([str(number), "--virtual"], console=console) == 0
    printed = [line.rstrip() for line in out.getvalue().strip("\n").splitlines()]
    shown = "\n".join(p.output for p in pictures[name] if p.run.step == name)  # its own runs
    assert sorted(shown.strip("\n").splitlines()) == sorted(printed)


ROUND_HEADING = re.compile(r"^\s+round \d+ · ")  # a re-planning step's heading row, no slot
END = re.compile(
    r"(?P<end>[✓✗⊖◷⊘⊠…↺⊗?$] (?:\w[\w ]*?,? )?(?:\d+\.\d\ds|never ran|journaled))"
    r"\s*(?P<rank>\d*)$"
)


@ONE_GENERATION
@pytest.mark.parametrize("name", STEPS)
def test_timeline_picture_and_terminal_timeline_agree(
    name: str, pictures: dict[str, list[step_pages.Picture]]
) -> None:
    for picture in pictures[name]:
        root = ET.fromstring(picture.svg)
        drawn = []
        for row in root.iter("{http://www.w3.org/2000/svg}g"):
            if row.get("class") == "ts-row":
                texts = {text.get("class", ""): "".join(text.itertext()) for text in row}
                end = next(text for css, text in texts.items() if css.startswith("ts-end"))
                drawn.append((end, row.get("data-rank")))
        lines = picture.output.splitlines()
        head = next(i for i, line in enumerate(lines) if line.startswith("slot  subtask"))
        assert picture.run.trace is not None
        rows = timeline_rows(picture.run.trace)  # a tree's child runs have rows too
        table = [line for line in lines[head + 1 :] if not ROUND_HEADING.match(line)][: len(rows)]
        printed = []
        for line in table:
            match = END.search(line)
            assert match is not None, line
            printed.append((match["end"], match["rank"]))
        assert drawn == printed
        assert len(drawn) == len(rows)


@ONE_GENERATION
def test_two_generations_draw_byte_identical_svgs(
    tmp_path: Path, pictures: dict[str, list[step_pages.Picture]]
) -> None:
    """The site's generation, and the module's own earlier one (``pictures``: every step's demos
    run and drawn anew, as the generation does), draw the same SVGs to the byte."""
    generated = docs_hook.generate(tmp_path)
    svgs = [path for path in generated if path.suffix == ".svg"]
    assert len(svgs) == sum(  # a demo run on the step before too draws a second timeline
        len(ran) + sum(demo.against is not None for demo in ran)
        for ran in (demos(parser().parse_args([str(number)]), number) for number in steps())
    )
    earlier = {
        tmp_path / "steps" / name / f"{step_pages.slug(picture.demo)}.svg": picture.svg
        for name, made in pictures.items()
        for picture in made
    }
    assert sorted(earlier) == sorted(svgs)
    for path in svgs:
        assert path.read_text() == earlier[path], path.name


def test_generation_writes_only_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "a.svg"
    assert step_pages.write_if_changed(path, "<svg/>")
    assert not step_pages.write_if_changed(path, "<svg/>")
    assert step_pages.write_if_changed(path, "<svg></svg>")


LAW_LINK = re.compile(r"\(tests\.md#(?P<module>test_\w+)\.(?P<name>[\w.]+)\)")


def _law_links() -> list[tuple[str, str]]:
    page = (docs_paths.DOCS / "laws.md").read_text()
    return [(match["module"], match["name"]) for match in LAW_LINK.finditer(page)]


@pytest.fixture(scope="module")
def tests_found() -> list[tests_page.CodeOfTest]:
    """Every test under tests/, parsed once for the hundred links that look one up (each parse
    reads every test file)."""
    return tests_page.find_tests()


@pytest.mark.parametrize(("module", "name"), _law_links())
def test_laws_page_links_to_tests_that_exist(
    module: str, name: str, tests_found: list[tests_page.CodeOfTest]
) -> None:
    paths = list(docs_paths.TESTS.rglob(f"{module}.py"))
    assert len(paths) == 1, f"laws.md links to {module}.py, which is not one file under tests/"
    names = {test.name for test in tests_found if test.path == paths[0]}
    assert name in names, f"laws.md links to {module}.{name}, which {paths[0]} lacks"


def test_tests_page_shows_each_test_from_its_first_to_its_last_line() -> None:
    found = tests_page.find_tests()
    assert "test_tests_page_shows_each_test_from_its_first_to_its_last_line" in {
        test.name for test in found
    }
    for test in found:
        lines = test.path.read_text().splitlines()[test.first - 1 : test.last]
        assert re.match(r"\s*(@|def |async def )", lines[0]), (test.name, lines[0])
        assert f"def {test.name.split('.')[-1]}(" in "\n".join(lines)
    page = tests_page.page_of_tests()
    blocks = re.findall(r'<details class="test" markdown>\n(.*?)\n</details>', page, re.DOTALL)
    assert len(blocks) == len(found)
    for test, block in zip(found, blocks, strict=True):  # each test folded, in file order
        relative = test.path.relative_to(docs_paths.ROOT).as_posix()
        assert block.startswith(f"<summary><code>{test.name}</code>")
        assert f'<span id="{test.anchor}"></span>' in block  # inside: a link opens the block
        assert f'--8<-- "{relative}:{test.first}:{test.last}"' in block


def test_tests_page_has_a_section_per_module_with_its_laws_listed_first() -> None:
    found = tests_page.find_tests()
    page = tests_page.page_of_tests()
    modules = sorted({test.path for test in found}, key=lambda path: path.name)
    sections = re.findall(r"^## `tests/\w+/(test_\w+)\.py` \{#(test_\w+)\}$", page, re.MULTILINE)
    assert sections == [(path.stem, path.stem) for path in modules]
    assert "\n### " not in page  # the table of contents lists modules, not 300 tests
    for path in modules:
        count = sum(1 for test in found if test.path == path)
        row = f"| [`{path.name}`](#{path.stem}) | "
        assert row in page
        assert page.split(row)[1].split("\n")[0].endswith(f" | {count} |")
        section = page.split(f"{{#{path.stem}}}")[1].split("<details")[0]
        first = tests_page.module_docstring(path).split("\n\n")[0]
        assert tests_page._prose(first) in section


@pytest.mark.parametrize(
    ("docstring", "prose"),
    [
        ("a ``Trace`` and\n  a <b>tag</b>", "a <code>Trace</code> and a &lt;b&gt;tag&lt;/b&gt;"),
        (
            "links ``[`Trace`][trio_supervisor.Trace]`` and ``:func:`decompose```",
            "links <code>&#91;&#96;Trace&#96;]&#91;trio_supervisor.Trace]</code> and "
            "<code>:func:&#96;decompose&#96;</code>",
        ),
        (
            "a [link](x.md) | a cell, *not* bold",
            "a &#91;link](x.md) &#124; a cell, &#42;not&#42; bold",
        ),
    ],
)
def test_a_test_docstring_is_shown_as_written_never_read_as_markdown(
    docstring: str, prose: str
) -> None:
    assert tests_page._prose(docstring) == prose


def test_the_smallest_leak_is_two_latencies_the_first_slower_and_its_results_swapped() -> None:
    leak = docs_leak.find_leak(steps()[2])
    assert len(leak.smallest) == 2
    assert leak.smallest[0] > leak.smallest[1]
    assert (leak.smallest, True) in leak.runs  # it was run, and it leaked
    assert leak.first != leak.smallest  # what was drawn first is not what it shrank to
    page = docs_leak.leak_page(leak)
    results = page.split("results, in the order supervise returned them")[1]
    assert results.index("subtask 1") < results.index("subtask 0")  # the two come back swapped
    laws = (docs_paths.DOCS / "laws.md").read_text()
    assert '--8<-- "docs/generated/laws/smallest-leak.md"' in laws


DRAWING = """
from hypothesis import find, given, settings, strategies as st


@given(st.integers())
@settings(max_examples=7)
def test_drawn(n: int) -> None:
    pass


@given(st.integers())
def test_default(n: int) -> None:
    pass


def test_searched() -> None:
    find(st.integers(), lambda n: n > 3, settings=settings(max_examples=9))


def test_plain() -> None:
    pass


def test_law(step: object) -> None:
    laws.BOUNDED.verify(step)


def test_fixed_law(step: object) -> None:
    laws.HUNG_WORKER_FREES_ITS_SLOT.verify(step)
"""


def test_laws_page_says_how_many_inputs_each_linked_test_draws(tmp_path: Path) -> None:
    (tmp_path / "test_drawing.py").write_text(DRAWING)
    links = {
        name: f"[`{name}`](tests.md#test_drawing.{name})"
        for name in (
            "test_drawn",
            "test_default",
            "test_searched",
            "test_plain",
            "test_gone",
            "test_law",
            "test_fixed_law",
        )
    }
    said = tests_page.with_drawn_inputs(" ".join(links.values()), root=tmp_path)
    assert said == " ".join(
        [
            f"{links['test_drawn']} (checked on 7 drawn inputs)",
            f"{links['test_default']} (checked on 100 drawn inputs)",
            f"{links['test_searched']} (found by a search of up to 9 drawn inputs)",
            links["test_plain"],
            links["test_gone"],
            f"{links['test_law']} (checked on {laws.BOUNDED.budget.max_examples} drawn inputs)",
            links["test_fixed_law"],  # a law that draws nothing checks one case
        ]
    )


LAW_ANCHOR = re.compile(r"\{#(?P<id>[\w-]+)\}")
PAGE_ANCHOR = re.compile(r"\]\(\.\./(?P<page>laws|primer)\.md#(?P<id>[\w-]+)\)")


@pytest.mark.parametrize("name", step_pages.pages())
def test_each_step_page_links_to_laws_that_exist(name: str) -> None:
    page = (PAGES / f"{name}.md").read_text()
    ids = {
        target: set(LAW_ANCHOR.findall((docs_paths.DOCS / f"{target}.md").read_text()))
        for target in ("laws", "primer")
    }
    links = [(match["page"], match["id"]) for match in PAGE_ANCHOR.finditer(page)]
    assert any(target == "laws" for target, _ in links), f"{name}'s page links to no law"
    missing = [f"{target}.md#{anchor}" for target, anchor in links if anchor not in ids[target]]
    assert missing == [], f"docs/steps/{name}.md links to anchors that do not exist: {missing}"


def test_each_law_links_to_a_step() -> None:
    laws = (docs_paths.DOCS / "laws.md").read_text().split("\n## The docs")[0]
    sections = laws.split("\n### ")[1:]
    assert len(sections) >= 10
    for section in sections:
        title = section.splitlines()[0]
        assert re.search(r"\]\(steps/step\d\d_\w+\.md\)", section), f"law {title!r}: no step link"


STEP_LINK = re.compile(
    r"\[(?P<text>[^\]]*?)\]\((?:\.\./)?(?:steps/)?step(?P<number>\d\d)_(?P<rest>\w+)\.md[#)]"
)


@pytest.mark.parametrize(
    "path",
    sorted([*docs_paths.DOCS.glob("*.md"), *PAGES.glob("*.md")]),
    ids=lambda path: path.relative_to(docs_paths.DOCS).as_posix(),
)
def test_links_to_steps_name_pages_that_exist_by_their_own_number(path: Path) -> None:
    """A link to a step page names a page of the course, and a number in its text is the
    page's own: no page points at a step by an old number."""
    for match in STEP_LINK.finditer(path.read_text()):
        name = f"step{match['number']}_{match['rest']}"
        assert name in step_pages.pages(), f"{path.name} links to {name}, which has no page"
        said = re.search(r"\b(?:[Ss]teps? )?(\d+)\b", match["text"])
        if said is not None and match["text"].lower().startswith(("step", *"0123456789")):
            assert int(said[1]) == int(match["number"]), f"{path.name}: {match[0]}"


PARTICIPANT = re.compile(
    r"^\s*participant \w+ as (?:worker|slot) (?P<slot>\d+): (?P<name>[\w ]+)", re.M
)


@pytest.mark.parametrize("number", [*range(3, 9), 24])
def test_a_diagram_names_each_slot_as_the_demos_plan_does(number: int) -> None:
    """Steps 3-8 and 24 draw their sequence diagrams on a demo's plan: the research task
    (pricing, reviews, inventory), the dozen, or one of the step's own demos (step 24's two
    companies); each worker or slot a diagram names is that slot of the plan (``worker 0:
    pricing`` for ``competitor pricing``, ``slot 1: globex`` for globex's company), never
    another."""
    page = (PAGES / f"{steps()[number]}.md").read_text()
    named = [(int(m["slot"]), m["name"].split(" (")[0].strip()) for m in PARTICIPANT.finditer(page)]
    assert named, "the page has a diagram naming its slots"
    plans = [decompose(RESEARCH.task), decompose(LARGE.task)]
    plans += [decompose(demo.task) for demo in STEP_DEMOS.get(number, ())]
    assert any(
        all(slot < len(plan) and name in plan[slot] for slot, name in named) for plan in plans
    ), named


@pytest.mark.skipif(shutil.which("fc-match") is None, reason="fontconfig is not installed")
def test_the_browser_check_finds_a_character_no_font_of_the_family_has() -> None:
    from tools import docs_check

    fonts = docs_check.Fonts()
    assert fonts.missing("'DejaVu Sans Mono', monospace", "slot ✓ ok 0.25s") == set()
    assert fonts.missing("'DejaVu Sans Mono', monospace", "\u23f1 timed out") == {"\u23f1"}
    assert fonts.missing("NoSuchFontAnywhere", "a") == {"a"}, "an unknown name covers nothing"
