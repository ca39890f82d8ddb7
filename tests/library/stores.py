"""The journal's two stores as the conformance suite meets them: a SQLite file, or a database of
its own on the session's PostgreSQL server (``trio_supervisor.testing.postgres``), each read
and made foreign with its own driver, not through the journal."""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from trio_supervisor.testing.postgres import PostgresUnavailable, postgres_server

KINDS = ("sqlite", "postgres")

OLD_TABLES = """
CREATE TABLE runs (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, fingerprint TEXT, plan BLOB,
  started REAL NOT NULL, PRIMARY KEY (run_id, round)
) WITHOUT ROWID;
CREATE TABLE results (
  run_id TEXT NOT NULL, round INTEGER NOT NULL, slot INTEGER NOT NULL, subtask TEXT NOT NULL,
  status TEXT NOT NULL, output BLOB, error_type TEXT, error TEXT, attempts INTEGER NOT NULL,
  started REAL, finished REAL, PRIMARY KEY (run_id, round, slot)
) WITHOUT ROWID;
"""
"""A journal's tables as an older version made them: no leases, no written or owner columns."""
_numbers = itertools.count()


@dataclass(frozen=True)
class Database:
    """One empty database of a kind: ``target`` is what ``Journal`` takes (a file's path, or a
    connection string)."""

    kind: str
    target: str

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` (with ``?`` placeholders), read with the store's own driver."""
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.target)) as conn, conn:
                return conn.execute(sql, params).fetchall()
        import psycopg

        with psycopg.connect(self.target, autocommit=True) as server:
            cursor = server.execute(sql.replace("?", "%s"), params)
            return cursor.fetchall() if cursor.description else []

    def execute(self, sql: str) -> None:
        """Run ``sql`` (one statement), committed."""
        self.query(sql)

    def tables(self) -> dict[str, list[str]]:
        """Each table the database holds, with its columns: what a refused open leaves as it
        was."""
        if self.kind == "sqlite":
            names = [row[0] for row in self.query("SELECT name FROM sqlite_master")]
            return {
                name: [row[1] for row in self.query(f"PRAGMA table_info({name})")] for name in names
            }
        found: dict[str, list[str]] = {}
        for name, column in self.query(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ):
            found.setdefault(name, []).append(column)
        return found


class Databases:
    """Makes empty databases of one kind: files in a temporary folder, or databases on the
    session's server."""

    def __init__(self, kind: str, server: str | None, folder: Path) -> None:
        self.kind = kind
        self.server = server
        self.folder = folder
        self._scratch: Database | None = None

    def fresh(self) -> Database:
        number = next(_numbers)
        if self.server is None:
            return Database(self.kind, str(self.folder / f"journal{number}.db"))
        import psycopg

        name = f"journal{os.getpid()}_{number}"
        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return Database(self.kind, self.server.rsplit("/", 1)[0] + "/" + name)

    def emptied(self) -> Database:
        """An empty database, as `fresh` gives, for each test and each drawn example: on the
        server, one database kept for such calls, its schema dropped (tables, rows and all) and
        made again, where a new database costs a copy of the template's few hundred files (half
        a second each, and as long again to remove at the session's end)."""
        if self.server is None:
            return self.fresh()
        if self._scratch is None:
            self._scratch = self.fresh()
        self._scratch.execute("DROP SCHEMA public CASCADE")
        self._scratch.execute("CREATE SCHEMA public")
        return self._scratch


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The session's PostgreSQL server on loopback (started once, about a second; stopped at
    the session's end). Skipped, with the reason, only where the machine has no server binaries
    or no psycopg and this is not CI; in CI their absence fails."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no psycopg ({exc}): install the postgres extra (make test does)")
    try:
        with postgres_server() as url:
            yield url
    except PostgresUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(str(exc))


@pytest.fixture(scope="session", params=KINDS)
def databases(request: pytest.FixtureRequest) -> Iterator[Databases]:
    """Empty databases of each store in turn (the conformance suite runs once per store)."""
    server = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    with tempfile.TemporaryDirectory() as folder:
        yield Databases(request.param, server, Path(folder))


@pytest.fixture
def database(databases: Databases) -> Database:
    """One empty database of the store under test (on the server, the worker's one scratch
    database emptied: see `Databases.emptied`)."""
    return databases.emptied()
