"""The journal: a run's final results in a database, so that a run killed part way resumes
where it stopped, and the questions its workers asked.

A [`Journal`][trio_supervisor.Journal] is one SQLite file (WAL mode) or one PostgreSQL database
(``_store``, ``_postgres``: the same statements, in each one's dialect), written by one thread
of its own: a run hands it each final result as the slot settles (a row appended to a buffer,
never a wait on the disk), and the thread commits the buffer in groups, at most ``interval``
seconds and ``count`` rows apart, or after every row with ``flush="each"``. The schema is in
the class's docstring, where the API reference shows it; ``_store.SCHEMA`` is what makes the
tables
(``tests/library/test_journal.py`` holds the two to each other).
"""

from __future__ import annotations

import atexit
import bisect
import contextlib
import dataclasses
import itertools
import json
import os
import secrets
import socket
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from os import PathLike
from typing import Any, ClassVar, Protocol

import trio

from . import _models
from ._approval import asker
from ._contract import Status, SubResult, revised
from ._digest import InputCheck, digest_plan, first_difference, plan_texts, subtask_text, unlike
from ._identity import PLANNER, RunName, covers
from ._journal_view import RunSummary, SlotRow, collect, slot_rows, summaries
from ._sharing import drop_place, renew_places, take_place, take_token
from ._store import SqliteStore, Store, is_postgres, shown, stored, text_of


def open_store(target: str, create: bool, read_only: bool = False) -> Store:
    """The store of ``target``: PostgreSQL for a connection string (``postgresql://...``),
    else a SQLite file. With ``read_only``, one that only reads: its database checked to be a
    journal, never given what it lacks, and every transaction read-only.

    Raises:
      what each store's opening raises (see ``SqliteStore.open``, ``_postgres.open_postgres``).
    """
    if is_postgres(target):
        try:  # psycopg is imported only by who needs it
            from ._postgres import open_postgres
        except ImportError as exc:
            raise ImportError(
                f"a PostgreSQL journal needs psycopg 3 ({exc}): install trio-supervisor[postgres]"
            ) from None
        return open_postgres(target, create, read_only)
    return SqliteStore.open(target, create, read_only)


INSERT = (
    "INSERT INTO results (run_id, round, slot, subtask, status, output, error_type, error, "
    "attempts, started, finished, hedges, written, owner) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id, round, slot) DO UPDATE SET subtask = excluded.subtask, "
    "status = excluded.status, output = excluded.output, error_type = excluded.error_type, "
    "error = excluded.error, attempts = excluded.attempts, started = excluded.started, "
    "finished = excluded.finished, hedges = excluded.hedges, written = excluded.written, "
    "owner = excluded.owner WHERE results.status != 'ok'"
)
COLUMNS = 14  # a row's values; a leased slot's row has its lease's owner after them


class Codec(Protocol):
    """How a journal turns an output into what it stores, and back: ``encode`` returns str or
    bytes (raising `TypeError` or `ValueError` for what it cannot encode), ``decode`` undoes
    it."""

    def encode(self, value: Any) -> str | bytes: ...

    def decode(self, data: str | bytes) -> Any: ...


class JsonCodec:
    """The default codec: JSON text (a tuple comes back as a list). Text SQLite cannot hold (a
    lone surrogate, as a file name that is not UTF-8 decodes to) is kept escaped, ``\\udce9``,
    which decodes back to the same str. A pydantic model instance (a typed ``ChatAgent``'s
    output) is kept with its class's import path, and comes back as an instance of its class
    (``_models``)."""

    name = "JSON"

    def __init__(self) -> None:
        self.encode: Callable[[Any], str] = json.JSONEncoder(
            ensure_ascii=False, allow_nan=True, check_circular=False, default=_models.encoded
        ).encode
        self.escaped: Callable[[Any], str] = json.JSONEncoder(
            ensure_ascii=True, allow_nan=True, check_circular=False, default=_models.encoded
        ).encode
        self.decode: Callable[[str | bytes], Any] = _models.decode


FLUSH = ("group", "each")
LEASE = 30.0  # seconds a slot's lease lasts unless renewed
CLAIMED, HELD, DONE = "claimed", "held", "done"  # what a claim of a slot found
GAP = 16  # slots between two a claim names, past which it reads two ranges and leases two
PARKED = "awaiting approval"
WRITERS = ("thread", "inline")


