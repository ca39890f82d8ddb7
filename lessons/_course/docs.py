"""The docs site's generated parts, made from real runs at build time, and its mkdocs hooks.

``mkdocs.yml`` loads this file as a hook. Before every build it reruns each step's demos through
the same code path as ``python -m lessons --virtual`` (`lessons._course.runner.run_demo` on
``trio.testing.MockClock``) and writes, under ``docs/generated/`` (never committed):

- ``steps/<step>/<demo>.svg``: the run's timeline (`trio_supervisor.timeline.render_svg`),
  drawn from the same trace as the terminal timeline it prints;
- ``steps/<step>.md``: the markdown a step page includes, the SVGs inlined and the terminal output,
  after the "dispatch" player's container (`lessons._course.dispatch`);
- ``steps/<step>/dispatch.json``: the runs that player replays, recorded on virtual time;
- ``steps/<step>.idea.md``: the step's docstring as prose (its idea, what is still wrong);
- ``steps/<step>.code.md``: the fenced block that includes the step's code, from the line after
  its docstring, with the code lines that changed since the step before highlighted (in Part II,
  where a step's diff against the step before is not its lesson, the lines it marks with a
  ``# step NN:`` comment, NN its own number; see `marked_lines`);
- ``steps/<step>.diff``: the step's code against the code of the step before it;
- ``course.md``: the home page's list of steps, from the steps' docstrings;
- ``laws/smallest-leak.md``: a real Hypothesis search for latencies that make step 2 return its
  results out of plan order, shrunk to the smallest, with its timeline;
- ``exercises/sample.md``: what the exercises' commands print on step 4's untouched starter.

It also fills the nav's ``Course`` section (after the primer) with one page per step found by
``lessons._course.steps.steps`` and adds the generated ``tests.md`` page, a section per test
module with its laws and each test's code folded until opened (the laws page links there); on
the laws page it follows each link to a Hypothesis test with how many inputs that test draws,
read from the test. Files are written only when the code they come from changed, so ``mkdocs
serve`` does not rebuild forever, and two builds draw byte-identical SVGs.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import html
import inspect
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
import trio.testing
from hypothesis import find, settings
from hypothesis import strategies as st
from rich.console import Console

from lessons._course import exercises, laws, probes
from lessons._course.demos import Demo
from lessons._course.dispatch import FILE as PLAYER_DATA
from lessons._course.dispatch import player
from lessons._course.runner import (
    Run,
    demos,
    final_statuses,
    parser,
    round_sections,
    run_demo,
    show,
    show_header_to,
)
from lessons._course.steps import load_step, part_two, step_number, step_path, steps
from trio_supervisor import Aggregate
from trio_supervisor.timeline import render_svg

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
DOCS = ROOT / "docs"
GENERATED = DOCS / "generated"
TESTS = ROOT / "tests"
#: Where the Makefile puts mermaid.min.js, vendored from its npm package (see ``make docs``).
MERMAID = GENERATED / "vendor" / "mermaid.min.js"
WIDTH = 88  # terminal columns of the sample output, as in the steps' docstrings
COURSE = "Course"  # the nav section this hook fills with the step pages
SAMPLE, SAMPLE_STEP = "exercises/sample.md", 4  # the exercises page's sample: step 4's exercise


# -- which lines a step changed ----------------------------------------------------------------


def changed_lines(previous: str, current: str) -> list[int]:
    """The 1-based numbers of ``current``'s lines that differ from ``previous`` (a line diff).
    Lines only deleted have nothing to highlight."""
    matcher = difflib.SequenceMatcher(
        None, previous.splitlines(), current.splitlines(), autojunk=False
    )
    changed: list[int] = []
    for tag, _, _, first, last in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed.extend(range(first + 1, last + 1))
    return changed


def code_start(source: str) -> int:
    """The number of the first line of ``source`` after its module docstring (and the blank
    lines that follow it): where a step page's code begins. 1 for a module without one."""
    tree = ast.parse(source)
    start = 1
    if tree.body and isinstance(tree.body[0], ast.Expr):
        value = tree.body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            assert tree.body[0].end_lineno is not None
            start = tree.body[0].end_lineno + 1
    lines = source.splitlines()
    while start <= len(lines) and not lines[start - 1].strip():
        start += 1
    return start


