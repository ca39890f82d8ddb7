"""The course's machinery, apart from its steps: the record of each step (``steps``), their
demos (``demos``), the runner behind ``python -m lessons`` (``runner``, with ``arguments``,
``running``, ``showing``, ``live`` and ``recording``), and the laws with the exercises they
grade (``laws``, ``probes``, ``exercises``). The docs site's hook lives in ``tools/docs``."""
