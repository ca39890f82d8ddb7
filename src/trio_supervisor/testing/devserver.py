"""A loopback OpenAI-compatible endpoint with an endpoint's manners: latency, errors, hangs,
and its own limits, answered with 429 and ``Retry-After``.

``python -m trio_supervisor.testing.devserver --port 8000`` serves ``/v1/chat/completions`` and
``/v1/models`` on ``127.0.0.1`` (Hypercorn's trio worker, a small Starlette app), so a
[`ChatAgent`][trio_supervisor.agents.ChatAgent] can be run, tested and measured with no outside
service; in a trio program, ``url = await nursery.start(serve)`` serves on a free port, and
[`app`][trio_supervisor.testing.devserver.app] is the same endpoint as an ASGI app, to be served in
the process without a socket (through ``httpx2.ASGITransport``, on a ``trio.testing.MockClock``).
[`loopback`][trio_supervisor.testing.devserver.loopback] serves it either way for the length of a
block, optionally scripted to do what a [`SimulatedAgent`][trio_supervisor.testing.SimulatedAgent]
would, and says where a client finds it.

Everything it does is fixed by its ``seed`` and the prompt (the last message's text): each
prompt's latency, and whether its n-th request fails with a 500 (a share ``error_rate``). A
prompt holding ``[hang]`` never gets an answer (the request waits until the client goes),
``[malformed]`` gets a 200 that is not JSON, ``[500]`` always a 500. A ``script`` may say, per
prompt, what the server does instead of what its seed draws (a
[`Script`][trio_supervisor.testing.devserver.Script]: its latency, whether it fails and with which
status and headers (``Retry-After``, ``x-should-retry``), how many of its first requests fail,
whether it hangs, echoes the key or refuses). Beyond ``concurrency`` requests at once, or past its
``rpm`` token bucket, it answers 429 with ``retry-after-ms`` and ``retry-after``. By default it
works on every request at once; ``serving`` (a
[`Serving`][trio_supervisor.testing.devserver.Serving]) makes it a GPU server's: batches of
requests that decode together, each slower the larger the batch, or one request at a time, the
rest queued, and past an optional queue bound a 503 with ``retry-after``. ``GET /stats`` counts
requests, answers by status, the peak of requests in flight, running and queued, and the
disconnects seen (a client that went before its answer). Each reply carries a ``usage`` as a
real server's does, its tokens counted in words: the prompt's, and the reply's, cut to the
request's ``max_tokens``.

It also plays the planner model of a [`ChatPlanner`][trio_supervisor.agents.ChatPlanner]: a
request whose system prompt is the planner's is answered at once with the decision its
``planner`` (a [`ScriptedPlanner`][trio_supervisor.testing.ScriptedPlanner] by default) makes
from the ledger in the request, as the JSON the planner's schema asks for; a task holding
``[garbled]`` is answered with text that is not JSON, ``[fenced]`` with its JSON in a Markdown
code fence, ``[refuse]`` with a refusal; ``planner_script`` makes the planner endpoint fail or
rate-limit, ``structured_outputs=False`` makes the server refuse ``response_format``, and
``structured_outputs="ignored"`` makes it answer prose when JSON was asked.

This module needs the ``agents`` extra (``pip install 'trio-supervisor[agents]'``).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import socket
import sys
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

try:
    import httpx2
    import trio
    from hypercorn.config import Config, Sockets
    from hypercorn.trio import serve as hypercorn_serve
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route
except ImportError as error:  # pragma: no cover - exercised by a test that hides the server
    missing = (error.name or "a module").split(".")[0]
    raise ImportError(
        f"trio_supervisor.testing.devserver needs the 'agents' extra ({missing} is missing): "
        "pip install 'trio-supervisor[agents]'"
    ) from error

from .. import _validate
from .._replan import Planner
from ..agents import ChatAgent
from ._scripted import ScriptedPlanner
from ._simulate import SimulatedAgent

__all__ = [
    "DevServerError",
    "Loopback",
    "Script",
    "Serving",
    "Stats",
    "app",
    "drawn_latency",
    "loopback",
    "mimic",
    "serve",
]

HOST = "127.0.0.1"
_TURN = 1e-7  # seconds a request waits for its instant's turn to be decided (see chat)


class DevServerError(OSError):
    """The server could not listen where it was asked to: before it serves anything, so a
    port in use is one line, not a half-started server.

    ```pycon
    >>> import socket
    >>> with socket.socket() as taken:  # a port another program holds
    ...     taken.bind(("127.0.0.1", 0))
    ...     port = taken.getsockname()[1]
    ...     trio.run(lambda: serve(port=port))
    Traceback (most recent call last):
      ...
    trio_supervisor.testing.devserver.DevServerError: cannot listen on 127.0.0.1:...: ...

    ```
    """


@dataclass
class Stats:
    """What the server has seen so far (``GET /stats`` returns it as JSON).

    ```pycon
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=app(latency=(1, 1), concurrency=1))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         await Supervisor(agent, max_workers=2).run(["a", "b"])  # one too many at once
    ...     async with httpx2.AsyncClient(transport=via, base_url="http://x") as client:
    ...         return (await client.get("/stats")).json()
    >>> stats = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> stats["requests"], stats["ok"], stats["rate_limited"], stats["peak_in_flight"]
    (2, 1, 1, 1)

    ```
    """

    requests: int = 0
    """Chat completion requests received, whatever their answer."""
    statuses: Counter[int] = field(default_factory=Counter)
    """Answers sent, by HTTP status."""
    in_flight: int = 0
    """Requests being answered now (429s excluded: they are answered at once)."""
    peak_in_flight: int = 0
    """The most requests ever in flight at once (running or queued)."""
    running: int = 0
    """Requests being worked on now: in flight, not queued."""
    peak_running: int = 0
    """The most requests ever worked on together (a batch, under batching)."""
    queued: int = 0
    """Requests waiting in the server's queue now (batching or sequential serving)."""
    peak_queued: int = 0
    """The longest the queue ever was."""
    waited: int = 0
    """Requests that waited in the queue before they were worked on."""
    overloaded: int = 0
    """Requests answered 503 because the queue was full."""
    disconnects: int = 0
    """Requests whose client went away before the answer."""
    idempotency_keys: list[str] = field(default_factory=list)
    """The ``Idempotency-Key`` header of each chat request that sent one, in arrival order."""

    def as_json(self) -> dict[str, Any]:
        """The counts, as ``/stats`` reports them."""
        return {
            "requests": self.requests,
            "ok": self.statuses[200],
            "rate_limited": self.statuses[429],
            "server_errors": sum(n for code, n in self.statuses.items() if code >= 500),
            "statuses": {str(code): n for code, n in sorted(self.statuses.items())},
            "in_flight": self.in_flight,
            "peak_in_flight": self.peak_in_flight,
            "running": self.running,
            "peak_running": self.peak_running,
            "queued": self.queued,
            "peak_queued": self.peak_queued,
            "waited": self.waited,
            "overloaded": self.overloaded,
            "idempotency_keys": list(self.idempotency_keys),
            "disconnects": self.disconnects,
        }


