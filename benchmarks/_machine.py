"""Where a benchmark ran, as its results say it (``"machine"`` in ``results/*.json``): the
processor, the cores, the versions. Each benchmark imports it from beside itself."""

from __future__ import annotations

import os
import platform

import trio


def cpu() -> str:
    """The processor's model name, as /proc/cpuinfo gives it (where there is one)."""
    try:
        with open("/proc/cpuinfo") as info:
            names = [
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            ]
    except OSError:
        names = []
    return names[0] if names else (platform.processor() or platform.machine())


def machine(*also: str) -> str:
    """The processor, its cores, Python's and trio's versions, then ``also`` (the versions of
    what else a benchmark measures), then the system: ``"Intel(R) Xeon(R), nproc 2, Python
    3.11.7, trio 0.35.0, Linux 6.1"``."""
    return ", ".join(
        [
            cpu(),
            f"nproc {os.cpu_count()}",
            f"Python {platform.python_version()}",
            f"trio {trio.__version__}",
            *also,
            f"{platform.system()} {platform.release()}",
        ]
    )
