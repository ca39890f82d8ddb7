from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from xdist.remote import Producer
from xdist.scheduler import LoadGroupScheduling

# Time in these tests is virtual: a slow machine must not fail them, so no per-example deadline.
settings.register_profile("project", deadline=None, print_blob=True)
settings.load_profile("project")

# The modules whose tests take longest (seconds of CPU each: a real process killed, a server
# started, a thousand requests through the loopback server), run first when the tests run on
# several cores, so that the last tests, on every core, are short ones: a hint of order only (a
# module missing here is run in its place; a name no longer found is ignored).
FIRST = (
    "tests/library/test_adaptive_latency.py",
    "tests/library/test_journal_kill_laws.py",
    "tests/library/test_supervisor_benchmarks.py",
    "tests/course/test_runner.py",
    "tests/library/test_journal_kills.py",
    "tests/library/test_journal_conformance.py",
    "tests/library/test_worker_callables.py",
    "tests/library/test_otel_processes.py",
    "tests/library/test_processes.py",
)

# where each worker writes the xdist_group of each test it collected (see `GroupsByMark`)
GROUPS_FOLDER = "TRIO_SUPERVISOR_TEST_GROUPS"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The modules of `FIRST` first, in its order, each module's tests in their own order; and,
    on a worker of ``--dist loadgroup``, each test's group written for the scheduler."""
    rank = {path: place for place, path in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(FIRST)))
    folder = os.environ.get(GROUPS_FOLDER)
    worker = getattr(config, "workerinput", {}).get("workerid")
    if folder and worker:
        groups = {
            item.nodeid: "_".join(sorted({str(mark.args[0]) for mark in marks}))
            for item in items
            if (marks := list(item.iter_markers("xdist_group")))
        }
        (Path(folder) / f"{worker}.json").write_text(json.dumps(groups))


class GroupsByMark(LoadGroupScheduling):  # type: ignore[misc]  # xdist is untyped
    """``--dist loadgroup`` as its documentation says: the tests of one ``xdist_group`` are one
    unit of work, which one worker runs in turn. pytest-xdist 3.8 tells the scheduler a test's
    group by appending it to the test's node id through an attribute that pytest 9 no longer
    reads, so that every group was split across the workers (two Ray clusters at once, each
    module's shared recording made on each worker). Here each worker writes the groups it
    collected (`pytest_collection_modifyitems`) before it reports its collection, and the
    scheduler, which starts once every worker has, reads them."""

    def __init__(self, config: pytest.Config, log: Producer, folder: Path) -> None:
        super().__init__(config, log)
        self.folder = folder
        self.groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self.groups is None:
            self.groups = {}
            for written in sorted(self.folder.glob("*.json")):
                self.groups.update(json.loads(written.read_text()))
        group = self.groups.get(nodeid)
        return group if group is not None else super()._split_scope(nodeid)


_FOLDER = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C handled again if it was ignored (see below); and, on the controller of ``--dist
    loadgroup``, a folder for the workers' groups, named in the environment the workers start
    with."""
    # A shell's background job (`make test &`, a script's `cmd &`) starts with SIGINT ignored,
    # and a process started from it inherits that: the runner's Ctrl-C tests then sent their
    # child a SIGINT it never saw. A handler set here is not inherited (exec resets it), so
    # each child starts with Ctrl-C as a terminal gives it.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput") or config.getoption("dist", "no") != "loadgroup":
        return
    folder = Path(tempfile.mkdtemp(prefix="test-groups-"))
    config.stash[_FOLDER] = folder
    os.environ[GROUPS_FOLDER] = str(folder)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_FOLDER, None)
    if folder is not None:
        os.environ.pop(GROUPS_FOLDER, None)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> GroupsByMark | None:
    folder = config.stash.get(_FOLDER, None)
    return None if folder is None else GroupsByMark(config, log, folder)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected (every module the tests import, and the tests
    themselves) lives to the end: moved out of the collector's way, so that each of its full
    passes, which the Hypothesis tests set off again and again, scans only what the tests made
    since (it scanned the whole import graph each time: most of a grader's CPU)."""
    del session
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """The same after each module's last test, its fixtures torn down: what is still alive then
    (what the module imported as it ran: a site built in process, Ray, a plotting library) is
    moved out of the collector's way too. Without it the tests after a docs build spent twice
    the CPU (the course's checks: 19 s against 10)."""
    yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()