@dataclass(frozen=True)
class Script:
    """What the server does with one prompt, in place of what its seed draws.

    ```python
    script = {"busy": Script(flaky=1, status=503, retry_after=2.0)}.get  # one 503, then fine
    server = httpx2.ASGITransport(app=app(latency=(0, 0), script=script))
    async with httpx2.AsyncClient(transport=server, base_url="http://x") as client:
        asked = {"messages": [{"role": "user", "content": "busy"}]}
        first = await client.post("/v1/chat/completions", json=asked)
        assert (first.status_code, first.headers["retry-after"]) == (503, "2")
        assert (await client.post("/v1/chat/completions", json=asked)).status_code == 200
    ```

    Args:
      latency: seconds it takes to answer, or None for the one the seed draws.
      straggle: seconds the prompt's first request takes instead (a straggler: the tail of an
        endpoint's latency, which a second request of the same prompt does not meet); None:
        the first takes what the others do.
      fail: every request is answered with a failure (``status``).
      flaky: the prompt's first ``flaky`` requests are answered with a failure, the later ones
        as usual.
      hang: no request is ever answered (it waits until the client goes).
      reply: the answer's text, or None for ``answer to: <prompt>``.
      status: the HTTP status of a failure, 500 by default (503: a gateway's admission control).
      retry_after: seconds a failure asks to wait, sent as ``retry-after``; None: no header.
      retry_after_ms: the same in ``retry-after-ms`` (milliseconds); None: no header.
      should_retry: sent with a failure as ``x-should-retry: true`` or ``false``; None: no
        header.
      echo_key: a failure's message and a reply's text repeat the request's ``Authorization``
        header (the API key), as a careless server does.
      refusal: the model refuses: a 200 whose message has no content and this ``refusal``.
      prose: a request that asks for JSON (a ``response_format``) is answered in prose while
        its conversation holds fewer than ``prose`` replies of the model: a model that ignores
        the schema ``prose`` times, then answers ``reply``. A re-ask (a conversation asking
        for JSON that holds a reply already) is its first user message's: its script, latency
        and count are that prompt's.

    Raises:
      ValueError: if a number is out of its range (a latency or wait < 0, a ``flaky`` or
        ``prose`` < 0, a ``status`` outside 400-599).
    """

    latency: float | None = None
    straggle: float | None = None
    fail: bool = False
    flaky: int = 0
    hang: bool = False
    reply: str | None = None
    status: int = 500
    retry_after: float | None = None
    retry_after_ms: float | None = None
    should_retry: bool | None = None
    echo_key: bool = False
    refusal: str | None = None
    prose: int = 0

    def __post_init__(self) -> None:
        if self.latency is not None:
            _validate.number("Script latency", self.latency, strictly=False)
        if self.straggle is not None:
            _validate.number("Script straggle", self.straggle, strictly=False)
        if isinstance(self.flaky, bool) or not isinstance(self.flaky, int) or self.flaky < 0:
            raise ValueError(f"Script flaky must be an int >= 0, got {self.flaky!r}")
        if isinstance(self.prose, bool) or not isinstance(self.prose, int) or self.prose < 0:
            raise ValueError(f"Script prose must be an int >= 0, got {self.prose!r}")
        if (
            isinstance(self.status, bool)
            or not isinstance(self.status, int)
            or not 400 <= self.status <= 599
        ):
            raise ValueError(
                f"Script status must be an HTTP error status (400-599), got {self.status!r}"
            )
        for name in ("retry_after", "retry_after_ms"):
            if getattr(self, name) is not None:
                _validate.number(f"Script {name}", getattr(self, name), strictly=False)
        if self.should_retry is not None and not isinstance(self.should_retry, bool):
            raise ValueError(
                f"Script should_retry must be True, False or None, got {self.should_retry!r}"
            )

    def failure_headers(self) -> dict[str, str]:
        """The headers a failure is sent with."""
        headers = {}
        if self.retry_after is not None:
            headers["retry-after"] = f"{self.retry_after:g}"
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = f"{self.retry_after_ms:g}"
        if self.should_retry is not None:
            headers["x-should-retry"] = "true" if self.should_retry else "false"
        return headers


SLOWDOWN = 0.37
"""The exponent of a batch's slowdown: a reply decoded among ``b`` takes ``b ** SLOWDOWN``
times its time alone (fitted to a 222M model under continuous batching on one GPU, see
[`Serving`][trio_supervisor.testing.devserver.Serving])."""


