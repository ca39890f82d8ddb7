"""Rate limits: a server's Retry-After is obeyed, a token bucket bounds every window, an
adaptive limit stays between its floor and ceiling and follows the endpoint. Virtual time."""

from __future__ import annotations

import itertools

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.library.virtual_time import run_virtual
from trio_supervisor import Adaptive, Backoff, RateLimit, Retry, Status, Supervisor


class Busy(Exception):
    """A failure that asks for a wait, as a 429 does."""

    def __init__(self, retry_after: float | None) -> None:
        super().__init__(f"busy, retry after {retry_after}")
        self.retry_after = retry_after


# -- Retry-After --------------------------------------------------------------------------------


@settings(max_examples=60)
@given(
    asked=st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0, 7.5, None]), min_size=1, max_size=4),
    initial=st.sampled_from([0.0, 0.5, 2.0]),
    seed=st.integers(0, 2**16),
)
def test_a_retry_never_starts_sooner_than_the_server_asked(
    asked: list[float | None], initial: float, seed: int
) -> None:
    """The wait before attempt n+1 is at least the failure's retry_after, whatever the draw."""
    calls: dict[str, list[float]] = {}

    async def worker(subtask: str) -> str:
        times = calls.setdefault(subtask, [])
        times.append(trio.current_time())
        if len(times) <= len(asked):
            await trio.sleep(0.125)
            raise Busy(asked[len(times) - 1])
        return subtask

    async def main() -> None:
        sup = Supervisor(
            worker,
            max_workers=4,  # a place for each: a retry whose wait is over starts at once
            retry=Retry(
                attempts=len(asked) + 1, backoff=Backoff(initial, max(initial, 1.0)), seed=seed
            ),
        )
        aggregate = await sup.run(["a", "b", "c", "d"])
        assert all(result.ok for result in aggregate)
        for times in calls.values():
            for n, wait in enumerate(asked):
                gap = times[n + 1] - (times[n] + 0.125)
                assert gap >= (wait or 0.0) - 1e-9  # float subtraction, not an early start
                if wait is not None and wait > max(initial, 1.0):  # longer than any draw
                    assert gap == pytest.approx(wait)  # and no longer than asked

    run_virtual(main)


async def test_a_wait_past_the_deadline_ends_the_slot_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def worker(subtask: str) -> str:
        await trio.sleep(1)
        raise Busy(30.0)

    start = trio.current_time()
    sup = Supervisor(worker, max_workers=1, retry=Retry(attempts=3))
    aggregate = await sup.run(["a"], deadline=10)
    (result,) = aggregate.results
    assert result.status is Status.FAILED
    assert result.attempts == 1
    assert result.finished == start + 1  # not slept until the deadline, not past it
    assert result.error == (
        "TooSlowError: Busy: busy, retry after 30.0; the server asked to wait 30s before a "
        "retry, but the run's deadline is 9s away: the slot ends now instead of sleeping past it"
    )
    assert isinstance(result.exception, trio.TooSlowError)
    assert isinstance(result.exception.__cause__, Busy)


async def test_a_wait_within_the_deadline_is_slept(autojump_clock: trio.testing.MockClock) -> None:
    tries: list[float] = []

    async def worker(subtask: str) -> str:
        tries.append(trio.current_time())
        if len(tries) == 1:
            raise Busy(4.0)
        return subtask

    start = trio.current_time()
    aggregate = await Supervisor(worker, max_workers=1, retry=Retry(attempts=2)).run(
        ["a"], deadline=10
    )
    assert aggregate.results[0].ok
    assert tries == [start, start + 4]


async def test_a_stream_inside_a_cancel_scope_ends_the_slot_rather_than_outwait_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def worker(subtask: str) -> str:
        raise Busy(60.0)

    sup = Supervisor(worker, max_workers=1, retry=Retry(attempts=5))
    with trio.move_on_after(5):
        async with sup.stream(["a"]) as results:
            got = [result async for result in results]
    assert [r.status for r in got] == [Status.FAILED]
    assert got[0].error is not None
    assert "the server asked to wait 60s before a retry" in got[0].error


# -- RateLimit ----------------------------------------------------------------------------------


