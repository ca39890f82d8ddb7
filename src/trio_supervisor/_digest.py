"""A plan's digest: how the journal writes a subtask (its repr), a plan's fingerprint and its
subtasks' texts, and the checks that a resumed plan, or a lazy stream's input as it is pulled, is
the one journaled, naming where it differs. It knows nothing of SQLite.
"""

from __future__ import annotations

import ast
import hashlib
import zlib
from collections.abc import Iterable, Sequence
from typing import Any


def subtask_text(subtask: Any) -> str:
    """How the journal writes a subtask: its repr, in the ``results`` table, in a plan's digest
    and in a re-planning run's decisions (where it must read back, see
    [`subtask_texts`][trio_supervisor._digest.subtask_texts])."""
    return repr(subtask)


def subtask_texts(subtasks: Iterable[Any]) -> list[str]:
    """The text of each of ``subtasks``, for a decision the journal gives back as it was made.

    ```pycon
    >>> batch = [("acme", "pricing"), ["eu", ("uk", 2)]]
    >>> subtask_texts(batch)
    ["('acme', 'pricing')", "['eu', ('uk', 2)]"]
    >>> read_subtasks(subtask_texts(batch)) == batch
    True

    ```

    Raises:
      TypeError: if a subtask's text does not read back as the subtask (an object of a class
        of its own, a NaN, an empty set), naming it and the rule.
    """
    texts = []
    for subtask in subtasks:
        text = subtask_text(subtask)
        try:
            back = subtask_text(ast.literal_eval(text))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            back = None
        if back != text:
            raise TypeError(
                f"the subtask {text} does not read back from its repr, which is how the journal "
                "keeps a re-planning run's subtasks: give subtasks of str, numbers, tuples, lists, "
                "dicts, True, False and None"
            )
        texts.append(text)
    return texts


def read_subtasks(texts: Iterable[str]) -> list[Any]:
    """The subtasks [`subtask_texts`][trio_supervisor._digest.subtask_texts] wrote, as they
    were: tuples as tuples, at any depth."""
    return [ast.literal_eval(text) for text in texts]


class PlanDigest:
    """The fingerprint of a plan and its subtasks' texts, as the ``runs`` table keeps them,
    made one subtask at a time (so a lazy stream's input is digested as it is pulled)."""

    __slots__ = ("_hash", "_pack", "_packed", "count")

    def __init__(self) -> None:
        self._hash = hashlib.blake2b(digest_size=16)
        self._pack = zlib.compressobj(1)
        self._packed: list[bytes] = []
        self.count = 0

    def add(self, text: str) -> None:
        """The next subtask's text (NUL-separated from the one before)."""
        data = (f"\x00{text}" if self.count else text).encode("utf-8", "backslashreplace")
        self._hash.update(data)
        self._packed.append(self._pack.compress(data))
        self.count += 1

    def done(self) -> tuple[str, bytes]:
        """The fingerprint and the compressed texts of the subtasks added."""
        self._packed.append(self._pack.flush())
        return self._hash.hexdigest(), b"".join(self._packed)


def digest_plan(plan: Sequence[Any]) -> tuple[str, bytes]:
    """The fingerprint of ``plan`` and its subtasks' texts, as the ``runs`` table keeps them."""
    digest = PlanDigest()
    for subtask in plan:
        digest.add(subtask_text(subtask))
    return digest.done()


def plan_texts(packed: bytes) -> list[str]:
    """The subtasks' texts of a plan ``digest_plan`` packed."""
    text = zlib.decompress(packed).decode("utf-8", "backslashreplace")
    return text.split("\x00") if text else []


def first_difference(kept: bytes, plan: Sequence[Any]) -> str:
    """Where ``plan`` differs from the plan journaled as ``kept``, said in words."""
    before = plan_texts(kept)
    for slot, (old, subtask) in enumerate(zip(before, plan, strict=False)):
        new = subtask_text(subtask)
        if old != new:
            return f"slot {slot} was {old}, now {new}"
    return f"it had {len(before)} slots, now {len(plan)}"


def unlike(seen: list[tuple[int, str]], texts: Sequence[str]) -> str | None:
    """Where a plan of ``texts`` differs from the slots journaled, ``seen`` (each slot and its
    subtask's text, in slot order: a plan that was never digested, a lazy stream's, cut short),
    said in words; None if it does not."""
    for slot, text in seen:
        if slot >= len(texts):
            return f"it had at least {seen[-1][0] + 1} slots, now {len(texts)}"
        if texts[slot] != text:
            return f"slot {slot} was {text}, now {texts[slot]}"
    return None


class InputCheck:
    """What a lazy stream's input is checked against as it is pulled: the plan journaled under
    its ``run_id`` (by a run, a stream of a list, or a lazy stream that pulled its input to the
    end), or, when none was, the subtask of each slot journaled. An input pulled to its end
    with no plan journaled is digested as it goes, to be journaled as the plan
    ([`Journal.ended`][trio_supervisor.Journal.ended])."""

    __slots__ = ("_digest", "_plan", "_seen", "_stop", "run_id")

    def __init__(self, run_id: str, plan: list[str] | None, seen: list[tuple[int, str]]) -> None:
        self.run_id = run_id
        self._plan = plan
        self._seen: dict[int, str] = dict(seen)
        # the slots an input must reach: all the plan's, or past every slot journaled
        self._stop = len(plan) if plan is not None else max(self._seen, default=-1) + 1
        self._digest = PlanDigest() if plan is None else None

    def pulled(self, slot: int, subtask: Any) -> str | None:
        """Why the input's ``subtask`` at ``slot`` (pulled in slot order) is refused, or None."""
        text = subtask_text(subtask)
        if self._digest is not None:
            self._digest.add(text)
        if self._plan is not None:
            if slot >= len(self._plan):
                return self._refused(f"it had {slot} slots, now at least {slot + 1}")
            old: str | None = self._plan[slot]
        else:
            old = self._seen.get(slot)
        if old is not None and old != text:
            return self._refused(f"slot {slot} was {old}, now {text}")
        return None

    def ended(self, count: int) -> str | None:
        """Why an input that ended after ``count`` subtasks is refused, or None."""
        if count >= self._stop:
            return None
        at_least = "" if self._plan is not None else "at least "
        return self._refused(f"it had {at_least}{self._stop} slots, now {count}")

    def digest(self) -> tuple[str, bytes] | None:
        """The digest of an input pulled to its end, when no plan was journaled; else None."""
        return None if self._digest is None else self._digest.done()

    def _refused(self, difference: str) -> str:
        return (
            f"run {self.run_id!r} was journaled with another input ({difference}): give this "
            "input a run_id of its own, or the input it was journaled with"
        )
