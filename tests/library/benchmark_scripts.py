"""The benchmark scripts of ``benchmarks/``, loaded as modules for the tests that run them at a
tiny size: one loader, which finds what a script imports from beside itself (``_machine``) as
running the script would."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module named ``benchmarks_<name>``."""
    if str(BENCHMARKS) not in sys.path:  # python benchmarks/x.py puts it first
        sys.path.append(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