def test_a_rate_limit_is_validated() -> None:
    with pytest.raises(ValueError, match=r"^rate must be a positive number, got 0$"):
        RateLimit(0)
    with pytest.raises(ValueError, match=r"^burst must be >= 1, got 0$"):
        RateLimit(1, burst=0)
    with pytest.raises(TypeError, match=r"^burst must be an int >= 1, got float 1.5$"):
        RateLimit(1, burst=1.5)  # type: ignore[arg-type]
    assert repr(RateLimit(2.5, burst=3)) == "RateLimit(rate=2.5, burst=3)"


def assert_rate_bound(starts: list[float], rate: float, burst: int) -> None:
    """Over every window [t_i, t_j] at most burst + rate * (t_j - t_i) attempts start."""
    starts = sorted(starts)
    for i, j in itertools.combinations(range(len(starts)), 2):
        assert j - i + 1 <= burst + rate * (starts[j] - starts[i]) + 1e-6, (i, j, starts)


@settings(max_examples=60)
@given(
    rate=st.sampled_from([0.5, 2.0, 5.0, 40.0]),
    burst=st.integers(1, 6),
    durations=st.lists(st.sampled_from([0.0, 0.01, 0.3, 2.0]), min_size=1, max_size=25),
    failing=st.sets(st.integers(0, 24)),
    supervisors=st.integers(1, 3),
)
def test_no_window_holds_more_starts_than_burst_plus_rate_times_its_length(
    rate: float, burst: int, durations: list[float], failing: set[int], supervisors: int
) -> None:
    """Retries count: a failing subtask is attempted twice, and both starts are metered; one
    RateLimit shared by several supervisors bounds their starts together."""
    starts: list[float] = []
    limit = RateLimit(rate, burst=burst)

    async def worker(i: int) -> int:
        starts.append(trio.current_time())
        await trio.sleep(durations[i])
        if i in failing:  # its first attempt fails; the retry starts under the meter too
            failing.discard(i)
            raise ValueError(i)
        return i

    async def main() -> None:
        plan = list(range(len(durations)))
        async with trio.open_nursery() as nursery:
            for k in range(supervisors):
                sup = Supervisor(
                    worker,
                    max_workers=8,
                    retry=Retry(attempts=2, backoff=Backoff(0, 0)),
                    meters=[limit],
                )
                nursery.start_soon(sup.run, plan[k::supervisors])

    run_virtual(main)
    assert len(starts) >= len(durations)
    assert_rate_bound(starts, rate, burst)


async def test_a_rate_limit_lets_attempts_start_as_soon_as_allowed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Not slower than it must be: a burst at once, then one every 1/rate seconds."""
    starts: list[float] = []

    async def worker(i: int) -> int:
        starts.append(trio.current_time())
        return i

    t0 = trio.current_time()
    await Supervisor(worker, max_workers=10, meters=[RateLimit(4, burst=3)]).run(range(7))
    assert [round(t - t0, 9) for t in starts] == [0, 0, 0, 0.25, 0.5, 0.75, 1.0]


async def test_a_cancelled_waiter_takes_no_token(autojump_clock: trio.testing.MockClock) -> None:
    limit = RateLimit(1, burst=1)
    await limit.acquire()  # the bucket is now empty for one second
    with trio.move_on_after(0.5):
        await limit.acquire()
    t0 = trio.current_time()
    await limit.acquire()  # the token due at 1.0 is still there
    assert trio.current_time() - t0 == pytest.approx(0.5)


# -- Adaptive -----------------------------------------------------------------------------------


def test_adaptive_is_validated() -> None:
    with pytest.raises(ValueError, match=r"^ceiling must be >= 1, got 0$"):
        Adaptive(0)
    with pytest.raises(
        ValueError, match=r"^Adaptive needs floor <= start <= ceiling, got floor=4, start=4, "
    ):
        Adaptive(3, floor=4)
    with pytest.raises(ValueError, match=r"^decrease must be < 1 \(a factor that shrinks\), "):
        Adaptive(3, decrease=1.0)
    with pytest.raises(TypeError, match=r"^retry_on must be an Exception subclass"):
        Adaptive(3, shrink_on=int)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^fit must be True or False, got int 1$"):
        Adaptive(3, fit=1)  # type: ignore[arg-type]
    assert repr(Adaptive(8, start=4)) == "Adaptive(limit=4, floor=1, ceiling=8, decrease=0.5)"
    assert repr(Adaptive(8, start=4, fit=False)) == (
        "Adaptive(limit=4, floor=1, ceiling=8, decrease=0.5, fit=False)"
    )


def test_the_default_adaptive_rule_fits_the_limit_to_the_bound() -> None:
    """The rule that meets the goodput target is the one a user gets without asking; plain
    AIMD is one option away."""
    assert Adaptive(128).fit is True
    assert Adaptive(128, fit=False).fit is False


async def test_by_refusals_alone_a_429_takes_the_limit_to_one_under_what_was_in_flight(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """16 in flight, all refused: the rule of refusals alone goes to 15, not to 8 (half)."""
    adaptive = Adaptive(16, start=16, latency=False)

    async def busy(i: int) -> int:
        await trio.sleep(1)
        raise Busy(1.0)

    await Supervisor(busy, max_workers=16, meters=[adaptive]).run(range(16))
    assert adaptive.limit == 15


class Failed(Exception):
    """A failure with the attributes of an HTTP agent's error."""

    def __init__(self, status: int | None, retry_after: float | None) -> None:
        super().__init__(status)
        self.status = status
        self.retry_after = retry_after


