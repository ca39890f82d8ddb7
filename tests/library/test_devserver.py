"""End to end: a ChatAgent against the real loopback server, over real sockets (so on real
time, but bounded: a few seconds in all, and nothing asserted about how long anything took)."""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import socket
import subprocess
import sys
from typing import Any

import httpx2
import pytest
import trio
import trio.testing

from trio_supervisor import Retry, Status, Supervisor, Trace
from trio_supervisor.agents import TRANSIENT, ChatAgent, PermanentError
from trio_supervisor.testing import SimulatedAgent
from trio_supervisor.testing.devserver import (
    SLOWDOWN,
    DevServerError,
    Script,
    Serving,
    app,
    loopback,
    mimic,
    serve,
)

KEY = "sk-SENTINEL-e2e-77c1d0b4a9"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


async def start(nursery: trio.Nursery, **options: Any) -> str:
    url: str = await nursery.start(lambda task_status: serve(task_status=task_status, **options))
    return url


async def stats(url: str) -> dict[str, Any]:
    async with httpx2.AsyncClient() as client:
        answer = await client.get(url.removesuffix("/v1") + "/stats")
    found: dict[str, Any] = answer.json()
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_run_through_the_loopback_server_gets_every_answer(nursery: trio.Nursery) -> None:
    url = await start(nursery, concurrency=4, latency=(0.002, 0.01), seed=3)
    plan = [f"question {i}" for i in range(40)]
    async with ChatAgent("devserver", base_url=url, api_key=KEY, max_connections=8) as agent:
        sup = Supervisor(agent, max_workers=8, retry=Retry(attempts=50, on=TRANSIENT, seed=1))
        aggregate = await sup.run(plan)
    assert [r.output for r in aggregate] == [f"answer to: {q}" for q in plan]
    seen = await stats(url)
    assert seen["peak_in_flight"] <= 4
    assert seen["ok"] == 40  # each subtask answered once
    assert seen["requests"] == seen["ok"] + seen["rate_limited"]
    assert seen["rate_limited"] == sum(r.attempts - 1 for r in aggregate)


async def test_the_models_route_lists_the_model(nursery: trio.Nursery) -> None:
    url = await start(nursery, model="tiny")
    async with httpx2.AsyncClient() as client:
        listed = (await client.get(f"{url}/models")).json()
    assert [m["id"] for m in listed["data"]] == ["tiny"]


async def test_a_timed_out_attempt_closes_its_connection_and_nothing_leaks(
    nursery: trio.Nursery,
) -> None:
    """1,000 attempts that the server never answers, each cut by the supervisor's timeout: the
    server sees the client go for every request it got (under this load some attempts are cut
    before their request reaches it), the pool never holds more than its size, and afterwards
    the process holds no more sockets than before."""
    url = await start(nursery)
    before = open_fds()
    peak = 0
    async with ChatAgent("m", base_url=url, api_key=KEY, max_connections=50) as agent:
        pool = agent._http._transport._pool  # type: ignore[attr-defined]

        async def watch() -> None:
            nonlocal peak
            while True:
                peak = max(peak, len(pool.connections))
                await trio.sleep(0.005)

        nursery.start_soon(watch)
        sup = Supervisor(agent, max_workers=50, timeout=0.1)
        with trio.fail_after(60):
            aggregate = await sup.run([f"[hang] {i}" for i in range(1000)])
        assert [r.status for r in aggregate] == [Status.TIMED_OUT] * 1000
        with trio.fail_after(10):  # every request the server got, it sees go
            while (seen := await stats(url))["disconnects"] < seen["requests"]:  # noqa: ASYNC110
                await trio.sleep(0.01)
            assert seen["in_flight"] == 0
        with trio.fail_after(10):  # each cut attempt closes its connection, as it unwinds
            while pool.connections:  # noqa: ASYNC110  # the pool has no event
                await trio.sleep(0.01)
    assert peak <= 50
    assert seen["requests"] > 0
    assert seen["disconnects"] == seen["requests"]
    with trio.fail_after(10):  # the server closes its side as it sees each client go
        while open_fds() > before + 2:  # noqa: ASYNC110  # the kernel has no event
            await trio.sleep(0.01)


