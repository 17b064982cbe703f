"""mem0's MCP server (mem0-mcp-server 0.2.1, mcp<2, on mem0ai 2.2.1) pointed at this server: every
tool it gives an assistant, called as an MCP client calls them, without a model."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
from typing import Any

import mem0_mcp_server.server
from flowkit import run
from mcp.shared.memory import create_connected_server_and_client_session
from mem0 import MemoryClient


async def call(session: Any, tool: str, **arguments: Any) -> Any:
    answer = await session.call_tool(tool, arguments)
    text = answer.content[0].text
    try:
        return json.loads(text)
    except ValueError:
        return text


def flow(url: str, key: str, seen: dict[str, Any]) -> None:
    PORTAL, KEY = url, key  # noqa: N806 - the README's names
    os.environ["MEM0_API_KEY"] = KEY  # as the server's host sets it: read when the server is imported
    # The person a tool call names no one for (its default, "mem0-mcp", is a person of its own here as
    # there): an assistant serving ada sets it, and a search by agent alone is then ada's, by that agent.
    os.environ["MEM0_DEFAULT_USER_ID"] = "ada"
    importlib.reload(mem0_mcp_server.server)
    mem0_mcp_server.server._CLIENT_CACHE[KEY] = MemoryClient(api_key=KEY, host=PORTAL)   # before its first tool call
    server = mem0_mcp_server.server.create_server()
    asyncio.run(connected(server, seen))


async def connected(server: Any, seen: dict[str, Any]) -> None:
    """As an assistant's MCP client: a session with the server, over memory streams."""
    async with create_connected_server_and_client_session(server._mcp_server) as session:
        await tools(session, seen)


async def tools(server: Any, seen: dict[str, Any]) -> None:
    added = await call(server, "add_memory", text="I live in Lyon", user_id="ada", agent_id="concierge",
                       metadata={"channel": "chat"})
    seen["add"] = added if isinstance(added, str) or "error" in added else True
    await call(server, "add_memory", text="I love jazz", user_id="ada")

    async def listed() -> Any:
        return await call(server, "get_memories", filters={"user_id": "ada"})

    page: Any = {}
    for _ in range(100):  # learnt in the background
        page = await listed()
        if isinstance(page, dict) and len(page.get("results", [])) >= 2:
            break
        await asyncio.sleep(0.2)
    seen["get_memories"] = sorted(m["memory"] for m in page["results"]) if "results" in page else page
    found = await call(server, "search_memories", query="where does she live", filters={"user_id": "ada"}, limit=1)
    seen["search"] = [m["memory"] for m in found["results"]] if "results" in found else found
    by_agent = await call(server, "search_memories", query="where does she live", filters={"agent_id": "concierge"})
    seen["search_agent"] = [m["memory"] for m in by_agent["results"]] if "results" in by_agent else by_agent
    entities = await call(server, "list_entities")
    seen["list_entities"] = sorted((e["type"], e["name"]) for e in entities["results"]) if "results" in entities else entities
    lyon = next(m["id"] for m in page["results"] if m["memory"] == "I live in Lyon")
    seen["get_memory"] = (await call(server, "get_memory", memory_id=lyon)).get("memory")
    await call(server, "update_memory", memory_id=lyon, text="I live in Paris")
    seen["updated"] = (await call(server, "get_memory", memory_id=lyon)).get("memory")
    await call(server, "delete_memory", memory_id=lyon)
    seen["after_delete"] = sorted(m["memory"] for m in (await listed()).get("results", []))
    await call(server, "delete_all_memories", user_id="ada")
    seen["after_delete_all"] = (await listed()).get("results")
    await call(server, "add_memory", text="I play chess", user_id="bob")
    await asyncio.sleep(0)
    seen["delete_entities"] = "error" not in await call(server, "delete_entities", user_id="bob")


run(flow)
