"""Where a journal keeps its rows: the ``Store`` protocol, the schema every store holds, and the
SQLite store (one file). The PostgreSQL store is ``_postgres``.

A store is one connection to the database, used by one thread at a time (the journal's writer,
or the caller of an inline journal): the journal's SQL is written once, with ``?`` placeholders,
in the statements both stores run (``_journal``), and each store says it in its dialect. What
differs between the stores is here: how a store opens and checks its database, how it holds an
exclusive write transaction, how it says a value its column types cannot hold, and how it
closes.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, fingerprint TEXT, plan BLOB,
  started REAL NOT NULL, PRIMARY KEY (run_id, round)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS decisions (
  run_id TEXT NOT NULL, number INTEGER NOT NULL, decision BLOB NOT NULL, decided REAL NOT NULL,
  PRIMARY KEY (run_id, number)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS approvals (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, slot INTEGER NOT NULL, question TEXT NOT NULL,
  status TEXT NOT NULL, by TEXT, note TEXT, asked REAL NOT NULL, decided REAL,
  PRIMARY KEY (run_id, round, slot, question)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS results (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, slot INTEGER NOT NULL, subtask TEXT NOT NULL,
  status TEXT NOT NULL, output BLOB, error_type TEXT, error TEXT, attempts INTEGER NOT NULL,
  started REAL, finished REAL, hedges INTEGER NOT NULL DEFAULT 0, written REAL, owner TEXT,
  PRIMARY KEY (run_id, round, slot)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS leases (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, first_slot INTEGER NOT NULL,
  last_slot INTEGER NOT NULL, owner TEXT NOT NULL, claimed REAL NOT NULL, expires REAL NOT NULL,
  PRIMARY KEY (run_id, round, first_slot)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS places (
  meter TEXT NOT NULL, holder TEXT NOT NULL, owner TEXT NOT NULL, claimed REAL NOT NULL,
  expires REAL NOT NULL, PRIMARY KEY (meter, holder)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS buckets (
  meter TEXT NOT NULL, due REAL NOT NULL, PRIMARY KEY (meter)
) WITHOUT ROWID;
"""
"""The journal's tables, in SQLite's words (``_postgres`` says the same tables in its own)."""

ADDED = {
    ("results", "hedges"): "ALTER TABLE results ADD COLUMN hedges INTEGER NOT NULL DEFAULT 0",
    ("results", "written"): "ALTER TABLE results ADD COLUMN written REAL",
    ("results", "owner"): "ALTER TABLE results ADD COLUMN owner TEXT",
}
"""The columns a journal of an earlier version lacks, and what adds each when a writer opens
it (a reader, ``read_only``, reads it as it is)."""

BUSY = 10.0  # seconds a connection waits for another's lock before it gives up


