"""Microsoft Agent Framework's `Mem0ContextProvider` (agent-framework-mem0 1.0.0b261015, on mem0ai
2.2.1) pointed at this server: what it keeps after an agent's run and gives the agent before the
next, for a person, without a model."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_framework import AgentResponse, Message
from agent_framework._sessions import SessionContext
from agent_framework_mem0 import Mem0ContextProvider
from flowkit import run
from mem0 import AsyncMemoryClient


def turn(said: str, answered: str | None = None) -> SessionContext:
    context = SessionContext(input_messages=[Message(role="user", contents=[said])])
    if answered is not None:
        context._response = AgentResponse(messages=[Message(role="assistant", contents=[answered])])
    return context


async def flow_async(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    provider = Mem0ContextProvider(mem0_client=AsyncMemoryClient(api_key=KEY, host=PORTAL), user_id="ada", search_user_id="ada")
    await provider.after_run(agent=None, session=None, context=turn("I live in Lyon", "Lyon is lovely."), state={})
    loop = asyncio.get_running_loop()
    deadline, recalled = loop.time() + 20, []
    while not recalled and loop.time() < deadline:  # learnt in the background
        context = turn("Where do I live?")
        await provider.before_run(agent=None, session=None, context=context, state={})
        recalled = [str(m.text) for m in context.context_messages.get(provider.source_id, [])]
        await asyncio.sleep(0.2)
    seen["before_run"] = any("I live in Lyon" in text for text in recalled)
    seen["assistant_kept"] = any("Lyon is lovely" in text for text in recalled)


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    asyncio.run(flow_async(url, key, seen))


run(flow)
