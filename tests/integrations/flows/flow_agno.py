"""agno 3.1.10's `Mem0Tools` (on mem0ai 1.0.11) pointed at this server: the tools an agent calls
(add, search, list, delete all), called as the agent would, without a model."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import agno.tools.mem0
from agno.tools.mem0 import Mem0Tools
from flowkit import run, until
from mem0 import MemoryClient


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    agno.tools.mem0.MemoryClient = partial(MemoryClient, host=PORTAL)   # before Mem0Tools(...)
    tools = Mem0Tools(api_key=KEY, user_id="ada")
    seen["add"] = "error" not in tools.add_memory(None, content="I live in Lyon").lower()
    tools.add_memory(None, content={"likes": "jazz"})  # a dict is kept as its JSON
    listed = until(lambda: tools.get_all_memories(None), lambda a: a.startswith("[") and len(json.loads(a)) >= 2)
    seen["get_all"] = sorted(m["memory"] for m in json.loads(listed)) if listed.startswith("[") else listed
    found = tools.search_memory(None, query="where does she live")
    seen["search"] = json.loads(found)[0]["memory"] if found.startswith("[") else found
    seen["delete_all"] = "error" not in tools.delete_all_memories(None).lower()
    after = tools.get_all_memories(None)
    seen["after_delete_all"] = [m["memory"] for m in json.loads(after)] if after.startswith("[") else after


run(flow)
