"""A real PostgreSQL server for tests and benchmarks: made in a temporary folder, on loopback and
a free port, ready within a bounded time, and removed when its block ends.
[`postgres_server`][trio_supervisor.testing.postgres.postgres_server] gives its connection
string, which [`Journal`][trio_supervisor.Journal] takes as it takes a file's path.

It runs the server binaries of the machine (Debian's ``postgresql`` package puts them in
``/usr/lib/postgresql/VERSION/bin``; ``make test`` installs it when they are missing), never a
mock: ``initdb`` makes a cluster in the folder (``trust`` authentication: the server listens on
127.0.0.1 only, and lives as long as the block), and ``postgres`` serves it. Both refuse to run
as root, so a root process (a container, CI) runs them as the ``postgres`` user the package
makes, or ``nobody``, the folder given to that user: ``subprocess``'s ``user=``, no ``su``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PostgresUnavailable", "postgres_binaries", "postgres_server"]

STOP = 10.0  # seconds a fast shutdown may take before the server is killed


class PostgresUnavailable(RuntimeError):
    """The machine has no PostgreSQL server binaries (``initdb``, ``postgres``)."""


def postgres_binaries() -> Path:
    """The folder of the newest PostgreSQL server binaries on this machine: ``$PG_BIN`` if set,
    else Debian's ``/usr/lib/postgresql/VERSION/bin``, else the one ``postgres`` on ``PATH`` is
    in.

    Raises:
      PostgresUnavailable: if there are none, naming how to install them.
    """
    given = os.environ.get("PG_BIN")
    candidates = [given] if given else []
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda path: int(Path(path).parent.name) if Path(path).parent.name.isdigit() else 0,
        reverse=True,
    )
    found = shutil.which("postgres")
    if found:
        candidates.append(str(Path(found).resolve().parent))
    for candidate in candidates:
        folder = Path(candidate)
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, postgres) on this machine: install Debian's "
        "postgresql package (make test does), or set PG_BIN to their folder"
    )


def _free_port() -> int:
    """A loopback port free now (bound to port 0, then let go)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _runner() -> tuple[int, int] | None:
    """Whom ``subprocess`` runs the server as (user and group ids): None for this user; as root,
    ``postgres`` (Debian's package makes it) or ``nobody``, since initdb and postgres refuse
    root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            user = pwd.getpwnam(name)
            return user.pw_uid, user.pw_gid
    raise PostgresUnavailable("running as root, with no postgres or nobody user to run it as")


@contextlib.contextmanager
def postgres_server(*, timeout: float = 30.0, fsync: bool = False) -> Iterator[str]:
    """A PostgreSQL server for the block: its connection string, database ``postgres`` of user
    ``postgres`` on 127.0.0.1 and a free port. It is stopped (a fast shutdown, then a kill) and
    its folder removed when the block ends, an error or a Ctrl-C included.

    Args:
      timeout: seconds ``initdb`` and the server's start may take, together, at most.
      fsync: whether the server syncs its writes to disk (off by default: a test's server is
        thrown away; a benchmark that compares with a SQLite file's durability turns it on).

    Raises:
      PostgresUnavailable: if the machine has no server binaries.
      TimeoutError: if the server is not ready within ``timeout``.
      RuntimeError: if ``initdb`` or the server fails, with the end of what it said.
    """
    binaries = postgres_binaries()
    runner = _runner()
    folder = Path(tempfile.mkdtemp(prefix="trio-supervisor-pg-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        if runner is not None:
            os.chown(folder, *runner)
        until = time.monotonic() + timeout
        data = folder / "data"
        log = folder / "server.log"
        made = subprocess.run(
            [
                *(str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"),
                *("--no-sync", "-E", "UTF8", "--locale=C"),
            ],
            capture_output=True,
            timeout=timeout,
            check=False,
            cwd=folder,
            user=None if runner is None else runner[0],
            group=None if runner is None else runner[1],
            extra_groups=None if runner is None else [],
        )
        if made.returncode != 0:
            said = (made.stderr or made.stdout).decode(errors="replace").strip()
            raise RuntimeError(f"initdb failed ({made.returncode}): {said[-2000:]}")
        port = _free_port()
        settings = ["-c", f"fsync={'on' if fsync else 'off'}"]
        if not fsync:
            settings += ["-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        with open(log, "wb") as said_to:
            server = subprocess.Popen(
                [
                    *(str(binaries / "postgres"), "-D", str(data), "-h", "127.0.0.1"),
                    *("-p", str(port), "-k", str(folder), *settings),
                ],
                stdout=said_to,
                stderr=subprocess.STDOUT,
                cwd=folder,
                user=None if runner is None else runner[0],
                group=None if runner is None else runner[1],
                extra_groups=None if runner is None else [],
            )
        _wait_ready(server, data / "postmaster.pid", log, until)
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if server is not None:
            _stop(server)
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(server: subprocess.Popen[bytes], pid: Path, log: Path, until: float) -> None:
    """Wait until ``server`` says it is ready (``postmaster.pid``'s last line: ``ready``).

    Raises:
      RuntimeError: if it exits first, with the end of its log.
      TimeoutError: if it is not ready by ``until`` (monotonic time).
    """
    pause = 0.005
    while True:
        if server.poll() is not None:
            said = log.read_text(errors="replace").strip()[-2000:]
            raise RuntimeError(f"the PostgreSQL server exited ({server.returncode}): {said}")
        with contextlib.suppress(OSError):
            lines = pid.read_text().splitlines()
            if len(lines) >= 8 and lines[7].strip() == "ready":
                return
        if time.monotonic() >= until:
            raise TimeoutError("the PostgreSQL server was not ready in time")
        time.sleep(pause)
        pause = min(2 * pause, 0.05)


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Stop ``server``: a fast shutdown (SIGINT: clients cut, no wait for them), then a kill."""
    if server.poll() is None:
        server.send_signal(signal.SIGINT)
    try:
        server.wait(STOP)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
