"""The chat-completions worker and the classification of its failures (``trio_supervisor.agents``).

The SDK's own retries are off (``max_retries=0``): the supervisor is the only retry loop, so
``attempts`` means what it says and a rate limit's wait is obeyed once, by the supervisor. Every
error the worker raises is built here from the status, the headers and the server's message,
outside the ``except`` block that caught the SDK's error: the SDK's exception (which holds the
request, and so its ``Authorization`` header) is neither the cause nor the context of what a
slot keeps, and the API key is never part of a message.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any, Generic, TypedDict, Unpack, cast, overload
from urllib.parse import urlsplit

import trio

try:
    import httpx2
    import openai
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import BaseModel
    from typing_extensions import TypeVar  # a default (PEP 696): a bare ChatAgent is of text
except ImportError as error:  # pragma: no cover - exercised by a test that hides the SDK
    missing = (error.name or "a module").split(".")[0]
    raise ImportError(
        f"trio_supervisor.agents needs the 'agents' extra ({missing} is missing): "
        "pip install 'trio-supervisor[agents]'"
    ) from error

from .. import Usage, _validate, attempt_key, report_usage
from .._spans import ChatCall, chat_spans
from ._output import PROBLEM_CHARS, RETRY, Invalid, Output, cut
from ._sdk import know_platform

T = TypeVar("T", default=str)
M = TypeVar("M", bound=BaseModel)

Messages = Callable[[Any], "list[ChatCompletionMessageParam]"]
"""How a subtask becomes the messages of a chat completion request."""

Send = Callable[["list[ChatCompletionMessageParam]"], Awaitable[str]]
"""How one request of a conversation is sent: its messages -> the reply's text."""

SHOWN_CHARS = 120
"""The most characters of a refused reply an `InvalidReply` shows."""


class AgentError(Exception):
    """A chat endpoint's call failed: every failure a
    [`ChatAgent`][trio_supervisor.agents.ChatAgent] raises is one, classified by its subclass.

    ```pycon
    >>> script = {"down": devserver.Script(fail=True, status=503, retry_after=1)}.get
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=script))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         return await Supervisor(agent, max_workers=1).run(["down"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> error = result.exception
    >>> isinstance(error, AgentError), error.status, error.retry_after
    (True, 503, 1.0)

    ```

    ``status`` is the HTTP status when there was one; ``retry_after`` the wait the server
    asked for before another request, in seconds (its ``Retry-After``), or None. A supervisor
    reads ``retry_after`` on any failure and never retries sooner.
    """

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RateLimited(AgentError):
    """The endpoint answered 429: over its rate or concurrency limit. Retried with
    [`TRANSIENT`][trio_supervisor.agents.TRANSIENT], never sooner than it asked.

    ```pycon
    >>> script = {"busy": devserver.Script(flaky=1, status=429, retry_after=2)}.get
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=script))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         supervisor = Supervisor(agent, max_workers=1, retry=Retry(2, on=TRANSIENT))
    ...         return await supervisor.run(["busy"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> result.status, result.attempts, result.finished >= 2  # the second, 2 s later
    (<Status.OK: 'ok'>, 2, True)

    ```

    ``retry_after`` is the wait it asked for (from ``retry-after-ms`` or ``retry-after``), or
    None when it gave none.
    """

    def __init__(self, message: str, *, retry_after: float | None) -> None:
        super().__init__(message, status=429, retry_after=retry_after)


class TransientError(AgentError):
    """A failure worth retrying: a 5xx, a 408 or 409, any status the server marks
    ``x-should-retry: true``, a refused or dropped connection, a timeout.

    ```pycon
    >>> script = {"down": devserver.Script(fail=True, status=502)}.get
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=script))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         return await Supervisor(agent, max_workers=1).run(["down"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> result.status, isinstance(result.exception, TransientError), result.error
    (<Status.FAILED: 'failed'>, True, 'TransientError: ...502...')

    ```

    A 503 that asks for a wait (``Retry-After``) carries it in ``retry_after``."""


