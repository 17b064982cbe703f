"""mem0's Python client 1.0.11 (`MemoryClient(api_key=..., host=<this server>)`), the client the
1.x integrations build: its typical flow, with an agent, runs, metadata and filters."""

from __future__ import annotations

from typing import Any

from flowkit import results, run, texts, until
from mem0 import MemoryClient


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    memory = MemoryClient(api_key=KEY, host=PORTAL)
    scope = {"user_id": "ada", "agent_id": "travel-bot"}
    kept = memory.add([{"role": "user", "content": "I live in Lyon"}], **scope, run_id="trip-1",
                      metadata={"channel": "chat"}, infer=False)
    seen["add"] = [(m["memory"], m["event"]) for m in results(kept)]
    # the same words in another run are another memory (a run is part of what a memory is)
    again = memory.add([{"role": "user", "content": "I live in Lyon"}], **scope, run_id="trip-2", infer=False)
    seen["add_other_run"] = [(m["memory"], m["event"]) for m in results(again)]
    # with inference (the default): learnt by the model in the background
    memory.add([{"role": "user", "content": "I love jazz"}, {"role": "assistant", "content": "Noted!"}], **scope,
               run_id="trip-1")
    listed = until(lambda: memory.get_all(**scope), lambda a: len(results(a)) >= 3)
    seen["get_all"] = texts(listed)
    seen["get_all_run"] = texts(memory.get_all(filters={"AND": [{"user_id": "ada"}, {"run_id": "trip-2"}]}))
    seen["search"] = texts(memory.search("where does she live", **scope, limit=5))
    hits = memory.search("where does she live", filters={"AND": [{"user_id": "ada"}, {"metadata": {"channel": "chat"}}]})
    seen["search_metadata"] = texts(hits)
    lyon = next(m for m in results(memory.get_all(filters={"run_id": "trip-1", "user_id": "ada"}))
                if m["memory"] == "I live in Lyon")
    got = memory.get(lyon["id"])
    seen["get"] = (got["memory"], got["agent_id"], got["run_id"], got["metadata"])
    changed = memory.update(lyon["id"], text="I live in Paris", timestamp="2025-01-15T12:00:00Z")
    seen["update"] = changed["memory"]
    seen["history"] = [(e["event"], e["old_memory"], e["new_memory"]) for e in memory.history(lyon["id"])]
    seen["delete"] = bool(memory.delete(lyon["id"])["message"])
    memory.delete_all(user_id="ada", run_id="trip-2")  # that run's memories only
    seen["after_run_delete"] = texts(memory.get_all(user_id="ada"))
    memory.delete_all(user_id="ada")
    seen["after_delete_all"] = texts(memory.get_all(user_id="ada"))


run(flow)
