"""A simulated sub-agent: deterministic latency, failures and hangs on request."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Collection, Mapping

import trio

_GRID = 32  # latencies are whole 1/32 s: exact in binary, so virtual times add up exactly


class SubAgentError(RuntimeError):
    """What the simulated sub-agent raises when it is told to fail: an ordinary exception.

    ```pycon
    >>> run = Supervisor(SimulatedAgent(0, fail={"reviews"}), max_workers=1).run
    >>> (result,) = trio.run(run, ["reviews"], clock=trio.testing.MockClock(autojump_threshold=0))
    >>> result.status, isinstance(result.exception, SubAgentError), result.error
    (<Status.FAILED: 'failed'>, True, "SubAgentError: sub-agent failed on 'reviews'")

    ```
    """


class SimulatedAgent:
    """A stand-in for an LLM sub-agent, usable wherever a [`Worker`][trio_supervisor.Worker] is.

    ```pycon
    >>> agent = SimulatedAgent(0, fail={"reviews"}, latencies={"pricing": 0.5, "reviews": 0.25})
    >>> run = Supervisor(agent, max_workers=2).run
    >>> virtual = trio.testing.MockClock(autojump_threshold=0)  # half a second, taken at once
    >>> aggregate = trio.run(run, ["pricing", "reviews"], clock=virtual)
    >>> for result in aggregate.results:
    ...     print(result.subtask, result.status, result.output or result.error)
    pricing Status.OK findings on pricing
    reviews Status.FAILED SubAgentError: sub-agent failed on 'reviews'

    ```

    Each subtask takes a latency fixed by the seed and the subtask's text, so two runs with the same
    seed take the same time. A subtask fails (after its latency, raising
    [`SubAgentError`][trio_supervisor.testing.SubAgentError]) when its text contains ``panic`` or
    ``fail``, or when it is named in ``fail``; it never returns when its text contains ``hang`` or
    it is named in ``hang``; it fails its first ``flaky[s]`` calls and then succeeds. A subtask
    named in ``latencies`` takes that long instead; one named in ``straggle`` takes that long on
    its first call only (a straggler, the tail a second call of it does not meet). It answers
    ``findings on <subtask>``, or what ``outputs`` gives for the subtask.

    Args:
      seed: picks the latencies.
      fail: subtasks that always fail.
      hang: subtasks that never return.
      flaky: subtask -> how many of its first calls fail.
      latencies: subtask -> its latency in seconds, instead of the one the seed picks.
      straggle: subtask -> the latency of its first call, in seconds.
      outputs: subtask -> its answer, instead of ``findings on <subtask>``.
      min_latency: shortest latency, in seconds.
      max_latency: longest latency, in seconds.

    Raises:
      ValueError: if the latency bounds are not ``0 <= min_latency <= max_latency``, or a latency
        in ``latencies`` is negative.
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        fail: Collection[str] = (),
        hang: Collection[str] = (),
        flaky: Mapping[str, int] | None = None,
        latencies: Mapping[str, float] | None = None,
        outputs: Mapping[str, str] | None = None,
        straggle: Mapping[str, float] | None = None,
        min_latency: float = 0.25,
        max_latency: float = 1.0,
    ) -> None:
        if not 0 <= min_latency <= max_latency:
            raise ValueError(
                "latencies must satisfy 0 <= min_latency <= max_latency, "
                f"got min_latency={min_latency}, max_latency={max_latency}"
            )
        for subtask, latency in {**(latencies or {}), **(straggle or {})}.items():
            if not latency >= 0:
                raise ValueError(f"latencies must be >= 0, got {latency} for {subtask!r}")
        self.seed = seed
        self.fail = frozenset(fail)
        self.hang = frozenset(hang)
        self.flaky = dict(flaky or {})
        self.latencies = dict(latencies or {})
        self.outputs = dict(outputs or {})
        self.straggle = dict(straggle or {})
        self.min_latency = min_latency
        self.max_latency = max_latency
        self.calls: Counter[str] = Counter()

    def latency(self, subtask: str) -> float:
        """The seconds ``subtask`` takes under this seed: the same on every call."""
        if subtask in self.latencies:
            return self.latencies[subtask]
        digest = hashlib.sha256(f"{self.seed}:{subtask}".encode()).digest()
        fraction = int.from_bytes(digest[:8], "big") / 2**64
        span = self.max_latency - self.min_latency
        return round((self.min_latency + fraction * span) * _GRID) / _GRID

    def fails(self, subtask: str) -> bool:
        """True when ``subtask`` always fails."""
        lowered = subtask.lower()
        return subtask in self.fail or "panic" in lowered or "fail" in lowered

    def hangs(self, subtask: str) -> bool:
        """True when ``subtask`` never returns."""
        return subtask in self.hang or "hang" in subtask.lower()

    async def __call__(self, subtask: str) -> str:
        self.calls[subtask] += 1
        if self.hangs(subtask):
            await trio.sleep_forever()
        first = self.calls[subtask] == 1 and subtask in self.straggle
        await trio.sleep(self.straggle[subtask] if first else self.latency(subtask))
        if self.fails(subtask):
            raise SubAgentError(f"sub-agent failed on {subtask!r}")
        if self.calls[subtask] <= self.flaky.get(subtask, 0):
            raise SubAgentError(f"sub-agent failed on {subtask!r} (attempt {self.calls[subtask]})")
        return self.outputs.get(subtask, f"findings on {subtask}")
