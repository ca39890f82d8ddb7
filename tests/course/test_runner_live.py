"""Live runs: a real-time run in a terminal shows its sub-agents at work, drawn from its trace.

The frames are driven here on virtual time (the runner shows none under ``--virtual``: the run
is over in an instant) through a console that is forced to be a terminal.
"""

from __future__ import annotations

import io
import re

import pytest
import trio
import trio.testing
from rich.console import Console

from lessons._course import runner
from lessons._course.arguments import parser
from lessons._course.demos import demos
from lessons._course.running import Run, guard_after, run_guarded, step_options
from lessons._course.showing import ConsoleWatch
from lessons._course.steps import load_step, step, steps
from trio_supervisor import decompose

CURSOR = re.compile(r"\x1b\[(?:\?25[lh]|2K|1A)")  # hide/show the cursor, erase a line, go up


def live_frames(
    number: int, demo: int = 0, extra: tuple[str, ...] = (), height: int = 25
) -> tuple[list[str], Run, str]:
    """Run step ``number``'s demo ``demo`` on virtual time with the live view on a terminal
    of ``height`` lines: the frames it drew (as text), the run, and everything the console
    printed."""
    name = steps()[number]
    args = parser().parse_args([name, *extra])
    chosen = demos(args, number)[demo]
    module = load_step(name)
    options = step_options(step(name), args, chosen)
    run = Run(name, chosen, decompose(chosen.task), options)
    agent = chosen.agent(args.seed)
    run.guard = guard_after(step(name), run, agent)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, height=height, color_system=None)
    clock = trio.testing.MockClock(autojump_threshold=0)
    trio.run(run_guarded, module, run, agent, ConsoleWatch(console, True), clock=clock)
    text = out.getvalue()
    frames = [frame for frame in CURSOR.sub("", text).split("\r") if "sub-agents at" in frame]
    return frames, run, text


def states(frame: str) -> dict[int, tuple[str, int]]:
    """Slot -> (state, attempts) as a frame shows them."""
    found = {}
    for line in frame.splitlines():
        row = re.match(
            r"\s+(\d+)\s{3}.+?\s{2,}(idle|running|ok|failed|timed out|cancelled)\s+(\d+)\b", line
        )
        if row is not None:
            found[int(row[1])] = (row[2], int(row[3]))
    return found


def test_a_frame_shows_every_slot_idle_running_then_how_it_ended() -> None:
    # step 6: the reviews sub-agent hangs until its 1.5 s timeout, supplier risk fails
    five = "competitor pricing; customer reviews; inventory; supplier risk; hiring trends"
    frames, run, _ = live_frames(6, extra=("--task", five, "--hang", "1", "--fail", "3"))
    assert run.trace is not None
    seen = [states(frame) for frame in frames]
    assert all(set(shown) == set(range(5)) for shown in seen)
    assert seen[0] == dict.fromkeys(range(5), ("idle", 0))
    for slot, subtask in enumerate(run.plan):
        shown = [state for state, _ in (frame[slot] for frame in seen)]
        assert "running" in shown, subtask
        ending = shown[-1]
        # idle, then running, then its ending from the first frame after it to the last
        assert shown[: shown.index("running")] == ["idle"] * shown.index("running")
        assert set(shown[shown.index(ending) :]) == {ending}
    assert [frame[slot][0] for frame in seen[-1:] for slot in range(5)] == [
        "ok",
        "timed out",
        "ok",
        "failed",
        "ok",
    ]


def test_attempts_count_up_with_each_retry() -> None:
    # step 8: reviews fails its first two calls, supplier risk its first; three attempts each
    frames, _, _ = live_frames(8)
    seen = [states(frame) for frame in frames]
    assert [shown[1] for shown in seen][-1] == ("ok", 3)
    assert [shown[3] for shown in seen][-1] == ("ok", 2)
    reviews = [shown[1] for shown in seen]
    assert ("failed", 1) in reviews
    assert ("failed", 2) in reviews
    assert reviews.index(("running", 2)) < reviews.index(("failed", 2))


def test_a_deadline_shows_the_slots_it_cut_as_cancelled() -> None:
    frames, _, _ = live_frames(7, demo=0)
    last = states(frames[-1])
    assert "cancelled" in {state for state, _ in last.values()}
    assert {state for state, _ in last.values()} <= {"ok", "timed out", "cancelled", "idle"}