@dataclass(frozen=True)
class Serving:
    """How the server works through the requests it lets in: all at once, in batches, or one
    at a time, and how many it lets wait.

    ```pycon
    >>> async def main():  # one at a time: the fourth waits for the three before it
    ...     via = httpx2.ASGITransport(app=app(latency=(1, 1), serving=Serving("sequential")))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         await Supervisor(agent, max_workers=4).run(["a", "b", "c", "d"])
    ...     async with httpx2.AsyncClient(transport=via, base_url="http://x") as client:
    ...         stats = (await client.get("/stats")).json()
    ...     return round(trio.current_time(), 3), stats["peak_running"], stats["peak_queued"]
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    (4.0, 1, 3)

    ```

    - ``"parallel"`` (the default): each request takes its own latency, however many run, as
      an endpoint that scales out does.
    - ``"batching"``: up to ``batch`` requests decode together and the rest wait in a queue, in
      the order they came, as a GPU server with continuous batching does (vLLM, SGLang,
      ``transformers serve --continuous-batching``). The more decode together, the slower each
      goes: a request that takes ``t`` alone advances at ``1 / b ** scaling`` of its pace while
      ``b`` run, so a batch of ``b`` that starts together ends after ``t * b ** scaling``, and
      the server answers ``b ** (1 - scaling)`` times as many replies a second as alone. The
      default ``scaling`` is fitted, by least squares on the logarithms, to a 222M model
      answering 32 tokens a reply on one H200: its replies a second were 1.7, 5.8, 9.4, 24 and
      49 at 1, 4, 16, 64 and 256 requests at once, so a reply took ``b / throughput(b)`` =
      0.59, 0.69, 1.70, 2.67 and 5.22 s, 1, 1.2, 2.9, 4.5 and 8.9 times its time alone;
      ``b ** 0.37`` gives 1, 1.7, 2.8, 4.7 and 7.8.
    - ``"sequential"``: one request at a time, the rest queued (``transformers serve`` without
      batching): its throughput is one request's, whatever the load, and a request's latency
      grows with the queue before it.

    A server that queues never refuses unless ``queue`` bounds its queue: past that many
    waiting, it answers 503 with ``retry-after`` and ``retry-after-ms`` (as SGLang's
    ``--max-queued-requests`` and Ray Serve's ``max_queued_requests`` do). The ``concurrency``
    and ``rpm`` 429s of [`app`][trio_supervisor.testing.devserver.app] still apply, before the
    queue: ``concurrency`` counts the requests queued as well as those running.

    Args:
      mode: ``"parallel"``, ``"batching"`` or ``"sequential"``.
      batch: how many decode together under ``"batching"`` (32 by default).
      scaling: how a batch slows each of its requests (the exponent above), >= 0; 0: not at
        all (a pool of ``batch`` workers).
      queue: how many requests may wait; beyond, 503. None: no bound (vLLM's default).
      retry_after: the wait a 503 asks, in seconds; None: the mean of the latency range.

    Raises:
      ValueError: if ``mode`` is not one of the three, a bound is < 1 (a ``queue`` < 0), a
        ``batch`` or ``queue`` is given to a mode that does not queue, or a number is out of
        its range.
    """

    mode: Literal["parallel", "batching", "sequential"] = "parallel"
    batch: int | None = None
    scaling: float = SLOWDOWN
    queue: int | None = None
    retry_after: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("parallel", "batching", "sequential"):
            raise ValueError(
                f"Serving mode must be 'parallel', 'batching' or 'sequential', got {self.mode!r}"
            )
        if self.batch is not None:
            _validate.count("Serving batch", self.batch)
            if self.mode != "batching":
                raise ValueError(
                    f"Serving batch is the size of a batch: give it with mode='batching', "
                    f"not {self.mode!r}"
                )
        if self.queue is not None:
            _validate.budget("Serving queue", self.queue)
            if self.mode == "parallel":
                raise ValueError(
                    "Serving queue bounds the requests waiting for a batch: a 'parallel' server "
                    "queues none (bound it with concurrency=, answered 429)"
                )
        _validate.number("Serving scaling", self.scaling, strictly=False)
        if self.retry_after is not None:
            _validate.number("Serving retry_after", self.retry_after, strictly=False)

    @property
    def slots(self) -> int | None:
        """How many requests are worked on at once; None: all of them."""
        if self.mode == "sequential":
            return 1
        if self.mode == "batching":
            return 32 if self.batch is None else self.batch
        return None

    def slowdown(self, running: int) -> float:
        """How many times longer each request takes while ``running`` decode together."""
        if self.mode != "batching" or running <= 1:
            return 1.0
        return float(running**self.scaling)


class _Batches:
    """The requests a batching or sequential server works on, and those waiting their turn.

    Every running request advances at the same pace (``1 / slowdown(running)``), so one count
    of work done per request in a batch, ``done``, tells them all apart: a request that joins
    when it is ``d`` and needs ``w`` (its latency alone) ends when it reaches ``d + w``. Each
    request's task sleeps until it is the next to end (the least ``done`` at its end); that one
    sleeps until the instant its end would fall at the current pace, and is woken to look again
    whenever a request joins or leaves (the pace changed). So a change wakes one task, not every
    request: a batch of 256 that turns over wakes 256 tasks, not 256 times 256. Requests take
    their places in the order they are let in (``enter``), which on virtual time is fixed by
    their prompts, and give it back (``leave``) however they end. Time is trio's.
    """

    def __init__(self, serving: Serving, slots: int, stats: Stats) -> None:
        self.serving = serving
        self.slots = slots
        self.stats = stats
        self.done = 0.0
        self.at = -math.inf  # when ``done`` was last brought up to date
        # each running request -> ``done`` at its end (None: its work not yet known)
        self.ends: dict[object, float | None] = {}
        self.waiting: deque[object] = deque()
        self.needs: dict[object, float] = {}  # each request's work, once known
        self.asleep: dict[object, trio.Event] = {}  # what wakes each request's task

    def _advance(self) -> None:
        now = trio.current_time()
        if self.ends:
            self.done += (now - self.at) / self.serving.slowdown(len(self.ends))
        self.at = now

    def _next(self) -> object:
        """The running request whose work ends first (None if none is known yet)."""
        head: object = None
        least = math.inf
        for ticket, end in self.ends.items():
            if end is not None and end < least:
                head, least = ticket, end
        return head

    def _changed(self) -> None:
        """The pace, or the next request to end, may have changed: that one looks again."""
        asleep = self.asleep.get(self._next())
        if asleep is not None:
            asleep.set()
        stats = self.stats
        stats.running, stats.queued = len(self.ends), len(self.waiting)
        stats.peak_running = max(stats.peak_running, stats.running)
        stats.peak_queued = max(stats.peak_queued, stats.queued)

    def _start(self, ticket: object) -> None:
        need = self.needs.get(ticket)
        self.ends[ticket] = None if need is None else self.done + need

    def enter(self) -> object:
        """A place in the batch, or in the queue after the requests let in before."""
        ticket = object()
        self._advance()
        if len(self.ends) < self.slots:
            self._start(ticket)
        else:
            self.waiting.append(ticket)
            self.stats.waited += 1
        self._changed()
        return ticket

    def leave(self, ticket: object) -> None:
        """Give back the place of ``ticket`` (done, or its client gone); the next waiting
        request takes it."""
        self._advance()
        if ticket in self.ends:
            del self.ends[ticket]
        else:
            self.waiting.remove(ticket)
        self.needs.pop(ticket, None)
        self.asleep.pop(ticket, None)
        while self.waiting and len(self.ends) < self.slots:
            self._start(self.waiting.popleft())
        self._changed()

    async def work(self, ticket: object, need: float) -> None:
        """Wait for the turn of ``ticket``, then for ``need`` seconds of work at its pace."""
        self.needs[ticket] = need
        while True:
            self._advance()
            wake = math.inf  # waiting, or not the next to end: until woken
            if ticket in self.ends:
                end = self.ends[ticket]
                if end is None:
                    end = self.ends[ticket] = self.done + need
                left = end - self.done
                if left <= 1e-9:
                    return
                if self._next() is ticket:
                    wake = self.at + left * self.serving.slowdown(len(self.ends))
                    if wake <= self.at:
                        return
            asleep = self.asleep[ticket] = trio.Event()
            with trio.move_on_at(wake):
                await asleep.wait()


