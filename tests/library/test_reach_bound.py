"""``benchmarks/reach.py``: the bound on what any concurrency policy reaches against batches of
256 while it keeps the sequential and batching32 targets, computed from the loopback server's
batching curve. Its simulation must be the server's, and its optimum the least of every
schedule it allows."""

from __future__ import annotations

import math

import httpx2
import pytest
import trio
import trio.testing

from tests.library.benchmark_scripts import load
from trio_supervisor import Supervisor
from trio_supervisor.agents import ChatAgent
from trio_supervisor.testing.devserver import Serving, app

reach = load("reach")


def against_the_server(stages: list[int]) -> float:
    """The makespan of ``stages`` run one after another against the loopback server batching
    256, each all at once (a fixed K of its size), on virtual time."""

    async def main() -> float:
        transport = httpx2.ASGITransport(
            app=app(
                latency=(reach.ALONE, reach.ALONE),
                model="m",
                serving=Serving("batching", batch=256),
            )
        )
        async with ChatAgent(
            "m", base_url="http://x/v1", api_key="k", transport=transport, max_connections=256
        ) as agent:
            for size in stages:
                await Supervisor(agent, max_workers=size).run([f"p{i}" for i in range(size)])
        return trio.current_time()

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@pytest.mark.parametrize(("start", "probe"), [(2, 33), (10, 60), (27, 89)])
def test_the_simulation_is_the_loopback_servers_curve(start: int, probe: int) -> None:
    """Three stages that follow each other take the sum of their times, each ``ALONE`` times
    its size to the server's exponent: the closed form, the simulation and the server agree."""
    rest = 256 - start - probe
    span = reach.staged(256, start, probe)
    assert math.isclose(reach.simulate(256, start, probe), span, rel_tol=1e-9)
    assert math.isclose(against_the_server([start, probe, rest]), span, rel_tol=1e-6)
    fixed = reach.simulate(256, 256, 0)
    assert math.isclose(against_the_server([256]), fixed, rel_tol=1e-6)


def test_the_bounds_of_a_run_are_the_targets_slack() -> None:
    """Of 512 requests, 25 may answer later than the p95: 27 sent before the first answer (two
    wait behind at most one), 89 in flight until more than 32 answer together."""
    assert (reach.allowed(512), reach.largest_start(512), reach.largest_probe(512)) == (25, 27, 89)
    assert (reach.allowed(256), reach.largest_start(256), reach.largest_probe(256)) == (12, 14, 76)


def test_the_bound_is_the_least_of_every_schedule_and_misses_the_targets() -> None:
    """The least makespan is the least start and the least probe that tells (stages as unequal
    as the bounds let them be), no schedule of those the bounds allow does better, and it is
    over 1.2x fixed K=256's, the best throughput under 90% of K=256's: the targets of
    batching256 are out of reach of any default that keeps the other two."""
    found = reach.search(512)
    assert found.makespan_schedule == (2, 33, 0, 0.0)
    assert math.isclose(found.makespan, reach.staged(256, 2, 33), rel_tol=1e-9)
    assert all(
        reach.staged(256, start, probe) >= found.makespan - 1e-9
        for start in range(2, 28)
        for probe in range(33, 90)
    )
    assert found.makespan_ratio > 1.2
    assert found.throughput_share < 0.9
    assert math.isclose(found.fixed_makespan, reach.ALONE * 256**reach.SLOWDOWN)


def test_the_default_does_not_beat_the_bound() -> None:
    """The default ``Adaptive(256)`` is one such policy: its makespan against batches of 256 is
    no less than the bound (a bound that a policy beat would be no bound)."""
    endpoints = load("endpoints")
    burst = [f"subtask {i}" for i in range(256)]
    measured = endpoints.measure("batching256", "A", endpoints.supervised(256, {}), burst)
    assert measured.seconds >= reach.staged(256, 2, 33)