def code_of(source: str) -> list[str]:
    """The lines of ``source`` from `code_start` on: its code, without the docstring."""
    return source.splitlines()[code_start(source) - 1 :]


def code_changes(previous: str, current: str) -> list[int]:
    """The line numbers, in ``current``'s file, of the code lines that differ from the code of
    ``previous``: the lines a step page highlights. Docstrings are prose and blank lines are
    nothing, so neither is ever highlighted."""
    offset = code_start(current) - 1
    before, after = code_of(previous), code_of(current)
    changed = changed_lines("\n".join(before), "\n".join(after))
    return [offset + line for line in changed if after[line - 1].strip()]


def format_lines(lines: list[int]) -> str:
    """Line numbers as ``hl_lines`` writes them: ``[1, 2, 3, 7]`` -> ``"1-3 7"``."""
    ranges: list[str] = []
    numbers = sorted(set(lines))
    start = 0
    for index, number in enumerate(numbers):
        if index + 1 == len(numbers) or numbers[index + 1] != number + 1:
            first = numbers[start]
            ranges.append(str(first) if first == number else f"{first}-{number}")
            start = index + 1
    return " ".join(ranges)


def parse_lines(text: str) -> list[int]:
    """The inverse of `format_lines`: ``"1-3 7"`` -> ``[1, 2, 3, 7]``.

    Raises:
      ValueError: if an item is not a number or a ``first-last`` range with first <= last.
    """
    lines: list[int] = []
    for item in text.split():
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if match is None:
            raise ValueError(f"hl_lines items are numbers or ranges like 3-5, got {item!r}")
        first, last = int(match[1]), int(match[2] or match[1])
        if last < first:
            raise ValueError(f"a hl_lines range runs upwards, got {item!r}")
        lines.extend(range(first, last + 1))
    return sorted(set(lines))


def previous_step(name: str) -> str | None:
    """The step before ``name`` in the course, None for the first."""
    names = list(steps().values())
    index = names.index(name)
    return names[index - 1] if index > 0 else None


def next_step(name: str) -> str | None:
    """The step after ``name`` in the course, None for the last."""
    names = list(steps().values())
    index = names.index(name)
    return names[index + 1] if index + 1 < len(names) else None


MARK = re.compile(r"#\s*step (?P<number>\d+):")
"""A comment that marks its line as the idea of step ``number`` (Part II's highlights)."""


def marked_lines(source: str, number: int) -> list[int]:
    """The numbers of ``source``'s lines whose comment marks them as step ``number``'s idea
    (``# step 11: ...``), read with ``tokenize``: a ``#`` inside a string marks nothing."""
    lines = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            match = MARK.match(token.string)
            if match is not None and int(match["number"]) == number:
                lines.append(token.start[0])
    return lines


def step_changes(name: str) -> list[int]:
    """The code lines a step's page highlights: in Part I those of step ``name``'s file that
    differ from the step before (none for the first: it has nothing to differ from, so its page
    highlights nothing); in Part II, whose steps build on the library rather than on the step
    before, the lines it marks as its idea (see `marked_lines`)."""
    if part_two(name):
        return marked_lines(step_path(name).read_text(), step_number(name))
    before = previous_step(name)
    if before is None:
        return []
    return code_changes(step_path(before).read_text(), step_path(name).read_text())


def code_block(name: str) -> str:
    """The fenced block a step page shows its code in: the step's file from the line after its
    docstring to its end, included as it is, with the lines that changed since the step before
    highlighted (``hl_lines`` counts from the block's first line, ``linenums`` shows the file's)."""
    source = step_path(name).read_text()
    start, end = code_start(source), len(source.splitlines())
    relative = f"lessons/{name}.py"
    highlighted = [line - start + 1 for line in step_changes(name)]
    marks = f' hl_lines="{format_lines(highlighted)}"' if highlighted else ""
    return (
        f'```python title="{relative}" linenums="{start}"{marks}\n'
        f'--8<-- "{relative}:{start}:{end}"\n'
        "```\n"
    )


