"""RayWorker on a real local Ray cluster: each call a Ray task, a crash fails its own slot, a
cancelled slot kills its task's process.

One cluster (two CPUs, loopback only) serves the whole module, started once; its worker
processes are real, so the tests are few, each bounded by a timeout, and none asserts how long
anything took: what they wait for (a process gone, the cluster's CPUs free again) they wait for
with a bounded loop.
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import trio
import trio.testing

import trio_supervisor.ray
import trio_supervisor.ray._worker as ray_worker
from tests.library.process_bodies import body
from trio_supervisor import Status, Supervisor
from trio_supervisor.processes import UnpicklableError, WorkerCrashed

CPUS = 2
BOUND = 60  # seconds a run on the cluster may take before the test fails (a crowded machine)
GONE = 20  # seconds a killed process may take to go: less than a hung body's 30 s of sleep
# one worker runs this module and the Ray how-to's example in turn (make pytest runs tests on
# every core): one cluster at a time on the machine, started once for the module
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    trio_supervisor.ray.start_local(num_cpus=CPUS)
    try:
        yield
    finally:
        ray.shutdown()


def twice(n: int) -> int:
    return 2 * n


class Refused(Exception):
    """An exception of the test's own, to come back as itself."""


def refuse(subtask: str) -> str:
    raise Refused(f"{subtask} is refused")


def assigned(_: object) -> dict[str, float]:
    """The resources the task was given on its node."""
    return dict(ray.get_runtime_context().get_assigned_resources())  # type: ignore[no-untyped-call]


def hold(gate: str) -> str:
    """Wait for the file ``gate`` to exist (at most 30 s), then answer."""
    for _ in range(3000):
        if Path(gate).exists():
            return "passed"
        time.sleep(0.01)
    return "timed out"


async def gone(pid: int) -> bool:
    """Whether process ``pid`` ends (and is reaped) before it could have ended on its own."""
    with trio.move_on_after(GONE):
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            await trio.sleep(0.05)
    return False


async def cpus_free() -> bool:
    """Whether every CPU of the cluster is free again before a hung body could free its own."""
    with trio.move_on_after(GONE):
        # the cluster's count: nothing to wait on but asking again
        while ray.available_resources().get("CPU") != CPUS:  # type: ignore[no-untyped-call]  # noqa: ASYNC110
            await trio.sleep(0.05)
        return True
    return False


async def test_results_come_back_in_plan_order_over_hundreds_of_slots() -> None:
    plan = list(range(300))
    with trio.fail_after(BOUND):
        aggregate = await Supervisor(trio_supervisor.ray.RayWorker(twice), max_workers=64).run(plan)
    assert [result.output for result in aggregate] == [2 * n for n in plan]
    assert [result.subtask for result in aggregate] == plan


async def test_a_dead_process_fails_its_slot_alone_and_an_exception_comes_back_as_itself() -> None:
    plan = ["a", "exit", "segfault", "kill", "sys.exit", "fail", "b"]
    with trio.fail_after(BOUND):
        aggregate = await Supervisor(trio_supervisor.ray.RayWorker(body), max_workers=4).run(plan)
    errors = {result.subtask: str(result.error) for result in aggregate if not result.ok}
    died = "WorkerCrashed: the Ray task died with its process or node (WorkerCrashedError: "
    assert sorted(errors) == ["exit", "fail", "kill", "segfault", "sys.exit"]
    assert all(errors[s].startswith(died) for s in ("exit", "segfault", "kill")), errors
    assert errors["sys.exit"] == "WorkerCrashed: the function called sys.exit(3) in its Ray task"
    assert errors["fail"] == "ValueError: fail was asked for"
    crashed = {result.subtask: result.exception for result in aggregate if not result.ok}
    assert all(isinstance(crashed[s], WorkerCrashed) for s in ("exit", "segfault", "kill"))
    assert getattr(crashed["sys.exit"], "exitcode", None) == 3
    assert type(crashed["fail"]) is ValueError  # itself, not Ray's wrapper of it
    answered = [result for result in aggregate if result.ok]
    assert [result.subtask for result in answered] == ["a", "b"]
    pids = {int(str(result.output).removeprefix("pid ")) for result in answered}
    assert os.getpid() not in pids  # the work ran in the cluster's processes


