"""A sync function as a worker whose calls run as Ray tasks, on whichever node has room.

Each call submits one task and waits for its result without a thread: the task's
``ObjectRef.future()`` wakes the trio task through its trio token when the result is there. A
call cancelled while it waits cancels its task with ``force=True``, which kills the process
running it. What the function returns or raises is pickled in the task by this module's wrapper,
so that what cannot be pickled is named there, where it is known, as
``trio_supervisor.processes`` does in its worker processes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import importlib
import os
import pickle
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import trio

try:
    import ray
    import ray.exceptions
    import ray.util
    from ray import cloudpickle
except ImportError as error:  # pragma: no cover - the extra is installed where tests run
    missing = (error.name or "a module").split(".")[0]
    raise ImportError(
        f"trio_supervisor.ray needs the 'ray' extra ({missing} is missing): "
        "pip install 'trio-supervisor[ray]'"
    ) from error

from ..processes import UnpicklableError, WorkerCrashed
from ..processes._sending import called, check_function, name_of, sent_back

S = TypeVar("S")
T = TypeVar("T")

# What Ray raises for a task whose process, node or result was lost before it answered: the
# task did not fail, it died (Ray's own retries are off: the supervisor's `attempts` decide).
_DIED: tuple[type[Exception], ...] = (
    ray.exceptions.WorkerCrashedError,
    ray.exceptions.NodeDiedError,
    ray.exceptions.LocalRayletDiedError,
    ray.exceptions.OutOfMemoryError,
    ray.exceptions.ObjectLostError,
)
# A local cluster keeps to loopback: Ray picks this machine's address unless told that it runs
# no cluster (the environment reaches the processes it starts; the constant, this process).
_LOCAL_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
_LOOPBACK = "127.0.0.1"
RAY_TASK = "its Ray task"  # where a call runs, as the messages say it


_pickled: Callable[..., bytes] = cloudpickle.dumps  # Ray's own, which sends the task


def _dumps(value: object) -> bytes:
    return _pickled(value, protocol=pickle.HIGHEST_PROTOCOL)


def _in_ray_task(function: Callable[[S], T], subtask: S) -> bytes:
    """What runs in the Ray task: ``function(subtask)``, sent back (see ``sent_back``)."""
    return sent_back(functools.partial(called, function, subtask, RAY_TASK), _dumps, RAY_TASK)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


_TASK: Any = ray.remote(_in_ray_task)
_node_address: Callable[[], str] = ray.util.get_node_ip_address


# -- connecting ------------------------------------------------------------------------------
# ray.init starts a local cluster's processes with the kernel's parent-death signal, which is
# sent when the *thread* that started them ends: one long-lived thread makes every connection,
# so that the cluster lives as long as this process (or until ray.shutdown).

_requests: queue.SimpleQueue[tuple[Callable[[], None], concurrent.futures.Future[None]]] = (
    queue.SimpleQueue()
)
_keeper_lock = threading.Lock()
_keeper: threading.Thread | None = None
_connect_lock = threading.Lock()


def _keep() -> None:
    while True:
        job, done = _requests.get()
        try:
            job()
        except BaseException as error:  # handed to the thread that asked, and raised there
            done.set_exception(error)
        else:
            done.set_result(None)


def _in_keeper(job: Callable[[], None]) -> None:
    """Run ``job`` in the keeping thread and wait for it; raise what it raised."""
    global _keeper
    with _keeper_lock:
        if _keeper is None:
            _keeper = threading.Thread(target=_keep, name="trio-supervisor ray", daemon=True)
            _keeper.start()
    done: concurrent.futures.Future[None] = concurrent.futures.Future()
    _requests.put((job, done))
    done.result()


@contextlib.contextmanager
def _no_cluster_address() -> Iterator[None]:
    """While ray.init starts a local cluster, tell Ray it runs no cluster: it then gives the
    node 127.0.0.1, and its servers listen there alone (an address of 127.0.0.1 passed to
    ray.init is otherwise replaced by this machine's). Ray offers no public setting for it: this
    sets its private ``ray._private.ray_constants.ENABLE_RAY_CLUSTER`` (read before the
    environment, which Ray reads once, when it is imported). A Ray without it gets the
    environment alone, which a Ray imported afterwards reads."""
    try:
        constants: Any = importlib.import_module("ray._private.ray_constants")
    except ImportError:
        constants = None
    enabled = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    saved = {name: os.environ.get(name) for name in _LOCAL_ENV}
    os.environ.update(_LOCAL_ENV)
    if enabled is not None:
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if enabled is not None:
            constants.ENABLE_RAY_CLUSTER = enabled
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _init_local(num_cpus: int | None) -> None:
    with _no_cluster_address():
        ray.init(num_cpus=num_cpus, include_dashboard=False)
    where: str = _node_address()
    if where != _LOOPBACK:  # pragma: no cover - a Ray that no longer honours the setting
        ray.shutdown()
        raise RuntimeError(
            f"the local Ray cluster would listen on {where}, not on loopback only: start one "
            "with `ray start --head` and pass its address"
        )


def start_local(num_cpus: int | None = None) -> None:
    """Start a Ray cluster on this machine and connect this process to it, as a
    [`RayWorker`][trio_supervisor.ray.RayWorker] without an ``address`` does on its first call.

    ```python
    start_local(num_cpus=4)  # before the run: the cluster's start is in none of its timeouts
    worker = RayWorker(len)  # no address: the cluster this process is connected to
    aggregate = await Supervisor(worker, max_workers=4, timeout=60).run(["a", "bb"])
    ```

    The cluster listens on loopback (127.0.0.1) only, starts no dashboard and sends no usage
    statistics; it ends with this process, or with ``ray.shutdown()``.

    Args:
      num_cpus: how many CPUs the cluster offers its tasks; None for this machine's.

    Raises:
      RuntimeError: if this process is connected to a Ray cluster already.
      TypeError: if ``num_cpus`` is not an int or None.
      ValueError: if ``num_cpus`` is < 1.
    """
    if num_cpus is not None:
        if isinstance(num_cpus, bool) or not isinstance(num_cpus, int):
            raise TypeError(
                f"num_cpus must be an int or None, got {type(num_cpus).__name__} {num_cpus!r}"
            )
        if num_cpus < 1:
            raise ValueError(f"num_cpus must be >= 1, got {num_cpus}")
    with _connect_lock:
        if ray.is_initialized():
            raise RuntimeError(
                "this process is connected to a Ray cluster already: call ray.shutdown() "
                "before starting a local one"
            )
        _in_keeper(lambda: _init_local(num_cpus))


def _connect(address: str | None) -> None:
    """Connect this process to the cluster at ``address``, or to a new local one, unless it
    is connected already."""
    with _connect_lock:
        if ray.is_initialized():
            return
        if address is None:
            _in_keeper(lambda: _init_local(None))
        else:

            def join() -> None:
                ray.init(address=address)

            _in_keeper(join)


# -- the worker ------------------------------------------------------------------------------


class RayWorker(Generic[S, T]):
    """A sync function as a worker for a [`Supervisor`][trio_supervisor.Supervisor]: each call
    runs ``function(subtask)`` as a Ray task, on any node of the cluster with room for it.

    ```python
    import trio
    from trio_supervisor import Supervisor
    from trio_supervisor.ray import RayWorker

    def measure(text: str) -> int:  # pickled to the cluster's worker processes
        return len(text)

    async def main() -> None:
        worker = RayWorker(measure)  # a local cluster; address="auto": `ray start`'s
        await worker.connect()  # the cluster starts before the run, not in its timeouts
        aggregate = await Supervisor(worker, max_workers=64, timeout=60).run(["a", "bb"])
        print([result.output for result in aggregate])

    trio.run(main)
    ```

    Waiting for a result takes no thread and never blocks trio: the task's future wakes the
    waiting slot. A process that dies during a call (``os._exit``, a segfault, a kill, its node
    lost) fails that call with
    [`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed]; the function calling
    ``sys.exit`` does too. An `Exception` the function raises comes back as itself; one that
    pickle cannot send back, or such an output, comes back as
    [`UnpicklableError`][trio_supervisor.processes.UnpicklableError] naming it. A cancelled
    call (a ``timeout``, a ``deadline``, a cancelled run) cancels its task with
    ``ray.cancel(force=True)``, which kills the process running it. Ray's own retries are off
    (``max_retries=0``): the supervisor's ``attempts`` decide what runs again.

    The function, its subtask and its output cross by pickle (Ray's cloudpickle): a
    module-level function is sent by name, and every node must be able to import its module,
    this library and the packages it uses, in the same versions of Python and Ray. A timeout
    counts the time a task waits on the cluster for a free CPU: a ``max_workers`` above the
    cluster's CPUs queues tasks there.

    Args:
      function: a sync callable taking one subtask, picklable.
      address: the cluster to connect to, as ``ray.init(address=...)`` takes it (``"auto"``,
        ``"127.0.0.1:6379"``, ``"ray://head:10001"``); None: the one this process is connected
        to, or a new local one ([`start_local`][trio_supervisor.ray.start_local]). The first
        call connects, unless [`connect`][trio_supervisor.ray.RayWorker.connect] did. Ray
        connects a process to one cluster: once connected, every worker uses that one.
      num_cpus: CPUs each task reserves on its node (Ray's default: 1); a fraction lets more
        tasks share a CPU.
      memory: bytes of memory each task reserves on its node, for scheduling (Ray does not
        limit the task to it).
      **ray_options: any other option of a Ray task (``resources``, ``num_gpus``,
        ``scheduling_strategy``, ``runtime_env``, ``max_retries``...), passed to
        ``.options()``.

    Raises:
      TypeError: if ``function`` is not callable, is an ``async def`` function, or cannot be
        pickled; if ``address`` is not a str or None; or if Ray refuses an option's type.
      ValueError: if Ray refuses an option.
    """

    __slots__ = ("_address", "_function", "_options", "_remote")

    def __init__(
        self,
        function: Callable[[S], T],
        *,
        address: str | None = None,
        num_cpus: float | None = None,
        memory: int | None = None,
        **ray_options: Any,
    ) -> None:
        check_function(function, _dumps, "RayWorker", "as a Ray task", "a Ray worker process")
        if address is not None and not isinstance(address, str):
            raise TypeError(
                f"address must be a str or None, got {type(address).__name__} {address!r}"
            )
        options: dict[str, Any] = {"name": name_of(function), "max_retries": 0}
        if num_cpus is not None:
            options["num_cpus"] = num_cpus
        if memory is not None:
            options["memory"] = memory
        options.update(ray_options)
        try:
            remote = _TASK.options(**options)
        except (TypeError, ValueError) as error:
            raise type(error)(f"Ray refused the task's options: {error}") from None
        self._function = function
        self._address = address
        self._options = options
        self._remote = remote

    @property
    def function(self) -> Callable[[S], T]:
        """The sync function each call runs as a Ray task."""
        return self._function

    @property
    def address(self) -> str | None:
        """The cluster's address as given, or None: the connected one, or a local one."""
        return self._address

    @property
    def options(self) -> dict[str, Any]:
        """The options each task is submitted with (a copy)."""
        return dict(self._options)

    def __repr__(self) -> str:
        shown = ", ".join(f"{key}={value!r}" for key, value in self._options.items())
        return f"RayWorker({name_of(self._function)}, address={self._address!r}, {shown})"

    async def connect(self) -> None:
        """Connect this process to the cluster now (starting a local one if ``address`` is
        None and Ray is not connected), so that no call's timeout counts it. Waits in a
        thread; a cancelled wait leaves the connection to finish on its own.

        Raises:
          Exception: what ``ray.init`` raised (a `ConnectionError` for a cluster not found).
        """
        if not ray.is_initialized():
            await trio.to_thread.run_sync(_connect, self._address, abandon_on_cancel=True)

    async def __call__(self, subtask: S) -> T:
        """Run ``function(subtask)`` as a Ray task and return what it returns.

        Raises:
          WorkerCrashed: if the task's process or node died before the call returned.
          UnpicklableError: if what the call raised or returned could not be sent back.
          Exception: whatever the function raised, as itself; or what Ray raised for a task it
            could not run (``ray.exceptions.TaskUnschedulableError``, say).
        """
        await self.connect()
        ref = self._remote.remote(self._function, subtask)
        future: concurrent.futures.Future[Any] = ref.future()
        answered = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def wake(_: object) -> None:  # in one of Ray's threads
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(answered.set)

        future.add_done_callback(wake)
        try:
            await answered.wait()
        finally:
            if not future.done():  # cancelled while it runs: its process is killed
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
        output: T = _outcome(future)
        return output


def _outcome(future: concurrent.futures.Future[Any]) -> Any:
    """The call's output, or what it raises, from the task's finished future."""
    try:
        sent = future.result()
    except ray.exceptions.RayTaskError as error:
        cause = error.cause
        if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
            failure: Exception = cause
        else:
            failure = UnpicklableError(
                f"what the worker raised could not be sent back from its Ray task: "
                f"{_first_line(cause or error)}"
            )
    except _DIED as error:
        failure = WorkerCrashed(
            f"the Ray task died with its process or node ({_first_line(error)})", None
        )
    except (ray.exceptions.UnserializableException, ray.exceptions.RaySystemError) as error:
        failure = UnpicklableError(
            f"what the worker raised could not be loaded in this process: {_first_line(error)}"
        )
    else:
        try:
            return pickle.loads(sent)
        except Exception as error:
            raise UnpicklableError(
                f"what the worker returned could not be loaded in this process: {error}"
            ) from error
    raise failure  # outside the handler: Ray's wrapper is not its context