class Journal:
    """A run's final results, kept in a SQLite file or a PostgreSQL database so that a run
    killed part way (a deploy, an out-of-memory kill, a laptop lid) resumes with the same
    ``run_id`` where it stopped.

    ```pycon
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.db"
    >>> calls = []
    >>> async def worker(n):
    ...     calls.append(n)
    ...     return n * n
    >>> async def main():
    ...     with Journal(path) as journal:
    ...         supervisor = Supervisor(worker, max_workers=2)
    ...         first = await supervisor.run([1, 2, 3], durable=Durable("squares", journal))
    ...         again = await supervisor.run([1, 2, 3], durable=Durable("squares", journal))
    ...     return [r.output for r in again], calls, first == again
    >>> trio.run(main)
    ([1, 4, 9], [1, 2, 3], True)

    ```

    Give it to [`Supervisor.run`][trio_supervisor.Supervisor.run] or
    [`stream`][trio_supervisor.Supervisor.stream] in a [`Durable`][trio_supervisor.Durable]
    with a ``run_id`` (``durable=Durable(run_id, journal)``): each slot's final result
    is journaled once, keyed by run, round and slot; the same ``run_id`` again takes the slots
    with a final OK record from the journal (their original attempts and times, marked
    ``journaled`` in the trace) and runs only the others. A different plan under the same
    ``run_id`` is refused before any work, naming the first slot that differs (a subtask is
    known by its ``repr``: give subtasks whose repr is stable, as str, numbers and tuples),
    whatever journaled it first: a run, a stream, or a re-planning run (whose ``run_id`` no run
    or stream may take, nor it theirs). A lazy stream's input (not a list or a tuple) is checked
    as it is pulled, against the plan journaled, or the slots journaled by a lazy stream cut
    short: one that differs, or ends sooner, ends the stream with the error, after the results
    before it; a lazy stream pulled to its end journals its input as the plan.

    Writes never block the trio loop: a result is appended to a buffer that one thread of the
    journal's own commits, in groups, at most ``interval`` seconds and ``count`` results apart;
    a run returns only after its results are committed. With ``flush="each"`` every result is
    committed before its lane goes on (safer, slower). A process killed loses only what was not
    committed yet: those slots run again on resume, and their workers see the same
    [`attempt_key`][trio_supervisor.attempt_key] as before.

    A worker can also stop for a person's yes: [`approval`][trio_supervisor.approval] journals
    its question and parks the slot until ``approve`` or ``reject`` answers it, from this
    process or any other that opens the journal. So can a re-planning run's planner, for the batch
    it is about to dispatch: its question is slot ``PLANNER`` (-1) of the decision's number.

    The file's schema, which the ``sqlite3`` shell reads as well as this module does (a
    re-planning run's round ``n``, from 1, journals its batch under round ``n``):

    ```sql
    CREATE TABLE runs (         -- one row per run and round: what was planned, and when
      run_id      TEXT NOT NULL,
      round       INTEGER NOT NULL,
      fingerprint TEXT,         -- blake2b of the plan's subtasks' reprs; NULL for a lazy
                                -- stream's until it pulls its input to the end
      plan        BLOB,         -- the reprs, NUL-separated and zlib-compressed (names a change)
      started     REAL NOT NULL,-- unix time the run was first journaled
      PRIMARY KEY (run_id, round)
    ) WITHOUT ROWID;
    CREATE TABLE results (      -- one row per slot with a final result
      run_id     TEXT NOT NULL,
      round      INTEGER NOT NULL,
      slot       INTEGER NOT NULL,
      subtask    TEXT NOT NULL, -- the subtask's repr
      status     TEXT NOT NULL, -- a Status value: 'ok', 'failed', 'timed out'
      output     BLOB,          -- the codec's encoding of the output (JSON text by default)
      error_type TEXT,          -- the failure's type name
      error      TEXT,          -- the failure's type and message, as SubResult.error says it
      attempts   INTEGER NOT NULL,
      started    REAL,          -- trio time of the first attempt, as the run recorded it
      finished   REAL,          -- trio time the slot ended
      hedges     INTEGER NOT NULL DEFAULT 0, -- how many of the attempts were hedges
      written    REAL,          -- unix time the row was recorded (NULL in an older journal)
      owner      TEXT,          -- the supervisor that ran the slot (NULL in an older journal)
      PRIMARY KEY (run_id, round, slot)
    ) WITHOUT ROWID;
    CREATE TABLE leases (       -- the slots a supervisor runs now, a row per range claimed
      run_id     TEXT NOT NULL, -- together: another supervisor skips them
      round      INTEGER NOT NULL,
      first_slot INTEGER NOT NULL, -- the range's first slot
      last_slot  INTEGER NOT NULL, -- its last (its slots with a final row are no one's)
      owner      TEXT NOT NULL, -- the supervisor that claimed it (host, process, run)
      claimed    REAL NOT NULL, -- when it claimed it
      expires    REAL NOT NULL, -- when another may take it over, unless renewed before
      PRIMARY KEY (run_id, round, first_slot) -- the ranges of a run never overlap
    ) WITHOUT ROWID;
    CREATE TABLE places (       -- the places a shared Capacity's attempts hold now
      meter   TEXT NOT NULL,    -- the capacity's shared= name
      holder  TEXT NOT NULL,    -- one attempt's place (its owner, and a number)
      owner   TEXT NOT NULL,    -- the process's meter that holds it (host, process, random)
      claimed REAL NOT NULL,    -- when it was taken
      expires REAL NOT NULL,    -- when it is free again, unless renewed before
      PRIMARY KEY (meter, holder)
    ) WITHOUT ROWID;
    CREATE TABLE buckets (      -- a shared RateLimit's token bucket
      meter TEXT NOT NULL,      -- the rate limit's shared= name
      due   REAL NOT NULL,      -- when the bucket is full again (the cell rate algorithm's time)
      PRIMARY KEY (meter)
    ) WITHOUT ROWID;
    CREATE TABLE decisions (    -- a re-planning run's planner decisions, in the order asked
      run_id   TEXT NOT NULL,
      number   INTEGER NOT NULL,-- 0: the first decision; then one per time the planner was asked
      decision BLOB NOT NULL,   -- the codec's encoding of the decision (its batch, or done;
                                -- a batch's subtasks as their reprs, which read back exactly)
      decided  REAL NOT NULL,   -- unix time it was journaled
      PRIMARY KEY (run_id, number)
    ) WITHOUT ROWID;
    CREATE TABLE approvals (    -- the questions workers and planners asked (approval()), answered
      run_id   TEXT NOT NULL,
      round    INTEGER NOT NULL,-- a worker's round; the planner's: the decision's number
      slot     INTEGER NOT NULL,-- a worker's slot; -1: the planner, for the batch it decides
      question TEXT NOT NULL,   -- a slot's questions are answered one by one
      status   TEXT NOT NULL,   -- 'pending', 'approved' or 'rejected'
      by       TEXT,            -- who answered
      note     TEXT,            -- what they said
      asked    REAL NOT NULL,   -- unix time the question was asked
      decided  REAL,            -- unix time it was answered
      PRIMARY KEY (run_id, round, slot, question) -- each question of a slot answered alone
    ) WITHOUT ROWID;
    ```

    A final OK row is written once: a second write of the slot is a no-op (``ON CONFLICT``). A
    failed or timed-out row is replaced only by the result of the resume that ran its slot again.
    Every field of a result comes back as it was (its ``exception`` aside: its ``error`` says
    it), text SQLite cannot hold included: a lone surrogate, as a file name that is not UTF-8
    decodes to, is kept escaped in an output's JSON, and an error or a subtask holding one is
    kept as a BLOB of its bytes, surrogates and all. A journal of an earlier version of this
    module is opened as it is, given what it lacks (the ``hedges`` column, a table): its results
    come back too.

    ``Journal("postgresql://user@host:port/dbname")`` (a connection string, which psycopg 3
    reads: the ``postgres`` extra) keeps the same tables, columns and keys in that database's
    current schema, which ``psql`` reads, in PostgreSQL's types: ``BIGINT`` for ``INTEGER``,
    ``DOUBLE PRECISION`` for ``REAL``, ``BYTEA`` for ``BLOB``, no ``WITHOUT ROWID``. Its
    writers, in any process on any machine, take turns through a transaction-level advisory
    lock, as on a file (``BEGIN IMMEDIATE``); its thread, not the trio loop, waits on the
    server. Two things differ, as a ``TEXT`` column holds neither NUL nor a lone surrogate: a
    subtask's or an error's text holding one is kept escaped (``\\x00``, ``\\udce9``), and
    an output is kept as ``BYTEA`` (a str as its UTF-8), so a codec's ``decode`` is given bytes
    (the JSON codec reads both). Errors name the server without its password.

    Open it once per process and share it (making one opens the file and starts its writer: a
    short blocking call); ``close()`` (or leaving its ``with`` block) commits what is left, and
    moves it into the main file (a checkpoint of the WAL): a closed journal's file, copied
    alone, holds every result. Another process may open the same file at the same time, a new
    one included (SQLite's WAL lets readers in while one writes), and run the same ``run_id``:
    they share its slots through leases (the ``leases`` table). A supervisor claims each slot
    for ``lease`` seconds (the run's ``Durable(lease=)``, else the journal's) before its worker
    is called, a few slots ahead of its lanes, all it claims at once under one lease row; it
    renews its leases every third of that while the slots run, and skips a slot another holds,
    coming back to it: it reads its result once its holder is done, or takes it over once the
    lease ran out (its holder was killed, or hung; at once, for a process on this host that is
    gone), the rest of that lease left to its holder. A supervisor whose lease was taken
    over stops that attempt, and its row is never written over the new owner's. So each slot's
    worker is called once, but for the slots whose owner stopped renewing before it finished
    them; each slot is journaled once. Leases cover a run's lanes; a stream and a run with
    ``restarts=`` run every slot they have no result of.

    Args:
      path: the database file, made if missing (in a folder that exists), or a PostgreSQL
        connection string (``postgresql://...`` or ``postgres://...``), whose tables are made
        if it holds none. A database is checked before anything is written to it: one that is
        not SQLite, or holds tables of another schema, is refused and left as it was.
      codec: encodes outputs (``encode(value) -> str | bytes``, ``decode(data)``); JSON when
        None. An output it cannot encode, or encodes as text SQLite cannot hold, fails the run
        with a `TypeError` naming the slot, the output's type and the fix; what was journaled
        before stays, and the journal stays open.
      flush: ``"group"`` (commit in groups) or ``"each"`` (commit every result before going on).
      interval: seconds a result may wait in the buffer before its group is committed.
      count: results a group holds at most: a full buffer is committed at once.
      keep_failed: on resume, keep failed and timed-out results instead of running their slots
        again.
      writer: ``"thread"`` (the writer thread) or ``"inline"``: commits in the calling thread,
        ``interval`` read on trio's clock, blocking trio while it writes; for tests on virtual
        time (``trio.testing.MockClock``), where a commit must happen at a virtual instant.
      create: False: refuse a database that is not a journal yet (a missing file, or an empty
        database) instead of making it one, as the command line does.
      lease: seconds a supervisor holds each slot it runs before another supervisor on the
        same run may take it over (renewed every third of it while the slot runs); None: no
        leases, every supervisor on one run runs every slot it has no result of. A run's
        [`Durable`][trio_supervisor.Durable] given a ``lease`` of its own uses that instead. A
        place of a shared [`Capacity`][trio_supervisor.Capacity] is held for as long (30 s
        with None).
      read_only: open the file only to read it (what the command line's ``runs`` and ``show``
        do): nothing is written to it, a journal of an earlier version is read as it is, not
        given what it lacks; implies ``create=False`` and ``writer="inline"``.

    Raises:
      TypeError: if ``path`` is neither a str nor a path.
      ValueError: if ``flush`` is neither ``"group"`` nor ``"each"``, ``interval`` is not
        positive, ``count`` is < 1, or ``writer`` is neither ``"thread"`` nor ``"inline"``; if
        the file is not a journal (not SQLite; tables of another schema, named with what they
        lack), before anything is written to it.
      IsADirectoryError: if ``path`` is a directory.
      FileNotFoundError: if its folder does not exist; with ``create=False``, if it does not.
      sqlite3.Error: if SQLite cannot open or write the file (read-only, say), naming it.
      ConnectionError: if the PostgreSQL server cannot be reached, or refuses the connection.
      ImportError: for a connection string, if psycopg is not installed, naming the extra.
    """

    PLANNER: ClassVar[int] = PLANNER
    """The slot a re-planning run's planner asks under (its round: the decision's number)."""

    def __init__(
        self,
        path: str | PathLike[str],
        *,
        codec: Codec | None = None,
        flush: str = "group",
        interval: float = 0.05,
        count: int = 1000,
        keep_failed: bool = False,
        writer: str = "thread",
        create: bool = True,
        read_only: bool = False,
        lease: float | None = LEASE,
    ) -> None:
        if not isinstance(path, str | PathLike) or not isinstance(os.fspath(path), str):
            raise TypeError(
                f"path must be a str or a path, got {type(path).__name__} {path!r}: the name of "
                "the journal's file, or a postgresql:// connection string"
            )
        if flush not in FLUSH:
            raise ValueError(f'flush must be "group" or "each", got {flush!r}')
        if isinstance(interval, bool) or not isinstance(interval, int | float) or interval <= 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be an int >= 1, got {count!r}")
        if writer not in WRITERS:
            raise ValueError(f'writer must be "thread" or "inline", got {writer!r}')
        self._lease = checked_lease(lease, "lease")
        self._target = os.fspath(path)
        self.path = shown(self._target) if is_postgres(self._target) else self._target
        """The database as messages name it: the file, or the server (without password)."""
        self.read_only = bool(read_only)
        if read_only:
            create, writer = False, "inline"
        self.create = create
        self.codec: Codec = codec if codec is not None else JsonCodec()
        self.flush = flush
        self.interval = float(interval)
        self.count = count
        self.keep_failed = keep_failed
        self.each = flush == "each"
        # invariant: rows in _buffer are appended by the trio side, taken by the writer only;
        # _appended counts every row appended, _committed those the writer has committed
        self._buffer: deque[tuple[Any, ...]] = deque()
        self._calls: deque[tuple[Callable[[Store], Any], list[Any]]] = deque()
        self._leasing: deque[tuple[Callable[[Store], Any], list[Any]]] = deque()  # go first
        self._appended = 0
        self._committed = 0
        self._arrived = threading.Event()  # the buffer got a row, or a call came
        self._urgent = threading.Event()  # commit now: full, flushed, each, closing
        self._done = threading.Condition()  # _committed moved, or a call was answered
        self._stopping: bool | None = None  # True: commit then stop; False: drop and stop
        self._failure: BaseException | None = None  # a row lost since the last wait
        self.writer = writer
        self._inline: Store | None = None
        self._first = 0.0  # inline: trio time of the oldest row in the buffer
        atexit.register(_close_at_exit, weakref.ref(self))
        if writer == "inline":
            self._inline = open_store(self._target, create, self.read_only)
            return
        ready: list[BaseException | None] = []
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name=f"journal {self.path}", daemon=True
        )
        self._thread.start()
        with self._done:
            self._done.wait_for(lambda: bool(ready))
        if ready[0] is not None:
            raise ready[0]

    def __repr__(self) -> str:
        return (
            f"Journal({self.path!r}, flush={self.flush!r}, interval={self.interval:g}, "
            f"count={self.count})"
        )

    @property
    def lease(self) -> float | None:
        """Seconds a slot's lease lasts in a run given this journal, unless its
        [`Durable`][trio_supervisor.Durable] says otherwise; None: no leases (read-only: give a
        run its own as ``Durable(run_id, journal, lease=...)``)."""
        return self._lease

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the writer thread -------------------------------------------------------------------

    def _serve(self, ready: list[BaseException | None]) -> None:
        try:
            conn = open_store(self._target, self.create)
        except BaseException as exc:
            with self._done:
                ready.append(exc)
                self._done.notify_all()
            return
        with self._done:
            ready.append(None)
            self._done.notify_all()
        try:
            while True:
                self._arrived.wait()
                self._arrived.clear()
                if (
                    not self.each
                    and not self._calls
                    and not self._leasing
                    and self._stopping is None
                ):
                    self._urgent.wait(self.interval)
                self._urgent.clear()
                if self._stopping is False:
                    self._buffer.clear()
                    break
                self._commit(conn)
                self._reply(conn, self._leasing)
                self._reply(conn, self._calls)
                if self._stopping is not None and not self._buffer and not self._leasing:
                    break
        finally:
            conn.close()
            with self._done:
                self._stopping = False if self._stopping is None else self._stopping
                self._done.notify_all()

    def _reply(self, conn: Store, calls: deque[tuple[Callable[[Store], Any], list[Any]]]) -> None:
        """Run each call of ``calls`` on ``conn``, in order, each one's outcome its reply."""
        while calls:
            call, reply = calls.popleft()
            try:
                reply.append((True, call(conn)))
            except BaseException as exc:
                reply.append((False, exc))
            with self._done:
                self._done.notify_all()

    def _commit(self, conn: Store) -> None:
        """Commit what the buffer holds, in groups of ``count``. A group the database refuses
        is committed again row by row: a row refused alone is lost (its slot runs again on
        resume), said by the next wait for the commit; the rows beside it, and the journal, go
        on."""
        buffer = self._buffer
        while buffer:
            if self._inline is None:
                self._reply(conn, self._leasing)  # a claim the lanes wait on, between groups
            rows: list[tuple[Any, ...]] = []
            while buffer and len(rows) < self.count:
                rows.append(buffer.popleft())
            try:
                _write(conn, rows)
            except Exception:
                for row in rows:
                    try:
                        _write(conn, [row])
                    except Exception as exc:
                        self._lost(row, exc)
            with self._done:
                self._committed += len(rows)
                self._done.notify_all()

    def _lost(self, row: tuple[Any, ...], exc: Exception) -> None:
        """Row ``row`` could not be committed: the first such since the last wait says so."""
        with self._done:
            if self._failure is None:
                self._failure = RuntimeError(
                    f"slot {row[2]} of run {text_of(row[0])!r} round {row[1]} could not be "
                    f"journaled in {self.path} ({type(exc).__name__}: {exc}): it runs again on "
                    "resume"
                )
                self._failure.__cause__ = exc

    def _raise_lost(self) -> None:
        """Raise the failure of a row lost since the last wait, if any (once)."""
        with self._done:
            failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def _call(self, call: Callable[[Store], Any], first: bool = False) -> Any:
        """Run ``call`` on the writer's connection, after what the buffer holds; with
        ``first`` (a lease's claim or renewal, which the lanes may be waiting on), before the
        buffer's rows not yet being committed: between two groups. Blocks."""
        if self._inline is not None:
            if self._stopping is not None:
                raise RuntimeError(f"the journal {self.path} is closed")
            self._commit(self._inline)
            return call(self._inline)
        reply: list[Any] = []
        # a claim goes before the buffer's rows, not before a call (a release: its leases
        # given up first, or a claim of this process would find them held)
        (self._leasing if first and not self._calls else self._calls).append((call, reply))
        self._arrived.set()
        self._urgent.set()
        with self._done:
            self._done.wait_for(lambda: bool(reply) or self._stopping is not None)
        if not reply:
            raise RuntimeError(f"the journal {self.path} is closed")
        ok, value = reply[0]
        if not ok:
            raise value
        return value

    def _wait_committed(self, upto: int) -> None:
        with self._done:
            self._done.wait_for(lambda: self._committed >= upto or self._stopping is not None)
        self._raise_lost()

    # -- what runs call -----------------------------------------------------------------------

    def record(
        self,
        run: tuple[str, int],
        slot: int,
        result: SubResult[Any, Any],
        owner: str | None = None,
        leased: bool = False,
    ) -> None:  # called by the engine's feeds
        """Append slot ``slot``'s final ``result`` of ``run`` (its id and round) to the buffer;
        ``owner``: the supervisor that ran it; ``leased``: it ran it under a lease, and the row
        is written only while it holds the lease still."""
        if self._stopping is not None:
            raise RuntimeError(f"the journal {self.path} is closed: open another to go on")
        status = result.status
        error_type: str | bytes | None
        error: str | bytes | None
        if status is Status.OK:
            data = self._encode(slot, result.output)
            error_type = error = None
        else:
            data = None
            exception = result.exception
            error_type = None if exception is None else stored(type(exception).__name__)
            error = None if result.error is None else stored(result.error)
        row = (
            run[0],
            run[1],
            slot,
            stored(subtask_text(result.subtask)),
            status.value,
            data,
            error_type,
            error,
            result.attempts,
            result.started,
            result.finished,
            result.hedges,
            time.time(),
            owner,
        )
        buffer = self._buffer
        buffer.append(row if not leased else (*row, owner))  # leased: written while it holds
        self._appended += 1
        size = len(buffer)
        if self._inline is not None:  # commits in the caller's thread, on trio's clock
            now = trio.current_time()
            if size == 1:
                self._first = now
            if self.each or size >= self.count or now - self._first >= self.interval:
                self._commit(self._inline)
            return
        if size == 1:
            self._arrived.set()
        if self.each or size >= self.count:
            self._urgent.set()

    def _encode(self, slot: int, output: Any) -> str | bytes:
        """Slot ``slot``'s output as the codec encodes it, which SQLite holds.

        Raises:
          TypeError: if the codec cannot encode it, or gives what SQLite cannot hold.
        """
        codec = self.codec
        try:
            data = codec.encode(output)
        except (TypeError, ValueError) as exc:
            raise self._unencodable(slot, output, str(exc)) from None
        if type(data) is str:
            if data.isascii() or stored(data) is data:
                return data
            if isinstance(codec, JsonCodec):
                return codec.escaped(output)
            why = "its text holds a lone surrogate, which SQLite cannot hold"
            raise self._unencodable(slot, output, why)
        if not isinstance(data, bytes):
            why = f"it gave a {type(data).__name__}, not str or bytes"
            raise self._unencodable(slot, output, why)
        return data

    def _unencodable(self, slot: int, output: Any, why: str) -> TypeError:
        """The error of slot ``slot``, whose ``output`` the journal cannot keep, for ``why``."""
        self._urgent.set()  # what came before is committed all the same
        codec = self.codec
        return TypeError(
            f"slot {slot}'s output, a {type(output).__name__}, cannot be encoded by the "
            f"journal's codec ({getattr(codec, 'name', type(codec).__name__)}: {why}): "
            "return values the codec encodes, or give Journal(codec=...) one that encodes it"
        )

    async def committed(self) -> None:
        """Wait until every result appended so far is committed, without blocking trio.

        Raises:
          RuntimeError: if a result could not be committed (naming its slot); the others are.
        """
        upto = self._appended
        if self._committed >= upto:
            self._raise_lost()
            return
        if self._inline is not None:
            self._commit(self._inline)
            self._raise_lost()
            return
        self._arrived.set()
        self._urgent.set()
        await trio.to_thread.run_sync(self._wait_committed, upto, abandon_on_cancel=True)

    def kick(self) -> None:
        """Commit what the buffer holds soon (a run ends on an error: keep what came before)."""
        self._arrived.set()
        self._urgent.set()

    async def begin(
        self, run: tuple[str, int], plan: Sequence[Any]
    ) -> dict[int, SubResult[Any, Any]]:
        """Journal the start of ``run`` over ``plan``, or, when it was journaled before, check
        the plan is the same and return the results kept: every OK one, and with
        ``keep_failed`` the failed and timed-out ones too. A plan journaled without its digest
        (a lazy stream's, cut short) is checked against the subtask of each slot journaled.

        Raises:
          ValueError: if ``run`` was journaled with another plan, naming the first difference,
            or by a re-planning run.
        """
        fingerprint, packed = digest_plan(plan)
        texts = [subtask_text(subtask) for subtask in plan]
        refused, _, rows = await self._run(
            lambda conn: _begin(conn, run, (fingerprint, packed, texts), plan)
        )
        if refused is not None:
            raise ValueError(refused)
        return self._restore(rows, plan, self.keep_failed)

    async def begin_leased(
        self,
        run: tuple[str, int],
        plan: Sequence[Any],
        owner: str,
        since: float,
        lease: float,
        count: int,
    ) -> tuple[dict[int, SubResult[Any, Any]], list[int], list[tuple[int, str, Any]]]:
        """``begin``, and a claim for ``owner`` of the first ``count`` slots without a result
        kept (as ``claim`` does, for ``lease`` seconds), in one transaction: the results
        kept, the slots claimed, and what the claim found of each.

        Raises:
          ValueError: as ``begin``.
        """
        fingerprint, packed = digest_plan(plan)
        texts = [subtask_text(subtask) for subtask in plan]
        now = self._lease_clock()
        failed = self.keep_failed

        def begin(conn: Store) -> tuple[str | None, list[Any], list[int], list[Any]]:
            with conn.transaction():  # begun and claimed in one, one commit
                refused, _, rows = _begin(conn, run, (fingerprint, packed, texts), plan)
                if refused is not None:
                    return refused, [], [], []
                kept = {row[0] for row in rows if _kept(row[2], failed)}
                todo = (slot for slot in range(len(plan)) if slot not in kept)
                wanted = list(itertools.islice(todo, count))
                found = _claim(conn, run, wanted, owner, now, now + lease, since)
            return None, rows, wanted, found

        refused, rows, wanted, found = await self._run(begin)
        if refused is not None:
            raise ValueError(refused)
        return self._restore(rows, plan, failed), wanted, self._found(found, now)

    async def begin_input(
        self, run: tuple[str, int]
    ) -> tuple[dict[int, SubResult[Any, Any]], InputCheck]:
        """Journal the start of a lazy stream's ``run`` (its input not known yet), or return
        the results kept when it was journaled before (as ``begin`` does, each subtask its
        repr), and what its input is checked against as it is pulled.

        Raises:
          ValueError: if ``run`` was journaled by a re-planning run.
        """
        refused, packed, rows = await self._run(lambda conn: _begin(conn, run, None, None))
        if refused is not None:
            raise ValueError(refused)
        check = InputCheck(run[0], None if packed is None else plan_texts(packed), _seen(rows))
        return self._restore(rows, None, self.keep_failed), check

    async def ended(self, run: tuple[str, int], digest: tuple[str, bytes]) -> None:
        """Journal the plan a lazy stream pulled to its end as ``run``'s (``digest``), unless
        one was journaled already."""
        await self._run(
            lambda conn: conn.execute(
                "UPDATE runs SET fingerprint = ?, plan = ? WHERE run_id = ? AND round = ? "
                "AND fingerprint IS NULL",
                (*digest, *run),
            )
        )

    async def replanning(self, run_id: str) -> Any:
        """The first decision journaled for re-planning run ``run_id``, decoded (None if none).

        Raises:
          ValueError: if ``run_id`` was journaled by a run (or a stream) of its own plan.
        """

        def read(conn: Store) -> tuple[str | None, Any]:
            if conn.execute(
                "SELECT 1 FROM runs WHERE run_id = ? AND round = 0", (run_id,)
            ).fetchone():
                return (
                    f"run {run_id!r} was journaled by a run of its own plan (Supervisor.run or "
                    "stream), not a re-planning one: give this task a run_id of its own"
                ), None
            found = conn.execute(
                "SELECT decision FROM decisions WHERE run_id = ? AND number = 0", (run_id,)
            ).fetchone()
            return None, None if found is None else found[0]

        refused, data = await self._run(read)
        if refused is not None:
            raise ValueError(refused)
        return None if data is None else self.codec.decode(data)

    def _restore(
        self, rows: list[tuple[Any, ...]], plan: Sequence[Any] | None, failed: bool
    ) -> dict[int, SubResult[Any, Any]]:
        """The results of ``rows`` by slot (the failed ones too when ``failed``), each for its
        subtask of ``plan`` (its repr when ``plan`` is None)."""
        kept: dict[int, SubResult[Any, Any]] = {}
        for row in rows:
            slot, subtask, status = row[:3]
            if not _kept(status, failed):
                continue
            if plan is not None:
                if slot >= len(plan):
                    continue
                subtask = plan[slot]
            else:
                subtask = text_of(subtask)
            kept[slot] = self._result(subtask, row)
        return kept

    def _result(self, subtask: Any, row: tuple[Any, ...]) -> SubResult[Any, Any]:
        """The result journaled as ``row`` (as ``_rows`` reads it), for ``subtask``."""
        _, _, status, data, error, attempts, started, finished, hedges = row
        if status == "ok":
            return SubResult(
                subtask,
                output=None if data is None else self.codec.decode(data),
                attempts=attempts,
                started=started,
                finished=finished,
                hedges=hedges,
            )
        return SubResult(
            subtask,
            error=text_of(error) if error is not None else status,
            status=Status(status),
            attempts=attempts,
            started=started,
            finished=finished,
            hedges=hedges,
        )

    async def finished(
        self, run: tuple[str, int], plan: Sequence[Any]
    ) -> list[SubResult[Any, Any]] | None:
        """Every result of ``run``'s finished round, over ``plan``, failed ones included; None
        unless every slot has one."""
        kept = self._restore(await self._run(lambda conn: _rows(conn, run)), plan, True)
        if len(kept) != len(plan):
            return None
        return [kept[slot] for slot in range(len(plan))]

    async def decision(self, run_id: str, number: int) -> Any:
        """The planner's decision ``number`` of re-planning run ``run_id``, decoded, or None
        when it was not journaled (the run had not got that far)."""
        found = await self._run(
            lambda conn: conn.execute(
                "SELECT decision FROM decisions WHERE run_id = ? AND number = ?",
                (run_id, number),
            ).fetchone()
        )
        return None if found is None else self.codec.decode(found[0])

    async def decided(self, run_id: str, number: int, decision: Any) -> None:
        """Journal the planner's decision ``number`` of re-planning run ``run_id`` (plain data
        the codec encodes), committed before it returns; a second write is a no-op."""
        try:
            data = self.codec.encode(decision)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"the planner's decision {number} cannot be encoded by the journal's codec "
                f"({exc}): plan subtasks the codec encodes, or give Journal(codec=...) one that "
                "encodes them"
            ) from None
        decided = time.time()

        def write(conn: Store) -> None:
            conn.execute(
                "INSERT INTO decisions (run_id, number, decision, decided) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (run_id, number, conn.blob(data), decided),
            )

        await self._run(write)

    async def _run(self, call: Callable[[Store], Any], first: bool = False) -> Any:
        """``call`` on the writer's connection, awaited in a thread (inline: at once); with
        ``first``, before the buffer's rows (see ``_call``)."""
        if self._inline is not None:
            return self._call(call)
        return await trio.to_thread.run_sync(self._call, call, first)

    def results(self, run_id: str, round: int = 0) -> list[SubResult[Any, Any]]:
        """The results journaled for ``run_id``'s round ``round``, in slot order (the subtask of
        each is its repr); blocks while it reads, so call it outside a trio run or in a thread."""
        rows = self._call(lambda conn: _rows(conn, (run_id, round)))
        return [self._result(text_of(row[1]), row) for row in rows]

    def approve(self, run_id: str, slot: int, *, by: str, note: str = "", round: int = 0) -> None:
        """Approve the question slot ``slot`` of run ``run_id`` waits on (the last it asked, as
        ``pending`` shows it): its worker, called again by a resume (or waiting for the answer),
        gets it from [`approval`][trio_supervisor.approval]; a further question of the worker's
        parks the slot again, to be answered in turn. Any process that opens the journal may
        answer; blocks while it writes. A re-planning run's planner asked as slot ``PLANNER``
        (-1) of round ``round``, the number of its decision (``pending`` lists both kinds).

        Raises:
          ValueError: if that slot asked nothing, or its last question was answered already
            (naming the answer, who gave it and when).
        """
        self._answer(run_id, round, slot, "approved", by, note)

    def reject(self, run_id: str, slot: int, *, by: str, note: str = "", round: int = 0) -> None:
        """Reject the question slot ``slot`` of run ``run_id`` waits on: its worker's
        ``approval`` of it raises [`Rejected`][trio_supervisor.Rejected] on resume, and the slot
        ends ``Status.REJECTED``, with the note, unless the worker catches it (then asks
        something else, say: a question of its own). As for
        [`approve`][trio_supervisor.Journal.approve].
        """
        self._answer(run_id, round, slot, "rejected", by, note)

    def pending(self, run_id: str) -> list[tuple[int, int, str]]:
        """The questions of run ``run_id`` without an answer: (round, slot, question) each."""
        rows: list[tuple[int, int, str]] = self._call(
            lambda conn: conn.execute(
                "SELECT round, slot, question FROM approvals WHERE run_id = ? AND status = "
                "'pending' ORDER BY round, slot",
                (run_id,),
            ).fetchall()
        )
        return rows

    def runs(self) -> list[str]:
        """The run_ids the journal holds (a run begun, a decision or a question), sorted; blocks
        while it reads."""

        def read(conn: Store) -> list[str]:
            tables = conn.found()  # a journal read as it is may lack some
            union = " UNION ".join(
                f"SELECT run_id FROM {name}"
                for name in ("runs", "decisions", "approvals")
                if name in tables
            )
            return [text_of(name) for (name,) in conn.execute(f"{union} ORDER BY 1")]

        found: list[str] = self._call(read)
        return found

    def _lease_clock(self) -> float:
        """The time leases are read at: unix time; trio's clock with the inline writer (tests
        on virtual time, where several supervisors share one trio run)."""
        return trio.current_time() if self._inline is not None else time.time()

    async def claim(
        self,
        run: tuple[str, int],
        slots: Sequence[int],
        owner: str,
        since: float,
        lease: float | None = None,
    ) -> list[tuple[int, str, Any]]:
        """Claim ``slots`` of ``run`` for ``owner``, for one lease each, in one transaction:
        each slot ``CLAIMED``; ``HELD`` by another supervisor's live lease (the seconds it has
        left); or ``DONE`` (its result, each subtask its repr): a final OK row, or any final
        row written since ``since`` (unix time: a peer's, not a killed run's to run again). A
        lease whose
        owner's process is known gone (on this host) is taken over at once. ``lease``: the
        seconds each claim lasts (the journal's ``lease`` when None)."""
        length = self._lease if lease is None else lease
        assert length is not None
        now = self._lease_clock()
        found = await self._run(
            lambda conn: _claim(conn, run, slots, owner, now, now + length, since), first=True
        )
        return self._found(found, now)

    def _found(self, found: list[tuple[int, str, Any]], now: float) -> list[tuple[int, str, Any]]:
        """What ``_claim`` found (at ``now``), as ``claim`` returns it."""
        return [
            (
                slot,
                kind,
                self._result(text_of(got[1]), got)
                if kind == DONE
                else got - now
                if kind == HELD
                else got,
            )
            for slot, kind, got in found
        ]

    async def renew(
        self, run: tuple[str, int], owner: str, lease: float | None = None
    ) -> list[tuple[int, int]]:
        """Renew every lease ``owner`` holds of ``run``'s slots, for ``lease`` seconds (the
        journal's ``lease`` when None): the ranges of slots it still holds, first and last (a
        slot it held and in none of them was taken over)."""
        length = self._lease if lease is None else lease
        assert length is not None
        expires = self._lease_clock() + length
        held: list[tuple[int, int]] = await self._run(
            lambda conn: _renew(conn, run, owner, expires), first=True
        )
        return held

    def release(self, run: tuple[str, int], owner: str) -> None:
        """``owner`` gives up its leases of ``run``'s slots, without waiting: another
        supervisor (or a resume) may take them once it is written, after what the buffer holds
        (committed under the leases first); a journal closed meanwhile leaves them to run
        out."""
        if self._stopping is not None:
            return
        call: Callable[[Store], Any] = lambda conn: _release(conn, run, owner)  # noqa: E731
        if self._inline is not None:
            self._call(call)
            return
        self._calls.append((call, []))
        self.kick()

    # -- limits shared across processes (``_sharing``) ------------------------------------------

    @property
    def place_lease(self) -> float:
        """Seconds a shared capacity's place lasts unless renewed: the journal's ``lease``, or
        ``LEASE`` for a journal without slot leases."""
        return self._lease if self._lease is not None else LEASE

    async def take_place(self, meter: str, holder: str, owner: str, limit: int) -> bool:
        """Take a place of the shared capacity ``meter`` for ``holder`` (of ``owner``), for one
        lease, if fewer than ``limit`` are held: whether it was taken."""
        now = self._lease_clock()
        expires = now + self.place_lease
        taken: bool = await self._run(
            lambda conn: take_place(conn, meter, holder, owner, limit, now, expires, _gone)
        )
        return taken

    async def renew_places(self, meter: str, owner: str) -> None:
        """Renew, for one lease from now, every place ``owner`` holds of ``meter``."""
        expires = self._lease_clock() + self.place_lease
        await self._run(lambda conn: renew_places(conn, meter, owner, expires))

    def drop_place(self, meter: str, holder: str) -> None:
        """Give back ``holder``'s place of ``meter``, without waiting (it is written after what
        the writer has before it; a journal closed meanwhile leaves it to expire)."""
        if self._stopping is not None:
            return
        call: Callable[[Store], Any] = lambda conn: drop_place(conn, meter, holder)  # noqa: E731
        if self._inline is not None:
            self._call(call)
            return
        self._calls.append((call, []))
        self.kick()

    async def take_token(self, meter: str, interval: float, tolerance: float) -> float:
        """Take a token of the shared rate limit ``meter``: 0.0 when taken, else the seconds
        until one is due (see ``_sharing.take_token``)."""
        now = self._lease_clock()
        wait: float = await self._run(
            lambda conn: take_token(conn, meter, interval, tolerance, now)
        )
        return wait

    def summaries(self) -> list[RunSummary]:
        """Every run the journal holds, sorted by run_id: its plan's size, its results by kind,
        the slots a supervisor runs now, when it was last active, and whether it finished (what
        ``python -m trio_supervisor.journal runs`` prints); blocks while it reads."""
        now = time.time()
        found: list[RunSummary] = self._call(lambda conn: summaries(conn, now, self._ends))
        return found

    def slots(self, run_id: str) -> tuple[float | None, list[SlotRow]]:
        """When run ``run_id`` was first journaled (unix time), and every slot of it the
        journal knows of, by round and slot: its result, or the lease of the supervisor that
        runs it now (what ``show`` draws); blocks while it reads."""
        now = time.time()
        found: tuple[float | None, list[SlotRow]] = self._call(
            lambda conn: slot_rows(conn, run_id, now)
        )
        return found

    def collect(self, older_than: float) -> list[RunSummary]:
        """Remove every finished run whose last activity is more than ``older_than`` seconds
        old (its results, questions, decisions and plan): the runs removed. A run with a slot
        running (a live lease), parked, or a question without an answer is never removed;
        blocks while it writes."""
        now = time.time()
        found: list[RunSummary] = self._call(
            lambda conn: collect(conn, now - older_than, now, self._ends)
        )
        return found

    def _ends(self, data: Any) -> bool:
        """Whether a re-planning run's decision, as journaled, ends it (done, or failed)."""
        try:
            decision = self.codec.decode(data)
        except Exception:  # a decision this codec does not read: not known to be the last
            return False
        return isinstance(decision, dict) and decision.get("kind") in ("done", "failed")

    def _answer(self, run_id: str, round: int, slot: int, status: str, by: str, note: str) -> None:
        if not isinstance(by, str) or not by:
            raise ValueError(f"say who answers: by must be a non-empty str, got {by!r}")

        def write(conn: Store) -> str | None:
            with conn.transaction():
                # the question the slot waits on: the last it asked (one asked before and
                # answered is answered once; it is named when nothing is left to answer)
                found = conn.execute(
                    "SELECT question, status, by, note, decided FROM approvals "
                    "WHERE run_id = ? AND round = ? AND slot = ? "
                    "ORDER BY status = 'pending' DESC, asked DESC LIMIT 1",
                    (run_id, round, slot),
                ).fetchone()
                if found is None:
                    return f"run {run_id!r} has no question at {asker(round, slot)}"
                question, was, who, said, decided = found
                if was != "pending":
                    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(decided))
                    said = f" ({said})" if said else ""
                    return (
                        f"run {run_id!r} {asker(round, slot, False)} was {was} already, by "
                        f"{who} at {when} UTC{said}: a question is answered once"
                    )
                conn.execute(
                    "UPDATE approvals SET status = ?, by = ?, note = ?, decided = ? "
                    "WHERE run_id = ? AND round = ? AND slot = ? AND question = ?",
                    (status, by, note, time.time(), run_id, round, slot, question),
                )
                return None

        refused = self._call(write)
        if refused is not None:
            raise ValueError(refused)

    async def _ask(
        self, run: tuple[str, int], slot: int, question: str
    ) -> tuple[str, str | None, str | None]:
        """Slot ``slot``'s ``question``: journaled as pending the first time it is asked; its
        answer (each question of a slot has its own: a yes to one approves no other)."""

        def ask(conn: Store) -> tuple[str, str | None, str | None] | None:
            conn.execute(
                "INSERT INTO approvals (run_id, round, slot, question, status, asked) "
                "VALUES (?, ?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING",
                (*run, slot, question, time.time()),
            )
            found: tuple[str, str | None, str | None] | None = conn.execute(
                "SELECT status, by, note FROM approvals WHERE run_id = ? AND round = ? "
                "AND slot = ? AND question = ?",
                (*run, slot, question),
            ).fetchone()
            return found

        answer: tuple[str, str | None, str | None] | None = await self._run(ask)
        if answer is None:  # a file whose approvals table keys one question per slot
            raise RuntimeError(
                f"the journal {self.path} keeps one question per slot (an older schema), and "
                f"{asker(run[1], slot)} asked another: answer its questions, then journal new "
                "runs in a new file"
            )
        return answer

    def close(self, *, flush: bool = True) -> None:
        """Commit what the buffer holds and stop the writer; with ``flush=False``, drop it
        instead, as a crash would (what the laws of resume use). Closing twice does nothing."""
        if self._inline is not None:
            if self._stopping is None:
                self._stopping = flush
                if flush:
                    self._commit(self._inline)
                self._buffer.clear()
                self._inline.close()
            return
        if self._stopping is None:
            self._stopping = flush
            self._arrived.set()
            self._urgent.set()
        self._thread.join()


