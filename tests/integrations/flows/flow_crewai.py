"""CrewAI 0.203.2's `Mem0Storage` (on mem0ai 1.0.11) pointed at this server: what a crew's
short-term memory (per run) and entity memory save and search (with CrewAI's threshold, 0.6),
then its reset, without a crew or a model."""

from __future__ import annotations

from typing import Any

import crewai.memory.storage.mem0_storage as mem0_storage
from flowkit import run, until
from mem0 import MemoryClient


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names

    class PortalClient(MemoryClient):   # CrewAI checks isinstance(..., MemoryClient): a subclass, not a partial
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{"host": PORTAL, **kwargs})
    mem0_storage.MemoryClient = PortalClient   # before Mem0Storage(...)

    config = {"api_key": KEY, "user_id": "ada", "agent_id": "researcher"}
    short = mem0_storage.Mem0Storage("short_term", config={**config, "run_id": "crew-run-1", "infer": False})
    short.save("Ada lives in Lyon", {"observation": "Find where Ada lives"})
    short.save("Ada loves jazz", {"observation": "Find what Ada likes"})
    other = mem0_storage.Mem0Storage("short_term", config={**config, "run_id": "crew-run-2", "infer": False})
    other.save("Ada lives in Lyon", {"observation": "Find where Ada lives"})  # the same words, another run
    hits = short.search("Where does Ada live?", limit=3, score_threshold=0.6)
    seen["short_search"] = [(h["content"], h["metadata"]["type"], h["run_id"]) for h in hits]
    seen["other_run_search"] = [(h["content"], h["run_id"]) for h in other.search("Where does Ada live?", limit=3)]
    # entity memory: with inference, learnt from what the user said (ExternalMemory and entity saves pass messages)
    entities = mem0_storage.Mem0Storage("entities", config=config)
    entities.save("Ada", {"messages": [{"role": "user", "content": "User message: Ada's sister is Grace"},
                                       {"role": "assistant", "content": "Final Answer: Noted"}]})
    found = until(lambda: entities.search("Who is Ada's sister?", limit=3), lambda h: len(h) >= 1)
    seen["entity_search"] = [(h["content"], h["metadata"]["type"]) for h in found]
    short.reset()  # every entity of the project
    seen["after_reset"] = [h["content"] for h in short.search("Where does Ada live?", limit=3, score_threshold=0.0)]


run(flow)
