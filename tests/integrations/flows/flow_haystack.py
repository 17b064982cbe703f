"""Haystack's mem0 components (mem0-haystack 1.0.0, on mem0ai 2.2.1) pointed at this server: the
writer (with inference, its default) and the retriever, by person, run and Haystack filters, as a
pipeline runs them, without a model."""

from __future__ import annotations

from typing import Any

from flowkit import run, until
from haystack.dataclasses import ChatMessage
from haystack.utils import Secret
from haystack_integrations.components.retrievers.mem0 import Mem0MemoryRetriever
from haystack_integrations.components.writers.mem0 import Mem0MemoryWriter
from haystack_integrations.memory_stores.mem0 import Mem0MemoryStore
from mem0 import MemoryClient


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    store = Mem0MemoryStore(api_key=Secret.from_token(KEY))
    store._client = MemoryClient(api_key=KEY, host=PORTAL)   # before its first use: the store builds none then
    writer, retriever = Mem0MemoryWriter(memory_store=store), Mem0MemoryRetriever(memory_store=store, top_k=3)
    writer.run([ChatMessage.from_user("I live in Lyon"), ChatMessage.from_assistant("Lyon is lovely.")],
               user_id="ada", run_id="chat-1")
    writer.run([ChatMessage.from_user("I love jazz")], user_id="ada", run_id="chat-2")
    listed = until(lambda: retriever.run(None, user_id="ada")["memories"], lambda m: len(m) >= 2)
    seen["list"] = sorted(m.text for m in listed)
    seen["search"] = [m.text for m in retriever.run("where does she live", user_id="ada", top_k=1)["memories"]]
    seen["search_run"] = [m.text for m in retriever.run("jazz", user_id="ada", run_id="chat-2")["memories"]]
    store.add_memories(messages=[ChatMessage.from_user("I play chess")], user_id="ada", infer=False,
                       metadata={"topic": "games"})
    narrowed = retriever.run("games", user_id="ada", filters={"field": "topic", "operator": "==", "value": "games"})
    seen["search_metadata"] = [(m.text, m.meta.get("topic")) for m in narrowed["memories"]]


run(flow)
