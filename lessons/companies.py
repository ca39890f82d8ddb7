"""What a company is in the course's tasks, from step 23 on: ``name`` or ``name: a, b``.

The tree of step 23 researches companies, each a child supervisor over its own subtasks; how a
company is written in a task is the course's own format, not an idea of a supervisor, so it is
kept here, outside the steps, for every step from 21 on (and the runner) to read.
"""

from __future__ import annotations

from trio_supervisor import decompose


def subtasks_of(company: str) -> list[str]:
    """``"acme: pricing, reviews"`` -> ``["acme pricing", "acme reviews"]``; a subtask with no
    colon is a leaf of its own: ``"acme"`` -> ``["acme"]``.

    Raises:
      ValueError: for a company without a name (``": x, y"``), or whose colon lists nothing.
    """
    name, colon, listed = company.partition(":")
    aspects = [aspect.strip() for aspect in listed.split(",") if aspect.strip()]
    if not name.strip() or (colon and not aspects):
        why = "it has no name" if not name.strip() else "nothing follows its colon"
        rule = "a company is 'name' or 'name: subtask, subtask'"
        raise ValueError(f"{rule}, got {company.strip()!r}: {why}")
    return [f"{name.strip()} {aspect}" for aspect in aspects] or [name.strip()]


def check_task(task: str) -> None:
    """Refuse a task whose companies are not each ``name`` or ``name: a, b``, before any work.

    Raises:
      ValueError: naming the first malformed company, and the rule.
    """
    for company in decompose(task):
        subtasks_of(company)
