"""The engine: how a supervisor's slots are run, below the runs and streams that use it.

Layered bottom up, each module importing only those before it:

- ``places``: the capacity bound (``max_workers``, a shared ``Capacity``) lanes hold a place of;
- ``attempt``: the one attempt (meters, the worker's call, its failure, its timeout, the
  meters told, the span, the next wait), the ``Engine`` that holds a supervisor's settings,
  the ``Timer`` that times a run's attempts;
- ``lanes``: worker tasks that run slot after slot from a ``Feed`` (a run's or a stream's);
- ``restarting``: a run whose restarts are counted or grouped (generations, strategies,
  intensity), each attempt in a task of its own.
"""
