"""The LLM planner: a chat endpoint asked for each next batch as JSON against a schema
(``trio_supervisor.agents``), and the wire format the loopback server reads to play it.

The request's user message is the task, whether a fresh plan is asked for, and the ledger, as
JSON (`request_text`); the reply must be one JSON object that
`PlannerReply` (a pydantic model, whose JSON schema the system prompt carries)
validates. pydantic does the checking: types, required fields, no unknown keys, each error with
its place, so a reply that is almost right is refused with a message a model can act on.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import _validate
from .._contract import Status, SubResult
from .._replan import Batch, Done, Entry, Ledger, Round
from ._chat import AgentError, ChatAgent

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam


class PlannedSubtask(BaseModel):
    """One subtask of the next batch, as the reply gives it."""

    model_config = ConfigDict(extra="forbid")

    subtask: str = Field(min_length=1, description="what a worker is asked to do")
    replaces: tuple[int, int] | None = Field(
        default=None, description="[round, index] of the failed entry this one stands in for"
    )


class PlannerReply(BaseModel):
    """The reply a planner model must give: done (with an answer), or the next batch."""

    model_config = ConfigDict(extra="forbid")

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


class UnusableReply(AgentError):
    """A planner model answered, but never with a decision the schema allows."""


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
            ledger._rounds.append(Round(done["round"], done["note"], tuple(entries), 0, 0, 0))
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


def _problem(error: ValidationError) -> str:
    """The first thing wrong with a reply, with its place: ``batch.0.subtask: Field required``."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


class ChatPlanner:
    """A [`Planner`][trio_supervisor.Planner] that asks a chat model for each decision.

    Each decision is one chat completion request through a
    [`ChatAgent`][trio_supervisor.agents.ChatAgent] (the SDK's retries off): the system prompt
    ([`SYSTEM`][trio_supervisor.agents.PLANNER_SYSTEM]) carries the reply's JSON schema, the user
    message the task and the ledger as JSON. A reply that is not valid against the schema is
    asked again, told what was wrong, up to ``attempts`` requests in all; then the decision
    fails with [`UnusableReply`][trio_supervisor.agents.UnusableReply], which the run records as
    a stall. A failed request (a 429, a 5xx, a refused connection) fails the decision the same
    way, with the agent's error: the run's budgets bound how often a broken endpoint is asked.

    Use it as ``async with ChatPlanner(...) as planner:``, inside the trio run that uses it.

    Args:
      model: the model to ask.
      base_url: the endpoint's base URL, ending in ``/v1``; None for the SDK's default.
      api_key: the key sent as a bearer token; None reads ``OPENAI_API_KEY``.
      attempts: requests per decision at most, the first included.
      transport: an ``httpx2`` async transport instead of the network (an in-process server).

    Raises:
      ValueError: if ``attempts`` < 1, or there is no API key.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        attempts: int = 3,
        transport: Any = None,
    ) -> None:
        self.attempts = _validate.count("attempts", attempts)
        self._agent = ChatAgent(
            model,
            base_url=base_url,
            api_key=api_key,
            messages=_messages,
            max_connections=1,
            transport=transport,
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
        prompt = request_text(task, ledger, fresh)
        problem: str | None = None
        for _ in range(self.attempts):
            text = await self._agent((prompt, problem))
            try:
                return decision_of(PlannerReply.model_validate_json(text))
            except ValidationError as error:
                problem = _problem(error)
        raise UnusableReply(
            f"{self.attempts} replies from {self._agent.model}, none a decision the schema "
            f"allows; the last: {problem}"
        )

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
            f"attempts={self.attempts})"
        )


def _messages(asked: tuple[str, str | None]) -> list[ChatCompletionMessageParam]:
    """The request's messages: the system prompt, the ledger, and what was wrong with the
    previous reply, if it was."""
    prompt, problem = asked
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    if problem is not None:
        messages.append(
            {
                "role": "user",
                "content": f"Your reply was not valid against the schema ({problem}). "
                "Reply again with one JSON object only.",
            }
        )
    return messages
