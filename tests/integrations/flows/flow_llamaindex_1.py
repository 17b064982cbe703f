"""LlamaIndex's `Mem0Memory` (llama-index-memory-mem0 1.0.0, on mem0ai 1.0.11) pointed at this
server: a chat engine's memory (put, then get with the input, which searches by the person, the
agent and the run), without a model."""

from __future__ import annotations

from typing import Any

from flowkit import run, until
from llama_index.core.llms import ChatMessage
from llama_index.memory.mem0 import Mem0Memory


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    context = {"user_id": "ada", "agent_id": "concierge", "run_id": "chat-1"}
    memory = Mem0Memory.from_client(context=context, api_key=KEY, host=PORTAL)
    # another person of the same agent: the agent's other conversations are not ada's
    other = Mem0Memory.from_client(context={"user_id": "bob", "agent_id": "concierge"}, api_key=KEY, host=PORTAL)
    other.put(ChatMessage(role="user", content="I live in Berlin"))
    memory.put(ChatMessage(role="user", content="I live in Lyon"))
    memory.put(ChatMessage(role="assistant", content="Lyon is lovely."))

    def recalled() -> str:
        return str(memory.get(input="Where do I live?")[0].content)

    system = until(recalled, lambda text: "I live in Lyon" in text)
    seen["get"] = ("I live in Lyon" in system, "Berlin" in system)
    seen["search"] = sorted(r["memory"] for r in memory.search(query="live", user_id="ada")["results"])
    seen["history"] = [m.content for m in memory.get_all()]  # the chat itself, kept locally


run(flow)
