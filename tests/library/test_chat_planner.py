"""The LLM planner (``ChatPlanner``): a re-planning run whose decisions come from a chat model,
here the loopback server playing one. End to end over a real socket (seconds, on real time,
nothing asserted about how long), and on virtual time through the server's app in-process: a
reply that does not parse is asked again, told what was wrong, then counted as a stall."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

from tests.library.secrets_shown import places_holding
from trio_supervisor import (
    Batch,
    Done,
    Entry,
    Ledger,
    ReplanLimits,
    Round,
    Status,
    SubResult,
    Supervisor,
)
from trio_supervisor.agents import (
    PLANNER_SYSTEM,
    ChatPlanner,
    MalformedReply,
    PermanentError,
    PlannerReply,
    RateLimited,
    UnusableReply,
    recorded_replies,
)
from trio_supervisor.testing import ScriptedPlanner, SimulatedAgent
from trio_supervisor.testing.devserver import app, serve

KEY = "sk-SENTINEL-planner-5e1f"
TASK = "competitor pricing; customer reviews; inventory"
FOUND = "Acme undercuts our list price by 10%"
RULES = ScriptedPlanner(
    follow_ups={"Acme": ["Acme's discounts"]},
    reroutes={"reviews": ["customer reviews, from app stores"]},
)


def agent(scale: float = 1.0) -> SimulatedAgent:
    return SimulatedAgent(
        0,
        fail={"customer reviews"},
        outputs={"competitor pricing": FOUND},
        min_latency=0.01 * scale,
        max_latency=0.05 * scale,
    )


async def test_the_llm_planner_replans_through_the_real_loopback_server(
    nursery: trio.Nursery,
) -> None:
    url = await nursery.start(lambda task_status: serve(planner=RULES, task_status=task_status))
    supervisor = Supervisor(agent(), max_workers=4)
    async with ChatPlanner("planner", base_url=url, api_key=KEY) as planner:
        answer = await supervisor.replan(TASK, planner)
    scripted = await supervisor.replan(TASK, RULES)
    # the model (the server, playing it) decided what the scripted planner decides
    assert [[entry.subtask for entry in done.entries] for done in answer.ledger.rounds] == [
        ["competitor pricing", "customer reviews", "inventory"],
        ["Acme's discounts", "customer reviews, from app stores"],
    ]
    assert [done.note for done in answer.ledger.rounds] == [
        done.note for done in scripted.ledger.rounds
    ]
    assert answer.ledger.rounds[1].entries[1].replaces == (1, 1)
    assert (answer.text, answer.degraded, answer.ended_by) == (scripted.text, False, None)
    async with httpx2.AsyncClient() as client:
        seen = (await client.get(url.removesuffix("/v1") + "/stats")).json()
    assert seen["requests"] == seen["ok"] == 3  # first batch, second batch, done
    assert KEY not in repr(planner)


def in_process() -> httpx2.ASGITransport:
    """The loopback server's app in this process, playing the planner model by ``RULES``."""
    return httpx2.ASGITransport(app=app(latency=(0, 0), model="m", planner=RULES))


async def test_a_reply_that_never_parses_is_asked_again_then_a_recorded_stall(
    autojump_clock: trio.testing.MockClock,
) -> None:
    transport = in_process()
    async with ChatPlanner(
        "m", base_url="http://x/v1", api_key=KEY, transport=transport
    ) as planner:
        supervisor = Supervisor(agent(), max_workers=2)
        answer = await supervisor.replan(
            "a [garbled] task",
            planner,
            limits=ReplanLimits(max_rounds=5, max_stalls=0, max_resets=0),
        )
    failed = (
        "the planner raised UnusableReply: 3 replies from m, none valid against the schema "
        "'planner_reply': the reply is not JSON: Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1); the last reply: '{not a plan'"
    )
    [only] = answer.ledger.rounds
    assert (only.error, only.entries) == (failed, ())
    assert answer.ended_by == "max_stalls"
    assert answer.reason == (
        "more than max_stalls (0) stalled rounds, after max_resets (0) fresh plans; "
        f"the planner's last failure: {failed}"
    )
    assert answer.text == f"(degraded: {answer.reason})"