async def test_the_key_never_shows_end_to_end(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    url = await start(nursery, api_key="the-right-key")
    async with ChatAgent("m", base_url=url, api_key=KEY, max_connections=2) as agent:
        sup = Supervisor(agent, max_workers=2, retry=Retry(attempts=3, on=TRANSIENT))
        trace = Trace()
        aggregate = await sup.run(["a", "b"], trace=trace)
        with pytest.raises(PermanentError) as caught:
            await agent("c")
    assert [r.error for r in aggregate] == [
        f"PermanentError: 401 Unauthorized from {url}/: check the API key"
    ] * 2
    assert [r.attempts for r in aggregate] == [1, 1]  # a wrong key is not retried
    shown = [repr(agent), repr(sup), repr(aggregate), repr(trace.slots), str(caught.value)]
    shown += [record.getMessage() for record in caplog.records]
    shown += [repr(await stats(url))]
    assert [text for text in shown if KEY in text] == []


def test_importing_the_server_without_hypercorn_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "trio_supervisor.testing.devserver")
    for name in [m for m in sys.modules if m == "hypercorn" or m.startswith("hypercorn.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "hypercorn", None)
    with pytest.raises(
        ImportError,
        match=r"^trio_supervisor\.testing\.devserver needs the 'agents' extra "
        r"\(hypercorn is missing\): pip install 'trio-supervisor\[agents\]'$",
    ):
        importlib.import_module("trio_supervisor.testing.devserver")


def busy_port() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


async def test_a_port_in_use_is_one_clear_error() -> None:
    with busy_port() as taken:
        port = taken.getsockname()[1]
        async with trio.open_nursery() as nursery:
            with pytest.raises(
                DevServerError,
                match=rf"^cannot listen on 127\.0\.0\.1:{port}: Address already in use$",
            ):
                await start(nursery, port=port)


async def test_a_port_out_of_range_is_refused_before_listening() -> None:
    async with trio.open_nursery() as nursery:
        with pytest.raises(
            ValueError, match=r"^port must be from 0 to 65535 \(0: any free port\), got 70000$"
        ):
            await start(nursery, port=70000)


def test_the_command_line_says_a_port_in_use_in_one_line() -> None:
    with busy_port() as taken:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "trio_supervisor.testing.devserver", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == f"devserver: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert done.stdout == ""


# -- the server's own rules, on virtual time (its app in-process, through an ASGI transport) ----


def in_process(**options: Any) -> tuple[Any, httpx2.AsyncClient]:
    from trio_supervisor.testing.devserver import _Endpoint

    settings: dict[str, Any] = {
        "seed": 0,
        "latency": (0.1, 0.3),
        "error_rate": 0.0,
        "concurrency": None,
        "rpm": None,
        "burst": None,
        "model": "m",
        "api_key": None,
    }
    endpoint = _Endpoint(**{**settings, **options})
    client = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=endpoint.app()), base_url="http://devserver"
    )
    return endpoint, client


TURN = 1e-7  # seconds a request waits for its instant's turn (see devserver's chat)