Scripted = Callable[[str], "Script | None"]
"""Prompt -> what the server does with it (None: what the seed draws)."""


def _unit(seed: int, *parts: object) -> float:
    """A number in ``[0, 1)`` fixed by ``seed`` and ``parts``."""
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def drawn_latency(
    prompt: str, *, seed: int = 0, latency: tuple[float, float] = (0.05, 0.2)
) -> float:
    """The latency a server made with ``seed`` and ``latency`` draws for ``prompt``, in
    seconds (what a benchmark needs to know the server's capacity).

    ```pycon
    >>> round(drawn_latency("pricing"), 3), round(drawn_latency("pricing", seed=1), 3)
    (0.144, 0.118)
    >>> drawn_latency("pricing", latency=(1, 1))  # a range of one value: that value
    1.0

    ```
    """
    low, high = latency
    return low + (high - low) * _unit(seed, "latency", prompt)


class _Endpoint:
    """The server's state and its answers."""

    def __init__(
        self,
        *,
        seed: int,
        latency: tuple[float, float],
        error_rate: float,
        concurrency: int | None,
        rpm: float | None,
        burst: int | None,
        model: str,
        api_key: str | None,
        script: Scripted | None = None,
        planner: Planner[str, str] | None = None,
        planner_script: Script | None = None,
        structured_outputs: bool | Literal["ignored"] = True,
        serving: Serving | None = None,
    ) -> None:
        self.seed = seed
        self.script = script
        self.planner: Planner[str, str] = planner if planner is not None else ScriptedPlanner()
        self.planner_script = planner_script or Script()
        self.structured_outputs = structured_outputs
        self.latency = latency
        self.error_rate = error_rate
        self.concurrency = concurrency
        self.rate = None if rpm is None else rpm / 60
        self.burst = burst if burst is not None else max(1, math.ceil((rpm or 60) / 60))
        self.model = model
        self.api_key = api_key
        self.stats = Stats()
        self.serving = serving or Serving()
        slots = self.serving.slots
        self.batches = None if slots is None else _Batches(self.serving, slots, self.stats)
        self.seen: Counter[str] = Counter()
        # requests waiting for their instant's turn (see chat): arrival -> (prompt, its count,
        # where the decision goes)
        self.turns: dict[float, list[tuple[str, int, list[Response | object]]]] = {}
        self.tat = -math.inf  # the rate bucket, as a theoretical arrival time (see RateLimit)

    def _answer(self, status: int, response: Response) -> Response:
        self.stats.statuses[status] += 1
        return response

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        body = {"error": {"message": message, "type": "devserver", "code": status}}
        return self._answer(status, JSONResponse(body, status_code=status, headers=headers))

    def _over_rate(self) -> float | None:
        """Take a token from the rate bucket; None if there was one, else the wait for one."""
        if self.rate is None:
            return None
        interval = 1 / self.rate
        now = trio.current_time()
        wait = self.tat - (self.burst - 1) * interval - now
        if wait > 1e-9:
            return wait
        self.tat = max(self.tat, now) + interval
        return None

    def _decide(self, arrival: float, turn: list[tuple[str, int, list[Response | object]]]) -> None:
        """Decide every request of the turn of ``arrival``, in the order of their prompts, if
        no other request of it has."""
        if self.turns.get(arrival) is turn:
            del self.turns[arrival]
            for _, _, decision in sorted(turn, key=lambda entry: entry[:2]):
                decision.append(self._admit())

    def _admit(self) -> Response | object:
        """Let a request in (it holds a place until answered: the ticket of its place), or the
        429 or 503 that refuses it."""
        if self.concurrency is not None and self.stats.in_flight >= self.concurrency:
            mean = sum(self.latency) / 2
            return self._too_many(f"over {self.concurrency} requests at once", max(mean, 0.001))
        wait = self._over_rate()
        if wait is not None:
            return self._too_many("over the requests-per-minute budget", wait)
        serving = self.serving
        slots, bound = serving.slots, serving.queue
        if slots is not None and bound is not None and self.stats.in_flight >= slots + bound:
            self.stats.overloaded += 1
            wait = serving.retry_after
            if wait is None:
                wait = max(sum(self.latency) / 2, 0.001)
            return self._too_many(f"over {bound} requests queued", wait, status=503)
        return self._enter()

    def _enter(self) -> object:
        """Count a request in flight: the ticket of its place."""
        stats = self.stats
        stats.in_flight += 1
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
        if self.batches is not None:
            return self.batches.enter()
        stats.running = stats.in_flight  # all at once: every request in flight is worked on
        stats.peak_running = stats.peak_in_flight
        return object()

    def _leave(self, ticket: object) -> None:
        """Count a request out of flight (answered, or its client gone): its place is free."""
        self.stats.in_flight -= 1
        if self.batches is not None:
            self.batches.leave(ticket)
        else:
            self.stats.running = self.stats.in_flight

    def _too_many(self, reason: str, wait: float, *, status: int = 429) -> Response:
        millis = max(1, math.ceil(wait * 1000))
        # both headers say the same wait (``retry-after`` in seconds, with a fraction), so a
        # client that obeys the longer of the two waits no longer than the server means
        headers = {"retry-after-ms": str(millis), "retry-after": f"{millis / 1000:g}"}
        said = "rate limited" if status == 429 else "overloaded"
        return self._error(status, f"{said}: {reason}", headers)

    async def models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "dev"}],
            }
        )

    async def report(self, request: Request) -> Response:
        return JSONResponse(self.stats.as_json())

    async def chat(self, request: Request) -> Response:
        """A chat completion; a request whose client goes before its answer (seen, or the
        handler cancelled by Hypercorn) is counted a disconnect."""
        self.stats.requests += 1
        key = request.headers.get("idempotency-key")
        if key is not None:
            self.stats.idempotency_keys.append(key)
        answered = False
        try:
            response = await self._chat(request)
            answered = response.status_code != 499
            return response
        finally:
            if not answered:
                self.stats.disconnects += 1

    async def _chat(self, request: Request) -> Response:
        if self.api_key is not None and request.headers.get("authorization") != (
            f"Bearer {self.api_key}"
        ):
            return self._error(401, "invalid API key")
        try:
            body = await request.json()
            prompt = body["messages"][-1]["content"]
            model = body.get("model", self.model)
        except ClientDisconnect:  # gone while it sent the body
            return Response(status_code=499)
        except (ValueError, KeyError, IndexError, TypeError):
            return self._error(400, "expected JSON with a non-empty 'messages' list")
        if not isinstance(prompt, str):
            return self._error(400, "the last message's content must be text")
        replied = _replies(body) if body.get("response_format") is not None else 0
        if replied:  # a re-ask of the conversation's first prompt: that prompt's request
            prompt = _first_prompt(body, prompt)
        if body.get("response_format") is not None and self.structured_outputs is False:
            return self._error(400, "this server does not support the parameter response_format")
        if _asks_planner(body):  # the planner model: answered at once, outside the limits
            prose = body.get("response_format") is not None and (
                self.structured_outputs == "ignored"
            )
            return await self._plan(body["messages"][1]["content"], model, prose=prose)
        # Requests that arrive at one instant are let in or answered 429 in the order of their
        # prompts, not in the order the scheduler happened to run them: each joins its
        # instant's turn, and the first to wake a turn (a fixed instant later) decides them all.
        # On virtual time the same requests get the 429s in every run.
        arrival = trio.current_time()
        turn = self.turns.setdefault(arrival, [])
        mine: list[Response | object] = []
        turn.append((prompt, self.seen[prompt], mine))
        waited = False
        try:
            await trio.sleep(_TURN)
            waited = True
        finally:
            self._decide(arrival, turn)
            if not waited and not isinstance(mine[0], Response):  # let in, then cancelled
                self._leave(mine[0])
        ticket = mine[0]
        if isinstance(ticket, Response):
            return ticket
        gone = False
        try:
            nth = self.seen[prompt]
            self.seen[prompt] += 1
            scripted = (self.script(prompt) if self.script is not None else None) or Script()
            delay = drawn_latency(prompt, seed=self.seed, latency=self.latency)
            if scripted.latency is not None:
                delay = scripted.latency
            if scripted.straggle is not None and nth == 0:  # the tail, met once
                delay = scripted.straggle
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    nonlocal gone
                    while True:
                        message = await request.receive()
                        if message["type"] == "http.disconnect":
                            gone = True
                            nursery.cancel_scope.cancel()
                            return

                nursery.start_soon(watch)
                if "[hang]" in prompt or scripted.hang:
                    await trio.sleep_forever()
                if self.batches is not None:  # its turn in a batch, then its work there
                    await self.batches.work(ticket, delay)
                else:
                    await trio.sleep_until(arrival + delay)  # its latency counts from arrival
                nursery.cancel_scope.cancel()
            if gone:
                return self._answer(499, Response(status_code=499))
        finally:
            self._leave(ticket)  # answered, or its client went: its place is free
        token = request.headers.get("authorization", "")
        if "[500]" in prompt or _unit(self.seed, "error", prompt, nth) < self.error_rate:
            return self._error(500, "internal error (simulated)")
        if scripted.fail or nth < scripted.flaky:
            said = (
                f"failure (simulated) for {token}" if scripted.echo_key else "failure (simulated)"
            )
            return self._error(scripted.status, said, scripted.failure_headers())
        if "[malformed]" in prompt:
            return self._answer(200, PlainTextResponse("{not json", media_type="application/json"))
        if scripted.refusal is not None:
            return self._reply(model, None, refusal=scripted.refusal, body=body)
        text = f"answer to: {prompt}" if scripted.reply is None else scripted.reply
        if replied < scripted.prose and body.get("response_format") is not None:
            text = f"Happy to help with {prompt}! In short, it looks fine to me."  # no JSON
        if scripted.echo_key:
            text = f"{text} (you sent {token})"
        return self._reply(model, text, body=body)

    def _reply(
        self,
        model: str,
        content: str | None,
        *,
        refusal: str | None = None,
        body: dict[str, Any] | None = None,
    ) -> Response:
        """A 200: a chat completion whose message is ``content`` (or a ``refusal``), and its
        ``usage`` counted in words: the request's messages' (``body``), and the reply's, cut
        to the request's ``max_tokens`` words (``finish_reason`` then ``length``)."""
        finish = "stop"
        prompt_tokens = _words(body)
        said = (content or refusal or "").split()
        limit = None if body is None else body.get("max_tokens")
        if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < len(said):
            said = said[:limit]
            content = None if content is None else " ".join(said)
            finish = "length"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if refusal is not None:
            message["refusal"] = refusal
        completion = {
            "id": f"chatcmpl-{self.stats.requests}",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(said),
                "total_tokens": prompt_tokens + len(said),
            },
        }
        return self._answer(200, JSONResponse(completion))

    async def _plan(self, request: str, model: str, *, prose: bool = False) -> Response:
        """The planner model's reply to ``request``: the decision ``planner`` makes, unless
        ``planner_script`` says otherwise. A task holding ``[garbled]`` is answered with text
        that is not JSON, ``[fenced]`` with its JSON in a Markdown code fence, ``[refuse]``
        with a refusal; with ``prose``, in words with no JSON (a model that ignored the
        ``response_format`` it was asked for)."""
        # the planner's wire format, imported where a planner's request comes: with it comes the
        # chat client (openai, pydantic), which a run that never asks a planner never loads
        from ..agents._planner import read_request, reply_text

        scripted = self.planner_script
        nth = self.seen["[planner]"]
        self.seen["[planner]"] += 1
        if scripted.fail or nth < scripted.flaky:
            return self._error(
                scripted.status, "planner failure (simulated)", scripted.failure_headers()
            )
        try:
            task, ledger, fresh = read_request(request)
        except ValueError as error:
            return self._error(400, str(error))
        if scripted.refusal is not None or "[refuse]" in task:
            return self._reply(model, None, refusal=scripted.refusal or "I can't plan that.")
        if "[garbled]" in task:
            return self._reply(model, "{not a plan")
        if prose:
            said = f"Happy to help with {task}! I would look into it step by step, then sum up."
            return self._reply(model, said)
        if ledger.rounds or fresh:
            content = reply_text(await self.planner.next(task, ledger, fresh=fresh))
        else:
            content = reply_text(await self.planner.first(task))
        if "[fenced]" in task:
            content = f"Here is my decision:\n```json\n{content}\n```"
        return self._reply(model, content)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/stats", self.report, methods=["GET"]),
            ]
        )


