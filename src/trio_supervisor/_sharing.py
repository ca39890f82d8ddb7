"""Limits shared across processes, in a journal's database: the statements behind a
[`Capacity`][trio_supervisor.Capacity] or a [`RateLimit`][trio_supervisor.RateLimit] given
``shared=``, on any store (``_store``), each a transaction holding the write lock.

A shared capacity's places are rows of ``places``, one per attempt that holds one, each with its
holder's owner and an expiry (a lease, renewed while it is held): a place is taken only while
fewer than the limit are live, so the bound holds across every process on the database; a
holder killed, or hung, loses its places once their lease runs out (at once, for a process on
this host that is gone). A shared rate limit is one row of ``buckets``: the generic cell rate
algorithm's theoretical arrival time, read and moved in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from ._store import Store


def take_place(
    conn: Store,
    meter: str,
    holder: str,
    owner: str,
    limit: int,
    now: float,
    expires: float,
    gone: Callable[[str], bool],
) -> bool:
    """Take a place of the shared capacity ``meter`` for ``holder`` (of ``owner``) until
    ``expires``, if fewer than ``limit`` are held at ``now``: whether it was taken. The places
    whose lease ran out, or whose owner is ``gone``, are removed first."""
    with conn.transaction():
        rows = list(
            conn.execute("SELECT holder, owner, expires FROM places WHERE meter = ?", (meter,))
        )
        stale = [(meter, held) for held, who, until in rows if until <= now or gone(who)]
        if stale:
            conn.executemany("DELETE FROM places WHERE meter = ? AND holder = ?", stale)
        if len(rows) - len(stale) >= limit:
            return False
        conn.execute(
            "INSERT INTO places (meter, holder, owner, claimed, expires) VALUES (?, ?, ?, ?, ?)",
            (meter, holder, owner, now, expires),
        )
        return True


def renew_places(conn: Store, meter: str, owner: str, expires: float) -> None:
    """Move the expiry of every place ``owner`` holds of ``meter`` to ``expires``."""
    with conn.transaction():
        conn.execute(
            "UPDATE places SET expires = ? WHERE meter = ? AND owner = ?", (expires, meter, owner)
        )


def drop_place(conn: Store, meter: str, holder: str) -> None:
    """``holder`` gives back its place of ``meter``."""
    with conn.transaction():
        conn.execute("DELETE FROM places WHERE meter = ? AND holder = ?", (meter, holder))


def take_token(conn: Store, meter: str, interval: float, tolerance: float, now: float) -> float:
    """Take a token of the shared rate limit ``meter`` (one every ``interval`` seconds, a burst
    of ``tolerance / interval + 1``) at ``now``: 0.0 when taken, else the seconds until one is
    due."""
    with conn.transaction():
        row = conn.execute("SELECT due FROM buckets WHERE meter = ?", (meter,)).fetchone()
        due = now if row is None else max(row[0], now)  # when the bucket is full again
        wait = due - tolerance - now
        if wait > 1e-9:  # beyond float rounding of due: not yet
            return wait
        conn.execute(
            "INSERT INTO buckets (meter, due) VALUES (?, ?) "
            "ON CONFLICT (meter) DO UPDATE SET due = excluded.due",
            (meter, due + interval),
        )
        return 0.0