def _write(conn: Store, rows: list[tuple[Any, ...]]) -> None:
    """Commit ``rows`` to the results, in one transaction: a leased slot's row (one with the
    lease's owner after its columns) only while its owner holds a lease of the slot (the lease
    rows stay until the run gives up its leases as it ends)."""
    with conn.transaction():
        leased = [row for row in rows if len(row) > COLUMNS]
        if leased:
            held = {
                key: covers(_held(conn, key[:2], key[2]))
                for key in {(row[0], row[1], row[COLUMNS]) for row in leased}
            }
            kept = [row[:COLUMNS] for row in leased if held[row[0], row[1], row[COLUMNS]](row[2])]
            rows = [row for row in rows if len(row) == COLUMNS] + kept
        conn.executemany(INSERT, conn.results(rows))


def _kept(status: str, failed: bool) -> bool:
    """Whether a run keeps a slot's row of ``status`` (its slot not run again): an OK one, and
    with ``failed`` (``keep_failed``) a failed or timed-out one; never a parked one (its
    worker, called again, asks for its answer)."""
    return status == "ok" or (failed and status != PARKED)


def _seen(rows: list[tuple[Any, ...]]) -> list[tuple[int, str]]:
    """Each slot of ``rows`` (as ``_rows`` reads them) and its subtask's text."""
    return [(row[0], text_of(row[1])) for row in rows]