async def test_recorded_replies_keeps_every_reply_of_its_block_as_the_model_wrote_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The refused replies too (three garbled ones a decision), and nothing outside."""

    async def ask(task: str) -> None:
        async with ChatPlanner(
            "m", base_url="http://x/v1", api_key=KEY, transport=in_process()
        ) as p:
            limits = ReplanLimits(max_rounds=5, max_stalls=0, max_resets=0)
            await Supervisor(agent(), max_workers=2).replan(task, p, limits=limits)

    with recorded_replies() as replies:
        await ask("a [garbled] task")
    garbled = list(replies)
    assert set(garbled) == {"{not a plan"}
    assert len(garbled) % 3 == 0  # three a decision
    await ask(TASK)  # outside the block: kept nowhere
    assert replies == garbled
    with recorded_replies() as replies:
        await ask(TASK)
    decided = [PlannerReply.model_validate_json(reply) for reply in replies]
    assert [reply.done for reply in decided] == [False] * (len(decided) - 1) + [True]


class Recorder(httpx2.AsyncBaseTransport):
    """A fake endpoint that answers the planner's requests with ``replies``, in turn, and keeps
    what each request asked."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.asked: list[list[dict[str, Any]]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(await request.aread())
        self.asked.append(body["messages"])
        content = self.replies[len(self.asked) - 1]
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
        }
        return httpx2.Response(200, json=completion)


async def test_a_reply_against_the_schema_is_told_what_was_wrong_and_the_next_one_counts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    good = PlannerReply(done=True, answer="all found", note="enough").model_dump_json()
    recorder = Recorder(['{"done": false, "batch": [{"task": "x"}]}', good])
    async with ChatPlanner("m", base_url="http://x/v1", api_key=KEY, transport=recorder) as planner:
        decision = await planner.first("t")
    assert decision == Done(answer="all found", note="enough")
    first, second = recorder.asked
    assert first[0] == {"role": "system", "content": PLANNER_SYSTEM}
    assert json.loads(first[1]["content"]) == {"task": "t", "fresh": False, "rounds": []}
    assert second[:2] == first
    assert second[2:] == [  # the reply refused, then what was wrong with it
        {"role": "assistant", "content": '{"done": false, "batch": [{"task": "x"}]}'},
        {
            "role": "user",
            "content": "Your reply was not valid against the schema (batch.0.subtask: Field "
            "required; batch.0.task: Extra inputs are not permitted). Reply again with one JSON "
            "object only.",
        },
    ]


async def test_the_request_carries_the_ledger_and_the_reply_becomes_a_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reply = PlannerReply.model_validate(
        {
            "done": False,
            "note": "rerouted",
            "batch": [{"subtask": "reviews elsewhere", "replaces": [1, 0]}, {"subtask": "more"}],
            "progress": False,
        }
    )
    recorder = Recorder([reply.model_dump_json()])
    ledger: Ledger[str, str] = Ledger("t")
    failed: SubResult[str, str] = SubResult("reviews", error="E: down", status=Status.FAILED)
    ledger.record(Round(1, "first", (Entry(1, 0, failed),), 0.0, 0.0, 0.0))
    async with ChatPlanner("m", base_url="http://x/v1", api_key=KEY, transport=recorder) as planner:
        decision = await planner.next("t", ledger, fresh=True)
    assert decision == Batch(
        ["reviews elsewhere", "more"], note="rerouted", replaces={0: (1, 0)}, progress=False
    )
    assert json.loads(recorder.asked[0][1]["content"]) == {
        "task": "t",
        "fresh": True,
        "rounds": [
            {
                "round": 1,
                "note": "first",
                "entries": [
                    {
                        "index": 0,
                        "subtask": "reviews",
                        "status": "failed",
                        "output": None,
                        "error": "E: down",
                        "replaces": None,
                    }
                ],
            }
        ],
    }


def test_attempts_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match=re.escape("attempts must be >= 1, got 0")):
        ChatPlanner("m", api_key=KEY, attempts=0)


async def test_the_loopback_planner_plays_the_scripted_rules_from_the_ledger_it_is_sent(
    autojump_clock: trio.testing.MockClock,
) -> None:
    transport = in_process()
    async with ChatPlanner(
        "m", base_url="http://x/v1", api_key=KEY, transport=transport
    ) as planner:
        for max_rounds in (1, 3):
            supervisor = Supervisor(agent(), max_workers=3)
            llm = await supervisor.replan(TASK, planner, limits=ReplanLimits(max_rounds=max_rounds))
            scripted = await supervisor.replan(
                TASK, RULES, limits=ReplanLimits(max_rounds=max_rounds)
            )
            assert (llm.text, llm.ended_by) == (scripted.text, scripted.ended_by)


# -- Retry-After, structured outputs, fences, refusals ------------------------------------------