class PermanentError(AgentError):
    """A failure the same request would meet again, so not retried by default: a 4xx other
    than 408, 409 and 429 (a bad request, a wrong key, an unknown model), or any status the
    server marks ``x-should-retry: false``.

    ```pycon
    >>> script = {"bad": devserver.Script(fail=True, status=400)}.get
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=script))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         supervisor = Supervisor(agent, max_workers=1, retry=Retry(3, on=TRANSIENT))
    ...         return await supervisor.run(["bad"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> isinstance(result.exception, PermanentError), result.exception.status, result.attempts
    (True, 400, 1)

    ```
    """


class MalformedReply(AgentError):
    """The endpoint answered 200 with something that is not a chat completion's JSON.

    ```pycon
    >>> script = None  # the loopback server answers a prompt holding [malformed] with no JSON
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=script))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         return await Supervisor(agent, max_workers=1).run(["[malformed] a"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> result.status, isinstance(result.exception, MalformedReply)
    (<Status.FAILED: 'failed'>, True)

    ```
    """


class Refused(AgentError):
    """The model declined: its reply holds a ``refusal`` instead of content.

    ```pycon
    >>> script = {"hack it": devserver.Script(refusal="I can't help with that")}.get
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=script))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via) as agent:
    ...         return await Supervisor(agent, max_workers=1).run(["hack it"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> isinstance(result.exception, Refused), result.exception.refusal
    (True, "I can't help with that")

    ```

    ``refusal`` is the model's own words (the key masked). Not retried by default: the same
    request is likely declined again.
    """

    def __init__(self, refusal: str) -> None:
        super().__init__(f"the model refused: {refusal}")
        self.refusal = refusal


class InvalidReply(AgentError):
    """Every reply to a typed request (a [`ChatAgent`][trio_supervisor.agents.ChatAgent] with
    ``output``) failed validation, the last re-ask included.

    ```pycon
    >>> from pydantic import BaseModel
    >>> class Weather(BaseModel):
    ...     city: str
    >>> def prose(prompt):  # a server that ignores response_format, every time
    ...     return devserver.Script(reply="Sunny, mostly.")
    >>> async def main():
    ...     via = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=prose))
    ...     async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via,
    ...                          output=Output(Weather, retries=1), max_tokens=50) as agent:
    ...         return await Supervisor(agent, max_workers=1).run(["weather?"])
    >>> (result,) = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    >>> result.status, result.attempts
    (<Status.FAILED: 'failed'>, 1)
    >>> print(result.error)
    InvalidReply: 2 replies from m, none valid against the schema 'weather': the reply is not
    JSON: Expecting value: line 1 column 1 (char 0); the last reply: 'Sunny, mostly.'

    ```

    ``problem`` is what was wrong with the last reply (the validation errors, each with its
    place), ``reply`` the last reply's text, cut to ``SHOWN_CHARS``, both masked;
    ``replies`` how many replies were refused. Not retried by default (it is not in
    [`TRANSIENT`][trio_supervisor.agents.TRANSIENT]): its requests were re-asked already;
    give ``retry=Retry(on=(*TRANSIENT, InvalidReply))`` to try the whole attempt again.
    """

    def __init__(self, message: str, *, problem: str, reply: str, replies: int) -> None:
        super().__init__(message)
        self.problem = problem
        self.reply = reply
        self.replies = replies


TRANSIENT: tuple[type[Exception], ...] = (RateLimited, TransientError)
"""The failures worth retrying, for ``Supervisor(..., retry=Retry(on=TRANSIENT))``."""

