"""The chat-completions worker, through the real openai SDK over a fake transport, on virtual
time: how each answer is classified, Retry-After obeyed, the key never shown."""

from __future__ import annotations

import importlib
import json
import logging
import re
import sys
import traceback
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx2
import openai
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.secrets_shown import places_holding
from tests.library.virtual_time import run_virtual
from trio_supervisor import Adaptive, Backoff, Durable, RateLimit, Retry, Status, Supervisor, Trace
from trio_supervisor.agents import (
    TRANSIENT,
    AgentError,
    ChatAgent,
    ChatPlanner,
    MalformedReply,
    PermanentError,
    RateLimited,
    Refused,
    TransientError,
    parse_retry_after,
)
from trio_supervisor.agents._chat import REQUEST_TIMEOUT, mask
from trio_supervisor.testing import devserver

KEY = "sk-SENTINEL-3f9c2a7e51d04b8c"
URL = "http://127.0.0.1:9/v1"
Handler = Callable[[httpx2.Request], Coroutine[None, None, httpx2.Response]]


def completion(text: str) -> httpx2.Response:
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
    }
    return httpx2.Response(200, json=body)


def prompt_of(request: httpx2.Request) -> str:
    content: str = json.loads(request.content)["messages"][-1]["content"]
    return content


def agent(handler: Handler, **options: Any) -> ChatAgent:
    return ChatAgent(
        "m", base_url=URL, api_key=KEY, transport=httpx2.MockTransport(handler), **options
    )


async def echo(request: httpx2.Request) -> httpx2.Response:
    return completion(f"answer to {prompt_of(request)}")


# -- the worker ---------------------------------------------------------------------------------


async def test_a_subtask_becomes_a_chat_request_and_the_reply_text_its_output(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[httpx2.Request] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        await trio.sleep(0.5)
        return await echo(request)

    async with agent(handler, system="be brief") as worker:
        aggregate = await Supervisor(worker, max_workers=2).run(["a", "b"])
    assert [r.output for r in aggregate] == ["answer to a", "answer to b"]
    first = min(seen, key=prompt_of)  # trio may send "b" first
    assert first.url == "http://127.0.0.1:9/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(first.content)["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "a"},
    ]
    assert json.loads(first.content)["model"] == "m"


async def test_a_messages_callable_makes_the_messages() -> None:
    bodies: list[object] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content)["messages"])
        return await echo(request)

    async with agent(
        handler, messages=lambda n: [{"role": "user", "content": f"square {n}"}]
    ) as worker:
        assert await worker(7) == "answer to square 7"
    assert bodies == [[{"role": "user", "content": "square 7"}]]


def test_the_key_defaults_to_openai_api_key_and_is_required(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert ChatAgent("m", base_url=URL)._key == KEY
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(
        ValueError,
        match=r"^ChatAgent needs an API key: pass api_key=\.\.\., or set OPENAI_API_KEY ",
    ):
        ChatAgent("m", base_url=URL)


BAD_ARGUMENTS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"api_key": 123}, TypeError, "api_key must be a str or None, got int"),
    ({"system": 123}, TypeError, "system must be a str or None, got int"),
    ({"base_url": 123}, TypeError, "base_url must be a str or None, got int"),
    (
        {"messages": "be brief"},
        TypeError,
        "messages must be a callable that makes a subtask's messages, or None, got str",
    ),
    (
        {"transport": "http"},
        TypeError,
        "transport must be an httpx2.AsyncBaseTransport or None, got str",
    ),
    *(
        (
            {"base_url": url},
            ValueError,
            "base_url must be an http or https URL with a host, such as "
            f"http://127.0.0.1:8000/v1, got {url!r}",
        )
        for url in (
            "notaurl",
            "ftp://127.0.0.1/v1",
            "http:///v1",
            "127.0.0.1:8000/v1",
            "http://[::1/v1",
        )
    ),
]


@pytest.mark.parametrize(
    ("made", "options", "error", "message"),
    [
        (made, *bad)
        for made in (ChatAgent, ChatPlanner)
        for bad in BAD_ARGUMENTS
        if made is ChatAgent or not set(bad[0]) & {"system", "messages"}  # a planner's own
    ],
)
def test_bad_arguments_are_refused_when_an_agent_or_planner_is_made(
    made: Callable[..., object], options: dict[str, Any], error: type[Exception], message: str
) -> None:
    arguments = {"base_url": URL, "api_key": KEY, **options}
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        made("m", **arguments)