def loopback(**options: Any) -> httpx2.ASGITransport:
    return httpx2.ASGITransport(app=app(latency=(0, 0), model="m", planner=RULES, **options))


def planner_of(transport: httpx2.AsyncBaseTransport, **options: Any) -> ChatPlanner:
    return ChatPlanner("m", base_url="http://x/v1", api_key=KEY, transport=transport, **options)


class Limited(Recorder):
    """A planner endpoint that answers its first ``refusals`` requests 429, asking ``wait``
    seconds, then as a ``Recorder``; it notes when each request came."""

    def __init__(self, refusals: int, wait: str, replies: list[str]) -> None:
        super().__init__(replies)
        self.refusals = refusals
        self.wait = wait
        self.times: list[float] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.times.append(trio.current_time())
        if len(self.times) <= self.refusals:
            return httpx2.Response(429, headers={"retry-after": self.wait})
        self.asked.append([])
        return await super().handle_async_request(request)


async def test_a_rate_limited_planner_waits_what_the_server_asked_and_costs_no_round(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """429 with Retry-After 3, twice: the planner sleeps 3 s each time and asks again; the run
    is the one a planner never refused gives (it spent its rounds in 0.2 s before)."""
    done = PlannerReply(done=True, answer="all found").model_dump_json()
    endpoint = Limited(2, "3", [done, done])
    begin = trio.current_time()
    async with planner_of(endpoint) as planner:
        answer = await Supervisor(agent(), max_workers=2).replan(
            TASK, planner, limits=ReplanLimits(max_rounds=2)
        )
    assert [t - begin for t in endpoint.times] == [0, 3, 6]
    assert (answer.text, answer.degraded, answer.ledger.rounds) == ("all found", False, ())


async def test_a_planner_waits_at_most_max_waits_times_and_never_past_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    begin = trio.current_time()
    endpoint = Limited(1000, "3", [])
    async with planner_of(endpoint, max_waits=2) as planner:
        answer = await Supervisor(agent(), max_workers=2).replan(
            TASK, planner, limits=ReplanLimits(max_rounds=2, max_stalls=5)
        )
    # each decision: one request and two waits of 3 s, then it fails and costs its round
    assert [t - begin for t in endpoint.times] == [0, 3, 6, 6, 9, 12, 12, 15, 18]
    assert answer.ended_by == "max_rounds"
    assert answer.ledger.rounds[0].error == (
        "the planner raised RateLimited: 429 Too Many Requests from http://x/v1/ (Retry-After 3s)"
    )
    endpoint = Limited(1000, "3", [])
    begin = trio.current_time()
    async with planner_of(endpoint) as planner:
        answer = await Supervisor(agent(), max_workers=2).replan(TASK, planner, deadline=7)
    assert trio.current_time() - begin < 7  # it failed rather than sleep into the deadline
    times = [t - begin for t in endpoint.times]
    assert times[:3] == [0, 3, 6]
    assert set(times[2:]) == {6}  # then no more waits: each would end past the deadline
    assert answer.ended_by in ("max_rounds", "max_stalls")  # its budgets, not a sleep


async def test_the_planner_asks_for_structured_outputs_with_its_schema(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[dict[str, Any]] = []

    class Keeping(Recorder):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            seen.append(json.loads(await request.aread()))
            request.stream = httpx2.ByteStream(json.dumps(seen[-1]).encode())
            return await super().handle_async_request(request)

    async with planner_of(Keeping([PlannerReply(done=True).model_dump_json()])) as planner:
        assert await planner.first("t") == Done()
    form = seen[0]["response_format"]
    assert form["type"] == "json_schema"
    assert form["json_schema"]["strict"] is True
    assert form["json_schema"]["name"] == "planner_reply"
    schema = form["json_schema"]["schema"]
    assert set(schema["required"]) == set(PlannerReply.model_fields)  # strict: all required
    assert schema["additionalProperties"] is False


async def test_a_server_that_refuses_response_format_is_asked_in_plain_json_from_then_on(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app_options: dict[str, Any] = {"structured_outputs": False}
    transport = loopback(**app_options)
    async with planner_of(transport) as planner:
        supervisor = Supervisor(agent(), max_workers=3)
        llm = await supervisor.replan(TASK, planner)
        assert planner.structured is False
        async with httpx2.AsyncClient(transport=transport, base_url="http://x") as client:
            seen = (await client.get("/stats")).json()
    scripted = await supervisor.replan(TASK, RULES)
    assert (llm.text, llm.degraded) == (scripted.text, False)
    assert seen["statuses"] == {"200": 3, "400": 1}  # one refusal, then never asked with it


async def test_a_fenced_reply_is_accepted(autojump_clock: trio.testing.MockClock) -> None:
    good = PlannerReply(done=True, answer="all found").model_dump_json()
    fenced = Recorder([f"Sure! Here it is:\n```json\n{good}\n```\nAnything else?"])
    async with planner_of(fenced) as planner:
        assert await planner.first("t") == Done(answer="all found")
    assert len(fenced.asked) == 1  # taken at once, not asked again
    async with planner_of(loopback()) as planner:
        supervisor = Supervisor(agent(), max_workers=3)
        llm = await supervisor.replan(f"{TASK} [fenced]", planner)
    assert [done.error for done in llm.ledger.rounds] == [None, None]
    assert [len(done.entries) for done in llm.ledger.rounds] == [3, 2]
    assert llm.degraded is False


async def test_a_refusal_fails_the_decision_as_a_refusal_keeping_its_words(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with planner_of(loopback()) as planner:
        supervisor = Supervisor(agent(), max_workers=3)
        llm = await supervisor.replan(
            "a [refuse] task", planner, limits=ReplanLimits(max_stalls=0, max_resets=0)
        )
    [only] = llm.ledger.rounds
    assert only.error == "the planner raised Refused: the model refused: I can't plan that."


async def test_the_loopback_planner_endpoint_can_be_rate_limited(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from trio_supervisor.testing.devserver import Script

    begin = trio.current_time()
    limited = Script(flaky=2, status=429, retry_after=3.0)
    async with planner_of(loopback(planner_script=limited)) as planner:
        supervisor = Supervisor(agent(), max_workers=3)
        llm = await supervisor.replan(TASK, planner)
    scripted = await supervisor.replan(TASK, RULES)
    assert trio.current_time() - begin >= 6
    assert (llm.text, llm.degraded) == (scripted.text, False)
    assert [done.error for done in llm.ledger.rounds] == [None, None]


# -- the key ------------------------------------------------------------------------------------


class Answering(httpx2.AsyncBaseTransport):
    """A planner endpoint that gives ``answers`` in turn (the last one from then on)."""

    def __init__(self, *answers: httpx2.Response) -> None:
        self.answers = list(answers)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def replying(content: str) -> httpx2.Response:
    """A chat completion whose text is ``content``."""
    return httpx2.Response(200, json={"choices": [{"message": {"content": content}}]})


ECHOED = f"Authorization: Bearer {KEY}"
ESCAPED = "".join(f"\\u{ord(char):04x}" for char in KEY)  # the key, as JSON may spell it
FAILURES: dict[str, tuple[list[httpx2.Response], type[Exception]]] = {
    "replies with an unknown field named by the key": (
        [replying(f'{{"done": true, "{KEY}": 1}}')],
        UnusableReply,
    ),
    "replies with the key spelled in JSON escapes": (
        [replying(f'{{"done": true, "{ESCAPED}": 1}}')],
        UnusableReply,
    ),
    "a reply that is not JSON": ([httpx2.Response(200, text=ECHOED)], MalformedReply),
    "a 400 echoing the key": (
        [httpx2.Response(400, json={"error": {"message": ECHOED}})],
        PermanentError,
    ),
    "a 400 refusing response_format, then text": (
        [
            httpx2.Response(400, json={"error": {"message": f"response_format: {ECHOED}"}}),
            httpx2.Response(200, text=ECHOED),
        ],
        MalformedReply,
    ),
    "429s past max_waits": (
        [httpx2.Response(429, text=ECHOED, headers={"retry-after": "1"})],
        RateLimited,
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_no_error_of_the_planner_holds_the_key_anywhere_in_its_chain(
    autojump_clock: trio.testing.MockClock, failure: str
) -> None:
    answers, kind = FAILURES[failure]
    async with planner_of(Answering(*answers), max_waits=1) as planner:
        with pytest.raises(kind) as caught:
            await planner.first("t")
    assert places_holding(caught.value, KEY) == []


async def test_a_decision_spelling_the_key_in_json_escapes_holds_it_masked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    said = replying(
        f'{{"done": false, "note": "{ESCAPED}", "batch": [{{"subtask": "use {ESCAPED}"}}]}}'
    )
    async with planner_of(Answering(said)) as planner:
        assert await planner.first("t") == Batch(["use ***"], note="***")