def _words(body: dict[str, Any] | None) -> int:
    """A request's prompt tokens, as the loopback server counts them: the words of its
    messages' text."""
    if body is None:
        return 0
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(
        len(message["content"].split())
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), str)
    )


def _replies(body: dict[str, Any]) -> int:
    """How many replies of the model a request's conversation holds (its re-asks so far)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def _first_prompt(body: dict[str, Any], last: str) -> str:
    """A conversation's first user message's text (``last`` if it has none as text)."""
    for message in body["messages"]:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else last
    return last


def _asks_planner(body: Any) -> bool:
    """Whether a chat request is a planner's: its system prompt is the planner's."""
    from ..agents._planner import MARK  # see `_plan`

    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or len(messages) < 2:
        return False
    first = messages[0]
    return (
        isinstance(first, dict)
        and first.get("role") == "system"
        and str(first.get("content", "")).startswith(MARK)
        and isinstance(messages[1], dict)
        and isinstance(messages[1].get("content"), str)
    )


class _Bound(Config):
    """Hypercorn's config, serving on a socket bound before it starts (so that a port in use
    is one clear error, and port 0 reports the port it got)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self.accesslog = None
        self.errorlog = None
        self.graceful_timeout = 0.5
        self.keep_alive_timeout = 1.0

    def create_sockets(self) -> Sockets:
        return Sockets([], [self._sock], [])


