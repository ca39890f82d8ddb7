"""A chat model's reply as a typed value (``trio_supervisor.agents``): the schema a request asks
the reply to follow, and the check every reply meets, whatever the server claims.

[`Output`][trio_supervisor.agents.Output] is the policy: the reply's type (a pydantic model, or
a JSON schema as a dict) and how many times a reply that does not validate is asked again. It
checks a reply's text (`Output.parse`) and says what was wrong in words a model can act on
(`Invalid`); the asking again is the agent's (``ChatAgent.validated``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel, ValidationError

from .. import Usage, _validate

RETRIES = 2
"""How many times a reply that does not validate is asked again by default (three replies in
all, the first included)."""

PROBLEM_CHARS = 500
"""The most characters of what was wrong a re-ask tells the model (and an error keeps)."""

RETRY = (
    "Your reply was not valid against the schema ({problem}). "
    "Reply again with one JSON object only."
)
"""The message a re-ask appends after the reply it refuses."""

RETRY_CHARS = len(RETRY.format(problem="x" * PROBLEM_CHARS))
"""The longest re-ask message, for an attempt's worst case."""

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_NAME = re.compile(r"[^A-Za-z0-9_-]+")


class Invalid(Exception):
    """A reply's text is not a value of the output's type: ``problem`` says why."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def cut(text: str, bound: int) -> str:
    """``text`` in at most ``bound`` characters, an ellipsis marking a cut."""
    return text if len(text) <= bound else text[: bound - 1] + "…"


def _same(text: str) -> str:
    return text


@dataclass(frozen=True, init=False)
class Output(Generic[T]):
    """The typed reply a [`ChatAgent`][trio_supervisor.agents.ChatAgent] asks for: each request
    carries its schema, every reply is validated, and one that does not validate is asked again,
    told what was wrong, at most ``retries`` times.

    ```python
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        celsius: float

    def said(prompt):  # a server that ignores response_format the first time it is asked
        return devserver.Script(reply='{"city": "Oslo", "celsius": 4.5}', prose=1)

    server = httpx2.ASGITransport(app=devserver.app(latency=(0, 0), script=said))
    async with ChatAgent(
        "m", base_url="http://x/v1", api_key="k", transport=server,
        output=Output(Weather, retries=1), max_tokens=100,
    ) as agent:
        (result,) = await Supervisor(agent, max_workers=1).run(["weather in Oslo?"])
    assert result.output == Weather(city="Oslo", celsius=4.5)
    ```

    ``ChatAgent(output=Weather)`` is ``output=Output(Weather)``. The request's
    ``response_format`` is ``{"type": "json_schema", "json_schema": {"name": ..., "schema":
    ..., "strict": true}}``; a server may ignore it (some do, and answer prose), so the reply
    is checked all the same: its text must be one JSON object (bare, or in a Markdown code
    fence) that the model validates (or, for a dict, that the JSON schema allows). Strings
    in it are masked (`mask`) before it is validated, JSON escapes and all.

    A model whose config sets ``json_schema_serialization_defaults_required`` is sent with
    every field required (as strict structured outputs ask); a reply that leaves out one with a
    default still validates.

    Args:
      schema: a pydantic ``BaseModel`` subclass (the value is an instance of it), or a JSON
        schema as a dict (the value is the decoded JSON; checked with ``jsonschema``).
      retries: how many times a reply that does not validate is asked again, within the same
        attempt: ``RETRIES`` (2) by default; 0 takes the first reply or fails.
      name: the schema's name in the request (letters, digits, ``_`` and ``-``, at most 64);
        by default the model's name in snake case, or the dict's ``title``, or ``reply``.

    Raises:
      TypeError: if ``schema`` is neither a ``BaseModel`` subclass nor a dict, ``retries``
        not an int or ``name`` not a str.
      ValueError: if ``retries`` < 0, ``name`` breaks its rule, or the dict is not a valid
        JSON schema.
    """

    schema: type[T] | Mapping[str, Any]
    """The model, or the JSON schema."""
    retries: int
    """How many times a reply that does not validate is asked again."""
    name: str
    """The schema's name in the request."""
    response_format: dict[str, Any] = field(repr=False, compare=False)
    """The request's ``response_format``: the schema, strict."""
    _check: Callable[[Any], T] = field(repr=False, compare=False)

    @overload
    def __init__(
        self: Output[M], schema: type[M], *, retries: int = ..., name: str | None = ...
    ) -> None: ...
    @overload
    def __init__(
        self: Output[Any],
        schema: Mapping[str, Any],
        *,
        retries: int = ...,
        name: str | None = ...,
    ) -> None: ...
    def __init__(self, schema: Any, *, retries: int = RETRIES, name: str | None = None) -> None:
        _validate.budget("retries", retries)
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            every = schema.model_config.get("json_schema_serialization_defaults_required")
            sent = schema.model_json_schema(mode="serialization" if every else "validation")
            default = _snake(schema.__name__)
            check = _model_check(schema)
        elif isinstance(schema, Mapping):
            sent = dict(schema)
            title = sent.get("title")
            default = _snake(title) if isinstance(title, str) and title.strip() else "reply"
            check = _schema_check(sent)
        else:
            raise TypeError(
                "output must be a pydantic BaseModel subclass or a JSON schema (a dict), got "
                f"{type(schema).__name__} {schema!r}"
            )
        name = default if name is None else name
        if not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name):
            raise ValueError(
                f"name must be 1 to 64 letters, digits, '_' or '-' (a response_format's rule), "
                f"got {name!r}"
            )
        object.__setattr__(self, "schema", schema)
        object.__setattr__(self, "retries", retries)
        object.__setattr__(self, "name", name)
        object.__setattr__(
            self,
            "response_format",
            {"type": "json_schema", "json_schema": {"name": name, "schema": sent, "strict": True}},
        )
        object.__setattr__(self, "_check", check)

    def worst_case(self, prompt: int, max_tokens: int) -> Usage:
        """The most one attempt may use, for a budget to reserve before it starts: ``retries +
        1`` requests, each reply at most ``max_tokens`` (the request's own bound), and prompts
        that grow at each re-ask by two messages, the refused reply (echoed cut to
        ``max_tokens`` characters) and what was wrong (at most ``RETRY_CHARS``), 4 tokens a
        message and at most one a character.

        ```pycon
        >>> Output({"type": "object"}, retries=2).worst_case(20, max_tokens=64)
        Usage(calls=3, input_tokens=2034, output_tokens=192, cost=0.0)

        ```

        Args:
          prompt: the first request's prompt, in tokens at most.
          max_tokens: the most tokens a reply may hold, as each request says.

        Raises:
          TypeError: if ``prompt`` or ``max_tokens`` is not an int.
          ValueError: if ``prompt`` < 0 or ``max_tokens`` < 1.
        """
        _validate.budget("prompt", prompt)
        _validate.count("max_tokens", max_tokens)
        calls = self.retries + 1
        grown = (4 + max_tokens) + (4 + RETRY_CHARS)  # the prompt's growth, a re-ask
        prompts = calls * prompt + grown * calls * (calls - 1) // 2
        return Usage(calls, input_tokens=prompts, output_tokens=calls * max_tokens)

    def parse(self, text: str, masked: Callable[[str], str] = _same) -> T:
        """The value ``text`` holds: the JSON object itself, or the first Markdown code fence
        that holds one (```json ... ```), as models often wrap their JSON.

        Args:
          text: the reply's text.
          masked: what masks each string in the decoded JSON (a key spelled in JSON escapes).

        Returns:
          A model instance, or (for a JSON schema) the decoded JSON.

        Raises:
          Invalid: if neither is a value of the type (the whole text's problem, when no
            fence holds one), with what was wrong.
        """
        try:
            return self._parse(text, masked)
        except Invalid as whole:
            fenced = _FENCE.search(text)
            if fenced is None:
                raise
            try:
                return self._parse(fenced.group(1), masked)
            except Invalid:
                raise whole from None

    def _parse(self, text: str, masked: Callable[[str], str]) -> T:
        problem: str | None = None
        try:
            data = _masked(json.loads(text), masked)
        except ValueError as exc:  # the reply's words are not kept as a cause
            problem = f"the reply is not JSON: {exc}"
        except RecursionError:
            problem = "the reply's JSON nests too deep"
        if problem is not None:
            raise Invalid(problem)
        return self._check(data)


