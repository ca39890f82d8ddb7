"""A step page's generated parts: its idea, its code with the lines it changed highlighted, its
diff against the step before, the runs of its demos (timelines and terminal output), and the
home page's list of steps."""

from __future__ import annotations

import ast
import copy
import dataclasses
import difflib
import html
import inspect
import io
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from lessons._course import exercises
from lessons._course.arguments import parser
from lessons._course.demos import Demo, demos
from lessons._course.running import Run, final_statuses, run_demo
from lessons._course.showing import ConsoleWatch, round_sections, show, spaced
from lessons._course.steps import load_step, part_two, step_number, step_path, steps
from tools.docs.paths import WIDTH
from trio_supervisor import Status, Trace
from trio_supervisor.timeline import render_svg

if TYPE_CHECKING:
    pass


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


def as_read_from(before: str, current: str) -> str:
    """The code of step ``before`` as the step after it (source ``current``) changes it: where
    ``before`` only imports a function or class from an earlier step (``from lessons.step27_...
    import supervise as supervise  # unchanged since step 27``) that ``current`` defines for
    itself, its definition as the reader last saw it (``inspect.getsource``, as the exercises'
    starters put a definition back) stands where the import stood (after it, if the import
    brings other names too). So a step that redefines an inherited function is compared with
    that function, not with a line that imports it: its diff and highlights are the lines it
    changed in it, the step's own idea."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    redefined = {node.name for node in ast.parse(current).body if isinstance(node, kinds)}
    source = step_path(before).read_text()
    lines = source.splitlines()
    for statement in reversed(ast.parse(source).body):  # from the bottom: lines stay numbered
        if not isinstance(statement, ast.ImportFrom) or statement.module is None:
            continue
        if not statement.module.startswith("lessons.step"):
            continue  # the library's, not a step's: never shown as a step's code
        names = [alias.asname or alias.name for alias in statement.names]
        shown = [name for name in names if name in redefined]
        if not shown:
            continue
        module = load_step(before)
        bodies = [textwrap.dedent(inspect.getsource(getattr(module, name))) for name in shown]
        assert statement.end_lineno is not None
        kept = (
            [] if len(shown) == len(names) else lines[statement.lineno - 1 : statement.end_lineno]
        )
        expanded = [*kept, *"\n\n".join(body.rstrip("\n") + "\n" for body in bodies).splitlines()]
        lines[statement.lineno - 1 : statement.end_lineno] = expanded
    return "\n".join(lines) + "\n"


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


def step_changes(name: str) -> list[int]:
    """The code lines a step's page highlights: those of step ``name``'s file that differ from
    the step before (none for the first: it has nothing to differ from, so its page highlights
    nothing). Part II too: each of its steps imports the step before and adds one idea, so the
    diff is its lesson; a function it redefines is compared with the one the step before
    imports (`as_read_from`)."""
    before = previous_step(name)
    if before is None:
        return []
    current = step_path(name).read_text()
    return code_changes(as_read_from(before, current), current)


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
    new = step_path(name).read_text()
    old = as_read_from(before, new)
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
    wrong (as a warning that links to the step that fixes it), then its idea run (`comparison`):
    the step before and this step on one task. A sample run in the docstring is left out: the
    page shows the real runs below its code."""
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
    return "\n\n".join(parts) + "\n\n" + comparison(name)


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


def demo_runs(name: str) -> list[tuple[str, Demo]]:
    """What step ``name``'s page draws, in order: each demo on the step, and after a demo that
    shows a flaw of the step before (``against``), the same demo on that step."""
    runs = []
    for demo in step_demos(name):
        runs.append((name, demo))
        if demo.against is not None:  # the same demo on the step before, whose flaw it shows
            before = dataclasses.replace(demo, title=f"{demo.title} (on step {demo.against})")
            runs.append((steps()[demo.against], before))
    return runs


