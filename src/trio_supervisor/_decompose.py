"""Planning: split a task into independent subtasks."""

from __future__ import annotations

import re

_SEPARATORS = re.compile(r"[;\r\n]")


def decompose(task: str) -> list[str]:
    """Split a task into its subtasks, in plan order.

    ```pycon
    >>> decompose("competitor pricing; customer reviews ;; inventory")
    ['competitor pricing', 'customer reviews', 'inventory']

    ```

    Subtasks are separated by ``;`` or newlines; each is stripped and empty ones are dropped, so a
    task with no separator is one subtask.

    Args:
      task: the task, for example ``"competitor pricing; customer reviews; inventory"``.

    Returns:
      The non-empty subtasks, in the order they were written.

    Raises:
      TypeError: if ``task`` is not a str.
      ValueError: if ``task`` holds no subtask (it is empty, blank or only separators).
    """
    if not isinstance(task, str):
        raise TypeError(f"task must be a str, got {type(task).__name__}")
    subtasks = [part.strip() for part in _SEPARATORS.split(task)]
    subtasks = [part for part in subtasks if part]
    if not subtasks:
        raise ValueError(f"task must hold at least one non-blank subtask, got {task!r}")
    return subtasks
