"""Ordered, bounded, isolated fan-out on Trio: the supervisor pattern, as a library."""

from ._contract import Aggregate, Status, SubResult, Worker
from ._decompose import decompose
from ._retry import Backoff
from ._stream import Stream
from ._supervisor import Supervisor
from ._trace import SlotTrace, Span, Trace

__all__ = [
    "Aggregate",
    "Backoff",
    "SlotTrace",
    "Span",
    "Status",
    "Stream",
    "SubResult",
    "Supervisor",
    "Trace",
    "Worker",
    "decompose",
]
