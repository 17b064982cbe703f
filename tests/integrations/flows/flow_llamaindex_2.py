"""LlamaIndex's `Mem0Memory` (llama-index-memory-mem0 2.1.0, on mem0ai 2.2.1) pointed at this
server. Its `from_client` cannot build a 2.x client (it passes org_id, which mem0ai 2.x no longer
takes): the flow first shows that, then builds the memory with a client of its own."""

from __future__ import annotations

from typing import Any

from flowkit import run, until
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.memory.mem0 import Mem0Memory
from mem0 import MemoryClient


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    context = {"user_id": "ada", "agent_id": "concierge", "run_id": "chat-1"}
    try:
        Mem0Memory.from_client(context=context, api_key=KEY, host=PORTAL)
        seen["from_client"] = "works"
    except TypeError as exc:
        seen["from_client"] = "org_id" in str(exc)
    memory = Mem0Memory(primary_memory=Memory.from_defaults(), context=context, client=MemoryClient(api_key=KEY, host=PORTAL))
    memory.put(ChatMessage(role="user", content="I live in Lyon"))
    memory.put(ChatMessage(role="assistant", content="Lyon is lovely."))

    def recalled() -> str:
        return str(memory.get(input="Where do I live?")[0].content)

    system = until(recalled, lambda text: "I live in Lyon" in text)
    seen["get"] = "I live in Lyon" in system
    seen["search"] = sorted(r["memory"] for r in memory.search(query="live", filters={"user_id": "ada"})["results"])


run(flow)
