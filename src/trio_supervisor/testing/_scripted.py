"""A scripted planner: deterministic rules over the ledger, for the course and the tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._decompose import decompose
from .._replan import Batch, Done, Ledger


class ScriptedPlanner:
    """A [`Planner`][trio_supervisor.Planner] whose decisions follow fixed rules, so that a
    re-planning run is the same every time.

    ```python
    planner = ScriptedPlanner(reroutes={"reviews": ["reviews, from app stores"]})
    agent = SimulatedAgent(0, fail={"reviews"})
    answer = await Supervisor(agent, max_workers=2).replan("pricing; reviews", planner)
    assert [len(done.entries) for done in answer.ledger.rounds] == [2, 1]  # then rerouted
    assert not answer.degraded  # the failure is settled by its replacement
    ```

    The first batch is the task split by [`decompose`][trio_supervisor.decompose]. After each
    round, it reads that round's entries:

    - an output that names a key of ``follow_ups`` spawns its follow-up subtasks (a result that
      names a competitor spawns a subtask about that competitor);
    - a failed subtask that names a key of ``reroutes`` is rerouted: the first of its
      alternatives not yet dispatched replaces it (the reviews, from another source);
    - asked for a fresh plan, every failed subtask still without a replacement is tried once more
      as it was.

    A subtask already in the ledger is never dispatched again by a rule. When the rules give
    nothing new, it is done if every failure has a successful replacement, and otherwise
    it answers an empty batch that says so, a stall (``progress=False``).

    Args:
      follow_ups: a word an output may hold -> the subtasks to follow it up with.
      reroutes: a word a failed subtask may hold -> the subtasks to try instead, in order.

    Raises:
      TypeError: if a rule's subtasks are a str rather than a sequence of them.
    """

    def __init__(
        self,
        *,
        follow_ups: Mapping[str, Sequence[str]] | None = None,
        reroutes: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        for name, rules in (("follow_ups", follow_ups), ("reroutes", reroutes)):
            for word, subtasks in (rules or {}).items():
                if isinstance(subtasks, str):
                    raise TypeError(
                        f"{name}[{word!r}] must be a sequence of subtasks, got the str "
                        f"{subtasks!r}: write [{subtasks!r}]"
                    )
        self.follow_ups = {word: tuple(subs) for word, subs in (follow_ups or {}).items()}
        self.reroutes = {word: tuple(subs) for word, subs in (reroutes or {}).items()}

    async def first(self, task: str) -> Batch[str] | Done:
        """The task, split into subtasks.

        Args:
          task: the task.

        Returns:
          The first batch.
        """
        subtasks = decompose(task)
        return Batch(subtasks, note=f"the task split in {len(subtasks)}")

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Batch[str] | Done:
        """The next batch, by the rules, from the last round's entries.

        Args:
          task: the task.
          ledger: every round so far.
          fresh: give a fresh plan: every failure still unsettled is tried again.

        Returns:
          The next batch, or Done when nothing is left to try and nothing is missing.
        """
        known = {entry.subtask for entry in ledger.entries}
        subtasks: list[str] = []
        replaces: dict[int, tuple[int, int]] = {}
        notes: list[str] = []

        def add(subtask: str, why: str, replacing: tuple[int, int] | None = None) -> None:
            if replacing is not None:
                replaces[len(subtasks)] = replacing
            subtasks.append(subtask)
            known.add(subtask)
            notes.append(why)

        last = ledger.rounds[-1].entries if ledger.rounds else ()
        for entry in last:
            result = entry.result
            if result.ok:
                for word, follow in self.follow_ups.items():
                    if word in str(result.output):
                        for subtask in follow:
                            if subtask not in known:
                                add(subtask, f"{result.subtask} names {word}: follow it up")
            else:
                for word, alternatives in self.reroutes.items():
                    fresh_ones = [alt for alt in alternatives if alt not in known]
                    if word in str(result.subtask) and fresh_ones:
                        add(fresh_ones[0], f"{result.subtask} failed: rerouted", entry.key)
                        break
        if fresh:
            unsettled = {entry.key: entry for entry in ledger.unsettled()}
            for key, entry in unsettled.items():
                if not any(other.replaces == key for other in ledger.entries):
                    add(entry.subtask, f"fresh plan: {entry.subtask} once more", key)
        if subtasks:
            return Batch(subtasks, note="; ".join(notes), replaces=replaces)
        missing = ledger.unsettled()
        if not missing:
            return Done(note="every subtask has a result")
        names = ", ".join(str(entry.subtask) for entry in missing)
        return Batch([], note=f"nothing new to try; still missing: {names}", progress=False)