def code_diff(name: str) -> str:
    """Step ``name``'s code against the code of the step before, as a unified diff whose line
    numbers are the files' own (the docstrings are left out: pages show them as prose)."""
    before = previous_step(name)
    if before is None:
        return ""
    old, new = step_path(before).read_text(), step_path(name).read_text()
    matcher = difflib.SequenceMatcher(None, code_of(old), code_of(new), autojunk=False)
    shift_old, shift_new = code_start(old) - 1, code_start(new) - 1
    lines = [f"--- lessons/{before}.py\n", f"+++ lessons/{name}.py\n"]
    for group in matcher.get_grouped_opcodes(3):
        first_old, last_old = group[0][1] + shift_old, group[-1][2] + shift_old
        first_new, last_new = group[0][3] + shift_new, group[-1][4] + shift_new
        old_range = f"{first_old + 1},{last_old - first_old}"
        new_range = f"{first_new + 1},{last_new - first_new}"
        lines.append(f"@@ -{old_range} +{new_range} @@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [f" {line}\n" for line in code_of(old)[i1:i2]]
                continue
            lines += [f"-{line}\n" for line in code_of(old)[i1:i2]]
            lines += [f"+{line}\n" for line in code_of(new)[j1:j2]]
    return "".join(lines)


def title(name: str) -> str:
    """A step's title, the first sentence of its docstring: ``Step 3: a capacity limiter``."""
    text = ast.get_docstring(ast.parse(step_path(name).read_text())) or ""
    return text.split(". ")[0].replace("``", "`").strip()


def idea(name: str) -> str:
    """A step's docstring as the prose of its page: its idea, what it adds, and what is still
    wrong (as a warning that links to the step that fixes it). A sample run in the docstring is
    left out: the page shows the real runs below its code."""
    text = ast.get_docstring(ast.parse(step_path(name).read_text())) or ""
    paragraphs = []
    for paragraph in text.split("\n\n")[1:]:
        if paragraph.startswith("Sample run"):
            break
        paragraphs.append(paragraph.replace("``", "`"))
    first = text.split("\n\n")[0]
    _, _, summary = first.partition(". ")
    parts = [f"**{summary.replace('``', '`').strip()}**"] if summary else []
    for paragraph in paragraphs:
        wrong = paragraph.removeprefix("What is still wrong:")
        if wrong == paragraph:
            parts.append(paragraph)
            continue
        after = next_step(name)
        fix = f"\n\n    Next: [{title(after)}]({after}.md)." if after is not None else ""
        wrong = wrong.strip()
        wrong = wrong[:1].upper() + wrong[1:]
        body = "\n".join(f"    {line.strip()}" for line in wrong.splitlines())
        parts.append(f'!!! warning "What is still wrong"\n\n{body}{fix}')
    return "\n\n".join(parts) + "\n"


# -- the runs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Picture:
    """One demo run of one step: its timeline as SVG and what the terminal showed."""

    demo: Demo
    command: str
    run: Run
    svg: str
    output: str


def slug(demo: Demo) -> str:
    return re.sub(r"[^a-z0-9]+", "-", demo.title.lower()).strip("-")


def step_demos(name: str) -> list[Demo]:
    """The demos ``python -m lessons <n>`` runs step ``name`` on."""
    number = step_number(name)
    return demos(parser().parse_args([str(number)]), number)


def pictures(name: str) -> list[Picture]:
    """Run step ``name`` on every demo, virtually, as ``python -m lessons <n> --virtual`` does."""
    number = step_number(name)
    command = f"python -m lessons {number} --virtual"
    args = parser().parse_args([str(number), "--virtual"])
    made = []
    for demo in step_demos(name):
        out = io.StringIO()
        console = Console(file=out, width=WIDTH, color_system=None, highlight=False)
        run = run_demo(name, demo, args, before=show_header_to(console), live=console)
        assert run.trace is not None
        show(console, run)
        output = "\n".join(line.rstrip() for line in out.getvalue().strip("\n").splitlines())
        title = f"{name} · {demo.title}: one row per slot, waiting then running, on virtual time"
        sections = round_sections(run)  # a re-planning step's rounds, headed by their decisions
        svg = render_svg(run.trace, final_statuses(run), title=title, sections=sections)
        made.append(Picture(demo, command, run, svg, output + "\n"))
    return made


def demo_does(demo: Demo) -> str:
    """What the demo's simulated sub-agent (and caller) do on purpose, as a sentence."""

    def slots(chosen: Iterable[int]) -> str:
        return ", ".join(str(slot) for slot in sorted(chosen))

    said = []
    if demo.fail:
        said.append(f"fails slot {slots(demo.fail)}")
    if demo.hang:
        said.append(f"hangs on slot {slots(demo.hang)}")
    said += [f"fails the first {k} calls of slot {slot}" for slot, k in sorted(demo.flaky.items())]
    said += [f"takes {t:.2f}s on slot {slot}" for slot, t in sorted(demo.slow.items())]
    sentence = f" The simulated sub-agent {', '.join(said)} on purpose." if said else ""
    if demo.take is not None:
        sentence += f" The caller leaves the stream after {demo.take} results."
    return sentence


def _fragment(name: str, made: list[Picture]) -> str:
    """The markdown a step page includes: per demo, what ran, the timeline, the terminal."""
    parts = []
    for picture in made:
        run = picture.run
        assert run.trace is not None
        options = "".join(f", `{key}={value}`" for key, value in run.options.items())
        failing = demo_does(picture.demo)
        if run.error is not None:
            outcome = f"The run raised `{run.error}`."
        elif run.replanned is not None:
            rounds = len(run.replanned.ledger.rounds)
            outcome = f"The run answered after {rounds} rounds: {run.replanned.reason}."
        else:
            assert run.aggregate is not None
            outcome = f"The run returned {len(run.aggregate.results)} results."
        svg_file = f"../generated/steps/{name}/{slug(picture.demo)}.svg"
        parts.append(
            f"### {picture.demo.title}\n\n"
            f"The task *{picture.demo.task}*, planned into {len(run.plan)} subtasks{options}."
            f"{failing} Wall time {run.trace.wall:.2f}s. {outcome} "
            f"([SVG file]({svg_file}))\n\n"
            f'<figure class="timeline" data-step="{name}" data-demo="{slug(picture.demo)}">\n'
            f"{picture.svg}"
            f"<figcaption>The timeline of <code>{picture.command}</code> on this task: rows in "
            f"plan order, <em>done #</em> is the completion order.</figcaption>\n</figure>\n\n"
            f'???+ example "What `{picture.command}` prints for this task"\n\n'
            f"    ```text\n"
            + "".join(f"    {line}\n" if line else "\n" for line in picture.output.splitlines())
            + "    ```\n"
        )
    return "\n".join(parts)


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it already holds exactly that; True if written."""
    data = text.encode()
    if path.exists() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def _markdown(text: str) -> str:
    """A docstring's reST inline code as markdown, its lines joined."""
    return " ".join(text.replace("``", "`").split())


def course() -> str:
    """The home page's list of steps, from their docstrings: title, idea, what is still wrong."""
    items = []
    for name in steps().values():
        doc = step_path(name).read_text()
        tree = ast.parse(doc)
        text = ast.get_docstring(tree) or ""
        first = text.split("\n\n")[0]
        title, _, idea = first.partition(". ")
        wrong = next(
            (part for part in text.split("\n\n") if part.startswith("What is still wrong:")), ""
        ).removeprefix("What is still wrong:")
        items.append(
            f"- [**{title}**](steps/{name}.md): {_markdown(idea)}"
            + (f" *Still wrong:* {_markdown(wrong)}" if wrong else "")
        )
    return "\n".join(items) + "\n"


def pages() -> list[str]:
    """The step pages the site shows, in course order: one per step."""
    return list(steps().values())


def generate(out: Path = GENERATED) -> list[Path]:
    """Write every step's generated files under ``out``; returns the paths, written or not."""
    paths = [out / "course.md", out / "laws" / "smallest-leak.md", out / SAMPLE]
    write_if_changed(paths[0], course())
    write_if_changed(paths[1], leak_page(find_leak(steps()[2])))
    write_if_changed(paths[2], exercises.sample(SAMPLE_STEP, width=WIDTH))
    for name in steps().values():
        made = pictures(name)
        for picture in made:
            path = out / "steps" / name / f"{slug(picture.demo)}.svg"
            write_if_changed(path, picture.svg)
            paths.append(path)
        recorded, placed = player(name)
        for path, text in (
            (out / "steps" / name / PLAYER_DATA, recorded),
            (out / "steps" / f"{name}.md", placed + "\n" + _fragment(name, made)),
            (out / "steps" / f"{name}.diff", code_diff(name)),
            (out / "steps" / f"{name}.code.md", code_block(name)),
            (out / "steps" / f"{name}.idea.md", idea(name)),
        ):
            write_if_changed(path, text)
            paths.append(path)
    return paths


# -- the laws page: the smallest input that breaks step 2 ------------------------------------

#: How many inputs Hypothesis may draw while it looks for a leak, as in the test of the law.
SEARCH = 500


def exact_latencies() -> st.SearchStrategy[list[float]]:
    """Distinct latencies in whole 1/32 s (exact in binary), in any order: what the law of plan
    order draws (``lessons/_course/laws.py``), so the page shows the same search."""
    return probes.exact_latencies()


@dataclass(frozen=True)
class Leak:
    """A Hypothesis search for latencies whose results come back out of plan order, and where
    it ended: every input it ran, in order, whether each leaked, and the smallest leak."""

    step: str
    runs: list[tuple[list[float], bool]]
    smallest: list[float]

    @property
    def first(self) -> list[float]:
        """The first input that leaked, before any shrinking."""
        return next(latencies for latencies, leaked in self.runs if leaked)

    @property
    def shrinking(self) -> tuple[int, int]:
        """Of the runs after the first leak (Hypothesis shrinking it), how many there were and
        how many of them still leaked."""
        start = next(index for index, (_, leaked) in enumerate(self.runs) if leaked) + 1
        after = self.runs[start:]
        return len(after), sum(leaked for _, leaked in after)


def find_leak(name: str) -> Leak:
    """Let Hypothesis search, on virtual time, for latencies that make step ``name`` return its
    results out of plan order, and shrink them to the smallest such input. Derandomized, so
    every build finds the same inputs in the same order.

    Raises:
      hypothesis.errors.NoSuchExample: if no input leaks: the step keeps plan order.
    """
    module = load_step(name)
    parameters = inspect.signature(module.supervise).parameters
    options = {"max_workers": 2} if "max_workers" in parameters else {}
    runs: list[tuple[list[float], bool]] = []

    def leaks(latencies: list[float]) -> bool:
        plan = [f"s{slot}" for slot in range(len(latencies))]
        by_subtask = dict(zip(plan, latencies, strict=True))

        async def worker(subtask: str) -> str:
            await trio.sleep(by_subtask[subtask])
            return f"out:{subtask}"

        async def run() -> Aggregate[str, str]:
            result: Aggregate[str, str] = await module.supervise("; ".join(plan), worker, **options)
            return result

        aggregate = trio.run(run, clock=trio.testing.MockClock(autojump_threshold=0))
        leaked = [result.subtask for result in aggregate.results] != plan
        runs.append((list(latencies), leaked))
        return leaked

    found = find(
        exact_latencies(),
        leaks,
        settings=settings(database=None, max_examples=SEARCH, derandomize=True),
    )
    return Leak(name, runs, found)


def _why(latencies: list[float]) -> str:
    """Why these latencies leak, when they are the two the search ends on."""
    if len(latencies) == 2 and latencies[0] > latencies[1]:
        return (
            "Subtask 0 is the slower, so its result is appended second, and the two come back "
            "swapped:"
        )
    return "Their results come back out of plan order:"


def _least(latencies: list[float]) -> str:
    """Whether these are the smallest distinct latencies the strategy can draw, as a clause."""
    drawn = sorted(round(latency * 32) for latency in latencies)
    return ", the smallest distinct ones it can draw" if drawn == [1, 2][: len(drawn)] else ""


def _seconds(latencies: list[float]) -> str:
    """Latencies as the strategy draws them, whole 1/32 s: ``[0.0625] -> "2/32 s"``."""
    return ", ".join(f"{round(latency * 32)}/32 s" for latency in latencies)


def leak_page(leak: Leak) -> str:
    """The markdown the laws page includes: the search in numbers, the smallest leak drawn as a
    timeline by the same code as every step's demos, and what the runner prints for it."""
    smallest = leak.smallest
    number = step_number(leak.step)
    demo = Demo(
        "the smallest leak",
        "; ".join(f"subtask {slot}" for slot in range(len(smallest))),
        slow=dict(enumerate(smallest)),
    )
    args = parser().parse_args([str(number), "--virtual"])
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system=None, highlight=False)
    run = run_demo(leak.step, demo, args, before=show_header_to(console), live=console)
    assert run.trace is not None
    show(console, run)
    output = "\n".join(line.rstrip() for line in out.getvalue().strip("\n").splitlines())
    title = f"{leak.step} on the smallest leak Hypothesis found, on virtual time"
    svg = render_svg(run.trace, final_statuses(run), title=title)
    tried, leaked = leak.shrinking
    return (
        f"While this site was built, Hypothesis ran step {number}'s `supervise` on "
        f"{len(leak.runs)} inputs. The first that leaked had {len(leak.first)} latencies "
        f"({_seconds(leak.first)}). It then shrank it: of the {tried} simpler inputs it tried "
        f"next (fewer latencies, smaller numbers), {leaked} still leaked, and it went on from "
        f"each of those, until no simpler input leaked: **{len(smallest)} latencies, "
        f"{_seconds(smallest)}**{_least(smallest)}. {_why(smallest)}\n\n"
        f'<figure class="timeline" data-step="{leak.step}" data-demo="smallest-leak">\n'
        f"{svg}"
        f"<figcaption>Step {number} on the smallest leak: rows in plan order, <em>done #</em> "
        "is the completion order, and the results below follow it.</figcaption>\n</figure>\n\n"
        f'???+ example "What step {number} returns for it"\n\n'
        "    ```text\n"
        + "".join(f"    {line}\n" if line else "\n" for line in output.splitlines())
        + "    ```\n"
    )


