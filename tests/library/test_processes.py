"""ProcessWorker: a crash in a worker process fails its own slot, and nothing else.

These tests start real processes (trio_parallel's pool, spawned once and reused) on trio's real
clock, so they are few; none asserts how long anything took.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.library.process_bodies import body
from trio_supervisor import Status, Supervisor
from trio_supervisor.processes import ProcessWorker, UnpicklableError, WorkerCrashed, crash_reason

MIB = 1 << 20


async def test_a_crashed_process_fails_only_its_slot_and_says_how_it_died() -> None:
    plan = ["a", "exit", "segfault", "kill", "sys.exit", "fail", "b", "c"]
    aggregate = await Supervisor(ProcessWorker(body), max_workers=len(plan)).run(plan)
    errors = {result.subtask: result.error for result in aggregate if not result.ok}
    assert errors == {
        "exit": "WorkerCrashed: the worker process died: it exited with code 70",
        "segfault": "WorkerCrashed: the worker process died: "
        "killed by SIGSEGV (Segmentation fault)",
        "kill": "WorkerCrashed: the worker process died: killed by SIGKILL (Killed)",
        "sys.exit": "WorkerCrashed: the function called sys.exit(3) in its worker process",
        "fail": "ValueError: fail was asked for",  # an exception comes back as itself
    }
    crashed = [result.exception for result in aggregate if result.subtask != "fail"]
    assert [getattr(exc, "exitcode", "ok") for exc in crashed] == ["ok", 70, -11, -9, 3, "ok", "ok"]
    answered = [result for result in aggregate if result.ok]
    assert [result.subtask for result in answered] == ["a", "b", "c"]
    pids = {int(str(result.output).removeprefix("pid ")) for result in answered}
    assert os.getpid() not in pids  # the work ran elsewhere: this process is the supervisor


LOCK = "cannot pickle '_thread.lock' object"


async def test_what_cannot_be_pickled_back_is_named_as_the_worker_process_saw_it() -> None:
    plan = ["raise lock", "return lock", "raise from lock", "raise two", "return unloadable", "b"]
    aggregate = await Supervisor(ProcessWorker(body), max_workers=1).run(plan)
    assert [result.error for result in aggregate] == [
        # the exception's type and message, taken where it was raised
        "UnpicklableError: the worker raised ValueError: boom, which could not be sent back "
        f"from its process: {LOCK}",
        "UnpicklableError: the worker returned a _thread.lock, which could not be sent back "
        f"from its process: {LOCK}",
        # an exception that can be sent comes back as itself, without the cause that cannot
        "ValueError: raised from another",
        # an exception that pickles but cannot be loaded is found out where it was raised
        "UnpicklableError: the worker raised tests.library.process_bodies.TwoArgs: 1 is not "
        "above 2, which could not be sent back from its process: TwoArgs.__init__() missing 1 "
        "required positional argument: 'high'",
        "UnpicklableError: what the worker returned could not be loaded in this process: "
        "refused to load",
        None,  # the process that made them answers the next call
    ]
    raised, returned, chained, *_ = (result.exception for result in aggregate)
    assert isinstance(raised, UnpicklableError)
    assert isinstance(returned, UnpicklableError)
    assert isinstance(chained, ValueError)
    assert chained.__cause__ is None
    assert chained.__notes__ == [
        f"an exception chained to it, ValueError: boom, could not be sent back from its process "
        f"({LOCK}): the chain was cut off"
    ]


async def test_a_timeout_kills_the_hung_process(tmp_path: Path) -> None:
    worker = ProcessWorker(body)
    await worker("warm up")  # the hung call then gets a process already started
    written = tmp_path / "pid"
    aggregate = await Supervisor(worker, max_workers=1, timeout=1.0).run([f"hang {written}"])
    (result,) = aggregate
    assert result.status is Status.TIMED_OUT
    pid = int(written.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left sleeping
        os.kill(pid, 0)


SCRIPT = """
import trio
from trio_supervisor import Supervisor
from trio_supervisor.processes import ProcessWorker

def double(n: int) -> int:
    return 2 * n

async def main() -> None:
    worker = ProcessWorker(double)
{warm}    aggregate = await Supervisor(worker, max_workers=3).run([1, 2, 3])
    print([result.output if result.ok else result.error for result in aggregate])