REQUEST_TIMEOUT = 60.0
"""Seconds one request may take by default, from sending it to the reply's last byte: longer
than a chat completion of a few thousand tokens takes on a live endpoint, and short enough that
an endpoint that accepts a request and never answers fails the attempt (a `TransientError`,
retried) instead of holding its slot, and a run without a ``timeout`` of its own, forever."""


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The wait a response asks for, in seconds, from its headers.

    ```pycon
    >>> parse_retry_after({"retry-after-ms": "1500"})
    1.5
    >>> parse_retry_after({"retry-after": "2", "retry-after-ms": "500"})  # the longer wait
    2.0
    >>> parse_retry_after({"retry-after": "soon"}) is None
    True

    ```

    ``retry-after-ms`` is milliseconds (as OpenAI-compatible servers send); ``retry-after`` is
    seconds or an HTTP date, and a date in the past is a wait of 0. Where both hold a usable
    value, the longer wait is the one obeyed: a client never comes back sooner than either
    header asked.

    Args:
      headers: the response's headers (a case-insensitive mapping, such as httpx's).
      now: the time an HTTP date is measured from; the current UTC time by default.

    Returns:
      Seconds, or None when neither header holds a usable value.
    """
    waits = [
        wait
        for wait in (
            _millis(headers.get("retry-after-ms")),
            _seconds(headers.get("retry-after"), now),
        )
        if wait is not None
    ]
    return max(waits) if waits else None


def _millis(text: str | None) -> float | None:
    """``retry-after-ms``'s wait in seconds, or None."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value / 1000 if math.isfinite(value) and value >= 0 else None


def _seconds(text: str | None, now: datetime | None) -> float | None:
    """``retry-after``'s wait in seconds (a number or an HTTP date), or None."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return value if math.isfinite(value) and value >= 0 else None


_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]+=*")  # RFC 6750's b64token
# a URL's credentials (RFC 3986's userinfo): a user and a password, or a token as the user alone
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:([^\s/?#@:]*):)?([^\s/?#@]+)@")


def mask(text: str, key: str | None = None) -> str:
    """``text`` with ``key``, any ``Bearer ...`` token and any URL's password in it replaced by
    ``***``.

    ```pycon
    >>> mask("could not reach http://ana:s3cret@127.0.0.1:8000/v1, key sk-12345678", "sk-12345678")
    'could not reach http://ana:***@127.0.0.1:8000/v1, key ***'

    ```

    A key of 8 characters or more is masked wherever it appears; a shorter one (a test
    endpoint's ``"k"``) only where it stands as a word of its own, so that ordinary text
    survives. A URL's password (``user:password@``) is masked, its user kept; a URL with a user
    alone (``token@``) has it masked, as some servers take a token there. Every text the agents
    keep from a server's words (an error's message, a reply) goes through it, whatever the server
    echoes, and so does the base URL they show; the course's runner shows ``--endpoint`` through
    it.

    Args:
      text: what the server said, or a URL.
      key: the API key to hide, or None.

    Returns:
      The text, masked.
    """
    if key is not None and len(key) >= 8:  # a real key: wherever it is, inside words too
        text = text.replace(key, "***")
    elif key:  # a short one (a loopback server's "k"): only where it stands alone
        text = re.sub(rf"(?<![\w-]){re.escape(key)}(?![\w-])", "***", text)
    text = _USERINFO.sub(lambda m: f"{m[1]}{'' if m[2] is None else m[2] + ':'}***@", text)
    return _BEARER.sub("Bearer ***", text)


class _Options(TypedDict, total=False):
    """``ChatAgent``'s keywords but ``output`` (for its typed overloads)."""

    base_url: str | None
    api_key: str | None
    system: str | None
    messages: Messages | None
    max_connections: int
    request_timeout: float | None
    transport: httpx2.AsyncBaseTransport | None
    max_tokens: int | None
    price: tuple[float, float] | None