async def test_an_exception_of_the_programs_own_comes_back_as_itself() -> None:
    with trio.fail_after(BOUND):
        aggregate = await Supervisor(trio_supervisor.ray.RayWorker(refuse), max_workers=1).run(
            ["x"]
        )
    (result,) = aggregate
    assert type(result.exception) is Refused
    assert result.error == "Refused: x is refused"


LOCK = "cannot pickle '_thread.lock' object"


async def test_what_cannot_be_pickled_back_is_named_as_the_task_saw_it() -> None:
    plan = ["raise lock", "return lock", "raise two", "return unloadable", "b"]
    with trio.fail_after(BOUND):
        aggregate = await Supervisor(trio_supervisor.ray.RayWorker(body), max_workers=2).run(plan)
    assert [result.error for result in aggregate] == [
        "UnpicklableError: the worker raised ValueError: boom, which could not be sent back "
        f"from its Ray task: {LOCK}",
        "UnpicklableError: the worker returned a _thread.lock, which could not be sent back "
        f"from its Ray task: {LOCK}",
        "UnpicklableError: the worker raised tests.library.process_bodies.TwoArgs: 1 is not "
        "above 2, which could not be sent back from its Ray task: TwoArgs.__init__() missing 1 "
        "required positional argument: 'high'",
        "UnpicklableError: what the worker returned could not be loaded in this process: "
        "refused to load",
        None,
    ]
    assert all(isinstance(result.exception, UnpicklableError) for result in aggregate[:4])


async def test_a_timeout_kills_its_tasks_process(tmp_path: Path) -> None:
    written = tmp_path / "pid"
    worker = trio_supervisor.ray.RayWorker(body)
    with trio.fail_after(BOUND):
        await worker("warm up")  # the hung call then finds a worker process started
        aggregate = await Supervisor(worker, max_workers=1, timeout=5).run([f"hang {written}"])
    (result,) = aggregate
    assert result.status is Status.TIMED_OUT
    assert await gone(int(written.read_text()))  # killed, not left sleeping its 30 s
    assert await cpus_free()


async def test_cancelling_the_run_leaves_no_task_running(tmp_path: Path) -> None:
    files = [tmp_path / f"pid{i}" for i in range(CPUS + 1)]  # the last one queues for a CPU
    worker = trio_supervisor.ray.RayWorker(body)
    raised: list[BaseException] = []

    async def run() -> None:
        try:
            await Supervisor(worker, max_workers=len(files)).run([f"hang {f}" for f in files])
        except BaseException as exc:  # what the run raised, seen and raised on
            raised.append(exc)
            raise

    with trio.fail_after(BOUND):
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                # other processes write them: nothing to wait on but the files
                while not all(f.exists() and f.read_text() for f in files[:CPUS]):  # noqa: ASYNC110
                    await trio.sleep(0.01)
                scope.cancel()
    (exc,) = raised
    rest: BaseException | None = exc
    if isinstance(exc, BaseExceptionGroup):  # the run's nurseries pass it on in a group
        _, rest = exc.split(trio.Cancelled)
    assert rest is None  # nothing but the run's cancellation, and that not swallowed
    for f in files[:CPUS]:
        assert await gone(int(f.read_text()))
    assert await cpus_free()
    assert not files[CPUS].exists()  # the queued task never started


