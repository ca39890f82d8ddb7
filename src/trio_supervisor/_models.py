"""Pydantic models in the journal's JSON: an output that is a model instance (a typed
``ChatAgent``'s) is written with its class's import path, and read back as an instance of it.

The core imports no pydantic: a value can only be a model if pydantic was imported, and a
journal only imports the class (and so pydantic) when it reads one back.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

MARK = "$model"
"""The key naming a model's class in its JSON: ``{"$model": "pkg.mod:Name", "fields": {...}}``."""


def encoded(value: object) -> dict[str, Any]:
    """``value``, a pydantic model instance, as JSON can hold it: its class's import path and
    its fields (as ``model_dump(mode="json")`` gives them); for ``json.JSONEncoder(default=)``.

    Raises:
      TypeError: if ``value`` is not a model (as the JSON encoder does), or its class cannot
        be imported back by its path (defined inside a function, say).
    """
    pydantic = sys.modules.get("pydantic")
    kind = type(value)
    if pydantic is None or not isinstance(value, pydantic.BaseModel):
        raise TypeError(f"Object of type {kind.__name__} is not JSON serializable")
    path = f"{kind.__module__}:{kind.__qualname__}"
    if _found(path) is not kind:
        raise TypeError(
            f"a pydantic model is journaled by its class's import path, and {path} does not "
            "import back as its class: define the model at a module's top level"
        )
    return {MARK: path, "fields": value.model_dump(mode="json")}


def restored(data: dict[str, Any]) -> Any:
    """``data`` as JSON decoded it; a model's (see `encoded`) as an instance of its class, for
    ``json.loads(object_hook=)``.

    Raises:
      ValueError: if a model's class no longer imports, or its fields no longer validate.
    """
    path = data.get(MARK)
    if len(data) != 2 or not isinstance(path, str) or "fields" not in data:
        return data
    kind = _found(path)
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not (isinstance(kind, type) and issubclass(kind, pydantic.BaseModel)):
        raise ValueError(
            f"the journal holds an instance of the pydantic model {path}, which does not "
            "import here: read it where that class imports"
        )
    try:
        return kind.model_validate_json(json.dumps(data["fields"]))  # type: ignore[attr-defined]
    except pydantic.ValidationError as error:
        said = " ".join(str(error).split())[:300]
        raise ValueError(f"the journal's {path} no longer validates: {said}") from None


def _found(path: str) -> object:
    """What ``module:qualified.name`` imports as, or None."""
    module, _, name = path.partition(":")
    try:
        found: object = importlib.import_module(module)
    except Exception:  # a module gone, or failing as it loads: not found
        return None
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


def decode(data: str | bytes) -> Any:
    """``json.loads``, reading models back; as fast as it for JSON that holds none."""
    held = MARK in data if isinstance(data, str) else MARK.encode() in data
    if not held:
        return json.loads(data)
    return json.loads(data, object_hook=restored)