def _close_at_exit(ref: weakref.ref[Journal]) -> None:
    journal = ref()
    if journal is not None:
        journal.close()


def _rows(conn: Store, run: tuple[str, int]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT slot, subtask, status, output, error, attempts, started, finished, hedges "
        "FROM results WHERE run_id = ? AND round = ? ORDER BY slot",
        run,
    ).fetchall()


def _begin(
    conn: Store,
    run: tuple[str, int],
    digest: tuple[str, bytes, list[str]] | None,
    plan: Sequence[Any] | None,
) -> tuple[str | None, bytes | None, list[tuple[Any, ...]]]:
    """``run`` journaled over ``plan`` (``digest``: its fingerprint, packed texts and texts; both
    None for a lazy stream's), or checked against what was: why it is refused (or None), the
    plan journaled (packed; None if unknown) and the rows of its slots."""
    run_id, round_ = run
    with conn.transaction():  # checked and journaled at once, whoever else opens it
        if round_ == 0 and _replanned(conn, run_id):
            said = "input" if plan is None else "plan"
            why = "by a re-planning run (Supervisor.replan)"
            return (
                f"run {run_id!r} was journaled {why}: give this {said} a run_id of its own",
                None,
                [],
            )
        fingerprint, packed = (None, None) if digest is None else digest[:2]
        found = conn.execute(
            "SELECT fingerprint, plan FROM runs WHERE run_id = ? AND round = ?", run
        ).fetchone()
        if found is None:
            conn.execute(
                "INSERT INTO runs (run_id, round, fingerprint, plan, started) "
                "VALUES (?, ?, ?, ?, ?)",
                (*run, fingerprint, packed, time.time()),
            )
            return None, None, []
        rows = _rows(conn, run)
        if digest is None or plan is None:
            return None, found[1], rows
        if found[0] is None:  # a lazy stream's, cut short: its slots are all that is known
            difference = unlike(_seen(rows), digest[2])
        elif found[0] != fingerprint:
            difference = first_difference(found[1], plan)
        else:
            return None, packed, rows
        if difference is not None:
            refused = (
                f"run {run_id!r} was journaled with another plan ({difference}): give this "
                "plan a run_id of its own, or the plan it was journaled with"
            )
            return refused, None, []
        conn.execute(
            "UPDATE runs SET fingerprint = ?, plan = ? WHERE run_id = ? AND round = ?",
            (fingerprint, packed, *run),
        )
        return None, packed, rows