"""
GUARDED = 'if __name__ == "__main__":\n    trio.run(main)\n'


def run_script(path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path.write_text(text)
    src = Path(importlib.import_module("trio_supervisor").__file__ or "").parents[1]
    return subprocess.run(
        [sys.executable, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src)},
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("warm", ["", "    await worker.warm(3)\n"])
def test_a_run_started_outside_the_main_guard_ends_with_one_line_naming_the_fix(
    warm: str, tmp_path: Path
) -> None:
    script = SCRIPT.format(warm=warm)
    guarded = run_script(tmp_path / "guarded.py", script + GUARDED)
    assert (guarded.returncode, guarded.stdout, guarded.stderr) == (0, "[2, 4, 6]\n", "")
    # each worker process imports the script again, which would start the run again there
    path = tmp_path / "unguarded.py"
    unguarded = run_script(path, script + "trio.run(main)\n")
    assert (unguarded.returncode, unguarded.stdout) == (1, "")  # no run printed anything
    assert unguarded.stderr == (
        "ProcessWorker cannot start its worker processes: each imports the program's main "
        f"module ({path}) again, as multiprocessing does with spawn, and its code started the "
        'run there again: put the code that starts the run under if __name__ == "__main__":\n'
    )


async def test_warmed_processes_are_the_ones_the_next_calls_run_in() -> None:
    worker = ProcessWorker(body)
    await worker.warm(3)
    started = {process.pid for process in multiprocessing.active_children()}
    await worker.warm(3)  # three are idle already: none is started
    assert {process.pid for process in multiprocessing.active_children()} == started
    aggregate = await Supervisor(worker, max_workers=3).run(["a", "b", "c"])
    pids = {int(str(result.output).removeprefix("pid ")) for result in aggregate}
    assert len(pids) == 3
    assert pids <= started


async def test_warm_raises_what_loading_the_function_raised_in_a_process_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "only_here.py").write_text("def answer(subtask: str) -> str:\n    return subtask\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    worker = ProcessWorker(importlib.import_module("only_here").answer)
    (tmp_path / "only_here.py").unlink()  # gone before a worker process can import it
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'only_here'$"):
        await worker.warm(2)
    monkeypatch.delitem(sys.modules, "only_here")


@pytest.mark.parametrize(
    ("processes", "error", "message"),
    [
        (0, ValueError, "processes must be >= 1, got 0"),
        (2.0, TypeError, "processes must be an int, got float 2.0"),
        (True, TypeError, "processes must be an int, got bool True"),
    ],
)
async def test_warm_refuses_a_count_that_is_not_one_or_more(
    processes: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}$"):
        await ProcessWorker(body).warm(processes)  # type: ignore[arg-type]


async def hung_calls(worker: ProcessWorker[str, str], files: list[Path]) -> list[int]:
    """Start a run of calls that hang, each writing its process's pid to its file, wait until
    every one has, cancel the run and return the pids; checks the run raised only Cancelled."""
    raised: list[BaseException] = []

    async def run() -> None:
        try:
            await Supervisor(worker, max_workers=len(files)).run([f"hang {f}" for f in files])
        except BaseException as exc:  # what the run raised, seen and raised on
            raised.append(exc)
            raise

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            # other processes write them: nothing to wait on but the files
            while not all(f.exists() and f.read_text() for f in files):  # noqa: ASYNC110
                await trio.sleep(0.01)
            if worker.limiter is not None:
                assert worker.limiter.borrowed_tokens == len(files)  # each running call holds one
            scope.cancel()
    (exc,) = raised
    rest: BaseException | None = exc
    if isinstance(exc, BaseExceptionGroup):  # the run's nurseries pass it on in a group
        _, rest = exc.split(trio.Cancelled)
    assert rest is None or isinstance(rest, trio.Cancelled)  # nothing but cancellation
    return [int(f.read_text()) for f in files]


async def test_a_cancelled_run_kills_every_process_it_runs_calls_in(tmp_path: Path) -> None:
    # three calls at once, more than this machine's two CPUs: without a limiter, the
    # supervisor's max_workers is the only bound
    pids = await hung_calls(ProcessWorker(body), [tmp_path / str(n) for n in range(3)])
    assert len(set(pids)) == 3
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_a_call_holds_the_limiter_it_is_given_while_it_runs(tmp_path: Path) -> None:
    limiter = trio.CapacityLimiter(1)
    await hung_calls(ProcessWorker(body, limiter=limiter), [tmp_path / "pid"])
    assert limiter.borrowed_tokens == 0


async def test_past_its_memory_limit_a_call_fails_with_memory_error_and_the_limit_is_undone() -> (
    None
):
    limited = ProcessWorker(body, memory_limit=256 * MIB, limiter=trio.CapacityLimiter(1))
    aggregate = await Supervisor(limited, max_workers=2).run(["allocate 512", "allocate 16"])
    assert [result.error for result in aggregate] == [
        "MemoryError: the call needed more memory than its worker process may have: address "
        "space limited to 256 MiB (memory_limit=268435456)",
        None,
    ]
    held, _, pid = str(aggregate.results[1].output).partition(" in ")
    assert held == "held 16 MiB"
    # the process the limit was set in, called next with no limit, may allocate past it
    unlimited = await ProcessWorker(body, limiter=trio.CapacityLimiter(1))("allocate 512")
    assert unlimited == f"held 512 MiB in {pid}"


# --- refused before any process starts ----------------------------------------------------------


async def not_sync(subtask: str) -> str:
    return subtask


class AsyncCall:
    async def __call__(self, subtask: str) -> str:
        return subtask


@pytest.mark.parametrize(
    ("function", "options", "error", "message"),
    [
        (
            not_sync,
            {},
            TypeError,
            r"ProcessWorker runs a sync function in a worker process, and not_sync is async: "
            r"make it a plain def, or use it as the supervisor's worker directly",
        ),
        (
            AsyncCall(),
            {},
            TypeError,
            r"ProcessWorker runs a sync function in a worker process, and .*AsyncCall object.* "
            r"is async: make it a plain def, or use it as the supervisor's worker directly",
        ),
        (
            lambda subtask: subtask,
            {},
            TypeError,
            r"function must be picklable to reach a worker process \(a module-level function, "
            r"or a functools\.partial of one\), and .*<lambda> is not: .*",
        ),
        ("body", {}, TypeError, r"function must be a sync callable, got str 'body'"),
        (body, {"memory_limit": 0}, ValueError, r"memory_limit must be >= 1 byte, got 0"),
        (
            body,
            {"memory_limit": True},
            TypeError,
            r"memory_limit must be an int number of bytes or None, got bool True",
        ),
        (
            body,
            {"limiter": 2},
            TypeError,
            r"limiter must be a trio\.CapacityLimiter or None, got int",
        ),
    ],
)
def test_a_worker_that_cannot_run_in_a_process_is_refused_with_the_rule(
    function: object, options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}$"):
        ProcessWorker(function, **options)  # type: ignore[arg-type]


def test_a_partial_of_a_module_level_function_is_accepted_and_shown() -> None:
    worker = ProcessWorker(functools.partial(body), memory_limit=MIB)
    assert worker.memory_limit == MIB
    assert worker.limiter is None
    assert repr(ProcessWorker(body)) == "ProcessWorker(body, memory_limit=None, limiter=None)"


@pytest.mark.parametrize(
    ("exitcode", "reason"),
    [
        (-11, "the worker process died: killed by SIGSEGV (Segmentation fault)"),
        (-9, "the worker process died: killed by SIGKILL (Killed)"),
        (-200, "the worker process died: killed by signal 200"),
        (70, "the worker process died: it exited with code 70"),
        (None, "the worker process died: its exit code is not known"),
    ],
)
def test_a_crash_is_named_by_its_signal_or_exit_code(exitcode: int | None, reason: str) -> None:
    assert crash_reason(exitcode) == reason
    crashed = WorkerCrashed(reason, exitcode)
    assert (str(crashed), crashed.exitcode) == (reason, exitcode)


def test_importing_the_adapter_without_trio_parallel_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ["trio_supervisor.processes", "trio_supervisor.processes._worker"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "trio_parallel", None)
    with pytest.raises(
        ImportError,
        match=r"^trio_supervisor\.processes needs the 'processes' extra \(trio_parallel is "
        r"missing\): pip install 'trio-supervisor\[processes\]'$",
    ):
        importlib.import_module("trio_supervisor.processes")
