"""The journal's PostgreSQL store: the same tables as a SQLite journal's, on a server that
several machines reach, through psycopg 3.

The journal calls it from its writer thread (or inline), never from the trio loop: psycopg's
own async API needs asyncio, so the connection is a plain one, in autocommit mode, used by one
thread at a time. What it says differently from SQLite:

- the columns' types: ``BIGINT`` for SQLite's ``INTEGER`` (a slot, a round go up to 2**63-1),
  ``DOUBLE PRECISION`` for ``REAL``, ``BYTEA`` for ``BLOB``; no ``WITHOUT ROWID``;
- the write lock: a transaction takes ``pg_advisory_xact_lock`` on one key, so writers of the
  journal take turns as on a SQLite file (``BEGIN IMMEDIATE``), whichever process they are in;
- text: a ``TEXT`` column holds neither NUL nor a lone surrogate, so a subtask's or an error's
  text holding one is kept escaped (``\\x00``, ``\\udce9``); an output (``BYTEA``) is kept as
  the codec gave it, a str as its UTF-8, and comes back as bytes (the JSON codec reads both).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg

from ._store import Cursor, make_schema, shown, statements

LOCK = 0x7472_696F_5F6A_6E6C  # the journal's advisory lock key ("trio_jnl")
CONNECT = 10  # seconds a connection attempt takes at most
TYPES = (
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
    (re.compile(r"\bBLOB\b"), "BYTEA"),
    (re.compile(r"\s*WITHOUT ROWID"), ""),
)


def postgres_ddl(statement: str) -> str:
    """A statement of the journal's schema (in SQLite's words) in PostgreSQL's."""
    for pattern, said in TYPES:
        statement = pattern.sub(said, statement)
    return statement


NUMBERED = re.compile(r"\?(\d+)")


@functools.cache
def _said(sql: str) -> tuple[str, bool]:
    """The journal's statement ``sql`` in psycopg's placeholders: ``?`` as ``%s``, a numbered
    ``?N`` as ``%(pN)s``; and whether it had numbered ones."""
    escaped = sql.replace("%", "%%")
    if NUMBERED.search(escaped):
        return NUMBERED.sub(lambda match: f"%(p{match[1]})s", escaped), True
    return escaped.replace("?", "%s"), False


def _named(params: Sequence[Any]) -> dict[str, Any]:
    """Positional ``params`` as the ``%(pN)s`` of a statement with numbered placeholders."""
    return {f"p{number}": value for number, value in enumerate(params, 1)}


def open_postgres(target: str, create: bool, read_only: bool = False) -> PostgresStore:
    """A connection to the journal at ``target`` (a ``postgresql://`` URI), its schema checked
    before anything is written, and made where the database holds none (unless not
    ``create``); with ``read_only``, a session whose transactions only read, its schema checked
    and left as it is.

    Raises:
      ConnectionError: if the server cannot be reached or refuses the connection, naming it.
      ValueError: if the database is not a journal: tables of another schema, or a journal's
        table without its columns.
    """
    name = shown(target)
    try:
        conn = psycopg.connect(target, autocommit=True, connect_timeout=CONNECT)
    except psycopg.Error as exc:
        said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConnectionError(f"cannot open the journal {name}: {said}") from None
    store = PostgresStore(conn, name)
    try:
        if read_only:
            conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            statements(store, False)  # refuses a database that is not a journal
            return store
        make_schema(store, create)
    except BaseException:
        conn.close()
        raise
    return store


def _text(value: Any) -> Any:
    """A text column's ``value`` as PostgreSQL holds it: NUL and lone surrogates escaped."""
    if isinstance(value, bytes):  # stored(): text with a lone surrogate
        value = value.decode("utf-8", "surrogatepass")
    if isinstance(value, str) and not value.isascii():
        value = value.encode("utf-8", "backslashreplace").decode()
    if isinstance(value, str) and "\x00" in value:
        value = value.replace("\x00", "\\x00")
    return value


class PostgresStore:
    """A journal in a PostgreSQL database (its current schema): see the module."""

    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self.conn = conn
        self.name = name

    # A statement with numbered placeholders (?1, ?2: one value named more than once) is bound
    # on the client (psycopg's ClientCursor, which quotes each value): the server cannot type a
    # parameter that is only tested (``?5 IS NULL``), nor a NULL in an INSERT's SELECT list.
    # Every other statement is bound by the server, and prepared once it recurs.

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        said, numbered = _said(sql)
        if not numbered:
            return self.conn.execute(said, params)
        cursor = psycopg.ClientCursor(self.conn)
        cursor.execute(said, _named(params))
        return cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        said, numbered = _said(sql)
        if not numbered:
            with self.conn.cursor() as cursor:
                cursor.executemany(said, rows)
            return
        with psycopg.ClientCursor(self.conn) as client:
            client.executemany(said, [_named(row) for row in rows])

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            yield  # inside one: a part of it
            return
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
            yield

    def results(self, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        held = []
        for row in rows:
            output = row[5]
            held.append(
                (
                    *row[:3],
                    _text(row[3]),
                    row[4],
                    output.encode("utf-8", "surrogatepass") if type(output) is str else output,
                    _text(row[6]),
                    _text(row[7]),
                    *row[8:],
                )
            )
        return held

    def blob(self, data: str | bytes) -> str | bytes:
        return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data

    def found(self) -> dict[str, tuple[str, ...]]:
        found: dict[str, tuple[str, ...]] = {
            name: ()
            for (name,) in self.conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
        }
        for name, column in self.conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ):
            found[name] = (*found.get(name, ()), column)
        return found

    def ddl(self, statement: str) -> str:
        return postgres_ddl(statement)

    def close(self) -> None:
        self.conn.close()