def test_a_bad_base_url_from_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "notaurl")
    with pytest.raises(ValueError, match=r"^the base URL from OPENAI_BASE_URL must be an http "):
        ChatAgent("m", api_key=KEY)


def test_importing_the_worker_without_openai_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("trio_supervisor.agents", "trio_supervisor.agents._chat"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(
        ImportError,
        match=r"^trio_supervisor\.agents needs the 'agents' extra \(openai is missing\): "
        r"pip install 'trio-supervisor\[agents\]'$",
    ):
        importlib.import_module("trio_supervisor.agents")


def test_the_core_does_not_import_the_sdk() -> None:
    code = "import sys, trio_supervisor; print('openai' in sys.modules, 'httpx2' in sys.modules)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- classification -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "error"),
    [
        (
            429,
            RateLimited,
            "429 Too Many Requests from http://127.0.0.1:9/v1/: slow down (Retry-After 1.5s)",
        ),
        (
            500,
            TransientError,
            "500 Internal Server Error from http://127.0.0.1:9/v1/: slow down (Retry-After 1.5s)",
        ),
        (
            503,
            TransientError,
            "503 Service Unavailable from http://127.0.0.1:9/v1/: slow down (Retry-After 1.5s)",
        ),
        (
            408,
            TransientError,
            "408 Request Timeout from http://127.0.0.1:9/v1/: slow down (Retry-After 1.5s)",
        ),
        (400, PermanentError, "400 Bad Request from http://127.0.0.1:9/v1/: slow down"),
        (404, PermanentError, "404 Not Found from http://127.0.0.1:9/v1/: slow down"),
        (401, PermanentError, "401 Unauthorized from http://127.0.0.1:9/v1/: check the API key"),
    ],
)
async def test_each_status_raises_its_class(status: int, kind: type[Exception], error: str) -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(
            status, headers={"retry-after-ms": "1500"}, json={"error": {"message": "slow down"}}
        )

    async with agent(handler) as worker:
        with pytest.raises(kind, match=r"^" + error.replace("(", r"\(").replace(")", r"\)") + "$"):
            await worker("a")


async def test_a_429_carries_the_servers_wait() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, headers={"retry-after": "7"})

    async with agent(handler) as worker:
        with pytest.raises(RateLimited) as caught:
            await worker("a")
    assert caught.value.retry_after == 7.0
    assert caught.value.status == 429


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (
            httpx2.ConnectError("[Errno 111] Connection refused"),
            "could not reach http://127.0.0.1:9/v1/: ConnectError: [Errno 111] Connection refused",
        ),
        (httpx2.ReadTimeout("timed out"), "the request to http://127.0.0.1:9/v1/ timed out"),
    ],
)
async def test_connection_errors_and_timeouts_are_transient(failure: Exception, error: str) -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        raise failure

    async with agent(handler) as worker:
        with pytest.raises(TransientError, match=r"^" + error.replace("[", r"\[") + "$"):
            await worker("a")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "the reply is not JSON: '{not json'"),
        (b"[1, 2]", "the reply is JSON but not an object: list"),
        (b'{"choices": []}', "the reply has no choices: expected a non-empty 'choices' list"),
        (b'{"choices": [{"index": 0}]}', "the reply's first choice has no 'message' object"),
        (
            b'{"choices": [{"message": {"content": null}}]}',
            "the reply's message has no text 'content' (got NoneType)",
        ),
    ],
)
async def test_a_malformed_reply_says_what_was_wrong(body: bytes, error: str) -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=body, headers={"content-type": "application/json"})

    async with agent(handler) as worker:
        aggregate = await Supervisor(
            worker, max_workers=1, retry=Retry(attempts=3, on=TRANSIENT)
        ).run(["a"])
    (result,) = aggregate.results
    assert result.error == f"MalformedReply: {error}"
    assert result.attempts == 1  # not retried: the same request would get the same reply
    assert isinstance(result.exception, MalformedReply)