def _listen(port: int) -> socket.socket:
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int from 0 to 65535, got {type(port).__name__}")
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be from 0 to 65535 (0: any free port), got {port}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as error:
        sock.close()
        raise DevServerError(f"cannot listen on {HOST}:{port}: {error.strerror or error}") from None
    sock.setblocking(False)
    return sock


def _endpoint(
    *,
    seed: int,
    latency: tuple[float, float],
    error_rate: float,
    concurrency: int | None,
    rpm: float | None,
    burst: int | None,
    model: str,
    api_key: str | None,
    script: Scripted | None,
    planner: Planner[str, str] | None = None,
    planner_script: Script | None = None,
    structured_outputs: bool | Literal["ignored"] = True,
    serving: Serving | None = None,
) -> _Endpoint:
    """The endpoint these settings describe, once each is checked."""
    low, high = latency
    if not 0 <= low <= high:
        raise ValueError(f"latency must be a range 0 <= low <= high, got {latency!r}")
    if not 0 <= error_rate <= 1:
        raise ValueError(f"error_rate must be from 0 to 1, got {error_rate!r}")
    if concurrency is not None:
        _validate.count("concurrency", concurrency)
    if rpm is not None:
        _validate.number("rpm", rpm)
    if burst is not None:
        _validate.count("burst", burst)
    if planner_script is not None and not isinstance(planner_script, Script):
        raise TypeError(f"planner_script must be a Script, got {type(planner_script).__name__}")
    if not (structured_outputs is True or structured_outputs is False) and (
        structured_outputs != "ignored"
    ):
        raise ValueError(
            f"structured_outputs must be True, False or 'ignored', got {structured_outputs!r}"
        )
    if serving is not None and not isinstance(serving, Serving):
        raise TypeError(f"serving must be a Serving or None, got {type(serving).__name__}")
    if script is not None and not callable(script):
        raise TypeError(
            f"script must be a callable (prompt -> Script), got {type(script).__name__}"
        )
    return _Endpoint(
        seed=seed,
        latency=(low, high),
        error_rate=error_rate,
        concurrency=concurrency,
        rpm=rpm,
        burst=burst,
        model=model,
        api_key=api_key,
        script=script,
        planner=planner,
        planner_script=planner_script,
        structured_outputs=structured_outputs,
        serving=serving,
    )


def app(
    *,
    seed: int = 0,
    latency: tuple[float, float] = (0.05, 0.2),
    error_rate: float = 0.0,
    concurrency: int | None = None,
    rpm: float | None = None,
    burst: int | None = None,
    model: str = "devserver",
    api_key: str | None = None,
    script: Scripted | None = None,
    planner: Planner[str, str] | None = None,
    planner_script: Script | None = None,
    structured_outputs: bool | Literal["ignored"] = True,
    serving: Serving | None = None,
) -> Starlette:
    """The endpoint [`serve`][trio_supervisor.testing.devserver.serve] serves, as an ASGI app, to be
    run in the process with no socket. Its latencies are trio sleeps, so under a
    ``trio.testing.MockClock`` a run through it takes no real time and is exact.

    ```python
    server = httpx2.ASGITransport(app=app(latency=(1, 1), concurrency=2))
    async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=server) as agent:
        aggregate = await Supervisor(agent, max_workers=2).run(["a", "b"])
    assert trio.current_time() == 1  # on a MockClock: both at once, one second each
    ```

    Its arguments are [`serve`][trio_supervisor.testing.devserver.serve]'s, without the port.

    Returns:
      A Starlette app serving ``/v1/chat/completions``, ``/v1/models`` and ``/stats``.

    Raises:
      ValueError: if a setting is out of its range, as for ``serve``.
    """
    return _endpoint(
        seed=seed,
        latency=latency,
        error_rate=error_rate,
        concurrency=concurrency,
        rpm=rpm,
        burst=burst,
        model=model,
        api_key=api_key,
        script=script,
        planner=planner,
        planner_script=planner_script,
        structured_outputs=structured_outputs,
        serving=serving,
    ).app()