async def test_a_waiting_call_holds_no_thread(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    calls = 48  # more than trio's 40 threads: waiting in a thread each would show
    aggregate = None
    with trio.fail_after(BOUND):
        async with trio.open_nursery() as nursery:

            async def run() -> None:
                nonlocal aggregate
                worker = trio_supervisor.ray.RayWorker(hold)
                aggregate = await Supervisor(worker, max_workers=calls).run([str(gate)] * calls)

            before = threading.active_count()
            nursery.start_soon(run)
            await trio.testing.wait_all_tasks_blocked()  # every call waits on its task
            during = threading.active_count()
            gate.touch()
    assert during - before < 4
    assert aggregate is not None
    assert [result.output for result in aggregate] == ["passed"] * calls


async def test_resource_options_reach_the_task() -> None:
    worker = trio_supervisor.ray.RayWorker(assigned, num_cpus=0.5, memory=64 << 20)
    assert worker.options == {
        "name": "assigned",
        "max_retries": 0,
        "num_cpus": 0.5,
        "memory": 64 << 20,
    }
    with trio.fail_after(BOUND):
        (result,) = await Supervisor(worker, max_workers=1).run([None])
    assert result.output == {"CPU": 0.5, "memory": 64 << 20}


def test_a_function_that_cannot_be_pickled_is_refused_when_the_worker_is_made() -> None:
    lock = threading.Lock()

    def holding(subtask: str) -> str:  # sent by value, with the lock it closes over
        return f"{subtask} {lock}"

    with pytest.raises(TypeError) as refused:
        trio_supervisor.ray.RayWorker(holding)
    assert str(refused.value) == (
        "function must be picklable to reach a Ray worker process (a module-level function, "
        f"or a functools.partial of one), and {holding.__qualname__} is not: {LOCK}"
    )


async def hurry(subtask: str) -> str:
    return subtask


NOT_CALLABLE: Any = 3
NOT_STR: Any = 6379


@pytest.mark.parametrize(
    ("made", "error", "message"),
    [
        (lambda: trio_supervisor.ray.RayWorker(hurry), TypeError, "RayWorker runs a sync"),
        (lambda: trio_supervisor.ray.RayWorker(NOT_CALLABLE), TypeError, "function must be a sync"),
        (lambda: trio_supervisor.ray.RayWorker(twice, address=NOT_STR), TypeError, "address must"),
        (lambda: trio_supervisor.ray.RayWorker(twice, colour=1), ValueError, "Ray refused"),
        (lambda: trio_supervisor.ray.start_local(0), ValueError, "num_cpus must be >= 1, got 0"),
        (lambda: trio_supervisor.ray.start_local(), RuntimeError, "this process is connected"),
    ],
)
def test_bad_input_is_refused_in_one_line(
    made: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{message}") as refused:
        made()  # type: ignore[operator]
    assert "\n" not in str(refused.value)


def listening(pids: set[int]) -> set[str]:
    """The addresses the processes ``pids`` listen on (TCP, IPv4 and IPv6)."""
    inodes = set()
    for pid in pids:
        with_fds = Path(f"/proc/{pid}/fd")
        try:
            fds = list(with_fds.iterdir())
        except OSError:  # gone meanwhile
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, state, inode = fields[1].split(":")[0], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                packed = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.add(socket.inet_ntop(family, packed))
    return found


def loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1, an IPv6 socket's IPv4 side
    return (mapped or ip).is_loopback


def descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(text.rsplit(")", 1)[1].split()[1])
    family = {root}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    return family


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc")
def test_the_local_cluster_listens_on_loopback_only() -> None:
    assert ray.nodes()[0]["NodeManagerAddress"] == "127.0.0.1"  # type: ignore[no-untyped-call]
    addresses = listening(descendants(os.getpid()))
    assert addresses
    assert all(loopback(address) for address in addresses), addresses


def test_public_names_say_the_module_they_are_public_in() -> None:
    for name in trio_supervisor.ray.__all__:
        assert getattr(trio_supervisor.ray, name).__module__ == "trio_supervisor.ray"


@pytest.mark.parametrize(
    "lost",
    [
        ray.exceptions.WorkerCrashedError(),
        ray.exceptions.NodeDiedError("the node was lost"),  # type: ignore[no-untyped-call]
        ray.exceptions.LocalRayletDiedError(),
        ray.exceptions.OutOfMemoryError("out of memory"),  # type: ignore[no-untyped-call]
        ray.exceptions.OwnerDiedError("00" * 28, None, ""),
    ],
    ids=lambda lost: type(lost).__name__,
)
def test_what_ray_says_of_a_lost_process_node_or_result_is_a_crash(lost: Exception) -> None:
    # a node cannot be lost from a one-node cluster: the answer is made as Ray gives it
    answer: concurrent.futures.Future[bytes] = concurrent.futures.Future()
    answer.set_exception(lost)
    with pytest.raises(WorkerCrashed, match=r"^the Ray task died with its process or node \(") as e:
        ray_worker._outcome(answer)
    assert f"({type(lost).__name__}" in str(e.value)
    assert e.value.exitcode is None