def _claim(
    conn: Store,
    run: tuple[str, int],
    slots: Sequence[int],
    owner: str,
    now: float,
    expires: float,
    since: float,
) -> list[tuple[int, str, Any]]:
    """What ``Journal.claim`` finds, each slot's row (as ``_rows`` reads it) when done. It reads
    the rows of ``slots`` by ranges (``_spans``) and the leases that overlap them, and leases
    the slots it claims as ranges: one ``leases`` row per run of slots claimed together (the
    slots between two of them done, and in no other owner's lease), not one row per slot (which
    costs a server such as PostgreSQL a round of its own for each). A lease it takes over (run
    out, or its owner gone) keeps the slots it was not asked for, as the rows left around the
    new ones."""
    wanted = sorted(set(slots))
    if not wanted:
        return []
    with conn.transaction():  # checked and claimed at once, whoever else opens the journal
        final: dict[int, tuple[Any, ...]] = {}  # every slot of the spans with a final row
        for span in _spans(wanted):
            final.update(
                (row[0], row)
                for row in conn.execute(
                    "SELECT slot, subtask, status, output, error, attempts, started, finished, "
                    "hedges, written FROM results WHERE run_id = ? AND round = ? "
                    "AND slot BETWEEN ? AND ?",
                    (*run, *span),
                )
                if row[2] == "ok" or (row[9] is not None and row[9] >= since)
            )
        leases: list[tuple[int, int, str, float, float]] = conn.execute(
            "SELECT first_slot, last_slot, owner, claimed, expires FROM leases "
            "WHERE run_id = ? AND round = ? AND first_slot <= ? AND last_slot >= ? "
            "ORDER BY first_slot",
            (*run, wanted[-1], wanted[0]),
        ).fetchall()
        firsts = [lease[0] for lease in leases]
        live = [
            holder != owner and until > now and not _gone(holder)
            for _, _, holder, _, until in leases
        ]

        def lease_of(slot: int) -> int | None:  # the index of the lease ``slot`` lies in
            at = bisect.bisect_right(firsts, slot) - 1
            return at if at >= 0 and leases[at][1] >= slot else None

        found: list[tuple[int, str, Any]] = []
        claims: list[int] = []
        if not final and not any(live):  # the usual case: every slot is free
            found = [(slot, CLAIMED, None) for slot in slots]
            claims = list(slots)
        else:
            for slot in slots:
                at = lease_of(slot)
                if slot in final:
                    found.append((slot, DONE, final[slot][:9]))
                elif at is not None and live[at]:
                    found.append((slot, HELD, leases[at][4]))
                else:
                    found.append((slot, CLAIMED, None))
                    claims.append(slot)
        ranges = _ranges(
            sorted(set(claims)), final, lambda slot: _foreign(lease_of(slot), leases, owner)
        )
        if ranges:
            cut = sorted(
                {at for first, last in ranges for at in _overlapping(leases, firsts, first, last)}
            )
            kept = [
                (first, last, *leases[at][2:])
                for at in cut
                for first, last in _without(leases[at][0], leases[at][1], ranges)
            ]
            if cut:
                conn.executemany(
                    "DELETE FROM leases WHERE run_id = ? AND round = ? AND first_slot = ?",
                    [(*run, leases[at][0]) for at in cut],
                )
            conn.executemany(
                "INSERT INTO leases (run_id, round, first_slot, last_slot, owner, claimed, "
                "expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(*run, *lease) for lease in kept]
                + [(*run, first, last, owner, now, expires) for first, last in ranges],
            )
    return found