async def test_the_sdk_never_retries_on_its_own() -> None:
    calls = 0

    async def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal calls
        calls += 1
        return httpx2.Response(503)

    async with agent(handler) as worker:
        aggregate = await Supervisor(
            worker, max_workers=1, retry=Retry(attempts=2, backoff=Backoff(0, 0))
        ).run(["a"])
    assert calls == 2 == aggregate.results[0].attempts


def test_retry_after_is_read_from_milliseconds_seconds_or_a_date() -> None:
    now = datetime(2026, 12, 1, 7, 0, 0, tzinfo=UTC)
    headers = httpx2.Headers
    # both given: the longer wait is obeyed, whichever header holds it
    assert parse_retry_after(headers({"retry-after-ms": "250", "retry-after": "9"})) == 9.0
    assert parse_retry_after(headers({"retry-after-ms": "12000", "retry-after": "3"})) == 12.0
    assert parse_retry_after(headers({"retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(headers({"Retry-After": "1.5"})) == 1.5
    date = "Tue, 01 Dec 2026 07:00:12 GMT"
    assert parse_retry_after(headers({"retry-after": date}), now) == 12.0
    assert parse_retry_after(headers({"retry-after": "Tue, 01 Dec 2026 06:00:00 GMT"}), now) == 0
    assert parse_retry_after(headers({"retry-after-ms": "soon", "retry-after": "2"})) == 2.0
    assert parse_retry_after(headers({"retry-after": "-4"})) is None
    assert parse_retry_after(headers({"retry-after": "whenever"})) is None
    assert parse_retry_after(headers({})) is None


# -- Retry-After through the SDK, on virtual time -----------------------------------------------


@settings(max_examples=30)
@given(
    waits=st.lists(st.sampled_from([0.001, 0.2, 1.0, 2.5, 10.0]), min_size=1, max_size=3),
    header=st.sampled_from(["retry-after-ms", "retry-after"]),
    seed=st.integers(0, 1000),
)
def test_a_429s_retry_after_is_never_undercut(waits: list[float], header: str, seed: int) -> None:
    sent: dict[str, list[float]] = {}

    async def handler(request: httpx2.Request) -> httpx2.Response:
        times = sent.setdefault(prompt_of(request), [])
        times.append(trio.current_time())
        if len(times) <= len(waits):
            wait = waits[len(times) - 1]
            value = str(wait * 1000) if header == "retry-after-ms" else str(wait)
            return httpx2.Response(429, headers={header: value})
        return await echo(request)

    async def main() -> None:
        async with agent(handler) as worker:
            sup = Supervisor(
                worker,
                max_workers=4,
                retry=Retry(
                    attempts=len(waits) + 1, on=TRANSIENT, backoff=Backoff(0.5, 0.5), seed=seed
                ),
            )
            aggregate = await sup.run([f"q{i}" for i in range(6)])
        assert all(r.ok for r in aggregate)

    run_virtual(main)
    for times in sent.values():
        for n, wait in enumerate(waits):
            assert times[n + 1] - times[n] >= wait - 1e-9


async def test_a_retry_after_past_the_deadline_fails_the_slot_now(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, headers={"retry-after": "120"})

    t0 = trio.current_time()
    async with agent(handler) as worker:
        sup = Supervisor(worker, max_workers=1, retry=Retry(attempts=5, on=TRANSIENT))
        aggregate = await sup.run(["a"], deadline=60)
    (result,) = aggregate.results
    assert result.status is Status.FAILED
    assert result.finished == t0
    assert result.error == (
        "TooSlowError: RateLimited: 429 Too Many Requests from http://127.0.0.1:9/v1/ "
        "(Retry-After 120s); the server asked to wait 120s before a retry, but the run's "
        "deadline is 60s away: the slot ends now instead of sleeping past it"
    )


@settings(max_examples=20)
@given(
    rate=st.sampled_from([1.0, 5.0, 20.0]),
    burst=st.integers(1, 5),
    n=st.integers(1, 40),
    failing=st.integers(0, 3),
)
def test_the_rate_bound_holds_for_requests_sent(
    rate: float, burst: int, n: int, failing: int
) -> None:
    """Every request the endpoint sees, retries included, is under the RateLimit."""
    sent: list[float] = []
    tries: dict[str, int] = {}

    async def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(trio.current_time())
        prompt = prompt_of(request)
        tries[prompt] = tries.get(prompt, 0) + 1
        if tries[prompt] <= failing:
            return httpx2.Response(500)
        await trio.sleep(0.05)
        return await echo(request)

    async def main() -> None:
        async with agent(handler) as worker:
            sup = Supervisor(
                worker,
                max_workers=16,
                retry=Retry(attempts=failing + 1, on=TRANSIENT, backoff=Backoff(0, 0)),
                meters=[RateLimit(rate, burst=burst)],
            )
            aggregate = await sup.run([f"q{i}" for i in range(n)])
        assert all(r.ok for r in aggregate)

    run_virtual(main)
    assert len(sent) == n * (failing + 1)
    for i in range(len(sent)):
        for j in range(i + 1, len(sent)):
            assert j - i + 1 <= burst + rate * (sent[j] - sent[i]) + 1e-6


async def test_adaptive_concurrency_follows_a_fake_endpoints_capacity(
    autojump_clock: trio.testing.MockClock,
) -> None:
    in_flight = 0
    peak_ok = 0
    rejected = 0

    async def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal in_flight, peak_ok, rejected
        if in_flight >= 6:
            rejected += 1
            return httpx2.Response(429, headers={"retry-after-ms": "100"})
        in_flight += 1
        peak_ok = max(peak_ok, in_flight)
        try:
            await trio.sleep(0.1)
        finally:
            in_flight -= 1
        return await echo(request)

    adaptive = Adaptive(64, start=64)
    async with agent(handler) as worker:
        sup = Supervisor(
            worker, max_workers=64, retry=Retry(attempts=50, on=TRANSIENT), meters=[adaptive]
        )
        aggregate = await sup.run([f"q{i}" for i in range(600)])
    assert all(r.ok for r in aggregate)
    assert 1 <= adaptive.limit <= 12
    assert rejected < 600 * 0.2


# -- secrets ------------------------------------------------------------------------------------


def text_of(exc: BaseException) -> Iterator[str]:
    yield str(exc)
    yield repr(exc)
    yield "".join(traceback.format_exception(exc))


async def test_the_key_never_shows(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def handler(request: httpx2.Request) -> httpx2.Response:
        prompt = prompt_of(request)
        said = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
        if prompt == "401":
            return httpx2.Response(401, json=said)
        if prompt == "429":
            return httpx2.Response(429, json=said, headers={"retry-after": "1"})
        if prompt == "500":
            return httpx2.Response(500, json=said)
        if prompt == "down":
            raise httpx2.ConnectError(f"refused for {KEY}")
        return await echo(request)

    async with agent(handler) as worker:
        sup = Supervisor(worker, max_workers=4, retry=Retry(attempts=2, on=TRANSIENT))
        trace = Trace()
        aggregate = await sup.run(["401", "429", "500", "down", "ok"], trace=trace)
        shown = [
            repr(worker),
            str(worker),
            repr(sup),
            repr(aggregate),
            str(aggregate),
            repr(trace.slots),
        ]
        for result in aggregate:
            shown += [repr(result), str(result.error)]
            if result.exception is not None:
                shown += list(text_of(result.exception))
        for code in ("401", "429", "500", "down"):
            with pytest.raises(Exception) as caught:  # noqa: PT011  # any of the classes
                await worker(code)
            shown += list(text_of(caught.value))
            assert caught.value.__cause__ is None
            assert caught.value.__context__ is None
    shown += [record.getMessage() for record in caplog.records]
    shown += [repr(record.__dict__) for record in caplog.records]
    assert [r.status for r in aggregate][:4] == [Status.FAILED] * 4
    assert aggregate.results[4].ok
    assert caplog.records  # the SDK did log, at debug level
    leaks = [text for text in shown if KEY in text]
    assert leaks == []


def echoing(status: int, body: bytes = b"", **headers: str) -> httpx2.Response:
    """An answer whose reason phrase (and body) repeat the key and a bearer token."""
    phrase = f"Nope {KEY} (Authorization: Bearer {KEY}x)".encode()
    return httpx2.Response(
        status, content=body, headers=headers, extensions={"reason_phrase": phrase}
    )


async def test_the_key_never_shows_whatever_the_server_echoes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A reason phrase, an error body, a 200 that is not JSON, a reply's text and a refusal
    each repeat the key (and a bearer token): none of it reaches an error, an output, the
    trace or its JSON."""
    said = json.dumps({"error": {"message": f"bad: {KEY}, Bearer abc.def"}}).encode()
    answers = {
        "401": echoing(401, said),
        "500": echoing(500, said),
        "503": echoing(503, said, **{"retry-after": "1"}),
        "not json": echoing(200, f"<html>{KEY} Bearer {KEY}</html>".encode()),
        "text": completion(f"your key is {KEY}; Bearer tok-123"),
        "refusal": httpx2.Response(
            200,
            json={"choices": [{"message": {"content": None, "refusal": f"no, {KEY}"}}]},
        ),
    }

    async def handler(request: httpx2.Request) -> httpx2.Response:
        return answers[prompt_of(request)]

    async with agent(handler) as worker:
        trace = Trace()
        sup = Supervisor(worker, max_workers=2, retry=Retry(attempts=2, on=TRANSIENT))
        aggregate = await sup.run(list(answers), trace=trace)
    shown = [repr(aggregate), json.dumps(trace.to_dict(), default=str), repr(trace.slots)]
    for result in aggregate:
        shown += [str(result.error), str(result.output)]
        if result.exception is not None:
            shown += list(text_of(result.exception))
    assert [text for text in shown if KEY in text or "tok-123" in text or "abc.def" in text] == []
    assert [r.ok for r in aggregate] == [False, False, False, False, True, False]
    assert aggregate.results[4].output == "your key is ***; Bearer ***"
    assert aggregate.results[5].error == "Refused: the model refused: no, ***"


def raising(failure: Callable[[httpx2.Request], Exception]) -> Handler:
    """A handler whose transport fails with ``failure(request)``: it carries the request, and
    so its ``Authorization`` header."""

    async def handler(request: httpx2.Request) -> httpx2.Response:
        raise failure(request)

    return handler


def answering(response: httpx2.Response) -> Handler:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return response

    return handler


ECHOED = f"Authorization: Bearer {KEY}"
FAILURES: dict[str, tuple[Handler, type[Exception]]] = {
    "a 200 that is not JSON": (
        answering(echoing(200, f"<p>{ECHOED}</p>".encode())),
        MalformedReply,
    ),
    "a 200 of JSON that is not an object": (
        answering(httpx2.Response(200, json=[ECHOED])),
        MalformedReply,
    ),
    "a 200 without choices": (
        answering(httpx2.Response(200, json={"echo": ECHOED})),
        MalformedReply,
    ),
    "a 200 without text": (
        answering(httpx2.Response(200, json={"choices": [{"message": {"content": [ECHOED]}}]})),
        MalformedReply,
    ),
    "a refusal": (
        answering(httpx2.Response(200, json={"choices": [{"message": {"refusal": ECHOED}}]})),
        Refused,
    ),
    "a 400 of JSON": (
        answering(httpx2.Response(400, json={"error": {"message": ECHOED}})),
        PermanentError,
    ),
    "a 400 of text": (answering(echoing(400, ECHOED.encode())), PermanentError),
    "a 401": (answering(echoing(401, ECHOED.encode())), PermanentError),
    "a 404 of HTML": (answering(echoing(404, f"<h1>{ECHOED}</h1>".encode())), PermanentError),
    "a 429": (
        answering(echoing(429, ECHOED.encode(), **{"retry-after": "1"})),
        RateLimited,
    ),
    "a 500": (answering(echoing(500, ECHOED.encode())), TransientError),
    "a refused connection": (
        raising(lambda request: httpx2.ConnectError(f"refused {ECHOED}", request=request)),
        TransientError,
    ),
    "a timeout": (
        raising(lambda request: httpx2.ReadTimeout(f"timed out {ECHOED}", request=request)),
        TransientError,
    ),
    "an SDK error of another kind": (
        raising(lambda request: openai.APIError(f"odd: {ECHOED}", request, body={"k": KEY})),
        AgentError,
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_no_error_holds_the_key_anywhere_in_its_chain(failure: str) -> None:
    """Whatever the server answers (or the transport raises, the request and its headers in
    hand), the error the agent raises holds the key nowhere: not in its message, its
    attributes, its cause or context (nor theirs), nor its traceback."""
    handler, kind = FAILURES[failure]
    async with agent(handler) as worker:
        with pytest.raises(kind) as caught:
            await worker("a")
    assert places_holding(caught.value, KEY) == []


def test_a_short_key_is_masked_where_it_stands_alone_and_ordinary_text_survives() -> None:
    assert mask("subtask k, key=k; Bearer abc", "k") == "subtask ***, key=***; Bearer ***"
    assert mask(f"x{KEY}y", KEY) == "x***y"  # a real key: inside a longer word too


async def test_a_password_in_the_base_url_never_shows(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The endpoint's URL may carry a password (``user:secret@``): the agent shows its URL (in
    ``repr``, an error's message, a span) with it masked, as it masks the key."""

    async def handler(request: httpx2.Request) -> httpx2.Response:
        if prompt_of(request) == "500":
            return httpx2.Response(500)
        raise httpx2.ConnectError("refused")

    url = "http://ana:s3cret-pass@127.0.0.1:9/v1"
    transport = httpx2.MockTransport(handler)
    async with ChatAgent("m", base_url=url, api_key=KEY, transport=transport) as worker:
        aggregate = await Supervisor(worker, max_workers=2).run(["500", "down"])
        shown = [repr(worker), worker.base_url, *(str(r.error) for r in aggregate)]
    assert [text for text in shown if "s3cret" in text] == []
    assert "http://ana:***@127.0.0.1:9/v1" in repr(worker)
    assert (
        mask("a token as the user: https://tok123@host/v1")
        == "a token as the user: https://***@host/v1"
    )


# -- Retry-After and x-should-retry from the loopback server, in process ------------------------


def loopback(**options: Any) -> ChatAgent:
    transport = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), **options))
    return ChatAgent("m", base_url="http://devserver/v1", api_key=KEY, transport=transport)


async def starts_of(script: dict[str, Any], attempts: int = 3) -> tuple[list[float], Any]:
    """When each attempt of the one subtask ``"q"`` started, and its result."""
    starts: list[float] = []
    async with loopback(script={"q": devserver.Script(**script)}.get) as worker:

        async def timed(subtask: str) -> str:
            starts.append(trio.current_time())
            return await worker(subtask)

        sup = Supervisor(timed, max_workers=1, retry=Retry(attempts=attempts, on=TRANSIENT))
        (result,) = (await sup.run(["q"])).results
    return [t - starts[0] for t in starts], result


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry_after": 1.0}, 1.0),  # a gateway's admission control
        ({"retry_after_ms": 2500.0}, 2.5),
        ({"retry_after": 3.0, "retry_after_ms": 500.0}, 3.0),  # both: the longer
        ({"retry_after": 0.25, "retry_after_ms": 4000.0}, 4.0),
    ],
)
async def test_a_503s_retry_after_is_obeyed_the_longer_header_winning(
    autojump_clock: trio.testing.MockClock, headers: dict[str, float], wait: float
) -> None:
    starts, result = await starts_of({"flaky": 1, "status": 503, **headers})
    assert result.ok
    assert len(starts) == 2
    assert starts[1] >= wait
    assert starts[1] <= wait + 0.01  # the wait asked, not a backoff of its own on top
    assert result.attempts == 2


