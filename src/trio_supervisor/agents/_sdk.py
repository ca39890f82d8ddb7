"""What the chat agents need of the OpenAI SDK that it does not offer publicly: each need is one
function here, which says why, and what happens with an SDK that has changed."""

from __future__ import annotations

from typing import Any


def know_platform(client: Any) -> None:
    """Have ``client`` (an ``openai.AsyncOpenAI``) know its platform, for its headers, before its
    first request.

    The SDK reads the platform in a worker thread on a client's first request, unless it is
    known already, and offers no public way to say it: this sets the client's private
    ``_platform`` from the SDK's private ``get_platform``, once, so that no attempt waits on a
    thread (under a MockClock, the clock would jump while it did). An SDK without either is left
    as it is: its first request reads the platform in its thread, only slower.
    """
    if getattr(client, "_platform", False) is not None:
        return
    try:
        from openai._base_client import get_platform  # see the docstring
    except ImportError:
        return
    client._platform = get_platform()
