"""What the journal's command line prints, for the reference and the durable-runs how-to: a
real run, shared by two supervisors through leases (each with a journal of its own on one
file), then ``runs``, ``show`` and ``gc`` run on that file through the command line's ``main``.

The run is on the real clock (a few tenths of a second): the journal places each supervisor's
slots on the wall clock by when their rows were written, which a virtual clock does not move.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import trio

from trio_supervisor import Durable, Journal, Supervisor, approval
from trio_supervisor.journal import main

ORDERS = [f"order-{n}" for n in range(1, 13)]
COMMANDS = (
    ("runs", "runs.db"),
    ("show", "runs.db", "refunds"),
    ("gc", "runs.db", "--older-than", "0s"),
)


async def refund(order: str) -> str:
    """A refund: some take longer; order 3 fails; order 6 asks a person first."""
    number = int(order.rsplit("-", 1)[1])
    await trio.sleep(0.04 * (1 + number % 3))
    if number == 3:
        raise KeyError(order)
    if number == 6:
        await approval(f"refund {order}?")
    return f"refunded {order}"


async def shared(path: Path) -> None:
    """``refunds``, run by two supervisors at once (``a`` and ``b``), and ``nightly``, which
    one of them ran alone."""

    async def supervise(journal: Journal) -> None:
        await Supervisor(refund, max_workers=2).run(ORDERS, durable=Durable("refunds", journal))

    with Journal(path, lease=5) as a, Journal(path, lease=5) as b:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(supervise, a)
            nursery.start_soon(supervise, b)
        await Supervisor(refund, max_workers=2).run(ORDERS[:2], durable=Durable("nightly", a))


def sample() -> str:
    """The console block: each command, as typed in the journal's folder, and what it printed."""
    said = []
    with tempfile.TemporaryDirectory() as folder:
        trio.run(shared, Path(folder) / "runs.db")
        for argv in COMMANDS:
            out = io.StringIO()
            with contextlib.chdir(folder), contextlib.redirect_stdout(out):
                main(list(argv))
            said.append(f"$ python -m trio_supervisor.journal {' '.join(argv)}\n{out.getvalue()}")
    return "```console\n" + "".join(said) + "```\n"


if __name__ == "__main__":
    print(sample(), end="")
