"""AutoGen's `Mem0Memory` (autogen-ext[mem0] 0.7.5 on mem0ai 1.0.11) pointed at this server: what
an agent's memory does (add with metadata, query, update_context, clear), without a model."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import autogen_ext.memory.mem0._mem0
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_core.model_context import BufferedChatCompletionContext
from autogen_core.models import UserMessage
from autogen_ext.memory.mem0 import Mem0Memory
from flowkit import run
from mem0 import MemoryClient


async def flow_async(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    autogen_ext.memory.mem0._mem0.MemoryClient = partial(MemoryClient, host=PORTAL)   # before Mem0Memory(...)
    memory = Mem0Memory(user_id="ada", api_key=KEY, limit=5)
    await memory.add(MemoryContent(content="I live in Lyon", mime_type=MemoryMimeType.TEXT, metadata={"topic": "home"}))
    await memory.add(MemoryContent(content="I love jazz", mime_type=MemoryMimeType.TEXT))

    async def query() -> Any:
        return await memory.query("where does she live")

    # Both are learnt in the background; a question finds what answers it, never all that is kept
    # (scores mean the same in any place: "I love jazz" says nothing of where she lives).
    await until_async(lambda: memory.query("jazz"), lambda r: len(r.results) >= 1)
    found = await until_async(query, lambda r: len(r.results) >= 1)
    seen["query"] = sorted(str(m.content) for m in found.results)
    top = found.results[0]
    seen["top"] = (str(top.content), (top.metadata or {}).get("topic"), "created_at" in (top.metadata or {}))
    context = BufferedChatCompletionContext(buffer_size=5)
    await context.add_message(UserMessage(content="Where do I live?", source="user"))
    updated = await memory.update_context(context)
    seen["update_context"] = len(updated.memories.results)
    await memory.clear()
    seen["after_clear"] = [str(m.content) for m in (await memory.query("where does she live")).results]
    await memory.close()


async def until_async(read: Any, done: Any, seconds: float = 20.0) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        value = await read()
        if done(value) or loop.time() > deadline:
            return value
        await asyncio.sleep(0.2)


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    asyncio.run(flow_async(url, key, seen))


run(flow)