class ChatAgent(Generic[T]):
    """A worker that sends each subtask to an OpenAI-compatible chat endpoint and returns the
    reply's text, or, given ``output``, the reply as a validated, typed value.

    ```python
    server = httpx2.ASGITransport(app=devserver.app(latency=(0, 0)))  # the loopback server
    async with ChatAgent("m", base_url="http://x/v1", api_key="k", transport=server) as agent:
        retry = Retry(attempts=3, on=TRANSIENT)
        aggregate = await Supervisor(agent, max_workers=4, retry=retry).run(["a", "b"])
    assert [r.output for r in aggregate] == ["answer to: a", "answer to: b"]
    ```

    Each call is one ``/v1/chat/completions`` request through ``openai.AsyncOpenAI`` with the
    SDK's retries off (the supervisor is the only retry loop), over a pool of
    ``max_connections`` (give it the supervisor's ``max_workers``). A cancelled attempt closes
    its connection, so the server sees the client go. Make and close the agent inside the
    trio run that uses it (``async with``): its connections belong to that run.

    Failures, for ``retry_on`` ([`TRANSIENT`][trio_supervisor.agents.TRANSIENT] holds the
    retried ones): a 429 [`RateLimited`][trio_supervisor.agents.RateLimited]; a 5xx, 408, 409,
    a connection error or a timeout [`TransientError`][trio_supervisor.agents.TransientError];
    any other 4xx [`PermanentError`][trio_supervisor.agents.PermanentError]; ``x-should-retry``
    overrides the status either way, as in the openai SDK. Whatever is retried carries the
    server's ``Retry-After`` as ``retry_after``. A reply that is not a chat completion is a
    [`MalformedReply`][trio_supervisor.agents.MalformedReply], a model's refusal
    [`Refused`][trio_supervisor.agents.Refused]. The API key (and any ``Bearer`` token) is
    masked in every text kept from the server, whatever it echoes, and is never in ``repr``
    nor an error's chain.

    Given ``output`` (a pydantic model, a JSON schema as a dict, or an
    [`Output`][trio_supervisor.agents.Output] policy), each request asks for structured output
    against its schema, and every reply is validated, whatever the server claims: one that
    does not validate is asked again within the same attempt (the reply and what was wrong
    appended to the conversation), at most ``Output.retries`` times, after which the attempt
    fails with an [`InvalidReply`][trio_supervisor.agents.InvalidReply]. A slot's output is
    the model's instance (the decoded JSON, for a dict).

    In a run given a ``run_id`` (a journaled one, say), each request carries its attempt's
    [`attempt_key`][trio_supervisor.attempt_key] as an ``Idempotency-Key`` header: a request
    a killed run made, sent again by its resume, carries the same key, so a server that keeps
    keys can answer it without doing the work twice.

    Args:
      model: the model to ask.
      base_url: the endpoint's base URL, ending in ``/v1`` (``http://127.0.0.1:8000/v1``);
        None for the SDK's default (``OPENAI_BASE_URL``, or the provider's own).
      api_key: the key sent as a bearer token; None reads ``OPENAI_API_KEY``.
      system: a system prompt sent before each subtask, or None.
      messages: how a subtask becomes the request's messages; by default the system prompt
        (if any) and the subtask, as text, as the user's message.
      max_connections: the size of the connection pool.
      request_timeout: seconds one request may take, from sending it to the reply's last byte
        (a request past it fails as a [`TransientError`][trio_supervisor.agents.TransientError]):
        a minute by default (``REQUEST_TIMEOUT``), so that an endpoint that never answers
        cannot hold a slot forever; None to leave timing to the supervisor's ``timeout``.
      transport: an ``httpx2`` async transport to send requests through instead of the
        network (a fake endpoint in tests); the pool's limits then are the transport's.
      max_tokens: the request's ``max_tokens`` (the most its reply may hold), or None to send
        none. With it, the agent knows each attempt's worst case
        ([`worst_case`][trio_supervisor.agents.ChatAgent.worst_case]), which a
        [`Budget`][trio_supervisor.Budget] reserves.
      price: the cost of one prompt token and of one completion token, or None: what each
        attempt's usage costs, for a budget of cost.
      output: the reply's type: a pydantic ``BaseModel`` subclass, a JSON schema (a dict), or
        an [`Output`][trio_supervisor.agents.Output] (with its ``retries``); None for text.
        It needs ``max_tokens``: an attempt may make ``retries + 1`` requests, and its worst
        case, for a budget, must bound each.

    Each reply's ``usage`` (prompt and completion tokens, priced by ``price``) is reported
    through [`report_usage`][trio_supervisor.report_usage]: a budget settles the attempt with
    it, and a trace keeps it on the attempt's span. An error answer reports no tokens (the
    server generated none); a request cut off before its answer reports nothing, so a budget
    charges it its whole reservation. A re-ask is another request of the same attempt:
    reported as one, and counted in the attempt's worst case, which covers every request it
    may make.

    Raises:
      ValueError: if there is no API key (none given, ``OPENAI_API_KEY`` unset or empty), the
        base URL (given, or ``OPENAI_BASE_URL``) is not an http or https URL with a host, or
        ``output`` is given without ``max_tokens``.
      TypeError: if ``model``, ``api_key``, ``system`` or ``base_url`` is not a str (the last
        three may be None), ``messages`` is not callable, ``transport`` is not an
        ``httpx2.AsyncBaseTransport``, ``max_connections`` is not an int, or ``output`` is
        not a model, a dict or an ``Output``.
    """

    @overload
    def __init__(
        self: ChatAgent[str], model: str, *, output: None = None, **options: Unpack[_Options]
    ) -> None: ...
    @overload
    def __init__(
        self: ChatAgent[M], model: str, *, output: type[M], **options: Unpack[_Options]
    ) -> None: ...
    @overload
    def __init__(
        self: ChatAgent[T], model: str, *, output: Output[T], **options: Unpack[_Options]
    ) -> None: ...
    @overload
    def __init__(
        self: ChatAgent[Any],
        model: str,
        *,
        output: Mapping[str, Any],
        **options: Unpack[_Options],
    ) -> None: ...
    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        system: str | None = None,
        messages: Messages | None = None,
        max_connections: int = 100,
        request_timeout: float | None = REQUEST_TIMEOUT,
        transport: httpx2.AsyncBaseTransport | None = None,
        max_tokens: int | None = None,
        price: tuple[float, float] | None = None,
        output: Output[Any] | type[BaseModel] | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError(f"model must be a non-empty str, got {type(model).__name__}")
        if api_key is not None and not isinstance(api_key, str):  # its value is never shown
            raise TypeError(f"api_key must be a str or None, got {type(api_key).__name__}")
        if system is not None and not isinstance(system, str):
            raise TypeError(f"system must be a str or None, got {type(system).__name__}")
        if messages is not None and not callable(messages):
            raise TypeError(
                "messages must be a callable that makes a subtask's messages, or None, got "
                f"{type(messages).__name__}"
            )
        if transport is not None and not isinstance(transport, httpx2.AsyncBaseTransport):
            raise TypeError(
                f"transport must be an httpx2.AsyncBaseTransport or None, got "
                f"{type(transport).__name__}"
            )
        if base_url is not None:
            _check_url(base_url, "base_url")
        key = os.environ.get("OPENAI_API_KEY") if api_key is None else api_key
        if not key:
            raise ValueError(
                "ChatAgent needs an API key: pass api_key=..., or set OPENAI_API_KEY "
                "(any non-empty value for an endpoint that checks none)"
            )
        self.max_tokens = None if max_tokens is None else _validate.count("max_tokens", max_tokens)
        if output is not None and not isinstance(output, Output):
            output = Output(output)
        if output is not None and self.max_tokens is None:
            raise ValueError(
                "ChatAgent(output=...) needs max_tokens=...: a reply that does not validate is "
                "asked again, so an attempt's worst case must bound each of its requests"
            )
        self.output: Output[T] | None = output
        """The reply's type and its re-asks, or None: the reply's text."""
        if price is not None:
            if not isinstance(price, tuple) or len(price) != 2:
                raise TypeError(
                    "price must be (cost of a prompt token, cost of a completion token) or "
                    f"None, got {type(price).__name__} {price!r}"
                )
            price = (
                _validate.number("price", price[0], strictly=False),
                _validate.number("price", price[1], strictly=False),
            )
        self.price = price
        self.model = model
        self.system = system
        self.max_connections = _validate.count("max_connections", max_connections)
        self.request_timeout = _validate.seconds("request_timeout", request_timeout)
        self._messages = messages
        self._key = key
        limits = httpx2.Limits(
            max_connections=self.max_connections, max_keepalive_connections=self.max_connections
        )
        self._http = httpx2.AsyncClient(limits=limits, transport=transport)
        self._client = openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            max_retries=0,
            timeout=self.request_timeout,
            http_client=self._http,
        )
        if base_url is None:  # the SDK's: OPENAI_BASE_URL, or the provider's own
            _check_url(str(self._client.base_url), "the base URL from OPENAI_BASE_URL")
        self.base_url = mask(str(self._client.base_url))  # shown: its password masked
        know_platform(self._client)

    def messages(self, subtask: Any) -> list[ChatCompletionMessageParam]:
        """The messages sent for ``subtask``.

        Args:
          subtask: the subtask.

        Returns:
          The request's messages.
        """
        if self._messages is not None:
            return self._messages(subtask)
        found: list[ChatCompletionMessageParam] = []
        if self.system is not None:
            found.append({"role": "system", "content": self.system})
        found.append({"role": "user", "content": str(subtask)})
        return found

    def worst_case(self, subtask: Any) -> Usage | None:
        """The most one attempt of ``subtask`` may use, for a budget to reserve: its prompt's
        estimate plus ``max_tokens``, at ``price``; None without ``max_tokens`` (unbounded).

        The estimate counts a token per character of the messages, and 4 per message: a
        token holds at least one character, so the estimate never falls below what a server
        counts (and what it reserves beyond is given back when the attempt settles).

        With ``output``, an attempt may make ``retries + 1`` requests, and it reserves them
        all: as many calls, ``max_tokens`` each, and prompts that grow by two messages a
        re-ask, the refused reply (which the re-ask echoes cut to ``max_tokens`` characters)
        and what was wrong (at most ``RETRY_CHARS``).

        Args:
          subtask: the subtask, made into messages by ``messages``.

        Returns:
          A [`Usage`][trio_supervisor.Usage], or None.
        """
        if self.max_tokens is None:
            return None
        messages = self.messages(subtask)
        prompt = sum(4 + len(str(message.get("content") or "")) for message in messages)
        if self.output is None:
            worst = Usage(input_tokens=prompt, output_tokens=self.max_tokens)
        else:  # retries + 1 requests, the prompt growing at each re-ask: the Output says it
            worst = self.output.worst_case(prompt, self.max_tokens)
        cost = self._cost(worst.input_tokens, worst.output_tokens)
        return Usage(worst.calls, worst.input_tokens, worst.output_tokens, cost)

    def _cost(self, prompt: int, completion: int) -> float:
        if self.price is None:
            return 0.0
        return prompt * self.price[0] + completion * self.price[1]

    async def __call__(self, subtask: Any) -> T:
        """Ask the endpoint to do ``subtask``.

        Args:
          subtask: the subtask, made into messages by ``messages``.

        Returns:
          The text of the reply's first choice; with ``output``, its validated value (see
          [`validated`][trio_supervisor.agents.ChatAgent.validated]).

        Raises:
          RateLimited: on a 429.
          TransientError: on a 5xx, 408 or 409, a connection error or a timeout.
          PermanentError: on any other 4xx.
          MalformedReply: if the reply is not a chat completion with a text message.
          Refused: if the reply is the model's refusal.
          InvalidReply: with ``output``, if no reply validated.
          AgentError: on any other failure the SDK raises (not retried by ``TRANSIENT``).
        """
        if self.output is None:  # a ChatAgent[str]
            return cast(T, await self.complete(self.messages(subtask)))
        return await self.validated(self.messages(subtask))

    async def validated(
        self, messages: list[ChatCompletionMessageParam], *, send: Send | None = None
    ) -> T:
        """The reply to ``messages`` as ``output``'s value: each reply validated, one that
        does not validate asked again (the reply, cut to ``max_tokens`` characters, and what
        was wrong appended to the conversation), at most ``output.retries`` times.

        Args:
          messages: the conversation's first messages.
          send: how each request is sent (its messages -> the reply's text); by default
            `complete`, with ``output``'s ``response_format``.

        Returns:
          A model instance, or (for a JSON schema) the decoded JSON.

        Raises:
          InvalidReply: if no reply validated, naming what was wrong with the last one.
          AgentError: as a call, from a request.
          RuntimeError: if the agent has no ``output``.
        """
        output = self.output
        if output is None or self.max_tokens is None:
            raise RuntimeError("validated() needs an agent made with output=... (and max_tokens)")
        form = output.response_format
        conversation = list(messages)
        text = problem = ""
        for asked in range(1, output.retries + 2):
            if send is None:
                text = await self.complete(conversation, response_format=form)
            else:
                text = self.masked(await send(conversation))
            try:
                return output.parse(text, self.masked)
            except Invalid as invalid:
                problem = cut(self.masked(invalid.problem), PROBLEM_CHARS)
            if asked <= output.retries:
                conversation += [
                    {"role": "assistant", "content": text[: self.max_tokens]},
                    {"role": "user", "content": RETRY.format(problem=problem)},
                ]
        replies = output.retries + 1
        shown = cut(" ".join(text.split()), SHOWN_CHARS)
        raise InvalidReply(
            f"{replies} repl{'y' if replies == 1 else 'ies'} from {self.model}, none valid "
            f"against the schema {output.name!r}: {problem}; the last reply: {shown!r}",
            problem=problem,
            reply=shown,
            replies=replies,
        )

    async def complete(
        self, messages: list[ChatCompletionMessageParam], *, response_format: Any = None
    ) -> str:
        """Send one chat completion request of ``messages`` and return the reply's text.

        Args:
          messages: the request's messages.
          response_format: the request's ``response_format`` (a JSON schema the reply must
            follow), or None to send none.

        Returns:
          The text of the reply's first choice, the key masked.

        Raises:
          RateLimited, TransientError, PermanentError, MalformedReply, Refused: as for a call.
        """
        spans = chat_spans.get()  # set by a run whose supervisor records spans
        if spans is None:
            return await self._complete(messages, response_format, None)
        with spans.chat(self.model, self.base_url) as call:
            return await self._complete(messages, response_format, call)

    async def _complete(
        self,
        messages: list[ChatCompletionMessageParam],
        response_format: Any,
        call: ChatCall | None,
    ) -> str:
        options: dict[str, Any] = {}
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        if response_format is not None:
            options["response_format"] = response_format
        key = attempt_key()
        if key is not None:  # the server can tell this attempt, resumed, from a new one
            options["extra_headers"] = {"Idempotency-Key": str(key)}
        failure: AgentError | None = None
        body = ""
        # the SDK's timeout bounds each wait on the network; this one, the whole request,
        # through whatever transport (one that never answers included)
        timeout = math.inf if self.request_timeout is None else self.request_timeout
        with trio.move_on_after(timeout) as bound:
            try:
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self.model, messages=messages, **options
                )
                body = raw.http_response.text
            except openai.APIStatusError as exc:
                report_usage()  # an error answer: a call, no tokens generated
                failure = self._status_error(exc.status_code, exc.response)
            except openai.APITimeoutError:
                failure = TransientError(f"the request to {self.base_url} timed out")
            except openai.APIConnectionError as exc:
                said = self.masked(_root(exc))
                failure = TransientError(f"could not reach {self.base_url}: {said}")
            except openai.OpenAIError as exc:  # any other the SDK raises: it may hold the request
                said = self.masked(_named(exc))
                failure = AgentError(f"the request to {self.base_url} failed: {said}")
        if bound.cancelled_caught:  # cut off before its answer: it reports nothing
            failure = TransientError(
                f"the request to {self.base_url} timed out after {timeout:g}s (request_timeout)"
            )
        if failure is not None:
            raise failure  # outside the except blocks: no chain back to the SDK's error
        self._report(body)
        if call is not None:
            call.reply(self.masked(body))  # what it records is masked too
        return _reply_text(body, self.masked)

    def _report(self, body: str) -> None:
        """Report what the reply's ``usage`` says it used (a call of no tokens without one)."""
        prompt = completion = 0
        data = _json(body)
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            found = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in found):
                prompt, completion = found  # type: ignore[assignment]
        report_usage(
            input_tokens=prompt, output_tokens=completion, cost=self._cost(prompt, completion)
        )

    def _status_error(self, status: int, response: httpx2.Response) -> AgentError:
        """The error a non-2xx answer raises: its class from the status and ``x-should-retry``
        (as the openai SDK decides whether to retry), its wait from ``Retry-After``."""
        phrase = self.masked(" ".join((response.reason_phrase or _phrase(status)).split()))
        where = f"{status} {phrase} from {self.base_url}".replace("  ", " ")
        if status in (401, 403):  # a server may echo part of the key: say nothing of it
            message = f"{where}: check the API key"
        else:
            said = self.masked(_server_message(response))
            message = f"{where}: {said}" if said else where
        wait = parse_retry_after(response.headers)
        retried = status == 429 or status >= 500 or status in (408, 409)
        told = response.headers.get("x-should-retry")
        if told in ("true", "false"):
            retried = told == "true"
            message = f"{message} (x-should-retry: {told})"
        if status == 429 and retried:
            asked = "no Retry-After" if wait is None else f"Retry-After {wait:g}s"
            return RateLimited(f"{message} ({asked})", retry_after=wait)
        if not retried:  # not asked again: no wait to keep
            return PermanentError(message, status=status)
        if wait is not None:
            message = f"{message} (Retry-After {wait:g}s)"
        return TransientError(message, status=status, retry_after=wait)

    def masked(self, text: str) -> str:
        """``text`` with this agent's key, and any ``Bearer`` token, replaced by ``***`` (see
        `mask`): for any text a caller keeps from what the server said.

        Args:
          text: what the server said.

        Returns:
          The text, masked.
        """
        return mask(text, self._key)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> ChatAgent[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        typed = "" if self.output is None else f", output={self.output!r}"
        return (
            f"ChatAgent(model={self.model!r}, base_url={self.base_url!r}, "
            f"max_connections={self.max_connections}{typed})"
        )


def _check_url(url: object, name: str) -> None:
    """Refuse a base URL that is not an http or https URL with a host, before any request
    (which would fail, and be retried, as a connection error)."""
    if not isinstance(url, str):
        raise TypeError(f"{name} must be a str or None, got {type(url).__name__}")
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname
    except ValueError:  # an unbalanced [ in the host, say
        scheme, host = "", None
    if scheme not in ("http", "https") or not host:
        raise ValueError(
            f"{name} must be an http or https URL with a host, such as "
            f"http://127.0.0.1:8000/v1, got {mask(url)!r}"
        )


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _root(exc: BaseException) -> str:
    """The innermost cause of a connection error, as ``Type: message``."""
    seen = 0
    while exc.__cause__ is not None and seen < 16:
        exc = exc.__cause__
        seen += 1
    return _named(exc)


def _named(exc: BaseException) -> str:
    """``exc`` as ``Type: message``, or its type alone when it has no message."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _server_message(response: httpx2.Response) -> str:
    """What the server said about an error: its JSON ``error.message``, or its text, short."""
    try:
        text = response.text
    except Exception:
        return ""
    data = _json(text)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:199] + "…"


_NOT_JSON = object()


def _json(text: str) -> Any:
    """The JSON value ``text`` holds, or ``_NOT_JSON``."""
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _reply_text(body: str, masked: Callable[[str], str]) -> str:
    """The text of a chat completion's first choice (masked), or a `MalformedReply` or a
    `Refused` saying what is wrong."""
    data = _json(body)
    if data is _NOT_JSON:  # raised here, not in an except block: the JSON error (which holds
        # the whole body, the key a server echoed and all) is not its context
        shown = masked(" ".join(body.split()))[:60]
        raise MalformedReply(f"the reply is not JSON: {shown!r}")
    if not isinstance(data, dict):
        raise MalformedReply(f"the reply is JSON but not an object: {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedReply("the reply has no choices: expected a non-empty 'choices' list")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise MalformedReply("the reply's first choice has no 'message' object")
    content = message.get("content")
    refusal = message.get("refusal")
    if content is None and isinstance(refusal, str):
        raise Refused(masked(refusal))
    if not isinstance(content, str):
        raise MalformedReply(
            f"the reply's message has no text 'content' (got {type(content).__name__})"
        )
    return masked(content)