def _foreign(at: int | None, leases: list[tuple[int, int, str, float, float]], owner: str) -> bool:
    """Whether the lease at index ``at`` of ``leases`` (None: no lease) is another owner's."""
    return at is not None and leases[at][2] != owner


def _ranges(
    claims: list[int], final: dict[int, Any], foreign: Callable[[int], bool]
) -> list[tuple[int, int]]:
    """The slots ``claims`` (sorted) as ranges, first and last: two claims are in one range when
    every slot between them has a ``final`` row and lies in no ``foreign`` lease."""
    ranges: list[list[int]] = []
    last = -2
    for slot in claims:
        if slot == last + 1 or (
            ranges
            and slot - last <= GAP + 1
            and all(s in final and not foreign(s) for s in range(last + 1, slot))
        ):
            ranges[-1][1] = slot
        else:
            ranges.append([slot, slot])
        last = slot
    return [(first, last) for first, last in ranges]


def _overlapping(
    leases: list[tuple[int, int, str, float, float]], firsts: list[int], first: int, last: int
) -> Iterator[int]:
    """The indexes of the ``leases`` (sorted by first slot, disjoint) that overlap
    ``first``..``last``."""
    at = max(bisect.bisect_right(firsts, first) - 1, 0)
    while at < len(leases) and leases[at][0] <= last:
        if leases[at][1] >= first:
            yield at
        at += 1


