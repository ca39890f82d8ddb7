"""The docs site is held to the code: pages highlight what their step changed, and every picture
and sample output comes from a real run. (``make test`` also builds the site with ``--strict``.)"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lessons import _docs
from lessons._runner import demos, parser, step_number, step_path, steps
from lessons._samples import run_sample

PAGES = _docs.DOCS / "steps"
STEPS = list(steps().values())
# a fenced block that includes a file: its info string and the included path
INCLUDE = re.compile(r'^```(?P<info>[^\n]*)\n--8<-- "(?P<path>[^"]+)"\n```$', re.MULTILINE)
HL_LINES = re.compile(r'\bhl_lines="(?P<lines>[^"]*)"')


def highlight_problem(page: str, name: str, previous: str | None, current: str) -> str | None:
    """What is wrong with how ``page`` shows step ``name``'s file, or None.

    The page includes ``lessons/<name>.py`` in exactly one fenced block, and that block's
    ``hl_lines`` are exactly the lines that differ from the previous step's file (``previous``);
    the first step has nothing to differ from and highlights nothing.
    """
    path = f"lessons/{name}.py"
    blocks = [match for match in INCLUDE.finditer(page) if match["path"] == path]
    if len(blocks) != 1:
        return f"the page must include {path} in exactly one fenced block, found {len(blocks)}"
    found = HL_LINES.search(blocks[0]["info"])
    if previous is None:
        if found is not None:
            return "the first step has no step before it: its page must not set hl_lines"
        return None
    want = _docs.changed_lines(previous, current)
    have = [] if found is None else _docs.parse_lines(found["lines"])
    if have != want:
        return (
            f'hl_lines="{_docs.format_lines(have)}" but the lines that differ from the step '
            f'before are hl_lines="{_docs.format_lines(want)}": set that on the page'
        )
    return None


@pytest.mark.parametrize("name", STEPS)
def test_step_page_highlights_exactly_the_changed_lines(name: str) -> None:
    page = PAGES / f"{name}.md"
    assert page.exists(), f"step {name} has no page: add docs/steps/{name}.md (see the others)"
    before = _docs.previous_step(name)
    previous = None if before is None else step_path(before).read_text()
    problem = highlight_problem(page.read_text(), name, previous, step_path(name).read_text())
    assert problem is None, f"docs/steps/{name}.md: {problem}"


@pytest.mark.parametrize("name", STEPS[1:])
def test_changing_one_line_of_a_step_breaks_its_page(name: str) -> None:
    page = (PAGES / f"{name}.md").read_text()
    before = _docs.previous_step(name)
    assert before is not None
    previous = step_path(before).read_text()
    lines = step_path(name).read_text().splitlines(keepends=True)
    same = [n for n in range(1, len(lines) + 1) if n not in _docs.step_changes(name)]
    edited = same[len(same) // 2]  # a line the step did not change, now changed
    lines[edited - 1] = "# edited\n"
    problem = highlight_problem(page, name, previous, "".join(lines))
    assert problem is not None
    wanted = problem.split("lines that differ")[1].split('hl_lines="')[1].split('"')[0]
    assert edited in _docs.parse_lines(wanted)


@pytest.mark.parametrize("name", STEPS)
def test_step_page_includes_its_generated_run(name: str) -> None:
    page = (PAGES / f"{name}.md").read_text()
    assert f'--8<-- "docs/generated/steps/{name}.md"' in page


def test_every_page_of_a_step_is_a_step() -> None:
    assert sorted(page.stem for page in PAGES.glob("*.md")) == sorted(STEPS)


def test_changed_lines_are_the_replaced_and_inserted_lines_of_the_new_file() -> None:
    previous = "a\nb\nc\nd\n"
    current = "a\nB\nc\nnew\nd\n"
    assert _docs.changed_lines(previous, current) == [2, 4]
    assert _docs.changed_lines(current, current) == []
    assert _docs.changed_lines("a\nb\n", "a\n") == []  # a deletion leaves nothing to highlight


def test_hl_lines_format_and_parse_round_trip() -> None:
    assert _docs.format_lines([7, 1, 2, 3, 9, 10]) == "1-3 7 9-10"
    assert _docs.parse_lines("1-3 7 9-10") == [1, 2, 3, 7, 9, 10]
    assert _docs.format_lines([]) == ""
    with pytest.raises(ValueError, match=r"^a hl_lines range runs upwards, got '5-3'$"):
        _docs.parse_lines("5-3")
    with pytest.raises(
        ValueError, match=r"^hl_lines items are numbers or ranges like 3-5, got 'x'$"
    ):
        _docs.parse_lines("1 x")


@pytest.fixture(scope="module")
def pictures() -> dict[str, list[_docs.Picture]]:
    return {name: _docs.pictures(name) for name in STEPS}


@pytest.mark.parametrize("name", STEPS)
def test_page_output_is_what_the_command_prints(
    name: str, pictures: dict[str, list[_docs.Picture]]
) -> None:
    """The same lines; in steps 2 and 3 results that ended at the same virtual instant are
    appended in whichever order trio ran them, so the order of those rows may differ."""
    number = step_number(name)
    printed = run_sample(f"{number} --virtual")
    shown = "\n".join(picture.output for picture in pictures[name])
    indented = "".join(f"    {line}\n" if line else "\n" for line in shown.splitlines())
    assert sorted(indented.strip("\n").splitlines()) == sorted(printed.strip("\n").splitlines())


END = re.compile(r"(?P<end>[✓✗⏱⊘…] (?:\w[\w ]*?,? )?(?:\d+\.\d\ds|never ran))\s*(?P<rank>\d*)$")


@pytest.mark.parametrize("name", STEPS)
def test_timeline_picture_and_terminal_timeline_agree(
    name: str, pictures: dict[str, list[_docs.Picture]]
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
        table = lines[head + 1 : head + 1 + len(picture.run.trace.slots)]
        printed = []
        for line in table:
            match = END.search(line)
            assert match is not None, line
            printed.append((match["end"], match["rank"]))
        assert drawn == printed
        assert len(drawn) == len(picture.run.trace.slots)


def test_two_generations_draw_byte_identical_svgs(tmp_path: Path) -> None:
    first = _docs.generate(tmp_path / "first")
    second = _docs.generate(tmp_path / "second")
    assert [path.relative_to(tmp_path / "first") for path in first] == [
        path.relative_to(tmp_path / "second") for path in second
    ]
    svgs = [path for path in first if path.suffix == ".svg"]
    assert len(svgs) == sum(
        len(demos(parser().parse_args([str(number)]), number)) for number in steps()
    )
    for one in svgs:
        other = tmp_path / "second" / one.relative_to(tmp_path / "first")
        assert one.read_bytes() == other.read_bytes(), one.name


def test_generation_writes_only_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "a.svg"
    assert _docs.write_if_changed(path, "<svg/>")
    assert not _docs.write_if_changed(path, "<svg/>")
    assert _docs.write_if_changed(path, "<svg></svg>")


LAW_LINK = re.compile(r"\(tests\.md#(?P<module>test_\w+)\.(?P<name>[\w.]+)\)")


def _law_links() -> list[tuple[str, str]]:
    page = (_docs.DOCS / "laws.md").read_text()
    return [(match["module"], match["name"]) for match in LAW_LINK.finditer(page)]


@pytest.mark.parametrize(("module", "name"), _law_links())
def test_laws_page_links_to_tests_that_exist(module: str, name: str) -> None:
    path = _docs.TESTS / f"{module}.py"
    if not path.exists():
        pytest.skip(f"tests/{module}.py has not landed yet")
    names = {test.name for test in _docs.find_tests() if test.path == path}
    assert name in names, f"laws.md links to {module}.{name}, which tests/{module}.py lacks"


def test_tests_page_shows_each_test_from_its_first_to_its_last_line() -> None:
    found = _docs.find_tests()
    assert "test_tests_page_shows_each_test_from_its_first_to_its_last_line" in {
        test.name for test in found
    }
    for test in found:
        lines = test.path.read_text().splitlines()[test.first - 1 : test.last]
        assert re.match(r"\s*(@|def |async def )", lines[0]), (test.name, lines[0])
        assert f"def {test.name.split('.')[-1]}(" in "\n".join(lines)
    page = _docs.page_of_tests()
    for test in found:
        relative = test.path.relative_to(_docs.ROOT).as_posix()
        assert f'--8<-- "{relative}:{test.first}:{test.last}"' in page
        assert f"{{#{test.anchor}}}" in page
