"""Exercises graded by the laws: ``python -m lessons exercise N`` and ``python -m lessons check N``.

An exercise for step N starts from step N-1's code, with the places where step N's idea goes
marked, in ``exercises/`` at the project root (git-ignored: it is the reader's). ``check N`` runs
step N's laws (`lessons._course.laws.laws_of`, the properties the test suite proves) on the
``supervise`` (or ``stream``) of the reader's file, on virtual time, and tells each law as passed
or failed; for a failure, the smallest counterexample Hypothesis found, what the code returned
against what the law expected, and the timeline of that run, all fitted to the terminal's width
(80 columns in a pipe). Each law may take ``--limit`` seconds of real time on the reader's code: a
``supervise`` that never yields (a busy loop) cannot be interrupted, so its law is told as never
returned, and the check ends. ``check N --watch`` checks again each time the file is saved.
``check N --hint`` gives one hint at a time, drawn from step N's own
docstring; how many were given is kept in ``exercises/hints.json``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import functools
import importlib.util
import inspect
import io
import json
import math
import os
import re
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, NoReturn

from hypothesis import HealthCheck, Phase, Verbosity, settings
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from lessons._course import laws as _laws
from lessons._course.errors import describe
from lessons._course.laws import Law, Seen, laws_of, secs
from lessons._course.showing import legend_lines
from lessons._course.steps import STEPS, Step, load_step, part_two, previous, step_path, steps
from trio_supervisor import Status, Trace
from trio_supervisor.timeline import render_timeline, timeline_rows

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
"""Where the reader's exercise files go: ``exercises/`` at the project root."""

HINTS = "hints.json"

#: What a check spends on each law: reproducible (derandomized, no example database), small
#: enough that a check of every law of step 14 takes seconds, and shrinking on, so that a failure
#: is told by its smallest counterexample.
CHECK = settings(
    max_examples=20,
    derandomize=True,
    database=None,
    deadline=None,
    report_multiple_bugs=False,
    verbosity=Verbosity.quiet,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.generate, Phase.shrink),
)


def budget_of(law: Law) -> settings:
    """What a check spends on ``law``: `CHECK`, the same for every law. (The course's tests spend
    less, on a law the test at hand is not about, through this one place.)"""
    return CHECK


MARK = "# >>> step {number}:"
LIMIT = 30.0
"""Seconds of real time each law may take on the reader's code (``check --limit``): every law
of the course's own steps takes well under one."""
POLL = 0.5
"""Seconds between two looks at the file ``check --watch`` watches."""
SLICE = 0.1  # seconds: how often the wait for a law's thread looks for Ctrl-C
_LEFT: list[threading.Thread] = []  # the threads of laws left running (see `_within`)
RETURNED, EXPECTED, DIFFERS = "your code returned", "the law expected", "   <- differs"
TIMELINE_INDENT = 6
BARS, NARROWEST = 40, 12  # columns of a timeline's bars: at most, and at least


def exercisable() -> dict[int, str]:
    """Step number -> module name of every step with an exercise: a step with laws to check and
    a step before it to start from."""
    known = steps()
    return {
        number: name
        for number, name in known.items()
        if previous(number) is not None and laws_of(number)
    }


