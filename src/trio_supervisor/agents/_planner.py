"""The LLM planner: a chat endpoint asked for each next batch as JSON against a schema
(``trio_supervisor.agents``), and the wire format the loopback server reads to play it.

The request's user message is the task, whether a fresh plan is asked for, and the ledger, as
JSON (`request_text`); the reply must be one JSON object that
`PlannerReply` (a pydantic model, whose JSON schema the system prompt carries)
validates. The checking and the asking again are a typed ``ChatAgent``'s (``output=``): pydantic
checks types, required fields and unknown keys, each error with its place, so a reply that is
almost right is refused with a message a model can act on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import trio
from pydantic import BaseModel, ConfigDict, Field

from .. import _validate
from .._contract import Status, SubResult
from .._replan import Batch, Done, Entry, Ledger, Round
from ._chat import AgentError, ChatAgent, InvalidReply, PermanentError
from ._output import Output

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam


# the list `recorded_replies` keeps, while its block runs: each planner's task appends to it
_REPLIES: ContextVar[list[str] | None] = ContextVar("trio_supervisor_planner_replies", default=None)


@contextmanager
def recorded_replies() -> Iterator[list[str]]:
    """Every reply a [`ChatPlanner`][trio_supervisor.agents.ChatPlanner] is given while the
    block runs, its text as the model wrote it, in the order they came (a reply that did not
    validate, and was asked again, included): what the model said, to show or log beside the
    run's ledger, which keeps the decisions the replies came to.

    ```pycon
    >>> import httpx2
    >>> from trio_supervisor import Supervisor
    >>> from trio_supervisor.testing import SimulatedAgent, devserver
    >>> async def main():
    ...     model = httpx2.ASGITransport(app=devserver.app())
    ...     url = "http://x/v1"
    ...     async with ChatPlanner("m", base_url=url, api_key="k", transport=model) as chat:
    ...         await Supervisor(SimulatedAgent(0), max_workers=2).replan("a; b", chat)
    >>> with recorded_replies() as replies:
    ...     trio.run(main)
    >>> [PlannerReply.model_validate_json(reply).done for reply in replies]
    [False, True]

    ```

    The block's tasks, and the tasks they start, share the list (a context variable holds
    it): a run started in the block (``trio.run`` too) records into it.
    """
    replies: list[str] = []
    token = _REPLIES.set(replies)
    try:
        yield replies
    finally:
        _REPLIES.reset(token)


class PlannedSubtask(BaseModel):
    """One subtask of the next batch, as the reply gives it.

    ```pycon
    >>> PlannedSubtask.model_validate({"subtask": "reviews, from app stores", "replaces": [1, 0]})
    PlannedSubtask(subtask='reviews, from app stores', replaces=(1, 0))

    ```
    """

    model_config = ConfigDict(extra="forbid")

    subtask: str = Field(min_length=1, description="what a worker is asked to do")
    replaces: tuple[int, int] | None = Field(
        default=None, description="[round, index] of the failed entry this one stands in for"
    )


class PlannerReply(BaseModel):
    """The reply a planner model must give: done (with an answer), or the next batch.

    ```pycon
    >>> reply = PlannerReply.model_validate_json('{"done": false, "batch": [{"subtask": "a"}]}')
    >>> reply.done, [planned.subtask for planned in reply.batch], reply.progress
    (False, ['a'], True)
    >>> PlannerReply.model_validate_json('{"done": true, "answr": "42"}')  # no unknown keys
    Traceback (most recent call last):
      ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for PlannerReply
    answr
      Extra inputs are not permitted ...

    ```
    """

    # in the schema sent as response_format every field is required (strict structured
    # outputs ask for that); a reply that leaves one out still validates, with its default
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    done: bool = Field(description="true when the task is answered: no further batch")
    note: str = Field(default="", description="why, in a few words")
    answer: str | None = Field(default=None, description="the answer, when done")
    batch: list[PlannedSubtask] = Field(default_factory=list, description="the next batch")
    progress: bool = Field(default=True, description="false if the last round made no progress")


MARK = "You are the planner of a supervisor that runs subtasks in parallel rounds."
SYSTEM = (
    f"{MARK} The user message is a JSON object: the task, whether a fresh plan is asked for "
    "(the rounds so far stalled), and the ledger: every round so far, with each subtask's "
    "result (its output, or the error it failed with). Decide what to do next: follow up what a "
    "result names, reroute a failed subtask to another source (give the failed entry's "
    "[round, index] as replaces), or say you are done. Reply with one JSON object and nothing "
    "else, valid against this JSON schema:\n"
    + json.dumps(PlannerReply.model_json_schema(), sort_keys=True)
)
"""The planner's system prompt: what a chat model is asked, and the reply's JSON schema."""

MAX_TOKENS = 512
"""The most tokens a planner's reply may hold by default: a decision of a dozen subtasks holds
a few hundred; a server that answers prose instead stops there."""


class UnusableReply(InvalidReply):
    """A planner model answered, but never with a decision the schema allows: a typed
    [`ChatAgent`][trio_supervisor.agents.ChatAgent]'s
    [`InvalidReply`][trio_supervisor.agents.InvalidReply], from a planner.

    ```pycon
    >>> async def main():  # the loopback server answers a task holding [garbled] with no JSON
    ...     server = httpx2.ASGITransport(app=devserver.app())
    ...     async with ChatPlanner("m", base_url="http://x/v1", api_key="k", transport=server,
    ...                            attempts=2) as planner:
    ...         await planner.first("[garbled] the market")
    >>> trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    Traceback (most recent call last):
      ...
    trio_supervisor.agents.UnusableReply: 2 replies from m, none valid against the schema ...

    ```
    """


def request_text(task: str, ledger: Ledger[Any, Any], fresh: bool) -> str:
    """The user message asking for a decision: the task, ``fresh``, and the ledger, as JSON."""
    rounds = [
        {
            "round": done.number,
            "note": done.note,
            "entries": [
                {
                    "index": entry.index,
                    "subtask": str(entry.subtask),
                    "status": entry.result.status.value,
                    "output": None if entry.result.output is None else str(entry.result.output),
                    "error": entry.result.error,
                    "replaces": entry.replaces,
                }
                for entry in done.entries
            ],
        }
        for done in ledger.rounds
    ]
    return json.dumps({"task": task, "fresh": fresh, "rounds": rounds})


def read_request(text: str) -> tuple[str, Ledger[str, str], bool]:
    """The task, the ledger and ``fresh`` from a `request_text` message.

    Raises:
      ValueError: if ``text`` is not such a message.
    """
    try:
        data = json.loads(text)
        ledger: Ledger[str, str] = Ledger(data["task"])
        for done in data["rounds"]:
            entries = []
            for item in done["entries"]:
                status = Status(item["status"])
                result: SubResult[str, str] = SubResult(
                    item["subtask"],
                    output=item["output"] if status is Status.OK else None,
                    error=None if status is Status.OK else item["error"],
                    status=status,
                )
                replaces = item["replaces"]
                key = None if replaces is None else (int(replaces[0]), int(replaces[1]))
                entries.append(Entry(done["round"], item["index"], result, key))
            ledger.record(Round(done["round"], done["note"], tuple(entries), 0, 0, 0))
        return data["task"], ledger, bool(data["fresh"])
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"not a planner's request: {exc!r}") from None


def reply_text(decision: Batch[str] | Done) -> str:
    """A decision as the JSON reply `PlannerReply` validates."""
    if isinstance(decision, Done):
        reply = PlannerReply(done=True, note=decision.note, answer=decision.answer)
    else:
        reply = PlannerReply(
            done=False,
            note=decision.note,
            batch=[
                PlannedSubtask(subtask=subtask, replaces=decision.replaces.get(index))
                for index, subtask in enumerate(decision.subtasks)
            ],
            progress=decision.progress,
        )
    return reply.model_dump_json()


def decision_of(reply: PlannerReply) -> Batch[str] | Done:
    """The decision a validated reply says."""
    if reply.done:
        return Done(answer=reply.answer, note=reply.note)
    replaces = {
        index: item.replaces for index, item in enumerate(reply.batch) if item.replaces is not None
    }
    subtasks = [item.subtask for item in reply.batch]
    return Batch(subtasks, note=reply.note, replaces=replaces, progress=reply.progress)


class ChatPlanner:
    """A [`Planner`][trio_supervisor.Planner] that asks a chat model for each decision.

    ```python
    server = httpx2.ASGITransport(app=devserver.app())  # plays the model by ScriptedPlanner
    async with ChatPlanner("m", base_url="http://x/v1", api_key="k", transport=server) as planner:
        answer = await Supervisor(SimulatedAgent(0), max_workers=2).replan("a; b", planner)
    assert answer.text == "a: findings on a\\nb: findings on b"
    ```

    Each decision is a chat completion request of at most ``max_tokens``: the system prompt
    ([`SYSTEM`][trio_supervisor.agents.PLANNER_SYSTEM]) says what to decide and carries the
    reply's JSON schema, the user message holds the task and the ledger as JSON, and the
    request asks for structured outputs (``response_format`` with the schema, strict). Every
    reply is validated as a typed [`ChatAgent`][trio_supervisor.agents.ChatAgent]'s is (the
    same code: ``output=PlannerReply``), whatever the server claims: a server that ignores
    ``response_format`` and answers prose is asked again, told what was wrong, as is any
    reply the schema does not allow, up to ``attempts`` replies in all, then the decision
    fails with [`UnusableReply`][trio_supervisor.agents.UnusableReply]. A reply is one JSON
    object, bare or in a Markdown code fence. A server that refuses the parameter (a 400
    naming ``response_format``) is asked again without it, and never with it again by this
    planner.

    A failed request fails the decision with the agent's error (a refusal:
    [`Refused`][trio_supervisor.agents.Refused]), which the run records as a stall, except a
    failure that asks for a wait (a 429 or a 503 with ``Retry-After``): the planner sleeps
    what the server asked and asks again, at most ``max_waits`` times a decision, and never
    past the run's deadline (it fails at once when the wait would end after it). A request the
    server never answers fails as the agent's does, after
    [`REQUEST_TIMEOUT`][trio_supervisor.agents.REQUEST_TIMEOUT] (a minute).

    Args:
      model: the model to ask.
      base_url: the endpoint's base URL, ending in ``/v1``; None for the SDK's default.
      api_key: the key sent as a bearer token; None reads ``OPENAI_API_KEY``.
      attempts: replies per decision at most, the first included.
      max_waits: waits out a server's ``Retry-After`` per decision at most.
      transport: an ``httpx2`` async transport instead of the network (an in-process server).
      max_tokens: the most tokens each reply may hold (``MAX_TOKENS``, 512, by default).

    Raises:
      ValueError: if ``attempts`` < 1, ``max_waits`` < 0, ``max_tokens`` < 1, there is no API
        key, or the base URL is not an http or https URL with a host.
      TypeError: if an argument has the wrong type (as for
        [`ChatAgent`][trio_supervisor.agents.ChatAgent]).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        attempts: int = 3,
        max_waits: int = 5,
        transport: Any = None,
        max_tokens: int = MAX_TOKENS,
    ) -> None:
        self.attempts = _validate.count("attempts", attempts)
        self.max_waits = _validate.budget("max_waits", max_waits)
        self.structured = True
        """Whether requests ask for structured outputs; False once the server refused them."""
        self._output = Output(PlannerReply, retries=self.attempts - 1)
        self._agent = ChatAgent(
            model,
            base_url=base_url,
            api_key=api_key,
            max_connections=1,
            transport=transport,
            max_tokens=max_tokens,
            output=self._output,
        )

    async def first(self, task: str) -> Batch[str] | Done:
        """The first batch for ``task``, asked of the model with an empty ledger."""
        return await self._decide(task, Ledger(task), fresh=False)

    async def next(self, task: str, ledger: Ledger[str, str], *, fresh: bool) -> Batch[str] | Done:
        """The next decision, asked of the model with the ledger so far."""
        return await self._decide(task, ledger, fresh=fresh)

    async def _decide(
        self, task: str, ledger: Ledger[str, str], *, fresh: bool
    ) -> Batch[str] | Done:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": request_text(task, ledger, fresh)},
        ]
        waits = 0

        async def send(conversation: list[ChatCompletionMessageParam]) -> str:
            nonlocal waits
            text, waits = await self._ask(conversation, waits)
            kept = _REPLIES.get()
            if kept is not None:  # inside `recorded_replies`
                kept.append(text)
            return text

        try:
            reply = await self._agent.validated(messages, send=send)
        except InvalidReply as error:  # the planner's own kind, as it was
            raise UnusableReply(
                str(error), problem=error.problem, reply=error.reply, replies=error.replies
            ) from None
        return decision_of(reply)

    async def _ask(self, messages: list[ChatCompletionMessageParam], waits: int) -> tuple[str, int]:
        """One reply's text, and the waits spent so far: structured outputs dropped if the
        server refuses them, a server's Retry-After slept (bounded) before asking again."""
        while True:
            try:
                form = self._output.response_format if self.structured else None
                return await self._agent.complete(messages, response_format=form), waits
            except PermanentError as error:
                if not (
                    self.structured and error.status == 400 and "response_format" in str(error)
                ):
                    raise
                self.structured = False  # for this planner's life: ask again, plain JSON
            except AgentError as error:
                wait = error.retry_after
                if wait is None or waits >= self.max_waits:
                    raise
                if trio.current_time() + wait >= trio.current_effective_deadline():
                    raise  # the wait would end past the run's deadline: fail now
                waits += 1
                await trio.sleep(wait)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._agent.aclose()

    async def __aenter__(self) -> ChatPlanner:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"ChatPlanner(model={self._agent.model!r}, base_url={self._agent.base_url!r}, "
            f"attempts={self.attempts}, max_waits={self.max_waits}, "
            f"max_tokens={self._agent.max_tokens})"
        )
