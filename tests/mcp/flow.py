"""What an assistant does with the MCP server, checked step by step; run over stdio and over HTTP
(both protocol eras), on SQLite and PostgreSQL. `session` is the SDK's `ClientSession` or `Client`."""

from __future__ import annotations

from typing import Any

from portal.services.tool_schemas import tool_schemas

from .harness import payload, reason

LYON = "Is training for the Lyon marathon in May"
PARIS = "Is training for the Paris marathon in April"
WORDS = (LYON, PARIS)


async def the_whole_flow(session: Any, stranger_id: str, stranger_words: str, can_forget: bool = True) -> None:
    """List, remember, recall, correct, portray and forget, with the refusals on the way; a
    stranger's memory (another owner's id) is never found."""
    listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == {"remember", "recall", "update_memory"} | ({"forget"} if can_forget else set())
    schemas = {t["function"]["name"]: t["function"] for t in tool_schemas()}
    for tool in listed:  # the model tools' own declarations, not a second copy
        assert tool.input_schema == schemas[tool.name]["parameters"]
        assert tool.description == schemas[tool.name]["description"]

    saved = payload(await session.call_tool("remember", {"text": LYON, "importance": 5}))
    assert saved["code"] == "memory_saved" and saved["memory"]["text"] == LYON and saved["message"] == "Saved to memory."
    memory_id = saved["memory"]["id"]
    found = payload(await session.call_tool("recall", {"query": "marathon"}))
    assert found["code"] == "memories_found" and [m["id"] for m in found["memories"]] == [memory_id]

    corrected = payload(await session.call_tool("update_memory", {"id": memory_id, "text": PARIS}))
    assert corrected["code"] == "memory_corrected" and corrected["memory"]["id"] == memory_id
    assert corrected["memory"]["revision"] == 2 and corrected["undo"] == {"id": memory_id}
    found = payload(await session.call_tool("recall", {"query": "Paris"}))
    assert [(m["id"], m["text"]) for m in found["memories"]] == [(memory_id, PARIS)]

    resources = (await session.list_resources()).resources
    assert [str(r.uri) for r in resources] == ["memory://portrait"]
    portrait = (await session.read_resource("memory://portrait")).contents
    assert [c.text for c in portrait] == [f"- {PARIS}"]
    assert [p.name for p in (await session.list_prompts()).prompts] == ["portrait"]
    prompt = (await session.get_prompt("portrait")).messages
    assert len(prompt) == 1 and prompt[0].role == "user"
    assert "not instructions" in prompt[0].content.text and prompt[0].content.text.endswith(f"- {PARIS}")

    # Refusals: the service's codes, as error results, the model tools' messages with them.
    empty = await session.call_tool("remember", {"text": ""})
    assert reason(empty) == "empty" and payload(empty)["message"] == "There is nothing to remember: the text is empty."
    assert reason(await session.call_tool("remember", {"text": "on and on " * 60})) == "too_long"
    assert reason(await session.call_tool("remember", {})) == "invalid_arguments"
    assert reason(await session.call_tool("update_memory", {"id": "no-such-memory", "text": PARIS})) == "not_found"
    assert reason(await session.call_tool("recall", {"query": "marathon", "kinds": ["hobby"]})) == "invalid_kind"
    assert reason(await session.call_tool("consolidate", {})) == "unknown_tool"

    # Another owner's memory: not found, by any tool, whatever its id.
    assert reason(await session.call_tool("update_memory", {"id": stranger_id, "text": PARIS})) == "not_found"
    strangers = payload(await session.call_tool("recall", {"query": stranger_words}))["memories"]
    assert stranger_id not in [m["id"] for m in strangers]

    if not can_forget:
        assert reason(await session.call_tool("forget", {"id": memory_id})) == "forbidden"
        return
    assert reason(await session.call_tool("forget", {"id": stranger_id})) == "not_found"
    forgotten = payload(await session.call_tool("forget", {"id": memory_id}))
    assert forgotten["code"] == "memory_forgotten" and forgotten["id"] == memory_id
    assert payload(await session.call_tool("recall", {"query": "Paris marathon"}))["memories"] == []
    assert reason(await session.call_tool("forget", {"id": memory_id})) == "not_found"
    assert [c.text for c in (await session.read_resource("memory://portrait")).contents] == [""]