def spans(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Step numbers as runs of consecutive ones: ``[2, 3, 4, 7]`` -> ``[(2, 4), (7, 7)]``."""
    runs: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if runs and runs[-1][1] == number - 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def which(numbers: Sequence[int] | None = None) -> str:
    """The steps with an exercise as a reader reads them, ``"2 to 25"`` (``"2 to 10 and 14"``
    were there a gap): the one wording the runner, the README and the site's pages say it in."""
    chosen = list(exercisable()) if numbers is None else list(numbers)
    # a run is of steps next to each other in the course (27 after 25 while 26 is not written)
    place = {number: at for at, number in enumerate(steps())}
    numbered = {place.get(number, number): number for number in chosen}
    runs = [(numbered[first], numbered[last]) for first, last in spans(list(numbered))]
    said = [str(first) if first == last else f"{first} to {last}" for first, last in runs]
    return " and ".join([", ".join(said[:-1]), said[-1]] if len(said) > 1 else said)


def offered() -> str:
    """The sentence that says which steps have an exercise, as the README must say it (a test
    holds the README to it: a README cannot include a generated file)."""
    return f"Steps {which()} are also exercises"


def _docstring(name: str) -> str:
    return ast.get_docstring(ast.parse(step_path(name).read_text())) or ""


def _paragraph(name: str, prefix: str) -> str:
    """The paragraph of step ``name``'s docstring that starts with ``prefix``, without it, on
    one line, with reST's double backticks made single."""
    for paragraph in _docstring(name).split("\n\n"):
        if paragraph.startswith(prefix):
            text = " ".join(paragraph.removeprefix(prefix).split()).replace("``", "`")
            return text[:1].upper() + text[1:]
    return ""


def summary(name: str) -> str:
    """Step ``name``'s idea in one sentence: its docstring's first line after the title."""
    first = " ".join(_docstring(name).split("\n\n")[0].split())
    return first.partition(". ")[2].replace("``", "`")


def _code(source: str) -> list[str]:
    """The lines of ``source`` after its module docstring and before its ``__main__`` block:
    the code a step adds to, and nothing that runs the course's own step."""
    tree = ast.parse(source)
    lines = source.splitlines()
    first = 0
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        assert body[0].end_lineno is not None
        first = body[0].end_lineno
    last = len(lines)
    if body and isinstance(body[-1], ast.If) and "__main__" in ast.unparse(body[-1].test):
        last = body[-1].lineno - 1
    code = lines[first:last]
    while code and not code[0].strip():
        code.pop(0)
    while code and not code[-1].strip():
        code.pop()
    return code


def _names(node: ast.stmt) -> list[str]:
    """The names a top-level statement defines: a def's or class's, an assignment's targets."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _globals_used(function: object) -> set[str]:
    """The module-level names ``function``'s code (its nested functions' too) reads."""
    code = getattr(inspect.unwrap(function), "__code__", None)  # type: ignore[arg-type]
    found: set[str] = set()
    codes = [code] if code is not None else []
    while codes:
        current = codes.pop()
        found.update(current.co_names)
        codes.extend(const for const in current.co_consts if inspect.iscode(const))
    return found


def _imported(name: str, value: object, home: str) -> str:
    """The import that binds ``name`` to ``value``, a global of module ``home``."""
    if isinstance(value, ModuleType):
        package, _, last = value.__name__.rpartition(".")
        if last == name and package:
            return f"from {package} import {name}"
        return f"import {value.__name__} as {name}"
    return f"from {home} import {name} as {name}"


def _is_text(node: ast.stmt | None) -> bool:
    """Whether ``node`` is a bare string: a docstring, or the one an assignment has after it."""
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _statements(tree: ast.Module) -> list[list[ast.stmt]]:
    """A module's top-level statements, its docstring and ``__main__`` block left out, each
    with the string after it that documents it (an assignment's docstring)."""
    body = list(tree.body)
    if body and _is_text(body[0]):
        body.pop(0)
    if body and isinstance(body[-1], ast.If) and "__main__" in ast.unparse(body[-1].test):
        body.pop()
    grouped: list[list[ast.stmt]] = []
    for node in body:
        if grouped and _is_text(node) and not _is_text(grouped[-1][-1]):
            grouped[-1].append(node)
        else:
            grouped.append([node])
    return grouped


def _wraps(node: ast.stmt, module: ModuleType) -> bool:
    """Whether ``node``, a definition in ``module``, calls the one of the same name in another
    module (``step25.open_worker`` in step 26's ``open_worker``): a definition that wraps the
    step before's, as an idea does that adds to it."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    return any(
        isinstance(inner, ast.Attribute)
        and inner.attr == node.name
        and isinstance(inner.value, ast.Name)
        and isinstance(vars(module).get(inner.value.id), ModuleType)
        for inner in ast.walk(node)
    )


def before_idea(number: int) -> list[str]:
    """Step ``number``'s code as it is without its idea, for a Part II step that imports the
    step before it and redefines only what its idea changes: each definition it changes put back
    as the step before has it (``inspect.getsource`` of the same name there), each definition
    the idea adds left out, everything else (its imports, what it keeps) as it is, and the
    imports the put-back code needs. The starter marks where step ``number`` differs from it,
    so it asks for the step's idea alone, never for what the step imports unchanged (see
    `_by_idea`)."""
    known = steps()
    earlier, current = load_step(known[previous(number) or 0]), load_step(known[number])
    source = step_path(known[number]).read_text()
    lines = source.splitlines()
    out: list[str] = []
    needed: dict[str, str] = {}
    defined: set[str] = set()
    at: int | None = None
    place = 0
    for group in _statements(ast.parse(source)):
        node = group[0]
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = group[-1].end_lineno
        assert last is not None
        if at is not None:
            out.extend(lines[at : first - 1])  # the blank lines and comments between
        at = last
        own = lines[first - 1 : last]
        names = _names(node)
        if not names:
            out.extend(own)
            if isinstance(node, ast.Import | ast.ImportFrom):
                defined.update((a.asname or a.name).partition(".")[0] for a in node.names)
                place = len(out)  # the put-back code's imports go after the last import
            continue
        if not any(hasattr(earlier, name) for name in names):
            continue  # the idea adds it: the reader writes it
        if _wraps(node, current):  # the idea wraps the step before's: the reader writes it
            needed[names[0]] = _imported(names[0], getattr(earlier, names[0]), earlier.__name__)
            continue
        defined.update(names)
        value = getattr(earlier, names[0])
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.extend(own)  # a value the step before has too
            continue
        theirs = textwrap.dedent(inspect.getsource(value)).rstrip("\n").splitlines()
        out.extend(theirs)
        if theirs != own:
            home = getattr(inspect.unwrap(value), "__globals__", {})
            for used in sorted(_globals_used(value)):
                if used in home:
                    needed[used] = _imported(used, home[used], value.__module__)
    out[place:place] = [line for used, line in needed.items() if used not in defined]
    kept: list[str] = []
    for line in out:  # at most two blank lines in a row, as the code has
        if line.strip() or kept[-2:] != ["", ""]:
            kept.append(line if line.strip() else "")
    while kept and not kept[-1]:
        kept.pop()
    return kept


def _by_idea(number: int) -> bool:
    """Whether step ``number``'s exercise starts from step ``number`` without its idea
    (`before_idea`) rather than from the step before's code: a Part II step after the first,
    which imports the step before it and redefines only what its idea changes."""
    known = steps()
    earlier = previous(number)
    return earlier is not None and part_two(known[earlier])


def _wrap(text: str, indent: str = "") -> list[str]:
    words, lines, line = text.split(), [], indent
    for word in words:
        if len(line) + len(word) + 1 > 96 and line.strip():
            lines.append(line.rstrip())
            line = indent
        line += word + " "
    if line.strip():
        lines.append(line.rstrip())
    return lines


def starter(number: int) -> str:
    """The starter of step ``number``'s exercise: the step before's code, a comment above
    each place that step ``number`` changes, and a docstring that states the task.

    Raises:
      ValueError: if step ``number`` has no exercise (see `exercisable`).
    """
    known = exercisable()
    if number not in known:
        raise ValueError(_no_exercise(number))
    earlier = previous(number) or 0
    name, before = known[number], steps()[earlier]
    new = _code(step_path(name).read_text())
    old = before_idea(number) if _by_idea(number) else _code(step_path(before).read_text())
    mark = MARK.format(number=number)
    marked: list[str] = []
    places = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    changes = {
        first: "add code here" if tag == "insert" else f"change the next {last - first} lines"
        for tag, first, last, _, _ in places
        if tag != "equal"
    }
    for line_number, line in enumerate([*old, ""]):
        if line_number in changes:
            indent = re.match(r"\s*", line or (old[line_number - 1] if line_number else ""))
            said = changes[line_number].replace("next 1 lines", "next line")
            marked.append(f"{indent[0] if indent else ''}{mark} {said}")
        if line_number < len(old):
            marked.append(line)
    while marked and not marked[-1].strip():
        marked.pop()
    header = [
        f'"""Exercise: step {number}. {summary(name)}',
        "",
        (
            f"This is step {number}'s module without its idea: what it changes as step "
            f"{earlier} ({before}) has it. What is still wrong with step {earlier}:"
            if _by_idea(number)
            else f"This is step {earlier}'s code ({before}). What is still wrong with it:"
        ),
        "",
        *_wrap(_paragraph(before, "What is still wrong:")),
        "",
        *_wrap(
            f"Your task: change it so that step {number}'s laws hold. The comments "
            f"`{mark}` mark the places where the course's step {number} changes the code."
        ),
        "",
        f"Check it:    python -m lessons check {number}",
        f"A hint:      python -m lessons check {number} --hint",
        f'The answer:  lessons/{name}.py"""',
        "",
    ]
    return "\n".join(header + marked) + "\n"