# -- the tests page ----------------------------------------------------------------------------


@dataclass(frozen=True)
class CodeOfTest:
    """Where one test function is: its file, qualified name, lines and docstring's first line."""

    path: Path
    name: str
    first: int
    last: int
    summary: str

    @property
    def anchor(self) -> str:
        """The test's anchor on the tests page: ``<module>.<name>``."""
        return f"{self.path.stem}.{self.name}"


def find_tests(root: Path = TESTS) -> list[CodeOfTest]:
    """Every ``test_*`` function in the ``test_*.py`` files under ``root`` (and in their ``Test*``
    classes), by module name."""
    found = []
    for path in sorted(root.rglob("test_*.py"), key=lambda path: path.name):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            scopes: list[tuple[str, ast.stmt]] = [("", node)]
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                scopes = [(f"{node.name}.", child) for child in node.body]
            for prefix, item in scopes:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    item.name.startswith("test_")
                ):
                    first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                    assert item.end_lineno is not None
                    doc = (ast.get_docstring(item) or "").strip().split("\n\n")[0]
                    summary = " ".join(doc.split())
                    found.append(
                        CodeOfTest(path, prefix + item.name, first, item.end_lineno, summary)
                    )
    return found


def module_docstring(path: Path) -> str:
    """The docstring of test module ``path``, as written ("" if it has none)."""
    return ast.get_docstring(ast.parse(path.read_text(), filename=str(path))) or ""