def test_results_fill_in_plan_order_behind_the_slowest_earlier_slot() -> None:
    # slot 0 takes 3 s: the other four are done long before, and none is a result until it is
    frames, _, _ = live_frames(9, extra=("--task", "a; b; c; d; e", "--slow", "0:3"))
    filled = [re.search(r"results, in plan order: (.*?) \((\d+) of 5\)", f) for f in frames]
    shown = [(match[1], int(match[2])) for match in filled if match is not None]
    assert len(shown) == len(frames)
    assert shown[0] == ("· · · · ·", 0)
    assert shown[-1] == ("✓ ✓ ✓ ✓ ✓", 5)
    waiting = [
        count
        for frame, (_, count) in zip(frames, shown, strict=True)
        if [state for state, _ in states(frame).values()] == ["running", "ok", "ok", "ok", "ok"]
    ]
    assert waiting  # frames where every later slot is done and slot 0 still runs
    assert set(waiting) == {0}


def test_a_stream_fills_its_results_as_it_hands_them_over() -> None:
    frames, _, text = live_frames(11, demo=0)  # left after 8 results
    last = re.search(r"\((\d+) of 20\)", frames[-1])
    assert last is not None
    assert int(last[1]) == 8
    assert text.count("slot  7  review 08  ok") == 1  # the stream's lines are printed, once


def test_the_view_is_cleared_when_the_run_ends() -> None:
    frames, _, text = live_frames(1)
    assert frames
    # transient: after the last frame, only the codes that erase its lines
    after = text.rsplit("\r", 1)[1]
    assert "\x1b[1A\x1b[2K" in after
    assert CURSOR.sub("", after) == ""


@pytest.mark.parametrize(
    ("argv", "terminal", "shown"),
    [
        (("1",), True, True),
        (("1", "--virtual"), True, False),
        (("1",), False, False),
    ],
)
def test_only_a_real_time_run_in_a_terminal_is_shown_live(
    argv: tuple[str, ...], terminal: bool, shown: bool
) -> None:
    args = parser().parse_args(list(argv))
    console = Console(file=io.StringIO(), force_terminal=terminal)
    assert runner.shows_live(console, args) is shown
    assert runner.shows_live(None, args) is False  # --json: no console


def test_a_virtual_run_in_a_terminal_prints_no_frame() -> None:
    out = io.StringIO()
    status = runner.main(
        ["1", "--virtual"], console=Console(file=out, force_terminal=True, width=100)
    )
    assert status == 0
    assert "sub-agents at" not in out.getvalue()
    assert "wall " in out.getvalue()


@pytest.mark.parametrize(
    ("script", "ended"),
    [
        ({3: [(2.5, False), (5.0, False)]}, 2.5),  # the first attempt wins; its hedge lost
        ({3: [(10.0, False), (1.0, True)]}, 10.0),  # the hedge fails; the first attempt wins
    ],
)
def test_a_hedged_slot_shows_how_its_deciding_attempt_ended_not_its_last(
    script: dict[int, list[tuple[float, bool]]], ended: float
) -> None:
    """A hedged slot's last span may be a hedge that lost or failed while the first attempt
    went on to win: the live view says ok, for as long as the slot ran, and hands it over."""
    from lessons._course import live
    from tests.library.test_hedge import ten
    from trio_supervisor import Hedge

    _, trace, _ = ten(script, hedge=Hedge(2.0, throttle=1.0))
    slot = trace.slots[3]
    assert slot.spans[-1].hedge
    assert slot.spans[-1].status is not None
    assert slot.spans[-1].status.value != "ok"
    assert live.state(slot) == "ok"
    assert live.elapsed(slot, trace.origin + 99) == ended
    assert slot in live.handed_over(trace, streaming=False)


def test_a_frame_draws_the_control_characters_of_a_subtask_as_escapes() -> None:
    from tests.course.test_runner_demos import HOSTILE, acting

    frames, _, _ = live_frames(5, extra=("--task", HOSTILE))
    assert frames
    for frame in frames:
        assert acting(frame) == set()
    assert "a\\x1b[2Jb" in frames[-1]


def test_rows_that_do_not_fit_leave_room_for_what_is_running() -> None:
    """200 subtasks on a terminal of 20 lines: every frame fits it, shows each slot at work
    (never only the first rows, long finished), and counts the rows it leaves out."""
    task = "; ".join(f"subtask {number:03}" for number in range(200))
    frames, _, _ = live_frames(3, extra=("--task", task, "--workers", "4"), height=20)
    assert len(frames) > 10
    for frame in frames[1:-1]:  # the first is before any slot starts, the last after all end
        assert len(frame.strip("\n").splitlines()) <= 20
        shown = states(frame)
        running = [state for state, _ in shown.values()].count("running")
        # 4 workers at work; a frame drawn at the instant one slot ends may come before trio
        # runs the start of the next (trio shuffles the tasks of one instant)
        assert running >= 3 if "idle" in frame else running >= 1, frame
        assert re.search(r"… \d+ more slots not shown: ", frame), frame
    late = states(frames[-2])
    assert any(slot >= 190 and state == "running" for slot, (state, _) in late.items())
