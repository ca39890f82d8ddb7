"""The course's steps: every ``lessons/stepNN_<name>.py``, found by its name."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import lessons

_STEP_NAME = re.compile(r"step(\d\d)_\w+")
PART_TWO = 11
"""The first step of Part II: from it on a step builds on the library's ``Supervisor`` and adds
one idea in a small file of its own, instead of growing the hand-written ``supervise`` of the
step before."""


def steps() -> dict[int, str]:
    """Step number -> module name of every ``lessons/stepNN_<name>.py``: add a file, add a step."""
    found = {}
    for module in pkgutil.iter_modules(lessons.__path__):
        match = _STEP_NAME.fullmatch(module.name)
        if match:
            found[int(match.group(1))] = module.name
    return dict(sorted(found.items()))


def load_step(name: str) -> ModuleType:
    """Import ``lessons.<name>``."""
    return importlib.import_module(f"lessons.{name}")


def step_path(name: str) -> Path:
    """The file of step ``name``: ``lessons/<name>.py``."""
    return Path(lessons.__file__).parent / f"{name}.py"


def step_number(name: str) -> int:
    """The number of step ``name`` (``step03_capacity_limiter`` -> 3)."""
    match = _STEP_NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"a step is named stepNN_<name>, got {name!r}")
    return int(match.group(1))


def part_two(name: str) -> bool:
    """Whether step ``name`` is in Part II (see `PART_TWO`)."""
    return step_number(name) >= PART_TWO
