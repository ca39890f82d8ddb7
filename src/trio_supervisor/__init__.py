"""Ordered, bounded, isolated fan-out on Trio: the supervisor pattern, as a library."""

from ._contract import Aggregate, Status, SubResult, Worker, describe
from ._decompose import decompose
from ._retry import Backoff
from ._simulate import SimulatedAgent, SubAgentError
from ._stream import Stream
from ._supervisor import Supervisor
from ._timeline import render_svg, render_timeline, timeline_rows
from ._trace import Trace

__all__ = [
    "Aggregate",
    "Backoff",
    "SimulatedAgent",
    "Status",
    "Stream",
    "SubAgentError",
    "SubResult",
    "Supervisor",
    "Trace",
    "Worker",
    "decompose",
    "describe",
    "render_svg",
    "render_timeline",
    "timeline_rows",
]
