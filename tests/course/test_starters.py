"""An exercise asks for its step's idea alone: the places its starter marks are the lines its
step changed against the step before, and nothing the step keeps.

Part I's starter is the step before's code, marked where the step differs. A Part II step is a
module that imports the step before and redefines only what its idea changes, so its starter is
that module without the idea: each definition the step changes as the step before has it, each
one the idea adds left out. Marked against the step before's whole file instead, step 26's starter
asked to change 86 lines of step 24's supervise, and step 29's to change step 28's approval gate,
which step 29 imports unchanged.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import io
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from lessons._course import exercises
from lessons._course.laws import LAWS
from lessons._course.steps import load_step, part_two, previous, step_path, steps
from tests.course.test_exercises import sparing

KNOWN = steps()
NUMBERS = sorted(exercises.exercisable())
PART_TWO = [number for number in NUMBERS if part_two(KNOWN[previous(number) or 0])]


def unmarked(number: int) -> tuple[list[str], list[int]]:
    """Step ``number``'s starter below its docstring without its marks, and where each mark
    was (the index of the line it is above, in the lines without marks)."""
    text = exercises.starter(number)
    mark = exercises.MARK.format(number=number)
    lines: list[str] = []
    marks: list[int] = []
    for line in text.split('"""', 2)[2].splitlines():
        if line.strip().startswith(mark):
            marks.append(len(lines))
        else:
            lines.append(line)
    while lines and not lines[0].strip():
        lines.pop(0)
        marks = [at - 1 for at in marks]
    return lines, marks


def changed_statements(number: int) -> set[int]:
    """The line numbers (0-based, in step ``number``'s code) of the top-level statements the
    step changed against the step before: a definition the step before has not, or has with
    other source. Found from the step's module and the step before's, not from the starter."""
    source = step_path(KNOWN[number]).read_text()
    code = exercises._code(source)
    offset = source.splitlines().index(code[0])
    before = load_step(KNOWN[previous(number) or 0])
    changed: set[int] = set()
    for group in exercises._statements(ast.parse(source)):
        node = group[0]
        names = exercises._names(node)
        if not names:
            continue
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = group[-1].end_lineno
        assert last is not None
        own = source.splitlines()[first - 1 : last]
        theirs = getattr(before, names[0], None)
        if theirs is not None and isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        ):
            if textwrap.dedent(inspect.getsource(theirs)).rstrip("\n").splitlines() == own:
                continue
        elif theirs is not None:
            continue  # a value the step before has too
        changed.update(range(first - 1 - offset, last - offset))
    return changed


@pytest.mark.parametrize("number", NUMBERS)
def test_the_marks_are_exactly_where_the_step_differs_from_its_starter(
    number: int, tmp_path: Path
) -> None:
    lines, marks = unmarked(number)
    new = exercises._code(step_path(KNOWN[number]).read_text())
    places = difflib.SequenceMatcher(None, lines, new, autojunk=False).get_opcodes()
    assert sorted(set(marks)) == sorted(first for tag, first, *_ in places if tag != "equal")
    path = tmp_path / f"{KNOWN[number]}.py"
    path.write_text(exercises.starter(number))
    exercises.load(path, number)  # the starter imports: a check can run on it untouched


@pytest.mark.parametrize("number", PART_TWO)
def test_a_part_two_exercise_asks_only_for_the_lines_its_step_changed(number: int) -> None:
    lines, _ = unmarked(number)
    new = exercises._code(step_path(KNOWN[number]).read_text())
    changed = changed_statements(number)
    asked = [
        (j, new[j])
        for tag, _, _, first, last in difflib.SequenceMatcher(
            None, lines, new, autojunk=False
        ).get_opcodes()
        if tag != "equal"
        for j in range(first, last)
        if new[j].strip()
    ]
    outside = [line for j, line in asked if j not in changed]
    assert not outside, f"step {number}'s starter asks for lines its step kept: {outside}"
    assert asked, f"step {number}'s starter asks for nothing"


@pytest.mark.parametrize("number", PART_TWO)
def test_what_a_part_two_step_imports_unchanged_is_never_in_its_starter(number: int) -> None:
    """Step 29 imports step 28's gate: its starter neither defines the gate nor marks it."""
    lines, _ = unmarked(number)
    tree = ast.parse("\n".join(lines))
    defined = {name for node in tree.body for name in exercises._names(node)}
    own = ast.parse(step_path(KNOWN[number]).read_text())
    imported = {
        alias.asname or alias.name
        for node in own.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not defined & imported


@pytest.mark.parametrize("number", PART_TWO)
def test_check_fails_on_the_untouched_part_two_starter(number: int, tmp_path: Path) -> None:
    """Without its idea the starter misses a law of its step: the exercise has work in it."""
    out = io.StringIO()
    console = Console(file=out, width=100)
    assert exercises.main(["exercise", str(number)], console, home=tmp_path) == 0
    fixed = [law for law in LAWS if law.flaw is not None and law.flaw[0] == previous(number)]
    with sparing(fixed):  # the laws the step before fails: the starter is its code
        assert exercises.main(["check", str(number)], console, home=tmp_path) == 1
    assert "  FAILED  " in out.getvalue()
