"""Stand-ins for real sub-agents, for tests and demos (as `trio.testing` is for trio).

A [`SimulatedAgent`][trio_supervisor.testing.SimulatedAgent] answers after a latency fixed by a
seed, and fails or hangs on the subtasks it is told to, so a supervisor's behaviour can be shown
and checked on virtual time (`trio.testing.MockClock`) with no network and no model. A
[`ScriptedPlanner`][trio_supervisor.testing.ScriptedPlanner] stands in for an LLM planner in a
re-planning run ([`Supervisor.replan`][trio_supervisor.Supervisor.replan]).
"""

from .._util import fixup_module_metadata
from ._scripted import ScriptedPlanner
from ._simulate import SimulatedAgent, SubAgentError

__all__ = ["ScriptedPlanner", "SimulatedAgent", "SubAgentError"]

fixup_module_metadata(__name__, globals())
