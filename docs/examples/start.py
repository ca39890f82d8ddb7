"""A task that reports ready: ``nursery.start`` waits until the server has bound its port and
hands the port back, where ``start_soon`` would return before the port exists.
tests/docs/test_docs_examples.py runs it."""

from __future__ import annotations

import trio


async def echo_server(*, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """Listen on a free port of the loopback address, report the port, echo one connection."""
    (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
    async with listener:
        port = listener.socket.getsockname()[1]
        task_status.started(port)  # start() returns now, with the port; this task runs on
        connection = await listener.accept()
        async with connection:
            await connection.send_all(await connection.receive_some())


async def main() -> bytes:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(echo_server)  # the server is listening: connect at once
        client = await trio.open_tcp_stream("127.0.0.1", port)
        async with client:
            await client.send_all(b"hello")
            return await client.receive_some()
