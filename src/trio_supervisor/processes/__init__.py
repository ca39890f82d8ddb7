"""Workers in worker processes: a crash there is a failed slot, not a dead supervisor.

A Python exception is contained by a [`Supervisor`][trio_supervisor.Supervisor]; a hard crash
is not: a segfault in a C extension, an ``os._exit``, or a kill for memory ends the whole
process, the supervisor and every finished result with it.
[`ProcessWorker`][trio_supervisor.processes.ProcessWorker] runs a sync function's calls in
worker processes (``trio_parallel``'s pool), so such a crash fails only its own call, with
[`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed], and a timeout kills a hung call's
process.

This module needs the ``processes`` extra (``pip install 'trio-supervisor[processes]'``); the
core ``trio_supervisor`` does not import it.
"""

from .._util import fixup_module_metadata
from ._sending import UnpicklableError, WorkerCrashed
from ._worker import ProcessWorker, crash_reason

__all__ = ["ProcessWorker", "UnpicklableError", "WorkerCrashed", "crash_reason"]

fixup_module_metadata(__name__, globals())
