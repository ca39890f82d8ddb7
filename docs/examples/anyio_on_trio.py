"""Code written on anyio (httpx2, and the openai SDK built on it) runs on Trio unchanged: the
same function, run by ``trio.run`` and by ``asyncio.run``, finds which loop it is on and does the
same work on either. No network: the HTTP requests go to a handler in this process.
tests/docs/test_docs_examples.py runs it both ways."""

from __future__ import annotations

import json

import anyio
import httpx2
import openai
import sniffio


def endpoint(request: httpx2.Request) -> httpx2.Response:
    """A stand-in for a chat-completions endpoint: it answers every prompt with its echo."""
    prompt = json.loads(request.content)["messages"][-1]["content"]
    return httpx2.Response(
        200,
        json={
            "id": "1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": f"echo: {prompt}"},
                }
            ],
        },
    )


async def ask_both(prompts: list[str]) -> dict[str, object]:
    """Ask the endpoint every prompt at once, in an anyio task group, through the openai SDK."""
    replies: dict[str, str] = {}
    transport = httpx2.MockTransport(endpoint)
    async with httpx2.AsyncClient(transport=transport) as http:
        client = openai.AsyncOpenAI(api_key="k", base_url="http://x/v1", http_client=http)

        async def ask(prompt: str) -> None:
            reply = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}]
            )
            replies[prompt] = reply.choices[0].message.content or ""

        async with anyio.create_task_group() as group:  # on Trio, a nursery underneath
            for prompt in prompts:
                group.start_soon(ask, prompt)
    return {"loop": sniffio.current_async_library(), "replies": replies}