def page_of_tests(root: Path = TESTS) -> str:
    """The generated ``tests.md``: a section per test module with its laws, each test's code
    folded until opened.

    The page opens with a table of the modules (each one's first docstring line and how many
    tests it has). Each module's section says its docstring, then lists its tests: each a
    ``<details>`` block whose summary is the test's name (the law it checks) and its docstring's
    first paragraph, and whose body includes the test's code from its file by line range. The
    anchor ``#<module>.<test>`` that the laws page links to is inside the block: a browser
    that follows the link opens the block (Chromium, Firefox and Safari reveal a closed
    ``<details>`` that holds the target of a link).
    """
    found = find_tests(root)
    by_module: dict[Path, list[CodeOfTest]] = {}
    for test in found:
        by_module.setdefault(test.path, []).append(test)
    lines = [
        "# The tests",
        "",
        "Every law on [the laws page](laws.md) is checked by a test. Here is every test in "
        "`tests/`, read from the files when this site was built: a section per module says what "
        "its tests check, and each test is named by its law; open one to read its code. Run them "
        "all with `make test`.",
        "",
        "| Module | What its tests check | Tests |",
        "| --- | --- | ---: |",
    ]
    for path, tests in by_module.items():
        first = module_docstring(path).split("\n\n")[0]
        lines.append(f"| [`{path.name}`](#{path.stem}) | {_prose(first)} | {len(tests)} |")
    lines.append("")
    for path, tests in by_module.items():
        relative = path.relative_to(ROOT).as_posix()
        lines += [f"## `{relative}` {{#{path.stem}}}", ""]
        lines += [_prose(paragraph) + "\n" for paragraph in module_docstring(path).split("\n\n")]
        for test in tests:
            said = f": {_prose(test.summary)}" if test.summary else ""
            lines += [
                '<details class="test" markdown>',
                f"<summary><code>{html.escape(test.name)}</code>{said}</summary>",
                f'<span id="{test.anchor}"></span>',
                "",
                f'```python linenums="{test.first}" title="{relative}"',
                f'--8<-- "{relative}:{test.first}:{test.last}"',
                "```",
                "",
                "</details>",
                "",
            ]
    return "\n".join(lines)