async def test_a_503s_retry_after_is_carried_by_the_error() -> None:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(503, headers={"retry-after": "1"})

    async with agent(handler) as worker:
        with pytest.raises(TransientError) as caught:
            await worker("a")
    assert caught.value.retry_after == 1.0
    assert str(caught.value) == (
        "503 Service Unavailable from http://127.0.0.1:9/v1/ (Retry-After 1s)"
    )


@pytest.mark.parametrize(
    ("status", "should_retry", "attempts", "kind"),
    [
        (500, False, 1, PermanentError),  # the server says: do not ask again
        (429, False, 1, PermanentError),
        (400, True, 3, TransientError),  # the server says: ask again, though a 400
        (404, None, 1, PermanentError),
        (503, None, 3, TransientError),
    ],
)
async def test_x_should_retry_decides_whether_a_failure_is_retried(
    autojump_clock: trio.testing.MockClock,
    status: int,
    should_retry: bool | None,
    attempts: int,
    kind: type[Exception],
) -> None:
    starts, result = await starts_of({"fail": True, "status": status, "should_retry": should_retry})
    assert result.attempts == len(starts) == attempts
    assert isinstance(result.exception, kind)
    assert getattr(result.exception, "status", None) == status
    if should_retry is not None:
        told = "true" if should_retry else "false"
        assert f"(x-should-retry: {told})" in str(result.exception)


