"""Re-planning: rounds of parallel batches, a planner deciding each next batch from a ledger.

A plan made once, before the first worker runs, cannot follow up on what a worker found, nor
route a failed subtask to another source. Here a [`Planner`][trio_supervisor.Planner] makes the
first batch, and after each round reads the [`Ledger`][trio_supervisor.Ledger] of everything
dispatched so far and decides: [`Done`][trio_supervisor.Done], or the next
[`Batch`][trio_supervisor.Batch]. Each batch is one run of the
[`Supervisor`][trio_supervisor.Supervisor] (in parallel, under its capacity bound, fanned back in
plan order), so a round costs its slowest subtask, not the sum of them.

Budgets end the run when the planner does not: ``max_rounds``, ``max_subtasks`` (in all rounds),
``max_stalls`` with ``max_resets`` (together a [`ReplanLimits`][trio_supervisor.ReplanLimits]),
and the run's ``deadline``. A *stall* is a round in which no
subtask succeeded that had not succeeded before, or one the planner itself says made no progress
(``Batch(progress=False)``); the count goes up by one on a stall and down by one (not below 0) on
progress, and once it passes ``max_stalls`` the planner is asked for a fresh plan
(``fresh=True``) and the count starts again, at most ``max_resets`` times. Whatever ended it, a run
returns an [`Answer`][trio_supervisor.Answer]: degraded, and naming the budget, when a budget did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, Protocol, TypeVar

import trio

from . import _validate
from ._approval import AwaitingApproval
from ._contract import Aggregate, Status, SubResult, describe, revised
from ._digest import read_subtasks, subtask_texts
from ._identity import RunName, planner_asks
from ._journal import DurableRun
from ._trace import Trace

S = TypeVar("S")
T = TypeVar("T")

Budget = Literal["max_rounds", "max_subtasks", "max_stalls", "deadline", "budget"]
"""The budgets that can end a run before its planner is done (``"budget"``: a
[`Budget`][trio_supervisor.Budget] among the supervisor's meters, named in the reason)."""


@dataclass(frozen=True)
class Batch(Generic[S]):
    """A planner's decision to go on: the subtasks of the next round, and why.

    ```pycon
    >>> batch = Batch(["pricing", "reviews"], note="what to read first")
    >>> batch.subtasks, batch.note, batch.progress
    (('pricing', 'reviews'), 'what to read first', True)
    >>> Batch(["pricing from the archive"], replaces={0: (1, 0)}).replaces  # reroutes (1, 0)
    mappingproxy({0: (1, 0)})

    ```

    Args:
      subtasks: the round's subtasks, in the order their results come back.
      note: why these, in a few words (kept in the ledger, shown on the timeline).
      replaces: index in ``subtasks`` -> ``(round, index)`` of an earlier ledger entry this one
        stands in for (a failed subtask rerouted to another source). An entry that failed is
        *settled* once a replacement succeeded; an unsettled failure makes the answer degraded.
      progress: the planner's word on the round just ended: False counts it as a stall even if
        some subtask in it succeeded.

    Raises:
      TypeError: if ``subtasks`` is a str or not a sequence, or ``note`` is not a str.
    """

    subtasks: Sequence[S]
    note: str = ""
    replaces: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    progress: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.subtasks, str | bytes) or not isinstance(self.subtasks, Sequence):
            raise TypeError(
                "a Batch's subtasks must be a sequence of subtasks (a list or a tuple), got "
                f"{type(self.subtasks).__name__}"
            )
        if not isinstance(self.note, str):
            raise TypeError(f"a Batch's note must be a str, got {type(self.note).__name__}")
        if not isinstance(self.progress, bool):
            raise TypeError(
                f"a Batch's progress must be True or False, got {type(self.progress).__name__}"
            )
        if not isinstance(self.replaces, Mapping):
            raise TypeError(
                "a Batch's replaces must be a mapping of index -> (round, index), got "
                f"{type(self.replaces).__name__}"
            )
        size = len(self.subtasks)
        replaces: dict[int, tuple[int, int]] = {}
        for index, key in self.replaces.items():
            if not _is_int(index) or not 0 <= index < size:
                raise ValueError(
                    f"a Batch's replaces has the index {index!r}, not one of its {size} subtasks"
                )
            replaces[index] = _entry_key(key)
        object.__setattr__(self, "subtasks", tuple(self.subtasks))
        object.__setattr__(self, "replaces", MappingProxyType(replaces))