async def serve(
    *,
    port: int = 0,
    seed: int = 0,
    latency: tuple[float, float] = (0.05, 0.2),
    error_rate: float = 0.0,
    concurrency: int | None = None,
    rpm: float | None = None,
    burst: int | None = None,
    model: str = "devserver",
    api_key: str | None = None,
    script: Scripted | None = None,
    planner: Planner[str, str] | None = None,
    planner_script: Script | None = None,
    structured_outputs: bool | Literal["ignored"] = True,
    serving: Serving | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the loopback endpoint on ``127.0.0.1:port`` until cancelled.

    ```pycon
    >>> from functools import partial
    >>> async def main():  # on real time: a real socket, answered at once
    ...     async with trio.open_nursery() as nursery:
    ...         url = await nursery.start(partial(serve, latency=(0, 0)))  # port 0: a free one
    ...         async with ChatAgent("m", base_url=url, api_key="k") as agent:
    ...             said = await agent("hello")
    ...         nursery.cancel_scope.cancel()
    ...     return url.startswith("http://127.0.0.1:"), said
    >>> trio.run(main)
    (True, 'answer to: hello')

    ```

    Use it as ``url = await nursery.start(serve)``: ``url`` is the base URL to give a
    [`ChatAgent`][trio_supervisor.agents.ChatAgent] (``http://127.0.0.1:PORT/v1``).

    Args:
      port: the port; 0 for any free one.
      seed: fixes every prompt's latency and which of its requests fail.
      latency: the range each prompt's latency is drawn from, in seconds.
      error_rate: the share of requests answered 500, in ``[0, 1]``.
      concurrency: how many requests it answers at once; beyond, 429. None: no bound.
      rpm: requests per minute its token bucket allows; beyond, 429. None: no bound.
      burst: the bucket's size (one second's worth of ``rpm`` by default).
      model: the model ``/v1/models`` lists.
      api_key: the bearer token it requires (401 otherwise); None accepts any.
      script: prompt -> the [`Script`][trio_supervisor.testing.devserver.Script] it follows for that
        prompt instead of what the seed draws (None from it: the seed's).
      planner: what decides its replies as a planner model (a
        [`ScriptedPlanner`][trio_supervisor.testing.ScriptedPlanner] with no rules by default).
      planner_script: what it does with a planner's requests, as a
        [`Script`][trio_supervisor.testing.devserver.Script] does with a prompt (its ``fail``,
        ``flaky``, ``status``, waits and ``refusal``): a planner endpoint that is rate-limited,
        down or refusing.
      structured_outputs: whether it takes a request's ``response_format``; False answers a
        request that has one 400, naming the parameter, as a server without structured
        outputs does; ``"ignored"`` answers it in prose with no JSON, as a model that took no
        notice of it.
      serving: how it works through the requests it lets in: each at once (by default), in
        batches, or one at a time, and how many may wait (a
        [`Serving`][trio_supervisor.testing.devserver.Serving]).
      task_status: given by ``nursery.start``; receives the base URL.

    Raises:
      DevServerError: if it cannot listen on the port (in use, or not allowed).
      ValueError: if a setting is out of its range (a port outside 0-65535, an error rate
        outside [0, 1], a latency range that is not ``0 <= low <= high``).
    """
    endpoint = _endpoint(
        seed=seed,
        latency=latency,
        error_rate=error_rate,
        concurrency=concurrency,
        rpm=rpm,
        burst=burst,
        model=model,
        api_key=api_key,
        script=script,
        planner=planner,
        planner_script=planner_script,
        structured_outputs=structured_outputs,
        serving=serving,
    )
    sock = _listen(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/v1"
    async with trio.open_nursery() as nursery:
        await nursery.start(hypercorn_serve, endpoint.app(), _Bound(sock))
        task_status.started(url)


def mimic(
    simulated: SimulatedAgent,
    *,
    reply: Callable[[str, str], str] | None = None,
    prose: Callable[[str], int] | None = None,
) -> Callable[[str], Script]:
    """The ``script`` that makes the server do with each prompt what ``simulated`` does with it
    as a subtask: take its latency (its first request its ``straggle``), always fail (a 500),
    fail its first ``flaky`` requests, or hang, and answer as it answers (``findings on
    <prompt>`` unless told otherwise), or as ``reply`` makes of that: a sub-agent asked for
    JSON, say, which ignores the schema ``prose(prompt)`` times first.

    ```pycon
    >>> script = mimic(SimulatedAgent(0, fail={"reviews"}, latencies={"pricing": 0.5}))
    >>> script("pricing").latency, script("pricing").reply, script("reviews").fail
    (0.5, 'findings on pricing', True)

    ```

    ```pycon
    >>> as_json = mimic(SimulatedAgent(0), reply=lambda prompt, said: f'{{"said": "{said}"}}',
    ...                 prose=lambda prompt: prompt.count("!"))
    >>> as_json("pricing!!").reply, as_json("pricing!!").prose
    ('{"said": "findings on pricing!!"}', 2)

    ```

    Give it to [`app`][trio_supervisor.testing.devserver.app] or
    [`serve`][trio_supervisor.testing.devserver.serve] as ``script=`` (with the agent's latency
    range), or let [`loopback`][trio_supervisor.testing.devserver.loopback] do both.

    Args:
      simulated: the sub-agent to mimic.
      reply: the answer to a prompt from the prompt and what ``simulated`` answers to it; by
        default that answer itself.
      prose: how many of a prompt's requests that ask for JSON are answered in prose before
        its ``reply`` (the [`Script`][trio_supervisor.testing.devserver.Script]'s ``prose``);
        by default none.
    """

    def script(prompt: str) -> Script:
        said = simulated.outputs.get(prompt, f"findings on {prompt}")
        return Script(
            latency=simulated.latency(prompt),
            straggle=simulated.straggle.get(prompt),
            fail=simulated.fails(prompt),
            flaky=simulated.flaky.get(prompt, 0),
            hang=simulated.hangs(prompt),
            reply=said if reply is None else reply(prompt, said),
            prose=0 if prose is None else prose(prompt),
        )

    return script


@dataclass(frozen=True)
class Loopback:
    """Where a client finds the server [`loopback`][trio_supervisor.testing.devserver.loopback]
    serves: the three settings a [`ChatAgent`][trio_supervisor.agents.ChatAgent] or
    [`ChatPlanner`][trio_supervisor.agents.ChatPlanner] needs to reach it.

    ```pycon
    >>> async def main():
    ...     async with loopback(latency=(0, 0)) as server:
    ...         async with ChatAgent("m", base_url=server.base_url, api_key=server.api_key,
    ...                              transport=server.transport) as agent:
    ...             return server.base_url, await agent("hello")
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    ('http://loopback/v1', 'answer to: hello')

    ```
    """

    base_url: str
    """The base URL (``.../v1``)."""
    transport: httpx2.ASGITransport | None
    """The client's transport when served in the process; None when served on a socket."""
    api_key: str = "loopback"
    """The key to send: the server's ``api_key`` setting, or any (it checks none without one, and
    the SDK needs one)."""

    def agent(self, model: str = "devserver", **options: Any) -> ChatAgent[Any]:
        """A [`ChatAgent`][trio_supervisor.agents.ChatAgent] that reaches this server: its
        ``base_url``, ``api_key`` and ``transport`` are the three settings above.

        ```pycon
        >>> async def main():
        ...     async with loopback(latency=(0, 0)) as server:
        ...         async with server.agent(max_connections=2) as agent:
        ...             return await agent("hello")
        >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        'answer to: hello'

        ```

        Args:
          model: the model the requests name.
          options: the agent's own settings (``max_connections``, ``output``, ``max_tokens``...).

        Raises:
          TypeError: if an option is not one of ``ChatAgent``'s, or names a setting given here.
        """
        return ChatAgent(
            model,
            base_url=self.base_url,
            api_key=self.api_key,
            transport=self.transport,
            **options,
        )


@asynccontextmanager
async def loopback(
    simulated: SimulatedAgent | None = None, *, in_process: bool = True, **settings: Any
) -> AsyncIterator[Loopback]:
    """Serve the loopback endpoint for the length of the block, and say where it is.

    ```python
    async with loopback(SimulatedAgent(seed=1), concurrency=2) as server:
        async with ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,
            transport=server.transport,
        ) as agent:
            aggregate = await Supervisor(agent, max_workers=2).run(["a", "b"])
    ```

    Args:
      simulated: the sub-agent the server plays: each prompt gets what it would do with it
        ([`mimic`][trio_supervisor.testing.devserver.mimic]) unless a ``script`` is given (one
        that builds on ``mimic(simulated)``, say, to answer in JSON), and a 429 asks to wait the
        mean of its latency range. None: what the settings say.
      in_process: True serves [`app`][trio_supervisor.testing.devserver.app] in this process
        through ``httpx2.ASGITransport``, with no socket, so on a ``trio.testing.MockClock`` a run
        takes no real time and is exact; False serves it on ``127.0.0.1``, on a free port, with
        [`serve`][trio_supervisor.testing.devserver.serve] (real time only).
      settings: [`serve`][trio_supervisor.testing.devserver.serve]'s, without the port (and,
        with ``simulated``, without ``latency``: it says it).

    Raises:
      TypeError: if ``simulated`` is given with a ``latency`` of its own, if a
        ``port`` is given, or a setting is not one of ``serve``'s (before any serving).
      ValueError: if a setting is out of its range, as for ``serve`` (before any serving).
    """
    if "port" in settings:
        raise TypeError("loopback serves on a free port of its own: it takes no port")
    if simulated is not None:
        if "latency" in settings:
            raise TypeError("loopback takes a simulated agent or its latency, not both")
        latency = (simulated.min_latency, simulated.max_latency)
        settings.update(script=settings.get("script") or mimic(simulated), latency=latency)
    served = app(**settings)  # every setting checked before the block starts
    key = settings.get("api_key") or "loopback"
    if in_process:
        yield Loopback("http://loopback/v1", httpx2.ASGITransport(app=served), key)
        return
    async with trio.open_nursery() as nursery:
        url = await nursery.start(lambda task_status: serve(task_status=task_status, **settings))
        yield Loopback(url, None, key)
        nursery.cancel_scope.cancel()  # the block is over: stop serving


def main(argv: list[str] | None = None) -> int:
    """The command line: serve until interrupted; a setting it cannot use is one line on
    stderr and exit status 2."""
    parser = argparse.ArgumentParser(
        prog="python -m trio_supervisor.testing.devserver", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--port", type=int, default=8000, help="0 for any free port")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--latency", type=float, nargs=2, default=(0.05, 0.2), metavar=("LOW", "HIGH")
    )
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--rpm", type=float, default=None)
    parser.add_argument("--burst", type=int, default=None)
    parser.add_argument("--model", default="devserver")
    parser.add_argument(
        "--serving", choices=("parallel", "batching", "sequential"), default="parallel"
    )
    parser.add_argument("--batch", type=int, default=None, help="with --serving batching")
    parser.add_argument("--queue", type=int, default=None, help="queued requests; beyond, 503")
    args = parser.parse_args(argv)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(
                lambda task_status: serve(
                    port=args.port,
                    seed=args.seed,
                    latency=tuple(args.latency),
                    error_rate=args.error_rate,
                    concurrency=args.concurrency,
                    rpm=args.rpm,
                    burst=args.burst,
                    model=args.model,
                    serving=Serving(args.serving, batch=args.batch, queue=args.queue),
                    task_status=task_status,
                )
            )
            print(f"serving an OpenAI-compatible endpoint on {url} (Ctrl+C to stop)", flush=True)

    refused: list[Exception] = []
    try:
        trio.run(run)
    except* (DevServerError, ValueError, TypeError) as group:
        refused.extend(e for e in group.exceptions if isinstance(e, Exception))
    except* KeyboardInterrupt:
        pass  # stopped by its user: not an error
    for error in refused:
        print(f"devserver: {error}", file=sys.stderr)
    return 2 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