async def test_a_loopback_server_that_echoes_the_key_never_shows_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    script = {
        "fails": devserver.Script(fail=True, status=500, echo_key=True),
        "answers": devserver.Script(echo_key=True),
        "refuses": devserver.Script(refusal="I will not"),
    }
    async with loopback(script=script.get) as worker:
        aggregate = await Supervisor(worker, max_workers=3).run(list(script))
    assert [r.error or r.output for r in aggregate] == [
        "TransientError: 500 Internal Server Error from http://devserver/v1/: "
        "failure (simulated) for Bearer ***",
        "answer to: answers (you sent Bearer ***)",
        "Refused: the model refused: I will not",
    ]
    assert isinstance(aggregate.results[2].exception, Refused)
    assert aggregate.results[2].exception.refusal == "I will not"


async def test_an_attempt_sends_its_key_as_an_idempotency_key_header(
    autojump_clock: trio.testing.MockClock,
) -> None:
    transport = httpx2.ASGITransport(
        app=devserver.app(latency=(0, 0), script={"b": devserver.Script(flaky=1, status=503)}.get)
    )
    async with ChatAgent(
        "m", base_url="http://devserver/v1", api_key=KEY, transport=transport
    ) as worker:
        supervisor = Supervisor(worker, max_workers=1, retry=Retry(attempts=2, on=TRANSIENT))
        await supervisor.run(["a", "b"], durable=Durable("order-7"))
        await supervisor.run(["c"])  # no run_id: no key to send
    async with httpx2.AsyncClient(transport=transport, base_url="http://devserver") as client:
        stats = (await client.get("/stats")).json()
    assert stats["requests"] == 4
    assert stats["idempotency_keys"] == ["order-7/0/0/1", "order-7/0/1/1", "order-7/0/1/2"]


