"""What the package does to itself: public names show their public module."""

from __future__ import annotations

from typing import Any


def fixup_module_metadata(module: str, namespace: dict[str, Any]) -> None:
    """Set ``__module__`` of every class and function named in ``namespace["__all__"]`` (and of
    their methods) to ``module``, so that reprs, tracebacks and the docs show the public path
    (``trio_supervisor.Supervisor``), not the private module that defines it, as trio does."""
    seen: set[int] = set()

    def fix(obj: Any) -> None:
        if id(obj) in seen or not str(getattr(obj, "__module__", "")).startswith(
            "trio_supervisor."
        ):
            return
        seen.add(id(obj))
        if not isinstance(obj, type) and not callable(obj):
            return
        try:
            obj.__module__ = module
        except (AttributeError, TypeError):  # a C type or an alias: left as it is
            return
        if isinstance(obj, type):
            for attr in vars(obj).values():
                fix(getattr(attr, "fget", attr))

    for name in namespace["__all__"]:
        if not name.startswith("__"):
            fix(namespace[name])
