import gc

import pytest
from hypothesis import settings

# Time in these tests is virtual: a slow machine must not fail them, so no per-example deadline.
settings.register_profile("project", deadline=None, print_blob=True)
settings.load_profile("project")


def pytest_collection_finish(session: pytest.Session) -> None:
    """What is alive once the tests are collected (every module the tests import, and the tests
    themselves) lives to the end: moved out of the collector's way, so that each of its full
    passes, which the Hypothesis tests set off again and again, scans only what the tests made
    since (it scanned the whole import graph each time: most of a grader's CPU)."""
    del session
    gc.collect()
    gc.freeze()