def picture(ran: str, demo: Demo, command: str) -> Picture:
    """Run step ``ran`` on ``demo``, virtually, as ``command`` (``python -m lessons <n>
    --virtual``) does: its timeline and what the terminal shows."""
    args = parser().parse_args([str(step_number(ran)), "--virtual"])
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system=None, highlight=False)
    run = run_demo(ran, demo, args, ConsoleWatch(console))
    assert run.trace is not None
    show(console, run)
    output = "\n".join(line.rstrip() for line in out.getvalue().strip("\n").splitlines())
    title = f"{ran} · {demo.title}: one row per slot, waiting then running, on virtual time"
    sections = round_sections(run)  # a re-planning step's rounds, headed by their decisions
    svg = fitted(run.trace, final_statuses(run), title=title, sections=sections)
    return Picture(demo, command, run, svg, output + "\n")


COLUMN = 832  # pixels: the content column of a page at 1280 px, which a timeline fits
AXIS = 320.0  # pixels: a timeline's time axis where the column has room for it
NARROWEST_AXIS = 160.0  # pixels: the narrowest axis a timeline is drawn with to fit the column


def fitted(trace: Trace, final: Mapping[int, Status], **options: Any) -> str:
    """``render_svg`` of ``trace`` no wider than `COLUMN`: its time axis `AXIS` wide, or as
    much narrower (to `NARROWEST_AXIS`) as its labels and end column leave room for."""
    svg = render_svg(trace, final, width=AXIS, **options)
    found = re.search(r'viewBox="0 0 ([\d.]+) ', svg)
    if found is not None and float(found.group(1)) > COLUMN:
        axis = max(NARROWEST_AXIS, AXIS - (float(found.group(1)) - COLUMN))
        svg = render_svg(trace, final, width=axis, **options)
    return svg


def pictures(name: str) -> list[Picture]:
    """Run step ``name`` on every demo, virtually, as ``python -m lessons <n> --virtual`` does."""
    command = f"python -m lessons {step_number(name)} --virtual"
    return [picture(ran, demo, command) for ran, demo in demo_runs(name)]


def outcome(run: Run) -> str:
    """What a run came to, as a sentence: the runner's guard stopping a run that never returns
    is not something the run raised."""
    if run.stopped is not None:
        why = (run.error or "").removeprefix("never returns: ")
        return f"The run never returns ({why}): the runner stopped it at {run.stopped:.2f}s."
    if run.error is not None:
        return f"The run raised `{run.error}`."
    if run.replanned is not None:
        rounds = len(run.replanned.ledger.rounds)
        reason = run.replanned.reason
        if "round" in reason:  # the reason counts them itself
            return f"The run answered: {reason}."
        after = f"{rounds} round" if rounds == 1 else f"{rounds} rounds"
        return f"The run answered after {after}: {reason}."
    assert run.aggregate is not None
    return f"The run returned {len(run.aggregate.results)} results."


def _signature(run: Run) -> tuple[object, ...]:
    """What tells two runs of one demo apart: how they ended, when, and what they returned in
    which order."""
    assert run.trace is not None
    results = [] if run.aggregate is None else run.aggregate.results
    return (
        run.error,
        run.stopped,
        round(run.trace.wall, 2),
        tuple((result.subtask, result.status) for result in results),
    )


def compared(name: str) -> list[Picture]:
    """The runs a step page opens with: one demo on the step before and on this step (this step
    alone for the first). The demo is the one that shows a flaw of the step before (``against``)
    if there is one, else the first of the step's demos whose two runs differ (in how they end,
    when, or in the order of their results), else the first."""
    before = previous_step(name)
    own = step_demos(name)
    command = f"python -m lessons {step_number(name)} --virtual"
    if before is None:
        return [picture(name, own[0], command)]
    earlier = f"python -m lessons {step_number(before)} --virtual"
    candidates = [demo for demo in own if demo.against is not None] + [
        demo for demo in own if demo.against is None
    ]
    first: list[Picture] = []
    for demo in candidates:
        pair = [picture(before, demo, earlier), picture(name, demo, command)]
        first = first or pair
        if _signature(pair[0].run) != _signature(pair[1].run):
            return pair
    return first


#: The widest an opening picture may be, in pixels: two of them side by side, and the gap
#: between them, fit the content column of a page at 1280 px.
COMPARED_WIDTH = 404
#: The narrowest time axis of an opening picture, in pixels: narrower, it is drawn wider than
#: `COMPARED_WIDTH` and the page puts the two pictures one above the other.
COMPARED_AXIS = (80.0, 150.0)