# -- an endpoint that never answers -------------------------------------------------------------


async def silent(request: httpx2.Request) -> httpx2.Response:
    """An endpoint that takes the request and never answers it."""
    await trio.sleep_forever()
    raise AssertionError("never")


async def test_a_request_an_endpoint_never_answers_fails_after_the_default_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """By default a request is bounded (``REQUEST_TIMEOUT``, a minute), whatever the transport:
    the attempt fails as transient, and a supervisor with no timeout of its own still ends."""
    assert REQUEST_TIMEOUT == 60.0
    with trio.fail_after(10 * REQUEST_TIMEOUT):  # the run would hang without the bound
        async with agent(silent) as worker:
            begin = trio.current_time()
            with pytest.raises(TransientError) as caught:
                await worker("a")
            assert trio.current_time() - begin == REQUEST_TIMEOUT
            sup = Supervisor(worker, max_workers=1, retry=Retry(attempts=2, on=TRANSIENT))
            (result,) = (await sup.run(["a"])).results
        async with ChatPlanner(
            "m", base_url=URL, api_key=KEY, transport=httpx2.MockTransport(silent)
        ) as planner:
            with pytest.raises(TransientError):
                await planner.first("t")
    assert str(caught.value) == f"the request to {URL}/ timed out after 60s (request_timeout)"
    assert (result.status, result.attempts) == (Status.FAILED, 2)
    assert caught.value.__context__ is None


async def test_a_loopback_server_that_accepts_and_never_answers_is_cut_at_the_timeout() -> None:
    """Over a real socket, on real time (bounded): the server on 127.0.0.1 accepts the
    connection and reads the request, and never answers."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]

    async def hold(stream: trio.SocketStream) -> None:
        async with stream:
            while await stream.receive_some():  # take what it sends, answer nothing
                pass

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, hold, listeners)
            base = f"http://127.0.0.1:{port}/v1"
            async with ChatAgent("m", base_url=base, api_key=KEY, request_timeout=0.5) as worker:
                with pytest.raises(TransientError, match=r"^the request to .* timed out"):
                    await worker("a")
            nursery.cancel_scope.cancel()
