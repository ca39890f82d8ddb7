"""What a run raises when its workers raise what it never isolates: one `SystemExit` or
`KeyboardInterrupt` comes out bare, and so does the same one raised by several workers at the same
instant (one event, as every worker process of an unguarded program reports it); different ones
stay a group."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_supervisor import Supervisor
from trio_supervisor._ending import sole


def run(messages: dict[int, str]) -> None:
    async def worker(slot: int) -> int:
        await trio.sleep(1)  # every worker raises at the same virtual instant
        if slot in messages:
            raise SystemExit(messages[slot])
        return slot

    async def main() -> None:
        await Supervisor(worker, max_workers=3).run([0, 1, 2])

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_one_system_exit_comes_out_bare() -> None:
    with pytest.raises(SystemExit, match=r"^stop$"):
        run({1: "stop"})


def test_the_same_system_exit_raised_by_several_tasks_comes_out_once_and_bare() -> None:
    """How a run's tasks' exceptions come out (``sole``): each worker process of a program whose
    main module starts its run unguarded fails its call with the same `SystemExit` at once."""
    same = "put the run under the main guard"
    nested = BaseExceptionGroup("", [SystemExit(same), BaseExceptionGroup("", [SystemExit(same)])])
    out = sole(nested)
    assert type(out) is SystemExit
    assert str(out) == same


@pytest.mark.parametrize(
    "exceptions",
    [
        [SystemExit("one"), SystemExit("two")],
        [SystemExit("one"), KeyboardInterrupt("one")],
        [ValueError("x"), ValueError("x")],
    ],
)
def test_different_exceptions_or_several_failures_stay_a_group(
    exceptions: list[BaseException],
) -> None:
    group = BaseExceptionGroup("", exceptions)
    assert sole(group) is group