def side_by_side(shown: Picture, axis: float | None = None) -> str:
    """``shown``'s run as a compact timeline (`render_svg`'s ``compact``) no wider than
    `COMPARED_WIDTH`, its time axis as wide as that leaves, within `COMPARED_AXIS` (or
    ``axis`` pixels wide, for a pair drawn on one time scale: see `one_scale`)."""
    run = shown.run
    trace = run.trace
    assert trace is not None
    narrowest, widest = COMPARED_AXIS
    if axis is not None:
        narrowest, widest = min(narrowest, axis), axis

    def drawn(axis: float) -> tuple[str, float]:
        svg = render_svg(
            trace,
            final_statuses(run),
            title=f"{run.step} · {shown.demo.title}: one row per slot, on virtual time",
            sections=round_sections(run),
            width=axis,
            compact=True,
        )
        found = re.search(r'viewBox="0 0 ([\d.]+) ', svg)
        assert found is not None
        return svg, float(found.group(1))

    svg, wide = drawn(widest)
    if wide > COMPARED_WIDTH:
        svg, wide = drawn(max(narrowest, widest - (wide - COMPARED_WIDTH)))
    return svg


def returned_order(made: list[Picture]) -> list[Picture]:
    """The opening pair, each row's label led by the place its result has in what its run
    returned, where the two runs return their results in different orders (step 3 in the order
    they complete, step 4 in plan order): their rows, always in plan order, are otherwise the
    same picture, and the order a run returns is the step's idea. The pair as it is otherwise."""
    orders = [
        None if shown.run.aggregate is None else [r.subtask for r in shown.run.aggregate.results]
        for shown in made
    ]
    if len(made) < 2 or None in orders or orders[0] == orders[1]:
        return made
    if sorted(orders[0] or []) != sorted(orders[1] or []):  # not the same results reordered
        return made
    relabelled = []
    for shown, order in zip(made, orders, strict=True):
        trace = copy.deepcopy(shown.run.trace)
        assert trace is not None
        assert order is not None
        place = {subtask: index for index, subtask in enumerate(order, start=1)}
        for slot in trace.slots:
            if slot.subtask in place:
                slot.subtask = f"{place[slot.subtask]} {slot.subtask}"
        run = dataclasses.replace(shown.run, trace=trace)
        relabelled.append(dataclasses.replace(shown, run=run))
    return relabelled


def one_scale(made: list[Picture]) -> list[float | None]:
    """The time axis of each opening picture, in pixels, so that a second is as wide in both:
    the longer run's axis is as `side_by_side` fits it, the shorter's shrunk in proportion to
    its wall time (never under a fifth of it, so that a near-instant run is still seen)."""
    walls = [picture.run.trace.wall if picture.run.trace else 0.0 for picture in made]
    longest = max(walls)
    if len(made) < 2 or not longest > 0:
        return [None] * len(made)
    widest = COMPARED_AXIS[1]
    return [max(widest / 5, widest * wall / longest) for wall in walls]


def planned(run: Run) -> str:
    """How a run's task was planned, as a caption says it: into N subtasks, or, for a run that
    re-planned, into its first round's and the total its rounds came to."""
    rounds = [] if run.replanned is None else run.replanned.ledger.rounds
    dispatched = [len(done.entries) for done in rounds if done.entries]
    if len(dispatched) > 1:
        return (
            f"planned into {dispatched[0]} subtasks, {sum(dispatched)} after "
            f"{len(dispatched)} rounds"
        )
    return f"planned into {len(run.plan)} subtasks"