@pytest.mark.parametrize(
    ("status", "retry_after", "shrinks"),
    [
        (429, None, True),  # a 429 without Retry-After
        (503, 1.0, True),  # a gateway's admission control asks for a wait
        (500, None, False),  # a plain server error: not a refusal
        (None, None, False),  # a refused connection
    ],
)
async def test_by_default_a_refusal_is_a_429_or_a_failure_that_asks_for_a_wait(
    autojump_clock: trio.testing.MockClock,
    status: int | None,
    retry_after: float | None,
    shrinks: bool,
) -> None:
    adaptive = Adaptive(16, start=16, fit=False)

    async def failing(i: int) -> int:
        await trio.sleep(1)
        raise Failed(status, retry_after)

    await Supervisor(failing, max_workers=4, meters=[adaptive]).run(range(4))
    assert adaptive.limit == (8 if shrinks else 16)


def test_the_adaptive_limit_starts_at_ten_within_its_bounds() -> None:
    assert Adaptive(64).limit == 10  # TCP's initial window
    assert Adaptive(4).limit == 4
    assert Adaptive(64, floor=12).limit == 12
    assert Adaptive(64, start=1).limit == 1


class Endpoint:
    """A fake endpoint with a capacity: over it, an attempt fails at once with a 429."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_flight = 0
        self.rejected = 0
        self.succeeded: dict[int, int] = {}

    async def __call__(self, i: int) -> int:
        if self.in_flight >= self.capacity:
            self.rejected += 1
            await trio.sleep(0.001)
            raise Busy(0.05)
        self.in_flight += 1
        try:
            await trio.sleep(0.1)
        finally:
            self.in_flight -= 1
        self.succeeded[i] = self.succeeded.get(i, 0) + 1
        return i


# 20 examples: that the limit stays within [floor, ceiling] is proved against queues and rate
# limits in test_adaptive_latency.py too; here against a hard bound that answers 429 past it
@settings(max_examples=20)
@given(
    capacity=st.integers(1, 40),
    ceiling=st.integers(1, 48),
    floor=st.integers(1, 6),
    n=st.integers(1, 300),
)
def test_the_adaptive_limit_stays_between_floor_and_ceiling_and_accounts_for_every_subtask(
    capacity: int, ceiling: int, floor: int, n: int
) -> None:
    floor = min(floor, ceiling)
    endpoint = Endpoint(capacity)
    adaptive = Adaptive(ceiling, floor=floor)
    seen: list[int] = []
    observe = adaptive.observe

    def spy(failure: Exception | None) -> None:
        observe(failure)
        seen.append(adaptive.limit)

    adaptive.observe = spy  # type: ignore[method-assign]

    async def main() -> None:
        sup = Supervisor(
            endpoint,
            max_workers=ceiling,
            retry=Retry(attempts=1000, backoff=Backoff(0, 0)),
            meters=[adaptive],
        )
        aggregate = await sup.run(range(n))
        assert [r.subtask for r in aggregate] == list(range(n))
        assert all(r.ok for r in aggregate)

    run_virtual(main)
    assert all(floor <= limit <= ceiling for limit in seen)
    assert endpoint.succeeded == dict.fromkeys(range(n), 1)  # each subtask done once


async def test_the_adaptive_limit_shrinks_under_429s_and_recovers_after(
    autojump_clock: trio.testing.MockClock,
) -> None:
    endpoint = Endpoint(capacity=4)
    adaptive = Adaptive(32, start=32, latency=False)
    limits: list[int] = []

    async def watch() -> None:
        while True:
            limits.append(adaptive.limit)
            await trio.sleep(0.05)

    sup = Supervisor(
        endpoint,
        max_workers=32,
        retry=Retry(attempts=100, backoff=Backoff(0, 0)),
        meters=[adaptive],
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        await sup.run(range(200))
        squeezed = adaptive.limit
        assert squeezed <= 8  # it came down to about what the endpoint takes
        assert adaptive.decreases >= 2
        endpoint.capacity = 1000  # the endpoint recovers: no more 429s
        rejected = endpoint.rejected
        await sup.run(range(2000))
        assert endpoint.rejected == rejected
        assert adaptive.limit == 32  # grown back to the ceiling
        nursery.cancel_scope.cancel()
    assert max(limits) == 32


@pytest.mark.parametrize(("plain", "after"), [(False, 15), (True, 8)])
async def test_one_burst_of_429s_decreases_the_limit_once(
    autojump_clock: trio.testing.MockClock, plain: bool, after: int
) -> None:
    """16 sent at once, all refused: the endpoint holds fewer than 16, so 15 (plain AIMD: half),
    by the rule of refusals alone (the latency rule's burst: test_adaptive_latency)."""
    adaptive = Adaptive(16, start=16, fit=not plain, latency=False)

    async def busy(i: int) -> int:
        await trio.sleep(1)
        raise Busy(1.0)

    await Supervisor(busy, max_workers=16, meters=[adaptive]).run(range(16))
    assert adaptive.limit == after
    assert adaptive.decreases == 1


async def test_other_failures_leave_the_adaptive_limit_alone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    adaptive = Adaptive(16, start=10)

    async def broken(i: int) -> int:
        raise ValueError(i)

    await Supervisor(broken, max_workers=16, meters=[adaptive]).run(range(50))
    assert adaptive.limit == 10


async def test_shrink_on_names_the_failures_that_shrink(
    autojump_clock: trio.testing.MockClock,
) -> None:
    adaptive = Adaptive(16, start=16, shrink_on=KeyError, fit=False)

    async def broken(i: int) -> int:
        await trio.sleep(1)  # all four start under the same limit: one decrease
        raise KeyError(i)

    await Supervisor(broken, max_workers=4, meters=[adaptive]).run(range(4))
    assert adaptive.limit == 8


class Bounded(Endpoint):
    """An endpoint with a capacity whose latency differs from subtask to subtask (0.1-0.3 s);
    it answers 429 at once, with a Retry-After of its mean latency."""

    async def __call__(self, i: int) -> int:
        if self.in_flight >= self.capacity:
            self.rejected += 1
            raise Busy(0.2)
        self.in_flight += 1
        try:
            await trio.sleep(0.1 + 0.2 * ((i * 37) % 64) / 64)
        finally:
            self.in_flight -= 1
        self.succeeded[i] = self.succeeded.get(i, 0) + 1
        return i


def follow(adaptive: Adaptive) -> list[tuple[bool, int]]:
    """Each outcome the adaptive limit observes (True for a success), with the limit after."""
    events: list[tuple[bool, int]] = []
    observe = adaptive.observe

    def spy(failure: Exception | None) -> None:
        observe(failure)
        events.append((failure is None, adaptive.limit))

    adaptive.observe = spy  # type: ignore[method-assign]
    return events


async def run_bounded(adaptive: Adaptive, capacity: int, n: int) -> Bounded:
    endpoint = Bounded(capacity)
    sup = Supervisor(
        endpoint, max_workers=adaptive.ceiling, retry=Retry(attempts=1000), meters=[adaptive]
    )
    aggregate = await sup.run(range(n))
    assert aggregate.succeeded == n
    return endpoint


@pytest.mark.parametrize("fit", [False, True])
async def test_the_adaptive_limit_grows_by_one_per_answer_until_the_first_429(
    autojump_clock: trio.testing.MockClock, fit: bool
) -> None:
    """Slow start: from 1, one more per answer (it doubles each round), until a 429; then it
    halves, or with ``fit`` goes back to one under the count the endpoint refused, which is no
    lower than its bound."""
    adaptive = Adaptive(64, start=1, fit=fit, latency=False)
    events = follow(adaptive)
    await run_bounded(adaptive, capacity=24, n=300)
    limits = [1] + [limit for _, limit in events]
    first = next(k for k, (ok, _) in enumerate(events) if not ok)
    assert limits[: first + 1] == list(range(1, first + 2))  # +1 per success
    if fit:
        assert 24 <= limits[first + 1] < limits[first]
    else:
        assert limits[first + 1] == limits[first] // 2


@pytest.mark.parametrize("plain", [False, True])
async def test_a_429_takes_the_limit_to_one_under_what_was_in_flight(
    autojump_clock: trio.testing.MockClock, plain: bool
) -> None:
    """Against a bound of 32, a refused attempt was sent with more than 32 in flight, so the
    limit never falls below 32; plain AIMD halves it to 16 and spends its time climbing back."""
    adaptive = Adaptive(128, fit=not plain, latency=False)
    events = follow(adaptive)
    limits: list[int] = []

    async def sample() -> None:
        while True:
            await trio.sleep(0.05)
            limits.append(adaptive.limit)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(sample)
        await run_bounded(adaptive, capacity=32, n=3000)
        nursery.cancel_scope.cancel()
    after_decreases = [limit for ok, limit in events if not ok]
    steady = limits[len(limits) // 5 :]  # after slow start
    if plain:
        assert min(after_decreases) <= 17
        assert sum(steady) / len(steady) < 27
    else:
        assert min(after_decreases) >= 32
        assert sum(steady) / len(steady) >= 32


@pytest.mark.parametrize("plain", [False, True])
async def test_after_a_429_the_refused_count_is_tried_again_after_four_rounds(
    autojump_clock: trio.testing.MockClock, plain: bool
) -> None:
    """A count the endpoint refused is tried again after four rounds of successes at the
    limit under it, not after one (plain AIMD: one)."""
    adaptive = Adaptive(128, fit=not plain, latency=False)
    events = follow(adaptive)
    endpoint = await run_bounded(adaptive, capacity=32, n=4000)
    rounds = 1 if plain else 4
    assert Adaptive.PATIENCE == 4
    checked = 0
    decreased_at = None
    for k, (ok, limit) in enumerate(events):
        previous = events[k - 1][1] if k else 0
        if not ok and limit < previous:
            decreased_at = k
        elif ok and limit > previous and decreased_at is not None:
            successes = sum(ok for ok, _ in events[decreased_at + 1 : k + 1])
            assert successes == rounds * previous
            decreased_at = None
            checked += 1
    assert checked >= 5
    if not plain:
        assert endpoint.rejected <= 4000 / (rounds * 32)


async def test_a_slot_waiting_out_retry_after_holds_no_adaptive_place(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """One place: slot 0 is refused at 1 s and asked to wait 5 s; slot 1 runs in that place at
    once, not after the wait."""
    adaptive = Adaptive(2, start=1)
    starts: dict[int, list[float]] = {0: [], 1: []}

    async def worker(i: int) -> int:
        starts[i].append(trio.current_time())
        await trio.sleep(1)
        if i == 0 and len(starts[0]) == 1:
            raise Busy(5.0)
        return i

    begin = trio.current_time()
    aggregate = await Supervisor(
        worker, max_workers=2, retry=Retry(attempts=2), meters=[adaptive]
    ).run([0, 1])
    assert aggregate.succeeded == 2
    assert {i: [t - begin for t in times] for i, times in starts.items()} == {
        0: [0.0, 6.0],
        1: [1.0],
    }