def ask(prompt: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": prompt}]}


@pytest.mark.parametrize("order", [["b", "a", "c"], ["c", "b", "a"], ["a", "c", "b"]])
async def test_requests_arriving_at_one_instant_are_let_in_in_the_order_of_their_prompts(
    autojump_clock: trio.testing.MockClock, order: list[str]
) -> None:
    """Over the server's limit, which of the requests arriving at the same instant are refused
    is decided by their prompts, never by the order the scheduler ran them: a run on virtual time
    gets the same 429s every time."""
    endpoint, client = in_process(concurrency=1, latency=(1, 1))
    statuses: dict[str, int] = {}

    async def post(prompt: str) -> None:
        statuses[prompt] = (await client.post("/v1/chat/completions", json=ask(prompt))).status_code

    async with client, trio.open_nursery() as nursery:
        for prompt in order:
            nursery.start_soon(post, prompt)
    assert statuses == {"a": 200, "b": 429, "c": 429}
    assert endpoint.stats.peak_in_flight == 1
    assert endpoint.turns == {}


async def test_the_rpm_bucket_answers_429_with_the_wait_until_its_next_token(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint, client = in_process(rpm=60, burst=2, latency=(0, 0))
    async with client:
        codes = [(await client.post("/v1/chat/completions", json=ask(f"q{i}"))) for i in range(3)]
        assert [c.status_code for c in codes] == [200, 200, 429]
        assert codes[2].headers["retry-after-ms"] == "1000"
        assert codes[2].headers["retry-after"] == "1"
        await trio.sleep(1)
        assert (await client.post("/v1/chat/completions", json=ask("q3"))).status_code == 200
    assert endpoint.stats.as_json()["rate_limited"] == 1


async def test_latency_and_errors_are_fixed_by_seed_and_prompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def replay(seed: int) -> list[tuple[str, int, float]]:
        _, client = in_process(seed=seed, error_rate=0.3)
        seen = []
        async with client:
            for prompt in ["a", "b", "a", "c", "b", "a"]:
                began = trio.current_time()
                answer = await client.post("/v1/chat/completions", json=ask(prompt))
                seen.append((prompt, answer.status_code, round(trio.current_time() - began, 9)))
        return seen

    first = await replay(5)
    assert first == await replay(5)
    assert first != await replay(6)
    assert {code for _, code, _ in first} <= {200, 500}
    latencies = {prompt: took for prompt, code, took in first if code == 200}
    assert all(0.1 <= took <= 0.3 for took in latencies.values())


async def test_prompts_ask_for_a_malformed_reply_or_a_500(
    autojump_clock: trio.testing.MockClock,
) -> None:
    _, client = in_process(latency=(0, 0))
    async with client:
        bad = await client.post("/v1/chat/completions", json=ask("x [malformed]"))
        failed = await client.post("/v1/chat/completions", json=ask("x [500]"))
        good = await client.post("/v1/chat/completions", json=ask("x"))
    assert (bad.status_code, bad.text) == (200, "{not json")
    assert failed.status_code == 500
    assert good.json()["choices"][0]["message"]["content"] == "answer to: x"


async def test_a_script_says_per_prompt_what_the_server_does(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A prompt the script names takes its latency, fails, fails its first requests, or hangs,
    and gets its reply; a prompt it gives None follows the seed."""
    from trio_supervisor.testing.devserver import Script, app

    scripts = {
        "slow": Script(latency=2.0, reply="done slowly"),
        "down": Script(fail=True),
        "flaky": Script(flaky=2),
        "stuck": Script(hang=True),
    }
    client = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app(latency=(0, 0), script=scripts.get)),
        base_url="http://devserver",
    )
    async with client:

        async def post(prompt: str) -> tuple[int, float]:
            began = trio.current_time()
            answer = await client.post("/v1/chat/completions", json=ask(prompt))
            return answer.status_code, trio.current_time() - began

        slow = await client.post("/v1/chat/completions", json=ask("slow"))
        assert slow.json()["choices"][0]["message"]["content"] == "done slowly"
        # a latency counts from the request's arrival; an answer comes no sooner than its
        # instant's turn is decided, a tenth of a microsecond after it arrived
        answers = [await post(p) for p in ("slow", "down", "down", "other")]
        assert answers == [
            (200, 2.0),
            (500, pytest.approx(TURN, abs=1e-12)),
            (500, pytest.approx(TURN, abs=1e-12)),
            (200, pytest.approx(TURN, abs=1e-12)),
        ]
        assert [(await post("flaky"))[0] for _ in range(3)] == [500, 500, 200]
        with trio.move_on_after(60) as waited:
            await post("stuck")
        assert waited.cancelled_caught


def test_a_script_refuses_what_it_cannot_do() -> None:
    from trio_supervisor.testing.devserver import Script, app

    with pytest.raises(ValueError, match=r"^Script flaky must be an int >= 0, got -1$"):
        Script(flaky=-1)
    with pytest.raises(ValueError, match=r"^Script latency must be a number >= 0, got -1$"):
        Script(latency=-1)
    with pytest.raises(
        TypeError, match=r"^script must be a callable \(prompt -> Script\), got dict$"
    ):
        app(script={"a": Script()})  # type: ignore[arg-type]


SIMULATED = SimulatedAgent(
    7, fail={"down"}, flaky={"shaky": 1}, outputs={"named": "its own"}, max_latency=0.5
)


def test_mimic_scripts_each_prompt_as_the_simulated_agent_does_it() -> None:
    script = mimic(SIMULATED)
    for prompt in ("down", "shaky", "named", "a hang here", "plain"):
        assert script(prompt) == Script(
            latency=SIMULATED.latency(prompt),
            fail=SIMULATED.fails(prompt),
            flaky=SIMULATED.flaky.get(prompt, 0),
            hang=SIMULATED.hangs(prompt),
            reply=SIMULATED.outputs.get(prompt, f"findings on {prompt}"),
        )
    assert script("down").fail
    assert script("a hang here").hang
    assert not script("plain").fail
    assert (script("shaky").flaky, script("named").reply) == (1, "its own")


def test_mimic_answers_what_reply_makes_of_the_agents_answer_in_prose_first_as_told() -> None:
    script = mimic(
        SIMULATED, reply=lambda prompt, said: f"<{prompt}|{said}>", prose=lambda prompt: len(prompt)
    )
    plain = mimic(SIMULATED)
    for prompt in ("down", "shaky", "named", "plain"):
        said = SIMULATED.outputs.get(prompt, f"findings on {prompt}")
        expected = dataclasses.replace(plain(prompt), reply=f"<{prompt}|{said}>", prose=len(prompt))
        assert script(prompt) == expected
    assert plain("named").prose == 0


async def test_loopback_in_process_answers_as_the_simulated_agent_on_virtual_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    plan = ["plain", "shaky", "down", "named"]
    async with loopback(SIMULATED) as server:
        assert (server.base_url, server.api_key) == ("http://loopback/v1", "loopback")
        assert isinstance(server.transport, httpx2.ASGITransport)
        chat = ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,
            transport=server.transport,
        )
        async with chat as agent:
            began = trio.current_time()  # an answer takes its simulated latency, exactly
            assert await agent("plain") == "findings on plain"
            assert trio.current_time() - began == pytest.approx(SIMULATED.latency("plain"))
            sup = Supervisor(agent, max_workers=4, retry=Retry(attempts=2, on=TRANSIENT, seed=1))
            aggregate = await sup.run(plan)
    by = {result.subtask: result for result in aggregate}
    assert (by["plain"].output, by["named"].output) == ("findings on plain", "its own")
    assert (by["shaky"].output, by["shaky"].attempts) == ("findings on shaky", 2)
    assert not by["down"].ok  # a 500 each time: transient, retried, still a 500
    assert by["down"].attempts == 2


async def test_loopback_plays_a_simulated_agent_with_a_script_of_its_own(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A script given with the agent answers in its stead; the agent's latency range stays."""
    mimicked = mimic(SIMULATED)

    def script(prompt: str) -> Script:
        return dataclasses.replace(mimicked(prompt), reply=f"[{mimicked(prompt).reply}]")

    async with loopback(SIMULATED, script=script) as server:
        chat = ChatAgent(
            "devserver",
            base_url=server.base_url,
            api_key=server.api_key,
            transport=server.transport,
        )
        async with chat as agent:
            began = trio.current_time()
            assert await agent("named") == "[its own]"
            assert trio.current_time() - began == pytest.approx(SIMULATED.latency("named"))


async def test_a_loopback_servers_agent_reaches_it_with_the_options_it_is_given(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with loopback(SIMULATED) as server:
        chat = server.agent(max_connections=3, max_tokens=7)
        assert (chat.model, chat.max_tokens) == ("devserver", 7)
        async with chat as agent:
            assert await agent("named") == "its own"  # through the server's own transport
    with pytest.raises(TypeError, match="base_url"):
        server.agent(base_url="http://elsewhere/v1")


async def test_loopback_over_a_socket_serves_on_a_free_port_until_the_block_ends() -> None:
    async with loopback(in_process=False, latency=(0, 0), api_key=KEY) as server:
        assert server.transport is None
        assert server.api_key == KEY
        assert server.base_url.startswith("http://127.0.0.1:")
        async with ChatAgent("devserver", base_url=server.base_url, api_key=KEY) as agent:
            assert await agent("hello") == "answer to: hello"
    port = int(server.base_url.removesuffix("/v1").rsplit(":", 1)[1])
    with pytest.raises(OSError, match="connect"):  # nothing listens there any more
        await trio.open_tcp_stream("127.0.0.1", port)


@pytest.mark.parametrize(
    ("simulated", "settings", "message"),
    [
        (
            SIMULATED,
            {"latency": (0, 1)},
            "loopback takes a simulated agent or its latency, not both",
        ),
        (None, {"port": 8000}, "loopback serves on a free port of its own: it takes no port"),
    ],
)
async def test_loopback_refuses_settings_it_cannot_use_before_serving(
    simulated: SimulatedAgent | None, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        async with loopback(simulated, in_process=False, **settings):
            pytest.fail("the block ran")


async def test_loopback_checks_its_settings_before_the_block_on_either_transport() -> None:
    for in_process in (True, False):
        with pytest.raises(ValueError, match="concurrency"):
            async with loopback(in_process=in_process, concurrency=0):
                pytest.fail("the block ran")


async def times_of(client: httpx2.AsyncClient, prompts: list[str]) -> dict[str, tuple[int, float]]:
    """Each prompt's status and when it was answered, all sent at the same instant."""
    answered: dict[str, tuple[int, float]] = {}

    async def post(prompt: str) -> None:
        status = (await client.post("/v1/chat/completions", json=ask(prompt))).status_code
        answered[prompt] = (status, trio.current_time())

    async with trio.open_nursery() as nursery:
        for prompt in prompts:
            nursery.start_soon(post, prompt)
    return answered


async def test_a_batching_server_decodes_a_batch_together_slower_and_queues_the_rest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Four requests at once on a batching server of two: two decode together, each taking
    ``2 ** 0.37`` times its time alone, and two wait for them; ``/stats`` says so."""
    _, client = in_process(latency=(1, 1), serving=Serving("batching", batch=2))
    async with client:
        answered = await times_of(client, ["a", "b", "c", "d"])
        stats = (await client.get("/stats")).json()
    pair = 2**SLOWDOWN
    assert {p: t for p, (_, t) in answered.items()} == pytest.approx(
        {"a": pair, "b": pair, "c": 2 * pair, "d": 2 * pair}, abs=1e-6
    )
    assert {status for status, _ in answered.values()} == {200}
    assert (stats["peak_running"], stats["peak_queued"], stats["waited"]) == (2, 2, 2)
    assert (stats["running"], stats["queued"], stats["in_flight"]) == (0, 0, 0)


async def test_a_batch_speeds_up_as_its_requests_leave(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A request that needs 1 s alongside one that needs 4 s: both go at ``1 / 2 ** 0.37``
    while together; once the short one is done, the long one goes at full pace."""

    def script(prompt: str) -> Script:
        return Script(latency=1.0 if prompt == "short" else 4.0)

    _, client = in_process(script=script, serving=Serving("batching", batch=8))
    async with client:
        answered = await times_of(client, ["short", "long"])
    pair = 2**SLOWDOWN
    assert answered["short"][1] == pytest.approx(pair, abs=1e-6)
    assert answered["long"][1] == pytest.approx(pair + 3, abs=1e-6)  # 3 s of work left, alone


async def test_a_sequential_server_answers_one_at_a_time_and_latency_grows_with_the_queue(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint, client = in_process(latency=(0.5, 0.5), serving=Serving("sequential"))
    async with client:
        answered = await times_of(client, [f"q{i}" for i in range(5)])
    assert sorted(t for _, t in answered.values()) == pytest.approx(
        [0.5, 1.0, 1.5, 2.0, 2.5], abs=1e-6
    )
    assert [answered[f"q{i}"][1] for i in range(5)] == sorted(t for _, t in answered.values())
    assert (endpoint.stats.peak_running, endpoint.stats.peak_queued) == (1, 4)


async def test_past_its_queue_bound_the_server_answers_503_with_retry_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One running, two queued: the fourth and fifth request are answered 503 at once with the
    wait the server asks, and the others are served in turn."""
    serving = Serving("sequential", queue=2, retry_after=3)
    _, client = in_process(latency=(1, 1), serving=serving)
    async with client:
        async with trio.open_nursery() as nursery:
            refusals: list[httpx2.Response] = []

            async def post(prompt: str) -> None:
                answer = await client.post("/v1/chat/completions", json=ask(prompt))
                if answer.status_code != 200:
                    refusals.append(answer)

            for prompt in ["a", "b", "c", "d", "e"]:
                nursery.start_soon(post, prompt)
        stats = (await client.get("/stats")).json()
    assert [(r.status_code, r.headers["retry-after"]) for r in refusals] == [(503, "3")] * 2
    assert refusals[0].headers["retry-after-ms"] == "3000"
    assert trio.current_time() == pytest.approx(3, abs=1e-6)
    assert (stats["ok"], stats["overloaded"], stats["server_errors"]) == (3, 2, 2)
    assert stats["peak_queued"] == 2


async def test_a_cancelled_request_leaves_the_queue_and_the_batch(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A client that goes while its request waits, or while it decodes, frees its place: the
    next request takes it, and the server's counts come back to nothing."""
    endpoint, client = in_process(latency=(1, 1), serving=Serving("sequential"))
    async with client:
        with trio.move_on_after(0.5):  # both go: one while running, one while queued
            await times_of(client, ["a", "b"])
        answered = await times_of(client, ["c"])
    assert answered["c"][0] == 200
    assert answered["c"][1] == pytest.approx(1.5, abs=1e-6)
    assert (endpoint.stats.running, endpoint.stats.queued, endpoint.stats.in_flight) == (0, 0, 0)


async def test_a_server_ignoring_response_format_answers_a_planner_in_prose(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Asked for JSON by a schema, it answers words: the planner gets no decision from it,
    where the same server taking the schema gives one."""
    from trio_supervisor.agents import ChatPlanner, UnusableReply

    for outputs in (True, "ignored"):
        via = httpx2.ASGITransport(app=app(latency=(0, 0), structured_outputs=outputs))
        async with ChatPlanner("m", base_url="http://x/v1", api_key="k", transport=via) as planner:
            if outputs is True:
                await planner.first("find prices")  # a decision
                continue
            with pytest.raises(UnusableReply, match="none valid against the schema"):
                await planner.first("find prices")


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"mode": "batched"}, ValueError, "mode must be 'parallel', 'batching' or 'sequential'"),
        ({"mode": "batching", "batch": 0}, ValueError, "batch must be >= 1"),
        ({"mode": "sequential", "batch": 4}, ValueError, "give it with mode='batching'"),
        ({"queue": 4}, ValueError, "a 'parallel' server queues none"),
        ({"mode": "batching", "queue": -1}, ValueError, "queue must be >= 0"),
        ({"mode": "batching", "scaling": -1}, ValueError, "scaling must be a number >= 0"),
        ({"mode": "batching", "batch": 2.5}, TypeError, "batch must be an int >= 1"),
    ],
)
def test_a_serving_policy_refuses_what_it_cannot_do(
    settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        Serving(**settings)


def test_the_server_refuses_a_serving_or_structured_outputs_it_cannot_use() -> None:
    with pytest.raises(TypeError, match="serving must be a Serving or None, got str"):
        app(serving="batching")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="structured_outputs must be True, False or 'ignored'"):
        app(structured_outputs="ignore")  # type: ignore[arg-type]


async def test_a_scripted_prose_reply_is_answered_per_conversation_then_json(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """``Script(prose=k)``: a conversation asking for JSON gets prose its first k times, and
    a re-ask is the first prompt's (its script), so that two subtasks re-asked at once each
    get their own JSON."""
    from pydantic import BaseModel

    from trio_supervisor.agents import ChatAgent, Output

    class Said(BaseModel):
        said: str

    def script(prompt: str) -> Script:
        return Script(reply=f'{{"said": "{prompt}"}}', prose={"a": 1, "b": 2}.get(prompt, 0))

    endpoint = app(latency=(0, 0), script=script)
    via = httpx2.ASGITransport(app=endpoint)
    agent = ChatAgent(
        "m", base_url="http://x/v1", api_key="k", transport=via, output=Output(Said), max_tokens=50
    )
    async with agent:
        found = {s: await agent(s) for s in ("a", "b", "c")}
        plain = await ChatAgent("m", base_url="http://x/v1", api_key="k", transport=via)("a")
    assert found == {s: Said(said=s) for s in "abc"}
    async with httpx2.AsyncClient(transport=via, base_url="http://x") as client:
        assert (await client.get("/stats")).json()["requests"] == 2 + 3 + 1 + 1
    assert plain == '{"said": "a"}'  # asked for no JSON: the reply as scripted
    with pytest.raises(ValueError, match="Script prose must be an int >= 0, got -1"):
        Script(prose=-1)