def _without(first: int, last: int, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``first``..``last`` less ``ranges`` (sorted, disjoint): the ranges left."""
    left = []
    for cut_first, cut_last in ranges:
        if cut_last < first or cut_first > last:
            continue
        if cut_first > first:
            left.append((first, cut_first - 1))
        first = cut_last + 1
    if first <= last:
        left.append((first, last))
    return left


def _spans(slots: Sequence[int]) -> Iterator[tuple[int, int]]:
    """The ranges ``slots`` (sorted) lie in, first and last, each split where more than ``GAP``
    slots are not among them: a claim reads each range with one ``BETWEEN`` (a range of the
    key), not an ``IN`` of every slot, whose hundreds of values a server such as PostgreSQL
    plans slowly."""
    start = previous = slots[0] if slots else 0
    for slot in slots[1:]:
        if slot - previous > GAP:
            yield start, previous
            start = slot
        previous = slot
    if slots:
        yield start, previous


def _held(conn: Store, run: tuple[str, int], owner: str) -> list[tuple[int, int]]:
    """The ranges of ``run``'s slots ``owner`` holds a lease of (run out or not)."""
    return conn.execute(
        "SELECT first_slot, last_slot FROM leases WHERE run_id = ? AND round = ? AND owner = ?",
        (*run, owner),
    ).fetchall()


def _renew(conn: Store, run: tuple[str, int], owner: str, expires: float) -> list[tuple[int, int]]:
    """What ``Journal.renew`` does, in one transaction: one row per range it holds."""
    with conn.transaction():
        conn.execute(
            "UPDATE leases SET expires = ? WHERE run_id = ? AND round = ? AND owner = ?",
            (expires, *run, owner),
        )
        return _held(conn, run, owner)


def _release(conn: Store, run: tuple[str, int], owner: str) -> None:
    """What ``Journal.release`` does, once what its buffer held is committed (``_call`` does
    that first): ``owner``'s leases of ``run`` are gone, in a transaction holding the write
    lock (a claim cutting one of them around the slots it takes over never puts back a piece)."""
    with conn.transaction():
        conn.execute(
            "DELETE FROM leases WHERE run_id = ? AND round = ? AND owner = ?", (*run, owner)
        )


HOST = socket.gethostname()


def new_owner() -> str:
    """A name for one supervisor's run, unique among every process on every host: its host,
    its process, a random part (what a lease and a result row name as their owner)."""
    return f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"


def _gone(owner: str) -> bool:
    """Whether ``owner``'s process is known to have ended: one of another process on this
    host that is no longer running (its leases need not be waited out)."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != HOST or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # running, and another user's
        return False
    return False


def _replanned(conn: Store, run_id: str) -> bool:
    """Whether a re-planning run journaled ``run_id`` (a decision, or its planner's question)."""
    found = conn.execute(
        "SELECT 1 FROM decisions WHERE run_id = ? UNION ALL SELECT 1 FROM approvals "
        "WHERE run_id = ? AND slot = ? LIMIT 1",
        (run_id, run_id, PLANNER),
    ).fetchone()
    return found is not None


def checked_lease(lease: object, name: str) -> float | None:
    """``lease`` (seconds a slot's lease lasts, or None) as a float, checked.

    Raises:
      ValueError: if it is not a positive number of seconds below 1e9, nor None, naming it as
        ``name``.
    """
    if lease is None:
        return None
    if isinstance(lease, bool) or not isinstance(lease, int | float) or not 0 < lease < 1e9:
        raise ValueError(
            f"{name} must be a positive number of seconds or None, got {lease!r}: how long a "
            "supervisor holds a slot it runs before another may take it over"
        )
    return float(lease)


class _JournalsLease:
    """The default of [`Durable`][trio_supervisor.Durable]'s ``lease``: the journal's."""

    def __repr__(self) -> str:
        return "JOURNALS_LEASE"


JOURNALS_LEASE: Any = _JournalsLease()
"""``Durable(lease=)``'s default: each slot's lease lasts the journal's ``lease``."""


@dataclass(frozen=True, repr=False)
class Durable:
    """A run's name and, optionally, the journal that keeps its results: what makes a run, a
    stream or a re-planning run resumable, given as ``durable=``. Checked when made.

    ```pycon
    >>> Durable("order-7")
    Durable(run_id='order-7', journal=None)

    ```

    The name alone gives each attempt its [`attempt_key`][trio_supervisor.attempt_key] (the name
    is its first part), so a server can tell a retried side effect from a new one. With a
    [`Journal`][trio_supervisor.Journal], each final result is kept under the name as it is
    done, and a run given the same name again takes them from it instead of running their
    slots again.

    Several supervisors given the same name and journal (processes, machines) share the run's
    slots through leases: each slot a supervisor runs is claimed in the journal for ``lease``
    seconds first, and renewed while it runs (see [`Journal`][trio_supervisor.Journal]).

    Args:
      run_id: the run's name: the first part of each attempt key, and what the journal keeps
        its results under (a resume gives the same one).
      journal: where the run's results are kept, or None for a run that is named only.
      lease: seconds a supervisor of this run holds each slot it runs before another
        supervisor of the same run may take it over (renewed every third of it while the slot
        runs); None: no leases, every supervisor runs every slot it has no result of. The
        journal's ``lease`` (30 s unless it was given another) when left out; nothing without
        a journal.

    Raises:
      TypeError: if ``run_id`` is not a non-empty str or ``journal`` is not a ``Journal``.
      ValueError: if ``run_id`` holds text SQLite cannot keep (a lone surrogate), or ``lease``
        is neither a positive number of seconds nor None.
    """

    run_id: str
    journal: Journal | None = None
    lease: float | None = JOURNALS_LEASE

    def __repr__(self) -> str:
        lease = "" if self.lease is JOURNALS_LEASE else f", lease={self.lease!r}"
        return f"Durable(run_id={self.run_id!r}, journal={self.journal!r}{lease})"

    def __post_init__(self) -> None:
        if self.lease is not JOURNALS_LEASE:
            object.__setattr__(self, "lease", checked_lease(self.lease, "Durable lease"))
        run_id, journal = self.run_id, self.journal
        if not isinstance(run_id, str) or not run_id:
            raise TypeError(f"Durable run_id must be a non-empty str, got {run_id!r}")
        if stored(run_id) is not run_id:
            raise ValueError(
                f"Durable run_id must be text SQLite holds, got {run_id!r} (a lone surrogate): "
                "name the run in text that UTF-8 says"
            )
        if journal is not None and not isinstance(journal, Journal):
            raise TypeError(
                f"Durable journal must be a Journal or None, got {type(journal).__name__} "
                f"{journal!r}"
            )


SHARING: ContextVar[Journal | None] = ContextVar("trio_supervisor_sharing", default=None)
"""The journal of the run the current task's attempts belong to, where a meter given
``shared=`` keeps its count: set by a run (``sharing``) around its tasks."""


@contextlib.contextmanager
def sharing(run: RunName | None) -> Iterator[None]:
    """Around what starts a run's or a stream's tasks: they find the run's journal (None for a
    run without one) as where its shared meters keep their count."""
    token = SHARING.set(run.journal if isinstance(run, DurableRun) else None)
    try:
        yield
    finally:
        SHARING.reset(token)


def _unshared(meter: object) -> str:
    return (
        f"{meter!r} keeps its count in the run's journal, and this run has none: give the run "
        "one, durable=Durable(run_id, Journal(path)), or leave shared= out"
    )


def check_shared(meters: Sequence[Any], run: RunName | None) -> None:
    """Refuse, before any work, a meter given ``shared=`` on a run without a journal.

    Raises:
      ValueError: naming the meter and the fix.
    """
    shared = [meter for meter in meters if isinstance(getattr(meter, "shared", None), str)]
    journaled = isinstance(run, DurableRun)
    if shared and not journaled:
        raise ValueError(_unshared(shared[0]))


def shared_journal(meter: object) -> Journal:
    """The journal where ``meter`` (given ``shared=``) keeps its count: the current run's.

    Raises:
      RuntimeError: outside a run that has a journal, naming the fix.
    """
    journal = SHARING.get()
    if journal is None:
        raise RuntimeError(_unshared(meter))
    return journal


def check_durable(value: object) -> RunName | None:
    """The run's name given as ``durable=`` (a ``DurableRun`` when it is journaled), or None for
    a run given none; anything but a [`Durable`][trio_supervisor.Durable] is refused, before
    any work."""
    if value is None:
        return None
    if not isinstance(value, Durable):
        raise TypeError(
            "durable must be a Durable (Durable(run_id) or Durable(run_id, journal)) or None, "
            f"got {type(value).__name__} {value!r}"
        )
    if value.journal is None:
        return RunName(value.run_id, 0)
    journal = value.journal
    lease = journal.lease if value.lease is JOURNALS_LEASE else value.lease
    return DurableRun(value.run_id, 0, journal, lease)


Put = Callable[[int, SubResult[Any, Any]], None]
"""Where a slot's final result goes: ``put(slot, result)``."""


@dataclass(frozen=True, slots=True)
class DurableRun(RunName):
    """A journaled run (a run, a stream, or one round of a re-planning run): its name and its
    journal as one value, with what a run does with its journal, keyed by its id and round."""

    journal: Journal
    lease: float | None = None
    """Seconds each slot's lease lasts (the ``Durable``'s, or its journal's), None without
    leases."""
    owner: str = field(default_factory=new_owner, compare=False)
    """This supervisor's run's name among others on the same run: its leases' owner, and the
    owner its result rows name."""
    rows: tuple[str, int] = field(init=False, repr=False, compare=False)
    """The key of the run's rows in the journal: its id and round."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", (self.run_id, self.round))

    def at(self, round: int) -> DurableRun:
        """The same run's round ``round`` (a re-planning run's)."""
        return dataclasses.replace(self, round=round)

    async def begin(self, plan: Sequence[Any]) -> dict[int, SubResult[Any, Any]]:
        """Journal the start over ``plan``, or check it and return the results kept (see
        [`Journal.begin`][trio_supervisor.Journal.begin])."""
        return await self.journal.begin(self.rows, plan)

    async def begin_leased(
        self, plan: Sequence[Any], since: float, count: int
    ) -> tuple[dict[int, SubResult[Any, Any]], list[int], list[tuple[int, str, Any]]]:
        """``begin``, and the first claim of ``count`` slots, on one trip to the writer (see
        [`Journal.begin_leased`][trio_supervisor.Journal.begin_leased]); the run leases."""
        assert self.lease is not None
        return await self.journal.begin_leased(
            self.rows, plan, self.owner, since, self.lease, count
        )

    async def begin_input(self) -> tuple[dict[int, SubResult[Any, Any]], InputCheck]:
        """Journal the start of a lazy stream, or return what it kept and what its input is
        checked against (see [`Journal.begin_input`][trio_supervisor.Journal.begin_input])."""
        return await self.journal.begin_input(self.rows)

    async def ended(self, digest: tuple[str, bytes]) -> None:
        """Journal the plan a lazy stream pulled to its end (``digest``), unless one was."""
        await self.journal.ended(self.rows, digest)

    async def finished(self, plan: Sequence[Any]) -> list[SubResult[Any, Any]] | None:
        """Every result of the run's round over ``plan``, if it finished; else None."""
        return await self.journal.finished(self.rows, plan)

    async def replanning(self) -> Any:
        """The first decision journaled for this re-planning run, decoded (None if none).

        Raises:
          ValueError: if its id was journaled by a run (or a stream) of its own plan.
        """
        return await self.journal.replanning(self.run_id)

    async def decision(self, number: int) -> Any:
        """The planner's decision ``number`` of this re-planning run, decoded, or None."""
        return await self.journal.decision(self.run_id, number)

    async def decided(self, number: int, decision: Any) -> None:
        """Journal the planner's decision ``number`` of this re-planning run, committed."""
        await self.journal.decided(self.run_id, number, decision)

    def record(self, slot: int, result: SubResult[Any, Any]) -> None:
        """Journal slot ``slot``'s final ``result`` (appended to the buffer)."""
        self.journal.record(self.rows, slot, result, self.owner)

    def recording(self, store: Put, leased: bool = False) -> Put:
        """``store``, each result journaled first: what a run's or a stream's feed puts its
        final results with; ``leased``: each slot ran under this run's lease, and its row is
        written only while the lease is still held."""
        record = self.journal.record
        rows = self.rows
        owner = self.owner

        def put(slot: int, result: SubResult[Any, Any]) -> None:
            record(rows, slot, result, owner, leased)
            store(slot, result)

        return put

    async def claim(self, slots: Sequence[int], since: float) -> list[tuple[int, str, Any]]:
        """Claim ``slots`` for this run's supervisor (see
        [`Journal.claim`][trio_supervisor.Journal.claim])."""
        return await self.journal.claim(self.rows, slots, self.owner, since, self.lease)

    async def renew(self) -> list[tuple[int, int]]:
        """Renew this run's leases: the ranges of slots it still holds, first and last."""
        return await self.journal.renew(self.rows, self.owner, self.lease)

    def release(self) -> None:
        """Give up this run's leases (it ends), without waiting: another may take its slots
        once what it journaled is committed."""
        self.journal.release(self.rows, self.owner)

    @property
    def each_commit(self) -> Callable[[], Awaitable[None]] | None:
        """What a lane awaits after each result it puts: the commit, with ``flush="each"``;
        else None."""
        return self.journal.committed if self.journal.each else None

    def kick(self) -> None:
        """Commit what was journaled soon, without waiting (the run ends on an error)."""
        self.journal.kick()

    async def done(self, clean: bool = True) -> None:
        """The run has ended: when ``clean``, wait until what it journaled is committed;
        else only kick the commit, so that the error that ended it goes on at once.

        Raises:
          RuntimeError: if a result could not be committed (naming its slot).
        """
        if clean:
            await self.journal.committed()
        else:
            self.journal.kick()

    async def ask(self, slot: int, question: str) -> tuple[str, str | None, str | None]:
        """Slot ``slot``'s ``question``, journaled as pending the first time it is asked, and
        its answer so far: status, by whom, the note."""
        return await self.journal._ask(self.rows, slot, question)


def with_subtask(result: SubResult[Any, Any], subtask: Any) -> SubResult[Any, Any]:
    """``result`` for ``subtask`` (a journaled result read before its subtask was known),
    every other field as it was journaled."""
    return revised(result, subtask=subtask)
