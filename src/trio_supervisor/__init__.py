"""Ordered, bounded, isolated fan-out on Trio: the supervisor pattern, as a library.

A [`Supervisor`][trio_supervisor.Supervisor] runs a worker over the subtasks of a plan, at most
``max_workers`` at a time, and returns one [`SubResult`][trio_supervisor.SubResult] per subtask
in plan order, in an [`Aggregate`][trio_supervisor.Aggregate] (``run``), or hands them over in
plan order as they finish (``stream``). Drawing a recorded run lives in
``trio_supervisor.timeline``, stand-in sub-agents for tests in ``trio_supervisor.testing``.
"""

from ._approval import Approved, AwaitingApproval, Rejected, approval
from ._budget import Budget, OverBudget, Usage, report_usage
from ._contract import Aggregate, Status, SubResult, Worker
from ._decompose import decompose
from ._hedge import Hedge
from ._identity import AttemptKey, attempt_key
from ._journal import Durable, Journal
from ._meters import Adaptive, Capacity, Meter, RateLimit, report_latency
from ._replan import Answer, Batch, Done, Entry, Ledger, Planner, ReplanLimits, Round
from ._restarts import Restarts, Strategy
from ._retry import Backoff, Retry
from ._stream import Stream
from ._supervisor import Supervisor
from ._trace import SlotTrace, Span, Trace
from ._util import fixup_module_metadata

__version__ = "0.2.0"

__all__ = [
    "Adaptive",
    "Aggregate",
    "Answer",
    "Approved",
    "AttemptKey",
    "AwaitingApproval",
    "Backoff",
    "Batch",
    "Budget",
    "Capacity",
    "Done",
    "Durable",
    "Entry",
    "Hedge",
    "Journal",
    "Ledger",
    "Meter",
    "OverBudget",
    "Planner",
    "RateLimit",
    "Rejected",
    "ReplanLimits",
    "Restarts",
    "Retry",
    "Round",
    "SlotTrace",
    "Span",
    "Status",
    "Strategy",
    "Stream",
    "SubResult",
    "Supervisor",
    "Trace",
    "Usage",
    "Worker",
    "__version__",
    "approval",
    "attempt_key",
    "decompose",
    "report_latency",
    "report_usage",
]

fixup_module_metadata(__name__, globals())
