"""A real kill for the durable-runs demo on real time: the first run in a child Python, killed
with ``SIGKILL`` part way through, its journal left on disk as the kill leaves it; for step
33's, several children on one run, the first of them killed.

The runner (``running.durably``) writes what the child needs to run the demo (the step, the
run with its options, the simulated sub-agent) to a file, starts ``python -m
lessons._course.killing FILE``, waits for the child to say its run has started (bounded),
waits the demo's ``killed_at`` seconds (longer only if nothing is committed by then: a busy
machine's child may start its run late; for step 33's, longer only if no child holds a lease
yet) and kills it, with the worker processes it started: no ``finally`` of the child runs, no
buffer is flushed, so what comes back on resume is exactly what the journal had committed. On
virtual time (``--virtual``, the docs) the kill is simulated in one process instead, as a
child's clock could not be the runner's.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from lessons._course.hooks import worker_of
from lessons._course.steps import load_step
from trio_supervisor import Journal
from trio_supervisor.testing import SimulatedAgent

READY = b"started\n"
STARTING = 60.0
"""Seconds the child may take to start its run (its imports, a loopback server) at most."""
POLL = 0.05
"""Seconds between two looks at the journal while a kill waits for a commit (or a lease)."""
SHARING = 120.0
"""Seconds the supervisors left may take to end the run they share, after the kill, at most."""


async def kill_part_way(
    run: Any, agent: SimulatedAgent, path: Path, at: float, committed: Callable[[], bool]
) -> float | None:
    """Run ``run`` (a ``running.Run`` of a journaling step) journaled in ``path`` in a child
    Python and kill it with ``SIGKILL`` ``at`` seconds after its run started (or let it end, if
    it ends sooner). The kill is part way: if ``committed()`` (whether the journal holds a
    result of the run yet) is still False then, it waits for the first commit, looking every
    ``POLL`` seconds for ``STARTING`` seconds at most, and kills then. The child is killed too
    when this is cancelled (Ctrl-C).

    Returns:
      The seconds after its run started that the child was killed at; None if it ended first.

    Raises:
      RuntimeError: if the child did not start its run within ``STARTING`` seconds, or ended
        before it did (its last words say why).
    """
    with tempfile.TemporaryDirectory() as scratch:
        spec = Path(scratch) / "run.pickle"
        spec.write_bytes(pickle.dumps((run.step, run, agent, str(path))))
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "lessons._course.killing", str(spec)],
            stdout=-1,  # subprocess.PIPE: the child says when its run has started
            stderr=-1,
            start_new_session=True,  # a group of its own: its worker processes die with it
        )
        try:
            await started(process)
            begun = trio.current_time()
            with trio.move_on_after(at):
                await process.wait()  # a run that ends before the kill just ends
            with trio.move_on_after(STARTING):
                while process.returncode is None and not committed():
                    with trio.move_on_after(POLL):
                        await process.wait()
            return None if process.returncode is not None else trio.current_time() - begun
        finally:
            if process.returncode is None:
                kill_all(process)  # SIGKILL: nothing of the child's runs after it
            with trio.CancelScope(shield=True), trio.move_on_after(STARTING):
                await process.wait()


async def run_together(
    run: Any,
    agent: SimulatedAgent,
    path: Path,
    supervisors: int,
    at: float,
    ready: trio.Event,
    holds: Callable[[int], bool],
) -> tuple[list[int], float | None]:
    """Run ``run`` in ``supervisors`` child Pythons at once, each a supervisor of the same run
    journaled in ``path`` (step 33), kill one of them with ``SIGKILL`` ``at`` seconds after they
    all started (``ready`` is set then), and wait for the others to end (at most ``SHARING``
    seconds). Every child is killed too when this is cancelled (Ctrl-C).

    The kill falls on a child that holds a lease of the run (``holds(pid)``), the first found
    in the order they started, so that another supervisor takes its slots over: a supervisor
    claims the slots it can run at once in one lease, so the one that claimed first may hold
    them all, and a busy machine's children may claim late. If none holds one at ``at``, it
    looks again every ``POLL`` seconds, for ``STARTING`` seconds at most, until one does or
    none is left running.

    Returns:
      The children's process ids, the killed one's first (a journal names a supervisor by its
      host and process); and the seconds after they started that it was killed at, None if
      none was (every child ended first).

    Raises:
      RuntimeError: if a child did not start its run within ``STARTING`` seconds, or ended
        before it did, or a child not killed failed (its last words say why).
    """
    with tempfile.TemporaryDirectory() as scratch:
        spec = Path(scratch) / "run.pickle"
        spec.write_bytes(pickle.dumps((run.step, run, agent, str(path))))
        processes: list[trio.Process] = []
        try:
            for _ in range(supervisors):
                process = await trio.lowlevel.open_process(
                    [sys.executable, "-m", "lessons._course.killing", str(spec)],
                    stdout=-1,
                    stderr=-1,
                    start_new_session=True,
                )
                processes.append(process)
            for process in processes:
                await started(process)
            ready.set()
            begun = trio.current_time()
            await trio.sleep(at)
            killed, killed_after = None, None
            with trio.move_on_after(STARTING):
                while killed is None and any(p.returncode is None for p in processes):
                    killed = next(
                        (p for p in processes if p.returncode is None and holds(p.pid)), None
                    )
                    if killed is None:
                        await trio.sleep(POLL)
            if killed is not None:
                killed_after = trio.current_time() - begun
                kill_all(killed)
                processes.remove(killed)
                processes.insert(0, killed)
            others = processes[1:] if killed is not None else processes
            with trio.move_on_after(SHARING):
                for process in others:
                    await process.wait()
            for process in others:
                if process.returncode:  # a supervisor not killed that failed: its last words
                    assert process.stderr is not None
                    words = (await process.stderr.receive_some()).decode(errors="replace")
                    last = words.strip().splitlines()[-1] if words.strip() else "no words"
                    raise RuntimeError(f"a supervisor of the shared run failed: {last}")
        finally:
            for process in processes:
                if process.returncode is None:
                    kill_all(process)
                with trio.CancelScope(shield=True), trio.move_on_after(STARTING):
                    await process.wait()
        return [process.pid for process in processes], killed_after


async def started(process: trio.Process) -> None:
    """Wait until child ``process`` says its run has started (at most ``STARTING`` seconds).

    Raises:
      RuntimeError: if it did not, with its last words.
    """
    assert process.stdout is not None
    said = b""
    with trio.move_on_after(STARTING):
        while READY not in said:
            chunk = await process.stdout.receive_some()
            if not chunk:
                break
            said += chunk
    if READY not in said:
        kill_all(process)
        await process.wait()
        assert process.stderr is not None
        words = (await process.stderr.receive_some()).decode(errors="replace").strip()
        last = words.splitlines()[-1] if words else f"exit status {process.returncode}"
        raise RuntimeError(f"the demo's child process did not start its run: {last}")


def kill_all(process: trio.Process) -> None:
    """``SIGKILL`` the child ``process``, not yet waited for, and every process of its group
    (its worker processes, step 26 on): a kill of the machine it runs on, which leaves no
    worker to end only when it finds its parent gone."""
    try:
        os.killpg(process.pid, signal.SIGKILL)  # its group's id is its own (a new session)
    except OSError:  # no process groups here, or the group is gone: the child alone
        process.kill()


async def child(step: str, run: Any, agent: SimulatedAgent, path: str) -> None:
    """The child's run: the demo, journaled in ``path``, committing each result."""
    module = load_step(step)
    async with worker_of(module, run, agent) as worker:
        with Journal(path, flush="each") as journal:
            sys.stdout.buffer.write(READY)
            sys.stdout.flush()
            await module.supervise(
                run.demo.task, worker, journal=journal, run_id=run.run_id, **run.options
            )


def main(argv: list[str]) -> int:
    """``python -m lessons._course.killing FILE``: the run ``FILE`` describes, until killed."""
    step, run, agent, path = pickle.loads(Path(argv[0]).read_bytes())
    trio.run(child, step, run, agent, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