INLINE_CODE = re.compile(r"``(?P<code>.+?)``(?!`)")


def _prose(text: str) -> str:
    """A docstring's paragraph as one line of HTML that markdown leaves as it is: its reST
    inline code (````code````, which may hold backticks) as ``<code>``, the rest escaped, so that
    no docstring can open a link, a table cell or a tag."""
    parts, at = [], 0
    text = " ".join(text.split())
    for match in INLINE_CODE.finditer(text):
        parts.append(html.escape(text[at : match.start()], quote=False))
        code = html.escape(match["code"], quote=False).replace("`", "&#96;")
        parts.append(f"<code>{code}</code>")
        at = match.end()
    parts.append(html.escape(text[at:], quote=False))
    said = "".join(parts)
    for character in "|[*":
        said = said.replace(character, f"&#{ord(character)};")
    return said


def _function(test: CodeOfTest) -> ast.FunctionDef | ast.AsyncFunctionDef:
    tree = ast.parse(test.path.read_text(), filename=str(test.path))
    scope: list[ast.stmt] = tree.body
    *classes, name = test.name.split(".")
    for class_name in classes:
        scope = next(
            node.body
            for node in scope
            if isinstance(node, ast.ClassDef) and node.name == class_name
        )
    return next(
        node
        for node in scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    )


