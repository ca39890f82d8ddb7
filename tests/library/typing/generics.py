"""What mypy --strict infers, and refuses, for the library's generic types.

Not a test module: tests/library/test_typing.py runs mypy on this file. A line whose comment is
``R:`` and a type must reveal exactly that type; a line whose comment is ``E`` must be a type
error; no other line may be one.
"""

from __future__ import annotations

import random
from typing import reveal_type

from trio_supervisor import Capacity, Meter, Retry, Supervisor, Worker


async def fetch(subtask: int) -> str:
    return str(subtask)


async def shout(subtask: str) -> str:
    return subtask.upper()


async def double(subtask: int) -> int:
    return 2 * subtask


class Tokens:
    """A meter of one's own: anything with ``async acquire()`` and ``release()``."""

    async def acquire(self) -> None:
        return None

    def release(self) -> None:
        return None


async def flows() -> None:
    supervisor = Supervisor(fetch, max_workers=2)
    aggregate = await supervisor.run([1, 2, 3])
    result = aggregate.results[0]
    reveal_type(result.subtask)  # R: int
    reveal_type(result.output)  # R: str | None
    for each in aggregate:
        reveal_type(each.subtask)  # R: int
    reveal_type(len(aggregate))  # R: int

    async with supervisor.stream(iter([1, 2])) as results:
        async for streamed in results:
            reveal_type(streamed.subtask)  # R: int
            reveal_type(streamed.output)  # R: str | None

    worker: Worker[int, str] = fetch
    aliased = await Supervisor(worker, max_workers=1).run([4])
    reveal_type(aliased.results[0].output)  # R: str | None

    words = await Supervisor(shout, max_workers=1).run("a; b")
    reveal_type(words.results[0].subtask)  # R: str

    numbers: Supervisor[int, int] = Supervisor(double, max_workers=1)
    await numbers.run("3; 4")  # E
    await numbers.run([3, 4])


def settings_are_fixed(supervisor: Supervisor[int, str]) -> None:
    reveal_type(supervisor.retry.attempts)  # R: int
    supervisor.retry = Retry(attempts=3)  # E
    supervisor.retry.attempts = 3  # E
    supervisor.max_workers = 5  # E


def options() -> None:
    meter: Meter = Capacity(2)
    mine: Meter = Tokens()
    Supervisor(fetch, max_workers=2, meters=[meter, mine, Capacity(1)], retry=Retry(seed=3))
    Supervisor(fetch, max_workers=2, retry=Retry(seed=random.Random(3)))
    Supervisor(fetch, max_workers=2, retry=Retry(seed=None))
    Supervisor(fetch, max_workers=2, retry=Retry(seed="3"))  # E
    Supervisor(fetch, max_workers=2, attempts=3)  # E