def comparison(name: str) -> str:
    """The markdown of a step page's first picture: the same demo on the step before and on this
    step, side by side where the page is wide enough for both, one above the other where not."""
    original = compared(name)
    made = returned_order(original)
    demo = made[-1].demo
    run = made[-1].run
    options = "".join(f", `{key}={value}`" for key, value in run.options.items())
    before = previous_step(name)
    if before is None:
        said = f"The task *{demo.task}*, {planned(run)}{options}."
    else:
        counts = [len(shown.run.plan) for shown in made]
        how = planned(run)
        if counts[0] != counts[-1]:  # a feed pulled, or rounds re-planned, as far as each run got
            how = f"{counts[0]} subtasks on step {step_number(before)} and {counts[-1]} here"
        said = (
            f"The same task, *{demo.task}*, {how}{options}, on "
            f"[step {step_number(before)}]({before}.md) and on this step."
        )
    figures = []
    for shown, axis in zip(made, one_scale(made), strict=True):
        ran = shown.run
        assert ran.trace is not None
        which = "before" if ran.step != name else "after"
        svg = side_by_side(shown, axis)
        figures.append(
            f'<figure class="timeline" data-compare="{which}" data-step="{ran.step}" '
            f'data-demo="{slug(demo)}">\n'
            f"<figcaption><strong>Step {step_number(ran.step)}</strong> "
            f"(<code>{ran.step}</code>): wall time {ran.trace.wall:.2f}s. "
            + re.sub(r"`([^`]*)`", r"<code>\1</code>", html.escape(outcome(ran), quote=False))
            + "</figcaption>\n"
            f"{svg}{replies_list(ran)}</figure>\n"
        )
    return (
        "## The idea, run\n\n"
        "### Before and after\n\n"
        f"{said}{demo_does(demo)}"
        + (
            " The number before each subtask is the place of its result in what the run "
            "returned: the rows stay in plan order."
            if made is not original
            else ""
        )
        + (
            " Here a chat model decides each round: under this step's picture, the JSON it "
            "replied for each decision, which the run checked before it dispatched a batch."
            if made[-1].run.replies and not made[0].run.replies
            else ""
        )
        + "\n\n"
        '<div class="ts-compare" markdown="0">\n' + "".join(figures) + "</div>\n"
    )


def replies_list(run: Run) -> str:
    """What a chat model planner replied in ``run``, one item a decision, its JSON as the
    runner prints it (``lessons._course.showing.show_replies``): nothing for another run."""
    if not run.replies:
        return ""
    items = [f"<li><code>{html.escape(spaced(reply))}</code></li>\n" for reply in run.replies]
    return (
        '<p class="ts-replies-head">What the chat model replied, one reply a decision:</p>\n'
        '<ol class="ts-replies">\n' + "".join(items) + "</ol>\n"
    )


def demo_does(demo: Demo) -> str:
    """What the demo's simulated sub-agent (and caller, and server) do on purpose, as a
    sentence."""

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
    if demo.raises is not None:
        sentence += f" The caller's own block raises after {demo.raises} results."
    if demo.endless:
        sentence += " The input never ends: the plan over and over, a subtask every 0.05s."
    if demo.serving is not None and demo.serving.slots is not None:
        at_once = "one request" if demo.serving.slots == 1 else f"{demo.serving.slots} requests"
        sentence += f" The loopback server works on {at_once} at a time and queues the rest."
    return sentence


def exercise_tip(name: str) -> str:
    """The markdown of a step's exercise, put before its code (the exercise before its answer):
    how to start it and check it. Nothing for a step without one."""
    number = step_number(name)
    if number not in exercises.exercisable():
        return ""
    before = step_number(previous_step(name) or name)
    commands = (
        "".join(
            f"    $ python -m lessons {command}\n"
            for command in (f"exercise {number}", f"check {number}", f"check {number} --watch")
        )
        + f"    $ python -m lessons check {number} --hint\n"
    )
    start = (
        f"step {number}'s module with what it changes as step {before} has it, and the places"
        if part_two(name) and part_two(previous_step(name) or name)
        else f"step {before}'s code with the places"
    )
    return (
        "## Write it yourself\n\n"
        '!!! tip "Write this step yourself"\n\n'
        f"    Try it before you read the code below: the exercise is {start}\n    where step "
        f"{number} changes it marked, and the check grades your code "
        "by this step's laws (see\n    [Exercises](../exercises.md)); with `--watch` it checks "
        "again each time you save the file.\n\n"
        "    ```console\n" + commands + "    ```\n\n"
    )


