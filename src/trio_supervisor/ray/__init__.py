"""Workers on a Ray cluster: a sync function's calls spread over every node's cores.

[`RayWorker`][trio_supervisor.ray.RayWorker] runs each call of a sync function as a
[Ray task](https://docs.ray.io/en/latest/ray-core/tasks.html) on a cluster, so that a
[`Supervisor`][trio_supervisor.Supervisor] keeps its bound, plan order, timeouts, retries and
trace while the work runs on other machines. A crash there fails only its slot, with
[`WorkerCrashed`][trio_supervisor.processes.WorkerCrashed], as with
[`ProcessWorker`][trio_supervisor.processes.ProcessWorker], and a cancelled slot kills its task.
[`start_local`][trio_supervisor.ray.start_local] starts a cluster on this machine, reachable on
loopback only.

This module needs the ``ray`` extra (``pip install 'trio-supervisor[ray]'``); the core
``trio_supervisor`` does not import it.
"""

from .._util import fixup_module_metadata
from ._worker import RayWorker, start_local

__all__ = ["RayWorker", "start_local"]

fixup_module_metadata(__name__, globals())
