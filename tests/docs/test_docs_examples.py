"""The code the docs show from docs/examples/ runs, and does what the pages say it does."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

import trio
import trio.testing

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_trio_cancels_again_at_every_checkpoint_asyncio_delivers_once() -> None:
    cancellation = example("cancellation")
    clock = trio.testing.MockClock(autojump_threshold=0)
    assert trio.run(cancellation.trio_side, clock=clock) == [
        "Cancelled where it waited",
        "Cancelled again at the next checkpoint",
    ]
    assert asyncio.run(cancellation.asyncio_side()) == [
        "CancelledError where it waited",
        "the next await ran",
        "the task ended cancelled",
    ]