def _max_examples(call: ast.expr) -> int | None:
    if isinstance(call, ast.Call):
        for keyword in call.keywords:
            value = keyword.value
            if keyword.arg == "max_examples" and isinstance(value, ast.Constant):
                assert isinstance(value.value, int)
                return value.value
    return None


def drawn_inputs(test: CodeOfTest) -> str | None:
    """What a test's Hypothesis draws, in words: ``checked on 60 drawn inputs`` for a ``@given``
    test, or one that verifies a law of the course (``laws.PLAN_ORDER.verify(step)``: the law's
    ``budget``) (its ``max_examples``, Hypothesis's default of 100 if unset; ``per step`` when it
    is parametrized over steps), ``a search of up to 500 drawn inputs`` for one that calls
    ``find``; None for a test that draws nothing."""
    function = _function(test)
    names = {
        ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        for decorator in function.decorator_list
    }
    per_step = any(
        isinstance(decorator, ast.Call)
        and ast.unparse(decorator.func).endswith("parametrize")
        and isinstance(decorator.args[0], ast.Constant)
        and "step" in str(decorator.args[0].value).split(",")
        for decorator in function.decorator_list
    )
    each = " per step" if per_step else ""
    for node in ast.walk(function):  # a law of the course, which the test verifies on a step
        called = ast.unparse(node.func) if isinstance(node, ast.Call) else ""
        law = getattr(laws, called.removeprefix("laws.").removesuffix(".verify"), None)
        if re.fullmatch(r"laws\.\w+\.verify", called) and isinstance(law, laws.Law) and law.draws:
            return f"checked on {law.budget.max_examples} drawn inputs{each}"
    if "given" in names:
        counts = [_max_examples(decorator) for decorator in function.decorator_list]
        count = next((number for number in counts if number is not None), 100)
        return f"checked on {count} drawn inputs{each}"
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "find":
            counts = [_max_examples(keyword.value) for keyword in node.keywords]
            count = next((number for number in counts if number is not None), 100)
            return f"found by a search of up to {count} drawn inputs{each}"
    return None


