"""Sub-agents across a network: a worker that calls an OpenAI-compatible chat endpoint.

A [`ChatAgent`][trio_supervisor.agents.ChatAgent] is a worker for a
[`Supervisor`][trio_supervisor.Supervisor]: it sends each subtask to ``/v1/chat/completions``
through the ``openai`` SDK (which runs on trio through anyio) and returns the reply's text. Its
failures are classified for ``retry_on``: [`TRANSIENT`][trio_supervisor.agents.TRANSIENT] is
what is worth retrying (a 429 [`RateLimited`][trio_supervisor.agents.RateLimited], whose
``retry_after`` the supervisor obeys; a 5xx, a refused connection or a timeout
[`TransientError`][trio_supervisor.agents.TransientError]), and a
[`PermanentError`][trio_supervisor.agents.PermanentError], a
[`MalformedReply`][trio_supervisor.agents.MalformedReply] or a model's refusal
[`Refused`][trio_supervisor.agents.Refused] is not. Whatever status is retried, its error
carries the server's ``Retry-After`` as ``retry_after``. Given ``output`` (a pydantic model, a
JSON schema, or an [`Output`][trio_supervisor.agents.Output]), it returns the reply as a
validated value instead, asking again, within the attempt, when a reply does not validate, and
failing with an [`InvalidReply`][trio_supervisor.agents.InvalidReply] past the bound.

A [`ChatPlanner`][trio_supervisor.agents.ChatPlanner] is a
[`Planner`][trio_supervisor.Planner] for [`Supervisor.replan`][trio_supervisor.Supervisor.replan]:
it asks a chat model for each next batch as JSON against a schema
([`PlannerReply`][trio_supervisor.agents.PlannerReply]), through a typed ``ChatAgent``.

This module needs the ``agents`` extra (``pip install 'trio-supervisor[agents]'``); the core
``trio_supervisor`` does not import it.
"""

from .._util import fixup_module_metadata
from ._chat import (
    REQUEST_TIMEOUT,
    TRANSIENT,
    AgentError,
    ChatAgent,
    InvalidReply,
    MalformedReply,
    PermanentError,
    RateLimited,
    Refused,
    TransientError,
    mask,
    parse_retry_after,
)
from ._output import Output
from ._planner import SYSTEM as PLANNER_SYSTEM
from ._planner import ChatPlanner, PlannedSubtask, PlannerReply, UnusableReply, recorded_replies

__all__ = [
    "PLANNER_SYSTEM",
    "REQUEST_TIMEOUT",
    "TRANSIENT",
    "AgentError",
    "ChatAgent",
    "ChatPlanner",
    "InvalidReply",
    "MalformedReply",
    "Output",
    "PermanentError",
    "PlannedSubtask",
    "PlannerReply",
    "RateLimited",
    "Refused",
    "TransientError",
    "UnusableReply",
    "mask",
    "parse_retry_after",
    "recorded_replies",
]

fixup_module_metadata(__name__, globals())
