"""A typed reply (``ChatAgent(output=...)``), on virtual time, through a fake endpoint that
ignores ``response_format`` as a real server did: it answers prose k times, then valid JSON.
Every reply is validated; one that does not validate is asked again within the attempt, told
what was wrong, at most ``retries`` times; each request is reported and reserved, so a budget
is never overshot; plan order and isolation hold; the key never shows; a journal keeps the
model instance."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from tests.library.secrets_shown import places_holding
from tests.library.virtual_time import run_virtual
from trio_supervisor import Budget, Durable, Journal, Retry, Status, Supervisor
from trio_supervisor.agents import (
    TRANSIENT,
    ChatAgent,
    ChatPlanner,
    InvalidReply,
    Output,
    PlannerReply,
)
from trio_supervisor.agents._chat import SHOWN_CHARS
from trio_supervisor.agents._output import PROBLEM_CHARS, RETRY_CHARS

KEY = "sk-SENTINEL-typed-7d41c0a9"
ESCAPED = "".join(f"\\u{ord(char):04x}" for char in KEY)  # the key, as JSON may spell it


class Weather(BaseModel):
    """The typed reply of these tests (at the module's top level: a journal imports it back)."""

    model_config = ConfigDict(extra="forbid")

    city: str
    celsius: float


def valid(subtask: str) -> str:
    return json.dumps({"city": subtask, "celsius": float(len(subtask))})


class Endpoint(httpx2.AsyncBaseTransport):
    """A server that ignores ``response_format``: a subtask's (its first user message's) first
    ``prose[subtask]`` requests are answered with prose (of ``max_tokens`` words), the later
    ones with ``reply(subtask)`` (valid JSON by default). It reports the most usage a request
    may honestly have: prompt tokens as the agent's estimate counts them (a token a character,
    4 a message), completion tokens ``max_tokens``. It keeps every request's body."""

    def __init__(self, prose: dict[str, int], *, latency: float = 0.0, reply: Any = valid) -> None:
        self.prose = prose
        self.latency = latency
        self.reply = reply
        self.requests: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.tokens = 0
        self.tokens_of: Counter[str] = Counter()  # by subtask

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(await request.aread())
        self.bodies.append(body)
        messages = body["messages"]
        subtask = next(m["content"] for m in messages if m["role"] == "user")
        nth = self.requests[subtask]
        self.requests[subtask] += 1
        await trio.sleep(self.latency)
        bound = body["max_tokens"]
        if nth < self.prose.get(subtask, 0):
            content = " ".join(["Certainly"] * bound)  # as long as it may be, in words
        else:
            content = self.reply(subtask)
        prompt = sum(4 + len(m["content"]) for m in messages)
        self.tokens += prompt + bound
        self.tokens_of[subtask] += prompt + bound
        completion = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": bound},
        }
        return httpx2.Response(200, json=completion)


def typed(endpoint: httpx2.AsyncBaseTransport, **options: Any) -> ChatAgent[Any]:
    options.setdefault("output", Weather)
    options.setdefault("max_tokens", 20)
    return ChatAgent("m", base_url="http://x/v1", api_key=KEY, transport=endpoint, **options)


# -- one slot -----------------------------------------------------------------------------------


async def test_a_typed_request_asks_for_the_schema_and_its_output_is_the_model(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint = Endpoint({})
    async with typed(endpoint) as agent:
        (result,) = await Supervisor(agent, max_workers=1).run(["Oslo"])
    assert result.output == Weather(city="Oslo", celsius=4.0)
    (body,) = endpoint.bodies
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "weather", "schema": Weather.model_json_schema(), "strict": True},
    }
    assert body["max_tokens"] == 20