class Cursor(Protocol):
    """What a statement gives back: its rows."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Store(Protocol):
    """One connection to a journal's database, its schema checked (and made where it lacks
    some), used by one thread at a time. Statements are the journal's, with ``?``
    placeholders; each store says them in its dialect.

    Invariant: a write that must see what it checks runs inside ``transaction()``, which holds
    the database's write lock, one writer at a time, whichever process it is in.
    """

    name: str
    """The database as errors name it (a file's path; a server's address, without password)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement (in its own transaction, unless inside ``transaction()``)."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement once per row of ``rows``."""
        ...

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """A transaction holding the write lock: committed when the block ends, rolled back if
        it raises; inside another, a part of that one."""
        ...

    def results(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """``rows`` of the results table (as the journal builds them: text kept by ``stored``,
        an output as the codec gave it) as this store holds them."""
        ...

    def blob(self, data: str | bytes) -> str | bytes:
        """``data`` (a codec's encoding) as this store holds it in a BLOB column."""
        ...

    def found(self) -> dict[str, tuple[str, ...]]:
        """The tables the database holds (in its current schema), each with its columns.

        Raises:
          ValueError: if the database is not one of this store's kind (a file not SQLite).
        """
        ...

    def ddl(self, statement: str) -> str:
        """A statement of ``SCHEMA`` or ``ADDED`` (in SQLite's words) in this store's."""
        ...

    def close(self) -> None:
        """Close the connection, what it wrote kept whole (a file's WAL moved into it)."""
        ...


# -- the schema, whatever the store -------------------------------------------------------------


@functools.cache
def tables() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each table of ``SCHEMA``: the statement that makes it, and its columns."""
    made: dict[str, tuple[str, tuple[str, ...]]] = {}
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        for statement in filter(str.strip, SCHEMA.split(";")):
            name = statement.split("EXISTS", 1)[1].split("(", 1)[0].strip()
            conn.execute(statement)
            columns = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({name})"))
            made[name] = (statement, columns)
    return made


def lacking(
    found: dict[str, tuple[str, ...]], name: str, create: bool
) -> list[tuple[str, tuple[str, str] | None]]:
    """What the journal ``name``, whose tables are ``found`` (each with its columns), lacks of
    the schema: the table (its name, and None) or the column (the table and the column) each
    time, for the store to make in its words.

    Raises:
      ValueError: if it holds tables and none of a journal's; holds a journal's table without
        its columns; holds the per-slot leases of an earlier version; or holds nothing and not
        ``create``.
    """
    schema = tables()
    if not found.keys() & schema.keys():
        if found:
            raise ValueError(
                f"{name} is not a journal: it holds tables of another schema "
                f"({', '.join(sorted(found))}) and none of a journal's: give the journal a "
                "database of its own"
            )
        if not create:
            raise ValueError(
                f"{name} is not a journal: it holds no table (an empty database): give the "
                "database a journaled run made"
            )
    if "slot" in found.get("leases", ()):
        raise ValueError(
            f"{name} is a journal of an earlier version, whose leases table holds a row per "
            "slot (this one leases slots by ranges): finish its runs with that version, or give "
            "this one a database of its own"
        )
    missing: list[tuple[str, tuple[str, str] | None]] = []
    for table, (_, columns) in schema.items():
        if table not in found:
            missing.append((table, None))
            continue
        absent = [column for column in columns if column not in found[table]]
        strange = [column for column in absent if (table, column) not in ADDED]
        if strange:
            raise ValueError(
                f"{name} is not a journal: its table {table} lacks the columns "
                f"{', '.join(strange)}: give the journal a database of its own"
            )
        missing.extend((table, (table, column)) for column in absent)
    return missing


def statements(store: Store, create: bool) -> list[str]:
    """The statements, in the words of ``store``, that make what its journal lacks of the
    schema.

    Raises:
      ValueError: if the database is not a journal (see ``lacking``).
    """
    schema = tables()
    return [
        store.ddl(schema[table][0] if column is None else ADDED[column])
        for table, column in lacking(store.found(), store.name, create)
    ]


def make_schema(store: Store, create: bool) -> None:
    """Make what the journal of ``store`` lacks of the schema (every table, in a new database;
    a column or a table added since, in a journal of an earlier version), in one transaction
    holding the write lock.

    Raises:
      ValueError: if the database is not a journal, before anything is written.
    """
    if not statements(store, create):
        return
    with store.transaction():
        for statement in statements(store, create):  # again: another may have made it since
            store.execute(statement)


def is_postgres(target: str) -> bool:
    """Whether ``target`` names a PostgreSQL database (a connection URI), not a file."""
    return target.startswith(("postgresql://", "postgres://"))


def shown(target: str) -> str:
    """The connection string ``target`` as errors name it: its password and options left
    out."""
    parts = urlsplit(target)
    user = f"{parts.username}@" if parts.username else ""
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{user}{parts.hostname or ''}{port}{parts.path}"


def errors() -> tuple[type[Exception], ...]:
    """The errors of every store's driver, as the command line says them in one line."""
    found: list[type[Exception]] = [sqlite3.Error]
    with contextlib.suppress(ImportError):
        import psycopg

        found.append(psycopg.Error)
    return tuple(found)


# -- text a store holds -------------------------------------------------------------------------


def stored(text: str) -> str | bytes:
    """``text`` as SQLite holds it: itself, or where it holds a lone surrogate (which UTF-8
    cannot say), its bytes, surrogates kept (``text_of`` makes it the same str again)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def text_of(value: str | bytes) -> str:
    """The str ``stored`` kept as ``value``."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


# -- SQLite ------------------------------------------------------------------------------------


class SqliteStore:
    """A journal in one SQLite file, in WAL mode: readers in while one writes; ``BEGIN
    IMMEDIATE`` takes the file's write lock. SQLite keeps any value in any column, so rows go in
    as the journal builds them."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn = conn
        self.name = name

    @classmethod
    def open(cls, path: str, create: bool, read_only: bool = False) -> SqliteStore:
        """A connection to the journal at ``path`` (in WAL mode), its schema checked before
        anything is written, and made where the file is new (unless not ``create``); with
        ``read_only``, one that only reads it (SQLite's ``mode=ro``), its schema checked and
        left as it is.

        Raises:
          IsADirectoryError, FileNotFoundError: if ``path`` is a directory, is in a folder that
            does not exist, or (not ``create``) is no file.
          ValueError: if the file is not a journal: not SQLite, or of another schema.
          sqlite3.Error: if SQLite cannot open or write it (naming the file).
        """
        where = Path(path)
        create = create and not read_only
        if where.is_dir():
            raise IsADirectoryError(
                f"the journal {path} is a directory: give a file, such as {where / 'runs.db'}"
            )
        if not create and not where.is_file():
            raise FileNotFoundError(f"no journal at {path}")
        if not where.absolute().parent.is_dir():
            raise FileNotFoundError(
                f"the journal {path} cannot be made: its folder {where.parent} does not exist"
            )
        # never made by a journal that must not create: SQLite's read-write mode, not create
        mode = "?mode=ro" if read_only else "?mode=rw"
        name = path if create else where.absolute().as_uri() + mode
        try:
            # the busy timeout is set by connect, before the first statement waits on a lock
            conn = sqlite3.connect(
                name, timeout=BUSY, isolation_level=None, check_same_thread=False, uri=not create
            )
        except sqlite3.Error as exc:
            raise type(exc)(f"cannot open the journal {path}: {exc}") from None
        store = cls(conn, path)
        try:
            if read_only:
                statements(store, create)  # refuses a database that is not a journal
                return store
            make_schema(store, create)
            store.wal()
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            conn.close()
            raise type(exc)(f"cannot open the journal {path}: {exc}") from None
        except BaseException:
            conn.close()
            raise
        return store

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.conn.in_transaction:  # inside one: a part of it
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def results(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return rows

    def blob(self, data: str | bytes) -> str | bytes:
        return data

    def found(self) -> dict[str, tuple[str, ...]]:
        conn = self.conn
        try:
            return {
                name: tuple(row[1] for row in conn.execute(f"PRAGMA table_info({name!r})"))
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:  # locked, or unreadable: not its content
                raise
            raise ValueError(
                f"{self.name} is not a journal: not a SQLite database ({exc})"
            ) from None

    def ddl(self, statement: str) -> str:
        return statement

    def wal(self) -> None:
        """Put the file in WAL mode. Switching it is refused at once (``database is locked``),
        not after the busy timeout, while another connection switches it or reads it: so it
        tries again, a little later each time, until the timeout."""
        until = time.monotonic() + BUSY
        pause = 0.001
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorname != "SQLITE_BUSY" or time.monotonic() >= until:
                    raise
            else:
                return
            time.sleep(pause)
            pause = min(2 * pause, 0.05)

    def close(self) -> None:
        """Close the file, what the WAL holds moved into the main file first (and the WAL
        emptied): the file a command leaves holds its data, and a copy of it takes the journal
        whole. While another connection reads the file the checkpoint is left to it, at once:
        waiting the busy timeout for a reader would hold this close up for nothing."""
        with contextlib.suppress(sqlite3.Error):  # another process is in the file: it does it
            self.conn.execute("PRAGMA busy_timeout=0")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()