def code_section(name: str) -> str:
    """The markdown of a step page's code, after its player: the diff against the step before
    (the changed code), then the whole file folded, its changed lines highlighted; the first
    step's whole file, open (all of it is new)."""
    path = f"lessons/{name}.py"
    code = f'--8<-- "docs/generated/steps/{name}.code.md"'
    before = previous_step(name)
    if before is None:
        return (
            "## The code\n\n"
            f"`{path}` below its docstring (the prose above), as it runs. It is the first step, "
            "so nothing is highlighted; each later page shows the code that changed since the "
            "step before it.\n\n"
            f"{code}\n"
        )
    number = step_number(before)
    indented = "\n".join(f"    {line}" if line else "" for line in code.splitlines())
    return (
        exercise_tip(name) + "## The code that changed\n\n"
        f"`{path}` against [step {number}]({before}.md), as a diff of their code (the "
        "docstrings are the prose above; a function the step before imports from an earlier "
        "step is shown as that step defines it). The whole file is folded below it, the same "
        "lines highlighted.\n\n"
        f'```diff title="{path}, against lessons/{before}.py"\n'
        f'--8<-- "docs/generated/steps/{name}.diff"\n'
        "```\n\n"
        f'??? info "The whole file, `{path}`, its changed lines highlighted"\n\n'
        f"{indented}\n"
    )


def demos_fragment(name: str, made: list[Picture]) -> str:
    """The markdown a step page includes after its player: its code (`code_section`), then per
    demo what ran, the timeline, and the terminal's output, folded."""
    parts = []
    for picture in made:
        run = picture.run
        assert run.trace is not None
        options = "".join(f", `{key}={value}`" for key, value in run.options.items())
        failing = demo_does(picture.demo)
        svg_file = f"../generated/steps/{name}/{slug(picture.demo)}.svg"
        ran = f"`{picture.command}`"  # a demo run on the step before too: not this page's command
        if run.step != name:
            ran = f"the same demo on step {step_number(run.step)} (`{run.step}`)"
        ran_html = re.sub(r"`([^`]*)`", r"<code>\1</code>", ran)
        parts.append(
            f"### {picture.demo.title}\n\n"
            f"The task *{picture.demo.task}*, {planned(run)}{options}."
            f"{failing} Wall time {run.trace.wall:.2f}s. {outcome(run)} "
            f"([SVG file]({svg_file}))\n\n"
            f'<figure class="timeline" data-step="{name}" data-demo="{slug(picture.demo)}">\n'
            f"{picture.svg}"
            f"<figcaption>The timeline of {ran_html} on this task: rows in "
            f"plan order, <em>done #</em> is the completion order.</figcaption>\n</figure>\n\n"
            f'??? example "What {ran} prints for this task"\n\n'
            f"    ```text\n"
            + "".join(f"    {line}\n" if line else "\n" for line in picture.output.splitlines())
            + "    ```\n"
        )
    return code_section(name) + "\n## The demos, run\n\n" + "\n".join(parts)


def offered_fragments() -> dict[str, str]:
    """The sentences that say which steps have an exercise, one per page that says it, under
    ``docs/generated/exercises/``: all read `exercises.exercisable`, so no page types a range
    of steps by hand (a page in ``steps/`` links one folder up)."""
    known = exercises.exercisable()
    first = min(known)

    def linked(up: str) -> str:
        runs = exercises.spans(list(known))
        said = [
            f"[{a}]({up}steps/{known[a]}.md)"
            + ("" if a == b else f" to [{b}]({up}steps/{known[b]}.md)")
            for a, b in runs
        ]
        return " and ".join(said)

    second = [number for number in known if part_two(known[number])]
    before = [number for number in steps() if number not in known]
    return {
        "home.md": f"Steps {exercises.which()} are also [exercises](exercises.md): "
        "`python -m lessons exercise N` writes you a starter, and `python -m lessons check N` "
        "grades it by the step's laws.\n",
        "page.md": f"Steps {linked('')} are also exercises, Part I's and Part II's.\n",
        "part-two.md": f"Part II's steps {exercises.which(second)} are exercises too.\n",
        "first-step.md": f"Step{'s' if len(before) > 1 else ''} {exercises.which(before)} "
        f"{'have' if len(before) > 1 else 'has'} no exercise: there is no step before "
        f"{'them' if len(before) > 1 else 'it'} to start from. Steps {exercises.which()} have "
        f"one each, starting with step {first}, which you can write from this page's code "
        f"before you read it (see [Exercises](../exercises.md)):\n",
    }


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