@dataclass(frozen=True)
class Done:
    """A planner's decision to stop: the task is answered.

    ```pycon
    >>> Done("the market is small", note="both sources agree")
    Done(answer='the market is small', note='both sources agree')
    >>> Done().answer is None  # the answer is synthesized from the ledger
    True

    ```

    Args:
      answer: the answer's text, or None to have it synthesized from the ledger (each subtask's
        output, in ledger order).
      note: why it is done, in a few words.
    """

    answer: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.answer is not None and not isinstance(self.answer, str):
            raise TypeError(
                f"a Done's answer must be a str or None, got {type(self.answer).__name__}"
            )
        if not isinstance(self.note, str):
            raise TypeError(f"a Done's note must be a str, got {type(self.note).__name__}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_key(key: object) -> tuple[int, int]:
    """``key`` as a ledger entry's ``(round, index)``: a pair of ints (a JSON list is taken)."""
    if (
        isinstance(key, tuple | list)
        and len(key) == 2
        and all(_is_int(part) for part in key)
        and key[0] >= 1
        and key[1] >= 0
    ):
        return (key[0], key[1])
    raise TypeError(
        f"a Batch replaces an entry named by (round, index), two ints from 1 and 0, got {key!r}"
    )


@dataclass(frozen=True)
class Entry(Generic[S, T]):
    """One dispatched subtask in the ledger: where it ran and what it gave.

    ```pycon
    >>> class OneRound:
    ...     async def first(self, task):
    ...         return Batch(["pricing", "reviews"], note="what to read first")
    ...     async def next(self, task, ledger, *, fresh):
    ...         return Done(note="read both")
    >>> async def research(subtask):
    ...     return f"notes on {subtask}"
    >>> answer = trio.run(Supervisor(research, max_workers=2).replan, "the market", OneRound())
    >>> entry = answer.ledger.entries[1]
    >>> entry.key, entry.subtask, entry.result.output
    ((1, 1), 'reviews', 'notes on reviews')

    ```

    Args:
      round: the round it ran in, from 1.
      index: its place in that round's batch, from 0.
      result: its [`SubResult`][trio_supervisor.SubResult].
      replaces: ``(round, index)`` of the earlier entry it stands in for, or None.
    """

    round: int
    index: int
    result: SubResult[S, T]
    replaces: tuple[int, int] | None = None

    @property
    def key(self) -> tuple[int, int]:
        """``(round, index)``: how a later [`Batch`][trio_supervisor.Batch] names this entry."""
        return (self.round, self.index)

    @property
    def subtask(self) -> S:
        """The subtask, as dispatched."""
        return self.result.subtask


@dataclass(frozen=True)
class Round(Generic[S, T]):
    """One round: the planner's decision, and the batch it dispatched.

    ```pycon
    >>> class OneRound:
    ...     async def first(self, task):
    ...         return Batch(["pricing", "reviews"], note="what to read first")
    ...     async def next(self, task, ledger, *, fresh):
    ...         return Done(note="read both")
    >>> async def research(subtask):
    ...     return f"notes on {subtask}"
    >>> answer = trio.run(Supervisor(research, max_workers=2).replan, "the market", OneRound())
    >>> (first,) = answer.ledger.rounds
    >>> first.number, first.note, [entry.subtask for entry in first.entries], first.stalled
    (1, 'what to read first', ['pricing', 'reviews'], False)

    ```

    Args:
      number: from 1.
      note: the planner's note for this batch (or what went wrong asking it).
      entries: one per dispatched subtask, in batch order.
      planned: trio time the planner was asked for this round.
      dispatched: trio time the batch started.
      finished: trio time its last result came back.
      fresh: True when the batch is a fresh plan, asked for past ``max_stalls``.
      error: what the planner did wrong, when it raised or returned no decision: the round then
        dispatched nothing.
      stalled: whether the round made no progress; None until the next decision is known.
    """

    number: int
    note: str
    entries: tuple[Entry[S, T], ...]
    planned: float
    dispatched: float
    finished: float
    fresh: bool = False
    error: str | None = None
    stalled: bool | None = None


class Ledger(Generic[S, T]):
    """Everything a re-planning run dispatched, each subtask once, round by round.

    ```pycon
    >>> class OneRound:
    ...     async def first(self, task):
    ...         return Batch(["pricing", "reviews"], note="what to read first")
    ...     async def next(self, task, ledger, *, fresh):
    ...         return Done(note="read both")
    >>> async def research(subtask):
    ...     return f"notes on {subtask}"
    >>> answer = trio.run(Supervisor(research, max_workers=2).replan, "the market", OneRound())
    >>> answer.ledger
    Ledger(task='the market', rounds=1, entries=2)
    >>> [(entry.key, entry.subtask) for entry in answer.ledger.entries]
    [((1, 0), 'pricing'), ((1, 1), 'reviews')]
    >>> answer.ledger.unsettled()  # every entry succeeded
    []

    ```

    What the planner reads to decide, what the answer is synthesized from, what a user inspects
    afterwards. An entry is *settled* when it succeeded, or when an entry replacing it is
    settled, however long the chain of replacements.

    Args:
      task: the task the run is about.
    """

    def __init__(self, task: str) -> None:
        self.task = task
        self._rounds: list[Round[S, T]] = []
        # kept in step with _rounds (see _sync): every entry, and the keys of the settled ones
        self._entries: list[Entry[S, T]] = []
        self._settled: set[tuple[int, int]] = set()
        self._synced = 0

    def _sync(self) -> None:
        """Take in the rounds added since the last call: each entry once, and each success
        settles the chain of entries it stands in for (each entry is settled once, so the
        whole run is linear in the entries)."""
        rounds = self._rounds
        while self._synced < len(rounds):
            for entry in rounds[self._synced].entries:
                self._entries.append(entry)
                if entry.result.ok:
                    self._settle(entry)
            self._synced += 1

    def _settle(self, entry: Entry[S, T] | None) -> None:
        while entry is not None and entry.key not in self._settled:
            self._settled.add(entry.key)
            entry = self._find(entry.replaces)

    def _find(self, key: tuple[int, int] | None) -> Entry[S, T] | None:
        if key is None:
            return None
        try:
            return self.entry(key)
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def rounds(self) -> tuple[Round[S, T], ...]:
        """Every round so far, in order."""
        return tuple(self._rounds)

    def record(self, done: Round[S, T]) -> None:
        """Add the round ``done``: the next one, or the latest one again with what was learnt
        after it (its ``stalled``), with the same entries.

        A run records each round as it ends; a planner that is sent the ledger (a chat
        planner's request) rebuilds it round by round, and so does a test of a planner.

        ```pycon
        >>> ledger = Ledger("the market")
        >>> ok = SubResult("pricing", output="notes on pricing")
        >>> ledger.record(Round(1, "what to read first", (Entry(1, 0, ok),), 0, 0, 0))
        >>> ledger
        Ledger(task='the market', rounds=1, entries=1)
        >>> ledger.record(Round(3, "", (), 0, 0, 0))
        Traceback (most recent call last):
          ...
        ValueError: the ledger has 1 round: record round 2 (the next) or 1 (the latest again), not 3

        ```

        Args:
          done: the round.

        Raises:
          TypeError: if ``done`` is not a Round.
          ValueError: if its number is neither the next round's nor the latest's, or it records
            the latest round again with other entries.
        """
        if not isinstance(done, Round):
            raise TypeError(f"the ledger records a Round, got {type(done).__name__}")
        rounds = self._rounds
        if done.number == len(rounds) + 1:
            rounds.append(done)
        elif rounds and done.number == len(rounds):
            if done.entries != rounds[-1].entries:
                raise ValueError(
                    f"round {done.number} is recorded again with other entries: a round's "
                    "entries are final once recorded"
                )
            rounds[-1] = done
        else:
            said = f"{len(rounds)} round" if len(rounds) == 1 else f"{len(rounds)} rounds"
            again = f" or {len(rounds)} (the latest again)" if rounds else ""
            raise ValueError(
                f"the ledger has {said}: record round {len(rounds) + 1} (the next){again}, "
                f"not {done.number}"
            )

    @property
    def entries(self) -> tuple[Entry[S, T], ...]:
        """Every dispatched subtask, by round, then by index in its batch."""
        self._sync()
        return tuple(self._entries)

    def __len__(self) -> int:
        self._sync()
        return len(self._entries)

    def entry(self, key: tuple[int, int]) -> Entry[S, T]:
        """The entry ``(round, index)``.

        Raises:
          KeyError: if no such entry was dispatched.
        """
        number, index = key
        if 1 <= number <= len(self._rounds) and 0 <= index < len(self._rounds[number - 1].entries):
            return self._rounds[number - 1].entries[index]
        raise KeyError(f"no entry {key!r} in the ledger")

    def settled(self, entry: Entry[S, T]) -> bool:
        """True when ``entry`` succeeded, or a later entry replacing it is settled."""
        self._sync()
        return entry.result.ok or entry.key in self._settled

    def unsettled(self) -> list[Entry[S, T]]:
        """The entries with no output of their own nor from a replacement: the answer's gaps."""
        self._sync()
        return [entry for entry in self._entries if entry.key not in self._settled]

    def synthesize(self) -> str:
        """The answer made from the ledger: one line per entry with its output, in ledger order;
        an unsettled failure shows what went wrong."""
        self._sync()
        lines = []
        for entry in self._entries:
            result = entry.result
            if result.ok:
                lines.append(f"{result.subtask}: {result.output}")
            elif entry.key not in self._settled:
                lines.append(f"{result.subtask}: (missing: {result.error})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Ledger(task={self.task!r}, rounds={len(self._rounds)}, entries={len(self)})"


@dataclass(frozen=True)
class Answer(Generic[S, T]):
    """What a re-planning run returns, always: the answer, whether it is whole, and the ledger.

    ```pycon
    >>> class OneRound:
    ...     async def first(self, task):
    ...         return Batch(["pricing", "reviews"], note="what to read first")
    ...     async def next(self, task, ledger, *, fresh):
    ...         return Done(note="read both")
    >>> async def research(subtask):
    ...     return f"notes on {subtask}"
    >>> answer = trio.run(Supervisor(research, max_workers=2).replan, "the market", OneRound())
    >>> answer.degraded, answer.ended_by, answer.reason
    (False, None, 'the planner is done after 1 round: read both')
    >>> print(answer.text)  # synthesized from the ledger: Done gave no answer of its own
    pricing: notes on pricing
    reviews: notes on reviews

    ```

    Args:
      text: the answer (the planner's, or synthesized from the ledger); when degraded, its last
        line says why.
      degraded: True when a budget ended the run, or some subtask has no output of its own nor
        from a replacement.
      ended_by: the budget that ended the run; None when the planner said it was done.
      reason: one line on how the run ended.
      ledger: every round and every dispatched subtask.
    """

    text: str
    degraded: bool
    ended_by: Budget | None
    reason: str
    ledger: Ledger[S, T] = dataclasses.field(repr=False)


@dataclass(frozen=True)
class ReplanLimits:
    """The budgets of a re-planning run besides its deadline: how many rounds, how many subtasks
    in all rounds, and how many stalled rounds and fresh plans it may take before it ends.
    Checked when made.

    ```pycon
    >>> ReplanLimits(max_rounds=5, max_stalls=2)
    ReplanLimits(max_rounds=5, max_subtasks=100, max_stalls=2, max_resets=2)

    ```

    Args:
      max_rounds: rounds at most (a round the planner failed counts).
      max_subtasks: subtasks dispatched at most, in all rounds; a batch that does not fit is
        dispatched as far as it fits, and the run ends after it.
      max_stalls: how far the stall count may go (up one on a stalled round, down one on
        progress) before the planner is asked for a fresh plan.
      max_resets: how many fresh plans it may be asked for; past that, a stall count over
        ``max_stalls`` ends the run.

    Raises:
      TypeError: if a budget is not an int.
      ValueError: if ``max_rounds`` or ``max_subtasks`` is < 1, or ``max_stalls`` or
        ``max_resets`` < 0.
    """

    max_rounds: int = 10
    max_subtasks: int = 100
    max_stalls: int = 3
    max_resets: int = 2

    def __post_init__(self) -> None:
        _validate.count("ReplanLimits max_rounds", self.max_rounds)
        _validate.count("ReplanLimits max_subtasks", self.max_subtasks)
        _validate.budget("ReplanLimits max_stalls", self.max_stalls)
        _validate.budget("ReplanLimits max_resets", self.max_resets)


class Planner(Protocol[S, T]):
    """What decides a re-planning run's batches: the first, then each next one from the ledger.

    ```pycon
    >>> class FollowUp:
    ...     async def first(self, task):
    ...         return Batch(["pricing", "reviews"], note="what to read first")
    ...     async def next(self, task, ledger, *, fresh):
    ...         if len(ledger.rounds) == 1:  # pricing named a competitor: look it up
    ...             return Batch(["competitor"], note="pricing named one")
    ...         return Done(note="answered")
    >>> async def research(subtask):
    ...     return f"notes on {subtask}"
    >>> answer = trio.run(Supervisor(research, max_workers=2).replan, "the market", FollowUp())
    >>> [[entry.subtask for entry in round.entries] for round in answer.ledger.rounds]
    [['pricing', 'reviews'], ['competitor']]

    ```

    A planner that raises an `Exception` or returns something other than a
    [`Batch`][trio_supervisor.Batch] or [`Done`][trio_supervisor.Done] costs its round: the round
    dispatches nothing, records what went wrong, and counts as a stall. Cancellation passes
    through it as through any trio call.
    """

    async def first(self, task: str) -> Batch[S] | Done:
        """The first round's batch for ``task`` (or Done, if there is nothing to do)."""
        ...

    async def next(self, task: str, ledger: Ledger[S, T], *, fresh: bool) -> Batch[S] | Done:
        """After a round: Done, or the next batch. ``fresh`` asks for a fresh plan: the run
        stalled past ``max_stalls``."""
        ...


class Runner(Protocol[S, T]):
    """What runs each batch of a re-planning run, as
    [`Supervisor.run`][trio_supervisor.Supervisor.run] does, under the round's name: ``run``,
    whose round only a re-planning run sets (a ``DurableRun`` when it is journaled; None when it
    is not)."""

    async def __call__(
        self,
        batch: list[S],
        /,
        *,
        deadline: float | None,
        trace: Trace | None,
        run: RunName | None,
    ) -> Aggregate[S, T]:
        """Run every subtask of ``batch``, within ``deadline`` seconds; the results in order."""
        ...


async def replan(
    runner: Runner[S, T],
    task: str,
    planner: Planner[S, T],
    *,
    limits: ReplanLimits,
    deadline: float | None,
    trace: Trace | None = None,
    run: RunName | None = None,
) -> Answer[S, T]:
    """The run behind [`Supervisor.replan`][trio_supervisor.Supervisor.replan]; ``trace`` and
    ``run`` (the run's name, from its ``durable=``), checked there, record each round's batch as
    its next slots and name its rounds.

    With a journal (a ``DurableRun``), each decision of the planner is journaled as it is made,
    in the order asked, and each round's batch is a journaled run (round ``n`` under its
    ``run_id``); resumed, the run takes the journaled decisions instead of asking the planner,
    and each round's journaled results instead of running them, so it goes on after the last
    finished round."""
    _validate.planner(planner)
    if not isinstance(task, str):
        raise TypeError(f"task must be a str (what the planner reads), got {type(task).__name__}")
    if not isinstance(limits, ReplanLimits):
        raise TypeError(
            "limits must be a ReplanLimits (ReplanLimits(max_rounds=..., max_subtasks=..., "
            f"max_stalls=..., max_resets=...)), got {type(limits).__name__} {limits!r}"
        )
    limit = _validate.seconds("deadline", deadline)
    durable = run if isinstance(run, DurableRun) else None  # round 0: not a batch's
    if durable is not None:
        first = await durable.replanning()
        if first is not None and first.get("task") != task:
            raise ValueError(
                f"run {durable.run_id!r} was journaled for another task ({first.get('task')!r}): "
                "give this task a run_id of its own, or the task it was journaled with"
            )
    replanning = Replanning(
        runner,
        task,
        planner,
        limits=limits,
        limit=limit,
        trace=trace,
        durable=durable,
    )
    return await replanning.run()


def deadline_words(deadline: float) -> tuple[str, str]:
    """Why a slot was cancelled when its run's ``deadline`` (seconds) expired: before it
    started, and before it finished."""
    said = f"Cancelled: the run's deadline of {deadline:g}s expired"
    return f"{said} before it started", f"{said} before it finished"


def _cut_by(results: list[SubResult[S, T]], left: float, limit: float) -> list[SubResult[S, T]]:
    """A round's ``results``, the slots its deadline cut saying the re-planning run's deadline
    (``limit``), as the answer does, rather than the round's own (``left``: what was left of it
    when the round started)."""
    renamed = dict(zip(deadline_words(left), deadline_words(limit), strict=True))
    kept = []
    for result in results:
        error = result.error or ""
        for said, meant in renamed.items():
            if result.status is Status.CANCELLED and error.startswith(said):
                result = revised(result, error=meant + error[len(said) :])
        kept.append(result)
    return kept


@dataclass(frozen=True)
class _Failed:
    """What went wrong asking the planner for a decision."""

    text: str


def _encoded(decision: Batch[Any] | Done | _Failed, task: str) -> dict[str, Any]:
    """``decision`` as plain data, for the journal (with the task it was made for)."""
    if isinstance(decision, Batch):
        return {
            "task": task,
            "kind": "batch",
            "texts": subtask_texts(decision.subtasks),  # read back exactly, tuples as tuples
            "note": decision.note,
            "replaces": [[index, *key] for index, key in decision.replaces.items()],
            "progress": decision.progress,
        }
    if isinstance(decision, Done):
        return {"task": task, "kind": "done", "answer": decision.answer, "note": decision.note}
    return {"task": task, "kind": "failed", "text": decision.text}


def _decoded(data: dict[str, Any]) -> Batch[Any] | Done | _Failed:
    """A journaled decision, as the planner made it."""
    if data["kind"] == "batch":
        # (a journal of an older version kept the subtasks as its codec gave them back)
        subtasks = read_subtasks(data["texts"]) if "texts" in data else data["subtasks"]
        return Batch(
            tuple(subtasks),
            note=data["note"],
            replaces={index: (number, at) for index, number, at in data["replaces"]},
            progress=data["progress"],
        )
    if data["kind"] == "done":
        return Done(data["answer"], note=data["note"])
    return _Failed(data["text"])


def _key(subtask: object) -> object:
    """``subtask`` as a set member (its repr when it is unhashable)."""
    try:
        hash(subtask)
    except TypeError:
        return repr(subtask)
    return subtask


def _checked(decision: object, ledger: Ledger[Any, Any]) -> Batch[Any] | Done | _Failed:
    """``decision`` if it is a decision the run can follow, else what is wrong with it.

    Its fields were checked when it was made (``Batch`` and ``Done`` check their own); what is
    left is whether each entry it replaces is in the ledger."""
    if isinstance(decision, Done):
        return decision
    if not isinstance(decision, Batch):
        return _Failed(f"the planner returned {type(decision).__name__}, not a Batch or a Done")
    for key in decision.replaces.values():
        try:
            ledger.entry(key)
        except (KeyError, TypeError, ValueError):
            return _Failed(
                f"the planner's batch replaces {key!r}, which is no (round, index) of the ledger"
            )
    return decision


Decision = Batch[S] | Done | _Failed | AwaitingApproval | None
"""What asking for the next batch gave: the planner's decision (or the journal's), what went
wrong asking for it, the question it waits on, or None: the deadline expired while it decided."""


class Replanning(Generic[S, T]):
    """One re-planning run (see ``replan``): its ledger, the budgets left and the stall count
    as fields, and each step (ask the planner, journal its decision, dispatch a round, end the
    run) as a method. Made and run once.

    Args:
      runner: runs each round's batch.
      task: what the planner plans for.
      planner: decides each batch.
      limits: the budgets, checked when they were made.
      limit: the run's deadline, in seconds from now, or None.
      trace: records each round's batch as its next slots, or None.
      durable: the run's journal, or None.
    """

    __slots__ = (
        "asked",
        "decision",
        "dispatched",
        "durable",
        "failure",
        "fresh",
        "ledger",
        "limit",
        "limits",
        "planned",
        "planner",
        "resets",
        "runner",
        "stalls",
        "succeeded",
        "task",
        "trace",
        "until",
    )

    def __init__(
        self,
        runner: Runner[S, T],
        task: str,
        planner: Planner[S, T],
        *,
        limits: ReplanLimits,
        limit: float | None,
        trace: Trace | None,
        durable: DurableRun | None,
    ) -> None:
        self.runner = runner
        self.task = task
        self.planner = planner
        self.limits = limits
        self.limit = limit
        self.trace = trace
        self.durable = durable
        self.until = trio.current_time() + limit if limit is not None else float("inf")
        self.ledger: Ledger[S, T] = Ledger(task)
        self.asked = 0  # how many decisions were asked for (or taken from the journal)
        # invariant: stalls <= max_stalls between rounds, resets <= max_resets
        self.stalls = 0
        self.resets = 0
        self.dispatched = 0  # subtasks dispatched in all rounds: at most max_subtasks
        self.succeeded: set[object] = set()  # the subtasks that succeeded so far, as set members
        self.failure: str | None = None  # the planner's last failure, for the answer's reason
        # the decision in hand, whether it is a fresh plan, and when it was asked for
        self.decision: Decision[S] = None
        self.fresh = False
        self.planned = trio.current_time()

    async def run(self) -> Answer[S, T]:
        """Ask for the first batch, then play round after round until the planner is done or
        a budget ends the run."""
        await self.ask(fresh=False, first=True)
        while True:
            answer = self.judge() or await self.play_round()
            if answer is not None:
                return answer

    # -- the steps ----------------------------------------------------------------------------

    async def ask(self, *, fresh: bool, first: bool = False) -> None:
        """Ask for the next decision (the journal's, when it has it), and hold it."""
        self.planned = trio.current_time()
        number, self.asked = self.asked, self.asked + 1
        self.decision = await self.decided(number, fresh, first)
        self.fresh = fresh

    async def decided(self, number: int, fresh: bool, first: bool) -> Decision[S]:
        """Decision ``number``: the journal's if it has it, else the planner's, journaled (a
        question it waits on is not: a resume asks the planner again, and its approval() has
        the answer then)."""
        durable = self.durable
        if durable is None:
            return await self.ask_planner(fresh, first)
        kept = await durable.decision(number)
        if kept is not None:
            return _decoded(kept)
        with planner_asks(durable.at(number)):  # what approval() asks under
            decision = await self.ask_planner(fresh, first)
        if decision is not None and not isinstance(decision, AwaitingApproval):
            await self.journal_decision(durable, number, decision)
        return decision

    async def journal_decision(
        self, durable: DurableRun, number: int, decision: Batch[S] | Done | _Failed
    ) -> None:
        """Journal decision ``number``, as it is made."""
        await durable.decided(number, _encoded(decision, self.task))

    async def ask_planner(self, fresh: bool, first: bool) -> Decision[S]:
        """The planner's decision, checked, within the run's deadline."""
        try:
            with trio.move_on_at(self.until):
                if first:
                    decision: object = await self.planner.first(self.task)
                else:
                    decision = await self.planner.next(self.task, self.ledger, fresh=fresh)
                return _checked(decision, self.ledger)
        except AwaitingApproval as question:  # a person is asked for the batch
            return question
        except Exception as exc:
            return _Failed(f"the planner raised {describe(exc)}")
        return None

    def judge(self) -> Answer[S, T] | None:
        """The answer when the decision in hand ends the run (the deadline expired while it
        was made, it waits for approval, the planner is done, or no round is left), else
        None."""
        decision = self.decision
        if decision is None:
            return self.late("while the planner decided")
        if isinstance(decision, AwaitingApproval):  # the run ends here; a resume asks again
            number = len(self.ledger.rounds) + 1
            return self.end(
                None,
                f"the planner's batch for round {number} waits for approval: {decision.question}",
                whole=False,
            )
        if isinstance(decision, Done):
            said = f": {decision.note}" if decision.note else ""
            rounds = len(self.ledger.rounds)
            after = f"{rounds} round" if rounds == 1 else f"{rounds} rounds"
            return self.end(None, f"the planner is done after {after}{said}", decision.answer)
        if isinstance(decision, _Failed):
            self.failure = decision.text
        if len(self.ledger.rounds) >= self.limits.max_rounds:
            most = self.limits.max_rounds
            return self.end("max_rounds", f"max_rounds ({most}) reached, the planner wanted more")
        return None

    async def play_round(self) -> Answer[S, T] | None:
        """Dispatch the batch in hand as the next round, record it in the ledger, and ask for
        the next decision; the answer when that ends the run."""
        decision = self.decision
        assert isinstance(decision, Batch | _Failed)  # judged: no other goes on to a round
        batch = decision if isinstance(decision, Batch) else Batch[S]((), note=decision.text)
        subtasks = list(batch.subtasks)
        most = self.limits.max_subtasks
        room = most - self.dispatched
        if subtasks and room == 0:
            return self.end(
                "max_subtasks",
                f"max_subtasks ({most}) reached, the planner wanted {len(subtasks)} more",
            )
        held_back = len(subtasks[room:])
        subtasks = subtasks[:room]
        started = trio.current_time()
        results: list[SubResult[S, T]] = []
        if subtasks:
            if started >= self.until:
                return self.late("before the round started")
            results = await self.dispatch(subtasks, started)
        self.dispatched += len(subtasks)
        number = len(self.ledger.rounds) + 1
        entries = tuple(
            Entry(number, index, result, batch.replaces.get(index))
            for index, result in enumerate(results)
        )
        error = decision.text if isinstance(decision, _Failed) else None
        finished = trio.current_time()
        done = Round(
            number, batch.note, entries, self.planned, started, finished, self.fresh, error
        )
        self.ledger.record(done)
        if finished >= self.until:
            return self.late(f"during round {number}")
        answer = self.stopped(number, results, held_back)
        if answer is not None:
            return answer
        progress = any(
            result.ok and _key(result.subtask) not in self.succeeded for result in results
        )
        self.succeeded.update(_key(result.subtask) for result in results if result.ok)
        return await self.ask_next(progress)

    async def dispatch(self, subtasks: list[S], started: float) -> list[SubResult[S, T]]:
        """Round ``len(ledger.rounds) + 1``'s results: the journal's when the round finished
        before (drawn as the journal's in the trace), else the batch run, as the trace's next
        slots, within what is left of the deadline."""
        limit = self.limit
        left = None if limit is None else self.until - started
        number = len(self.ledger.rounds) + 1
        round_run = None if self.durable is None else self.durable.at(number)
        # the round's results journaled, or taken from it when the round finished
        if round_run is not None and await round_run.decision(self.asked) is not None:
            kept = await round_run.finished(subtasks)
            if kept is not None:
                if self.trace is not None:  # the round's slots, drawn as the journal's
                    restored = self.trace.part()
                    for index, result in enumerate(kept):
                        restored.journaled(index, result.subtask)
                return kept
        part = None if self.trace is None else self.trace.part()  # the trace's next slots
        results = (await self.runner(subtasks, deadline=left, trace=part, run=round_run)).results
        if left is not None and limit is not None:
            results = _cut_by(results, left, limit)
        return results

    def stopped(
        self, number: int, results: list[SubResult[S, T]], held_back: int
    ) -> Answer[S, T] | None:
        """The answer when round ``number`` ends the run (a slot waits for approval, a budget
        is spent, or subtasks were held back), else None."""
        parked = [result for result in results if result.status is Status.AWAITING_APPROVAL]
        if parked:  # a person is asked: the run ends here, and a resume after the answer
            # runs this round again (no decision follows it in the journal) for those slots
            questions = "; ".join(
                str(result.error).removeprefix("AwaitingApproval: ") for result in parked
            )
            return self.end(None, f"round {number} waits for approval: {questions}")
        spent = [result for result in results if result.status is Status.OVER_BUDGET]
        if spent:  # a Budget could not afford a subtask: no further round could either
            said = str(spent[0].error).removeprefix("OverBudget: ")
            return self.end("budget", f"round {number}: {said}")
        if held_back:
            return self.end(
                "max_subtasks",
                f"max_subtasks ({self.limits.max_subtasks}) reached in round {number}, "
                f"{held_back} of its subtasks not dispatched",
            )
        return None

    async def ask_next(self, progress: bool) -> Answer[S, T] | None:
        """Ask for the decision after a round that made ``progress`` (or not), and count the
        stall; past ``max_stalls``, ask for a fresh plan instead, or end the run when no reset
        is left."""
        await self.ask(fresh=False)
        decision = self.decision
        if isinstance(decision, Batch) and not decision.progress:
            progress = False  # the planner's word
        self.ledger.record(dataclasses.replace(self.ledger.rounds[-1], stalled=not progress))
        self.stalls = max(0, self.stalls - 1) if progress else self.stalls + 1
        if self.stalls > self.limits.max_stalls and isinstance(decision, Batch | _Failed):
            if self.resets >= self.limits.max_resets:
                if isinstance(decision, _Failed):
                    self.failure = decision.text
                return self.end(
                    "max_stalls",
                    f"more than max_stalls ({self.limits.max_stalls}) stalled rounds, after "
                    f"max_resets ({self.limits.max_resets}) fresh plans",
                )
            self.resets += 1
            self.stalls = 0
            await self.ask(fresh=True)
        return None

    def late(self, doing: str) -> Answer[S, T]:
        """The answer of a run whose deadline expired while ``doing``."""
        limit = self.limit
        return self.end("deadline", f"the run's deadline of {limit:g}s expired {doing}")

    def end(
        self, ended_by: Budget | None, reason: str, answer: str | None = None, whole: bool = True
    ) -> Answer[S, T]:
        """The run's answer: the planner's ``answer``, or the ledger's synthesis, degraded
        (saying ``reason``) when a budget ended it, it is not ``whole`` or a subtask is left
        unsettled."""
        failure = self.failure
        if failure is not None and ended_by is not None:
            reason = f"{reason}; the planner's last failure: {failure}"
        ledger = self.ledger
        degraded = not whole or ended_by is not None or bool(ledger.unsettled())
        text = answer if answer is not None else ledger.synthesize()
        if degraded:
            text = f"{text}\n(degraded: {reason})" if text else f"(degraded: {reason})"
        return Answer(text, degraded, ended_by, reason, ledger)