def _invalid(problems: list[str]) -> Invalid:
    """What was wrong, each problem with its place (``batch.0.subtask: Field required``)."""
    return Invalid(cut("; ".join(problems), PROBLEM_CHARS))


def _model_check(model: type[BaseModel]) -> Callable[[Any], Any]:
    """A check of decoded JSON against ``model``: its instance, or `Invalid`."""

    def check(data: Any) -> Any:
        try:  # validated as JSON (a datetime as text, say), as the reply spelled it
            return model.model_validate_json(json.dumps(data))
        except ValidationError as error:
            problems = [_placed(item["loc"], item["msg"]) for item in error.errors()]
        raise _invalid(problems)

    return check


def _schema_check(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A check of decoded JSON against the JSON schema ``schema``: the JSON, or `Invalid`."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - the agents extra brings it
        raise ImportError(
            "an output given as a JSON schema needs jsonschema: "
            "pip install 'trio-supervisor[agents]'"
        ) from None
    kind = jsonschema.validators.validator_for(schema)
    try:
        kind.check_schema(schema)
    except jsonschema.SchemaError as error:
        said = cut(" ".join(str(error.message).split()), 200)
        raise ValueError(f"output is not a valid JSON schema: {said}") from None
    validator = kind(schema)

    def check(data: Any) -> Any:
        found = [_placed(tuple(e.absolute_path), e.message) for e in validator.iter_errors(data)]
        if found:
            raise _invalid(found)
        return data

    return check


def _placed(where: tuple[Any, ...], message: str) -> str:
    place = ".".join(str(part) for part in where)
    message = " ".join(str(message).split())
    return f"{place}: {message}" if place else message


def _masked(data: Any, masked: Callable[[str], str]) -> Any:
    """``data`` (decoded JSON) with each string in it, a key included, masked."""
    if isinstance(data, str):
        return masked(data)
    if isinstance(data, list):
        return [_masked(item, masked) for item in data]
    if isinstance(data, dict):
        return {masked(key): _masked(value, masked) for key, value in data.items()}
    return data


def _snake(name: str) -> str:
    """``PlannerReply`` -> ``planner_reply``, in a response_format name's alphabet."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return _NAME.sub("_", spaced).lower()[:64] or "reply"