def exercise_path(number: int, home: Path | None = None) -> Path:
    """Where step ``number``'s exercise is written: ``<home>/<step's module name>.py``, in
    ``exercises/`` at the project root unless ``home`` says."""
    return (home or EXERCISES) / f"{exercisable()[number]}.py"


def _no_exercise(number: int) -> str:
    known = exercisable()
    choose = f"choose {min(known)}-{max(known)}"
    if number == min(steps()):
        return f"step {number} has no exercise: there is no step before it to start from; {choose}"
    return f"step {number} has no exercise: {choose}"


def write_starter(number: int, force: bool = False, home: Path | None = None) -> Path:
    """Write step ``number``'s starter into ``exercises/`` (or ``home``) and return its path.

    Raises:
      ValueError: if the step has no exercise, or its file exists and ``force`` is not set
        (it may hold the reader's work).
    """
    text = starter(number)
    path = exercise_path(number, home)
    if path.exists() and not force:
        raise ValueError(
            f"{_shown(path, home)} exists: it may hold your work; add --force to replace it"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _shown(path: Path, home: Path | None = None) -> str:
    """``path`` as the reader knows it: an exercise as ``exercises/<file>``, any other file as
    it was given."""
    home = home or EXERCISES
    return f"{home.name}/{path.name}" if path.parent == home else str(path)


def load(path: Path, number: int) -> ModuleType:
    """Import the file at ``path`` as a module of its own (not one of the course's steps),
    known by its name in ``sys.modules``, so that what it defines imports back (a journal
    restores a pydantic model, a step 32 ``Finding``, by its class's import path)."""
    spec = importlib.util.spec_from_file_location(f"exercise_step{number:02}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return module


def failed_at(exc: BaseException) -> str | None:
    """The line of the laws where ``exc`` was raised, if it was raised there (a failed check)."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == _laws.__file__ and frame.line:
            return frame.line.strip()
    return None


def _say(
    console: Console, text: str, indent: int = 4, style: str | None = None, hang: int = 2
) -> None:
    """Print ``text`` ``indent`` columns in, wrapped at words to the console's width, each line
    after the first ``hang`` columns further in."""
    room = max(20, console.width - indent)
    lines = textwrap.wrap(
        text, room, subsequent_indent=" " * hang, break_long_words=False, break_on_hyphens=False
    )
    for line in lines or [""]:
        console.print(
            " " * indent + line, markup=False, highlight=False, soft_wrap=True, style=style
        )


def _differs(returned: Sequence[str], expected: Sequence[str], row: int) -> bool:
    """Whether row ``row`` of what the code returned differs from what the law expected there
    (a row only one of them has differs)."""
    got = returned[row] if row < len(returned) else None
    return got != (expected[row] if row < len(expected) else None)


def _compared(console: Console, returned: list[str], expected: list[str]) -> None:
    """What the code returned beside what the law expected, each row that differs marked; one
    after the other where the two do not fit side by side in the console's width."""
    if not expected:
        console.print(f"    {RETURNED}:")
        for line in returned:
            _say(console, line, 6)
        return
    width = max(map(len, [*returned, RETURNED]))
    widest = max(map(len, [*expected, EXPECTED]))
    if 6 + width + 3 + widest + len(DIFFERS) > console.width:
        console.print(f"    {RETURNED}:")
        for row, line in enumerate(returned):
            _say(console, line + (DIFFERS if _differs(returned, expected, row) else ""), 6)
        console.print(f"    {EXPECTED}:")
        for row, line in enumerate(expected):
            _say(console, line + (DIFFERS if row >= len(returned) else ""), 6)
        return
    console.print(f"      {RETURNED:<{width}}   {EXPECTED}", style="bold")
    for row in range(max(len(returned), len(expected))):
        got = returned[row] if row < len(returned) else ""
        wanted = expected[row] if row < len(expected) else ""
        mark = DIFFERS if _differs(returned, expected, row) else ""
        line = f"      {got:<{width}}   {wanted}{mark}".rstrip()
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def timeline(console: Console, trace: Trace, final: Mapping[int, Status]) -> Table:
    """``trace`` drawn to fit the console's width, indented as `tell` puts it: the bars as wide
    as the room the other columns (slot, subtask, end, done #) leave them, at most ``BARS``
    columns, so that every column is shown whole."""
    narrow = render_timeline(trace, final, width=NARROWEST)
    others = console.measure(narrow).maximum - NARROWEST
    bars = max(NARROWEST, min(BARS, console.width - TIMELINE_INDENT - others))
    return render_timeline(trace, final, width=bars)


def tell(console: Console, law: Law, seen: Seen, exc: BaseException) -> None:
    """Print why ``law`` failed: the error, the smallest counterexample Hypothesis drew, what
    the code returned against what the law expected, and the timeline of that run, all within
    the console's width."""
    where = failed_at(exc)
    if where is None or not where.startswith("assert"):
        _say(console, describe(exc))
    else:
        _say(console, f"the law's check failed{f': {exc}' if str(exc) else ''}")
        _say(console, where, 6)
    if seen.drew:
        console.print("    smallest counterexample:" if law.draws else "    the case:")
        for what, value in seen.drew.items():
            _say(console, f"{what} = {value!r}", 6)
    returned, expected = seen.returned or [], seen.expected or []
    if returned or expected:
        _compared(console, returned, expected)
    for what, got, wanted, holds in seen.facts:
        _say(console, f"{what}: {got}; expected {wanted}{'' if holds else DIFFERS}")
    trace = seen.timeline()
    if trace is not None and any(slot.spans for slot in trace.slots):
        if seen.gave_up is None:
            console.print("    the timeline of that run:")
        else:
            stopped = secs(seen.gave_up - trace.origin)
            drawn = f"the timeline of that run, to {secs(trace.wall)} (stopped at {stopped}):"
            _say(console, drawn)
        table = timeline(console, trace, seen.final)
        console.print(Padding(table, (0, 0, 0, TIMELINE_INDENT)))
        for line in legend_lines(timeline_rows(trace, seen.final), console.width - 4):
            console.print(f"    {line}", style="bright_black", markup=False, highlight=False)


def record_of(module: ModuleType, number: int) -> Step | None:
    """What a reader's file for step ``number`` offers, as a record: it has none of its own, and
    may not be step ``number`` yet (a starter has the code, and the signature, of the step
    before), so it is read from the file: its ``stream`` if it has one, else its ``supervise``,
    and the keyword options that takes (from step 17 on the entry is ``supervise``, and its
    ``stream``, if it has one, is beside it). None for a file with neither."""
    known = STEPS[number]
    found = {name: vars(module).get(name) for name in ("stream", "supervise")}
    streams = callable(found["stream"]) and known.stream_options is None
    entry: Literal["stream", "supervise"] = "stream" if streams else "supervise"
    function = found[entry]
    if not callable(function):
        return None
    options = _keyword_options(function)
    beside = found["stream"] if entry == "supervise" and callable(found["stream"]) else None
    return dataclasses.replace(
        known,
        entry=entry,
        options=options,
        lazy=known.lazy and "window" in options,
        stream_options=None if beside is None else _keyword_options(beside),
    )


def _keyword_options(function: Callable[..., Any]) -> dict[str, Any]:
    """Each keyword-only option of ``function`` and its default (None for a required one)."""
    return {
        parameter.name: None if parameter.default is parameter.empty else parameter.default
        for parameter in inspect.signature(function).parameters.values()
        if parameter.kind is parameter.KEYWORD_ONLY
    }


def _within(limit: float, call: Callable[[], object]) -> tuple[bool, BaseException | None]:
    """Run ``call()`` in a thread of its own, waiting at most ``limit`` seconds of real time for
    it: whether it ended, and what it raised (to be raised again by the caller). A call still
    running then is left running, for nothing can stop code that never yields: its thread is a
    daemon, kept in ``_LEFT``, and `main` ends the process once it has told the check."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # handed over to the caller's thread, which raises it
            raised.append(exc)

    thread = threading.Thread(target=run, name="a law on your code", daemon=True)
    thread.start()
    until = time.monotonic() + limit
    try:  # in slices: Ctrl-C taken by the law's thread would not wake one long wait
        while thread.is_alive() and (left := until - time.monotonic()) > 0:
            thread.join(min(left, SLICE))
    finally:  # abandoned, or the wait for it interrupted (Ctrl-C): it runs on
        if thread.is_alive():
            _LEFT.append(thread)
    return not thread.is_alive(), raised[0] if raised else None


def _stuck(console: Console, law: Law, seen: list[Seen], limit: float, later: list[Law]) -> None:
    """Tell ``law`` as failed for running past ``limit``, on the case it was running, and the
    ``later`` laws as not run: the code is still running in the law's thread."""
    _say(console, f"FAILED  {law.rule}", 2, "red", hang=8)
    _say(
        console,
        f"never returned within {secs(limit)} of real time: your code never lets virtual "
        "time pass (a loop that never awaits, or awaits only trio.sleep(0))",
    )
    drew = dict(seen[0].drew) if seen else {}
    if drew:
        console.print("    on the case:")
        for what, value in drew.items():
            _say(console, f"{what} = {value!r}", 6)
    for other in later:
        _say(console, f"not run  {other.rule}", 2, "yellow", hang=9)
    if later:
        _say(console, "(the laws after it are not run: your code is still running in it)")


def check(
    number: int,
    module: ModuleType,
    console: Console,
    budget: settings | None = None,
    record: Step | None = None,
    limit: float = LIMIT,
) -> tuple[int, int]:
    """Run step ``number``'s laws on ``module`` (what ``record`` says it offers: by default,
    `record_of` it), telling each as passed or failed (with its counterexample); returns how
    many passed, of how many. Each law draws ``budget`` (by default `budget_of` it) and may take
    ``limit`` seconds of real time: a law still running then fails as never returned, and the
    laws after it are not run (see `_within`)."""
    record = record or record_of(module, number)
    passed = 0
    chosen = laws_of(number)
    for index, law in enumerate(chosen):
        seen: list[Seen] = []
        spent = budget if budget is not None else budget_of(law)
        ended, raised = _within(limit, functools.partial(law.verify, module, spent, seen, record))
        if not ended:
            _stuck(console, law, seen, limit, chosen[index + 1 :])
            break
        if raised is None:
            passed += 1
            _say(console, f"passed  {law.rule}", 2, "green", hang=8)
        elif _interrupted(raised):  # Ctrl-C: not the law's to tell
            raise raised
        else:  # the reader's code broke the law, or raised (a SystemExit too): tell it
            _say(console, f"FAILED  {law.rule}", 2, "red", hang=8)
            tell(console, law, seen[0] if seen else Seen(), raised)
    return passed, len(chosen)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C (a ``KeyboardInterrupt``, bare or in a group), which stops the
    check; any other exception the reader's code raises, a ``SystemExit`` included, fails the
    law it ran in, told as any failure is."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(KeyboardInterrupt)[0] is not None
    return isinstance(exc, KeyboardInterrupt)


def _leave(status: int, console: Console) -> int:
    """``status``, to return; or, while a law's thread still runs the reader's code (past its
    limit, or when Ctrl-C cut the wait for it), the process's end with ``status`` here, its
    output flushed: that thread cannot be stopped, and would keep the process busy."""
    if not any(thread.is_alive() for thread in _LEFT):
        return status
    for stream in (console.file, sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)


def hint(number: int, console: Console, home: Path | None = None) -> None:
    """Print the next hint for step ``number`` (one more each time), and remember it in
    ``exercises/hints.json`` (or ``home``'s)."""
    name = steps()[number]
    sentences = re.split(r"(?<=\.)\s+(?=[A-Z`*])", _paragraph(name, "What it adds:"))
    given = [f"The idea: {sentences[0]}", *sentences[1:]]
    given.append(f"The course's own answer is lessons/{name}.py; its page explains it.")
    state_path = (home or EXERCISES) / HINTS
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    shown = min(int(state.get(str(number), 0)), len(given) - 1)
    console.print(f"hint {shown + 1} of {len(given)} for step {number}:", style="bold")
    console.print(Padding(Text(given[shown]), (0, 0, 0, 2)), highlight=False)
    state[str(number)] = shown + 1
    state_path.parent.mkdir(parents=True, exist_ok=True)
    state_path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _step(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a step is a number, got {text!r}")
    return int(text)


def _limit(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(
            f"a time limit is a positive number of seconds, got {text!r}"
        )
    return seconds


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m lessons", description="Exercises graded by the course's laws.")
    commands = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    exercise = commands.add_parser(
        "exercise",
        help="write a starter for step N into exercises/",
        description=(
            "Write step N's exercise into exercises/: step N-1's code, the places to change marked."
        ),
    )
    exercise.add_argument("number", type=_step, metavar="N", help=f"the step: {which()}")
    exercise.add_argument("--force", action="store_true", help="replace an existing file")
    checking = commands.add_parser(
        "check",
        help="run step N's laws on your code",
        description="Run step N's laws on the supervise (or stream) in PATH, on virtual time.",
    )
    checking.add_argument("number", type=_step, metavar="N", help=f"the step: {which()}")
    checking.add_argument("path", nargs="?", type=Path, metavar="PATH", help="your file")
    checking.add_argument("--hint", action="store_true", help="print the next hint instead")
    checking.add_argument(
        "--limit",
        type=_limit,
        default=LIMIT,
        metavar="SECONDS",
        help=f"the real time each law may take on your code (default {LIMIT:g})",
    )
    checking.add_argument(
        "--watch",
        action="store_true",
        help="check again each time the file is saved, until Ctrl-C",
    )
    return p


def main(argv: Sequence[str], console: Console | None = None, home: Path | None = None) -> int:
    """``python -m lessons exercise N`` and ``python -m lessons check N [PATH]``, with the
    exercises in ``home`` (``exercises/`` at the project root by default): the exit status is 0
    (written; every law passed), 1 (a law failed, or the file does not import) or 2 (bad input,
    refused in one line)."""
    p = parser()
    args = p.parse_args(argv)
    console = console or Console(highlight=False)
    known = exercisable()
    if args.command == "exercise":
        try:
            path = write_starter(args.number, force=args.force, home=home)
        except ValueError as exc:
            p.error(str(exc))
        console.print(
            f"wrote {_shown(path, home)}: step {previous(args.number)}'s code; the task is at "
            "its top",
            markup=False,
            soft_wrap=True,
        )
        console.print(
            f"check it with: python -m lessons check {args.number}", markup=False, soft_wrap=True
        )
        return 0
    if args.number not in steps() or not laws_of(args.number):
        with_laws = [number for number in steps() if laws_of(number)]
        p.error(
            f"step {args.number} has no laws to check: choose {min(with_laws)}-{max(with_laws)}"
        )
    if args.hint:
        hint(args.number, console, home)
        return 0
    path = args.path
    if path is None:
        if args.number not in known:
            p.error(f"step {args.number} has no exercise file: give the PATH of your code")
        path = exercise_path(args.number, home)
        if not path.exists():
            write = f"python -m lessons exercise {args.number}"
            p.error(f"no file {_shown(path, home)}: write it with {write}")
    elif not path.is_file():
        p.error(f"no file {path}")
    if args.watch:
        return watch(
            path, lambda: _grade(args.number, path, console, home, args.limit), console, home
        )
    counted: list[int] = []
    try:
        counted.append(_grade(args.number, path, console, home, args.limit))
    except* KeyboardInterrupt:  # Ctrl-C: the check stops, as a run of the course does
        print("interrupted", file=sys.stderr)
    if not counted:
        return _leave(130, console)
    return _leave(counted[0], console)


def _grade(number: int, path: Path, console: Console, home: Path | None, limit: float) -> int:
    """Import the file at ``path`` afresh and run step ``number``'s laws on it, telling each:
    0 when every law passed, 1 when one failed or the file does not import."""
    try:
        module = load(path, number)
    except (Exception, SystemExit) as exc:  # the reader's file: its error is the answer
        console.print(
            f"{_shown(path, home)} does not import: {describe(exc)}", markup=False, soft_wrap=True
        )
        return 1
    record = record_of(module, number)
    if record is None:
        console.print(
            f"{_shown(path, home)} has no supervise (or stream) to check",
            markup=False,
            soft_wrap=True,
        )
        return 1
    _say(console, f"step {number}'s laws on {_shown(path, home)}, on virtual time:", 0)
    passed, total = check(number, module, console, record=record, limit=limit)
    console.print(f"{passed} of {total} laws passed", markup=False, soft_wrap=True, style="bold")
    return 0 if passed == total else 1


def pause(seconds: float) -> None:
    """Wait ``seconds`` of real time between two looks at a watched file."""
    time.sleep(seconds)


def _state(path: Path) -> tuple[int, int] | None:
    """What tells a save of ``path``: its modification time and size (None while it is gone,
    as an editor may leave it for a moment while it saves)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def watch(
    path: Path,
    grade: Callable[[], int],
    console: Console,
    home: Path | None = None,
    sleep: Callable[[float], None] | None = None,
) -> int:
    """``check --watch``: ``grade()`` now, then again each time the file at ``path`` is saved,
    looking at it every ``POLL`` seconds (with ``sleep``: `pause` by default); between two
    checks it says that it waits. Only Ctrl-C ends it, with ``interrupted`` and status 130."""
    nap = sleep or pause
    seen = _state(path)
    try:
        while True:
            grade()
            again = "the check runs again when you save it (Ctrl-C ends it)"
            console.print(
                f"watching {_shown(path, home)}: {again}",
                markup=False,
                soft_wrap=True,
                style="dim",
            )
            while (now := _state(path)) == seen or now is None:
                nap(POLL)
            seen = now
    except* KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    return _leave(130, console)


def sample(number: int, width: int = 88) -> str:
    """The exercises page's sample, from real runs: ``exercise N``, ``check N`` and ``check N
    --hint`` run in a fresh ``exercises/`` directory, each command with what it printed, as
    markdown."""
    blocks = []
    with tempfile.TemporaryDirectory() as temporary:
        home = Path(temporary) / "exercises"
        for argv in (
            ["exercise", str(number)],
            ["check", str(number)],
            ["check", str(number), "--hint"],
        ):
            out = io.StringIO()
            main(argv, Console(file=out, width=width, color_system=None, highlight=False), home)
            printed = "\n".join(line.rstrip() for line in out.getvalue().strip("\n").splitlines())
            blocks.append(f"```console\n$ python -m lessons {' '.join(argv)}\n{printed}\n```\n")
    return "\n".join(blocks)