TEST_LINK = re.compile(r"\[`(?P<text>[^`]+)`\]\(tests\.md#(?P<module>test_\w+)\.(?P<name>[\w.]+)\)")


def with_drawn_inputs(markdown: str, root: Path = TESTS) -> str:
    """``markdown`` with each link to a Hypothesis test followed by what it draws (see
    `drawn_inputs`), read from the test as it is: the laws page never states a count that
    its tests do not use. Links to tests that do not exist are left as they are."""
    found = {test.anchor: test for test in find_tests(root)}

    def annotate(match: re.Match[str]) -> str:
        test = found.get(f"{match['module']}.{match['name']}")
        said = None if test is None else drawn_inputs(test)
        return match[0] if said is None else f"{match[0]} ({said})"

    return TEST_LINK.sub(annotate, markdown)


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
            item[COURSE] = [*kept, *(f"steps/{name}.md" for name in pages())]
            break
    else:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"mkdocs.yml's nav needs a '{COURSE}: [...]' section for the step pages")
    return config


def inputs_digest() -> str:
    """A digest of the code the generated files come from: the lessons, the course's machinery
    (its runner, laws and exercises) and the library."""
    digest = hashlib.sha256()
    for path in sorted([*LESSONS.rglob("*.py"), *(ROOT / "src").rglob("*.py")]):
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
        *(out / "steps" / f"{name}.md" for name in steps().values()),
        *(out / "steps" / name / PLAYER_DATA for name in steps().values()),
    ]
    if stamp.exists() and stamp.read_text() == digest and all(path.exists() for path in wanted):
        return
    generate(out)
    write_if_changed(stamp, digest)


def on_page_markdown(markdown: str, page: Page, **_: Any) -> str:
    """On the laws page, say after each link to a Hypothesis test how many inputs it draws."""
    if page.file.src_uri == "laws.md":
        return with_drawn_inputs(markdown)
    return markdown


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    """Add the generated ``tests.md`` page."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "tests.md", content=page_of_tests()))
    return files