async def test_prose_is_asked_again_with_the_reply_and_what_was_wrong(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint = Endpoint({"Oslo": 1})
    async with typed(endpoint, system="be brief") as agent:
        assert await agent("Oslo") == Weather(city="Oslo", celsius=4.0)
    first, second = (body["messages"] for body in endpoint.bodies)
    assert first == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "Oslo"},
    ]
    prose = " ".join(["Certainly"] * 20)
    assert second == [
        *first,
        {"role": "assistant", "content": prose[:20]},  # cut to max_tokens characters
        {
            "role": "user",
            "content": "Your reply was not valid against the schema (the reply is not JSON: "
            "Expecting value: line 1 column 1 (char 0)). Reply again with one JSON object only.",
        },
    ]
    assert second[3]["content"]
    assert endpoint.bodies[1]["response_format"]


def odd(subtask: str) -> str:
    return json.dumps({"city": subtask, "celsius": "warm", "wind": 3})


async def test_past_the_bound_the_slot_fails_with_invalid_reply_naming_what_was_wrong(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint = Endpoint({}, reply=odd)
    async with typed(endpoint, output=Output(Weather, retries=1)) as agent:
        supervisor = Supervisor(agent, max_workers=1, retry=Retry(attempts=3, on=TRANSIENT))
        (result,) = await supervisor.run(["Oslo"])
    assert endpoint.requests["Oslo"] == 2
    assert result.attempts == 1
    error = result.exception
    assert isinstance(error, InvalidReply)
    assert error.problem == (
        "celsius: Input should be a valid number, unable to parse string as a number; "
        "wind: Extra inputs are not permitted"
    )
    assert error.replies == 2
    assert error.reply == odd("Oslo")
    assert result.error == (
        f"InvalidReply: 2 replies from m, none valid against the schema 'weather': "
        f"{error.problem}; the last reply: {odd('Oslo')!r}"
    )


async def test_retry_on_invalid_reply_tries_the_whole_attempt_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint = Endpoint({"Oslo": 3})
    async with typed(endpoint, output=Output(Weather, retries=1)) as agent:
        supervisor = Supervisor(agent, max_workers=1, retry=Retry(attempts=2, on=InvalidReply))
        (result,) = await supervisor.run(["Oslo"])
    assert (result.status, result.attempts, endpoint.requests["Oslo"]) == (Status.OK, 2, 4)


async def test_a_long_reply_is_shown_cut_and_a_long_problem_told_cut(
    autojump_clock: trio.testing.MockClock,
) -> None:
    class Many(BaseModel):
        model_config = ConfigDict(extra="forbid")

    wide = json.dumps({f"field_{n}": n for n in range(200)})
    endpoint = Endpoint({}, reply=lambda subtask: wide)
    async with typed(endpoint, output=Output(Many, retries=1), max_tokens=10_000) as agent:
        with pytest.raises(InvalidReply) as caught:
            await agent("x")
    assert len(caught.value.reply) == SHOWN_CHARS
    assert caught.value.reply.endswith("…")
    assert len(caught.value.problem) == PROBLEM_CHARS
    told = endpoint.bodies[1]["messages"][-1]["content"]
    assert len(told) <= RETRY_CHARS


async def test_a_fenced_reply_is_taken(autojump_clock: trio.testing.MockClock) -> None:
    endpoint = Endpoint({}, reply=lambda subtask: f"Here:\n```json\n{valid(subtask)}\n```")
    async with typed(endpoint) as agent:
        assert await agent("Oslo") == Weather(city="Oslo", celsius=4.0)
    assert len(endpoint.bodies) == 1


async def test_a_json_schema_gives_the_decoded_json(autojump_clock: trio.testing.MockClock) -> None:
    schema = {
        "title": "Forecast",
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
        "additionalProperties": False,
    }
    endpoint = Endpoint({"Oslo": 2})
    async with typed(endpoint, output=schema) as agent:
        assert await agent("Oslo") == {"city": "Oslo", "celsius": 4.0}
    assert endpoint.bodies[0]["response_format"]["json_schema"]["name"] == "forecast"
    told = endpoint.bodies[2]["messages"][-1]["content"]
    assert "the reply is not JSON" in told
    endpoint = Endpoint({}, reply=odd)
    async with typed(endpoint, output=Output(schema, retries=0)) as agent:
        with pytest.raises(InvalidReply) as caught:
            await agent("Oslo")
    assert caught.value.problem == (
        "celsius: 'warm' is not of type 'number'; "
        "Additional properties are not allowed ('wind' was unexpected)"
    )


@pytest.mark.parametrize(
    ("options", "kind", "message"),
    [
        ({"output": Weather, "max_tokens": None}, ValueError, "needs max_tokens=..."),
        ({"output": int}, TypeError, "output must be a pydantic BaseModel subclass or a JSON"),
        ({"output": "Weather"}, TypeError, "output must be a pydantic BaseModel subclass"),
        ({"output": {"type": "nope"}}, ValueError, "output is not a valid JSON schema"),
    ],
)
def test_a_bad_output_is_refused_when_the_agent_is_made(
    options: dict[str, Any], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind, match=re.escape(message)):
        typed(Endpoint({}), **options)


@pytest.mark.parametrize(
    ("options", "kind", "message"),
    [
        ({"retries": -1}, ValueError, "retries must be >= 0, got -1"),
        ({"retries": 1.5}, TypeError, "retries must be an int >= 0"),
        ({"name": "a b"}, ValueError, "name must be 1 to 64 letters, digits"),
        ({"name": 3}, TypeError, "name must be a str or None"),
    ],
)
def test_a_bad_output_policy_is_refused(
    options: dict[str, Any], kind: type[Exception], message: str
) -> None:
    with pytest.raises(kind, match=re.escape(message)):
        Output(Weather, **options)


# -- the key ------------------------------------------------------------------------------------


async def test_the_key_never_shows_in_an_invalid_reply_or_a_value(
    autojump_clock: trio.testing.MockClock,
) -> None:
    said = {
        "prose": lambda subtask: f"I was sent Authorization: Bearer {KEY}",
        "escaped field": lambda subtask: f'{{"city": "x", "celsius": 1, "{ESCAPED}": 1}}',
        "escaped value": lambda subtask: f'{{"city": "{ESCAPED}", "celsius": "{ESCAPED}"}}',
    }
    for reply in said.values():
        endpoint = Endpoint({}, reply=reply)
        async with typed(endpoint, output=Output(Weather, retries=1)) as agent:
            with pytest.raises(InvalidReply) as caught:
                await agent("Oslo")
        assert places_holding(caught.value, KEY) == []
        told = json.dumps(endpoint.bodies[-1]["messages"])  # what a re-ask sent back
        assert KEY not in told
    endpoint = Endpoint({}, reply=lambda subtask: f'{{"city": "{ESCAPED}", "celsius": 2}}')
    async with typed(endpoint) as agent:
        assert await agent("Oslo") == Weather(city="***", celsius=2)


# -- laws: many slots, budgets ------------------------------------------------------------------

CITIES = [f"city{n}" for n in range(6)]


async def typed_run(
    prose: list[int], retries: int, max_workers: int, budget: Budget | None, max_tokens: int
) -> tuple[Any, Endpoint, list[Any]]:
    endpoint = Endpoint(dict(zip(CITIES, prose, strict=False)), latency=0.25)
    plan = CITIES[: len(prose)]
    async with typed(
        endpoint, output=Output(Weather, retries=retries), max_tokens=max_tokens
    ) as agent:
        meters = [] if budget is None else [budget]
        aggregate = await Supervisor(agent, max_workers=max_workers, meters=meters).run(plan)
    return aggregate, endpoint, [agent.worst_case(city) for city in plan]


@settings(max_examples=60, deadline=None)
@given(
    prose=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    retries=st.integers(0, 3),
    max_workers=st.integers(1, 4),
    limit=st.one_of(
        st.none(),
        st.tuples(st.just("calls"), st.integers(0, 16)),
        st.tuples(st.just("tokens"), st.integers(0, 30_000)),
    ),
    max_tokens=st.integers(1, 400),
)
def test_k_prose_replies_then_json_is_ok_after_k_plus_1_requests_iff_k_is_within_the_bound(
    prose: list[int],
    retries: int,
    max_workers: int,
    limit: tuple[str, int] | None,
    max_tokens: int,
) -> None:
    budget = None
    if limit is not None:
        kind, amount = limit
        budget = Budget(calls=amount) if kind == "calls" else Budget(tokens=amount)
    aggregate, endpoint, worst = run_virtual(
        typed_run, prose, retries, max_workers, budget, max_tokens
    )
    plan = CITIES[: len(prose)]
    assert [result.subtask for result in aggregate] == plan  # plan order
    for city, k, result, most in zip(plan, prose, aggregate, worst, strict=True):
        asked = endpoint.requests[city]
        assert asked <= most.calls  # each attempt within its worst case, whatever the budget
        assert endpoint.tokens_of[city] <= most.tokens
        if result.status is Status.OVER_BUDGET:  # only where a budget ran out: nothing sent
            assert budget is not None
            assert asked == 0
        elif k <= retries:  # each slot by its own replies alone: isolation
            assert result.status is Status.OK
            assert asked == k + 1
            assert result.output == Weather(city=city, celsius=len(city))
        else:
            assert result.status is Status.FAILED
            assert asked == retries + 1
            assert isinstance(result.exception, InvalidReply)
            assert result.exception.replies == retries + 1
    if budget is not None:  # every request charged, and never more than the limit
        assert budget.spent.calls == endpoint.requests.total()
        assert budget.spent.tokens == endpoint.tokens
        assert budget.spent.calls <= (budget.calls if budget.calls is not None else 1 << 30)
        assert budget.spent.tokens <= (budget.tokens if budget.tokens is not None else 1 << 30)
        assert budget.outstanding == 0


async def test_an_attempt_reserves_every_request_it_may_make(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A reservation of one request would let three attempts of two requests each start under
    a budget of four calls, and spend six: each reserves its re-ask too, so the third waits for
    what the first two give back, then does not fit, and is over budget."""
    budget = Budget(calls=4)
    endpoint = Endpoint(dict.fromkeys(CITIES[:3], 1), latency=1)
    async with typed(endpoint, output=Output(Weather, retries=1)) as agent:
        assert agent.worst_case("x") is not None
        assert agent.worst_case("x").calls == 2  # type: ignore[union-attr]
        aggregate = await Supervisor(agent, max_workers=3, meters=[budget]).run(CITIES[:3])
    assert [result.status for result in aggregate] == [Status.OK, Status.OK, Status.OVER_BUDGET]
    assert budget.spent.calls == endpoint.requests.total() == 4


async def test_the_worst_case_bounds_the_tokens_of_every_request_an_attempt_makes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One attempt that uses every re-ask, on a server that reports the most it honestly may:
    its tokens stay within its worst case, whose calls are all its requests."""
    for retries, max_tokens in itertools.product(range(4), (1, 20, 400)):
        endpoint = Endpoint({"Oslo": 10})  # prose of max_tokens words: more characters
        budget = Budget(tokens=1 << 30)
        output = Output(Weather, retries=retries)
        async with typed(endpoint, output=output, max_tokens=max_tokens) as agent:
            worst = agent.worst_case("Oslo")
            await Supervisor(agent, max_workers=1, meters=[budget]).run(["Oslo"])
        assert worst is not None
        assert budget.spent.calls == worst.calls == retries + 1
        assert budget.spent.tokens == endpoint.tokens <= worst.tokens


async def test_an_outputs_worst_case_is_what_an_attempt_of_one_message_may_spend(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``Output.worst_case`` from a prompt and ``max_tokens`` alone, with no agent: the one the
    agent reserves for a prompt of one message, and it bounds an attempt that uses every re-ask."""
    for retries, max_tokens in itertools.product(range(4), (1, 20, 400)):
        output = Output(Weather, retries=retries)
        worst = output.worst_case(len("Oslo") + 4, max_tokens=max_tokens)
        endpoint = Endpoint({"Oslo": 10})
        budget = Budget(tokens=1 << 30)
        async with typed(endpoint, output=output, max_tokens=max_tokens) as agent:
            assert agent.worst_case("Oslo") == worst
            await Supervisor(agent, max_workers=1, meters=[budget]).run(["Oslo"])
        assert (worst.calls, worst.output_tokens) == (retries + 1, (retries + 1) * max_tokens)
        assert budget.spent.calls == worst.calls
        assert budget.spent.tokens <= worst.tokens


def test_an_outputs_worst_case_refuses_a_prompt_or_bound_it_cannot_count() -> None:
    output = Output(Weather)
    with pytest.raises(ValueError, match=r"^prompt must be >= 0, got -1$"):
        output.worst_case(-1, max_tokens=10)
    with pytest.raises(ValueError, match=r"^max_tokens must be >= 1, got 0$"):
        output.worst_case(10, max_tokens=0)


# -- the planner: the same path -----------------------------------------------------------------


def decision(subtask: str) -> str:
    return PlannerReply(done=True, answer="all found").model_dump_json()


async def test_a_planner_whose_server_ignores_response_format_is_asked_again_bounded(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A 200 of prose (no 400 to say response_format was ignored): asked again with what was
    wrong, each request of a bounded max_tokens."""
    asked = json.dumps({"task": "t", "fresh": False, "rounds": []})  # the planner's request
    endpoint = Endpoint({asked: 2}, reply=decision)
    async with ChatPlanner("m", base_url="http://x/v1", api_key=KEY, transport=endpoint) as p:
        assert (await p.first("t")).answer == "all found"  # type: ignore[union-attr]
    assert [body["max_tokens"] for body in endpoint.bodies] == [512, 512, 512]
    assert all("response_format" in body for body in endpoint.bodies)
    assert [len(body["messages"]) for body in endpoint.bodies] == [2, 4, 6]


# -- the journal --------------------------------------------------------------------------------


def test_a_journal_keeps_a_model_output_and_gives_it_back_as_the_model(tmp_path: Path) -> None:
    endpoint = Endpoint({})

    async def main() -> tuple[Any, Any, Any]:
        with Journal(tmp_path / "runs.db", writer="inline") as journal:
            async with typed(endpoint) as agent:
                supervisor = Supervisor(agent, max_workers=2)
                first = await supervisor.run(["Oslo", "Rome"], durable=Durable("r", journal))
                again = await supervisor.run(["Oslo", "Rome"], durable=Durable("r", journal))
            return first, again, journal.results("r")

    first, again, kept = run_virtual(main)
    assert endpoint.requests.total() == 2  # the resumed run read both from the journal
    for results in (again, kept):
        assert [result.output for result in results] == [result.output for result in first]
        assert isinstance(results[0].output, Weather)
    assert kept[1].output == Weather(city="Rome", celsius=4.0)


def test_a_model_the_journal_cannot_import_back_is_refused_naming_the_rule(
    tmp_path: Path,
) -> None:
    class Local(BaseModel):
        n: int

    async def worker(subtask: int) -> Local:
        return Local(n=subtask)

    async def main() -> None:
        with Journal(tmp_path / "runs.db", writer="inline") as journal:
            await Supervisor(worker, max_workers=1).run([1], durable=Durable("r", journal))

    with pytest.raises(TypeError, match="define the model at a module's top level"):
        run_virtual(main)


def test_the_json_codec_round_trips_models_wherever_they_are() -> None:
    from trio_supervisor._journal import JsonCodec

    codec = JsonCodec()
    value = {"found": [Weather(city="Oslo", celsius=4.5)], "$model": "not a model's mark alone"}
    assert codec.decode(codec.encode(value)) == value
    assert codec.decode(codec.escaped(value)) == value
    assert isinstance(codec.decode(codec.encode(value))["found"][0], Weather)
    with pytest.raises(ValueError, match="does not import here"):
        codec.decode('{"$model": "tests.library.nowhere:Gone", "fields": {}}')
