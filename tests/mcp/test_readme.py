"""The README's MCP client configurations, run as printed: the stdio block spawned exactly as a
client would spawn it (its command, args and env, the placeholders filled in), the HTTP block's
URL and header used as they are written."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from .harness import BIN, FORGET, READ, WRITE, HttpServer, Portal

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Connect an assistant over MCP"
OWNER, KEY, DATABASE = "<owner_id>", "<the key api-key create printed>", "<the portal's MEMORY_DATABASE_URL>"


def blocks() -> list[dict[str, Any]]:
    """The JSON blocks of the README's MCP section, parsed."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[: section.find("\n## ", len(SECTION))]
    return [json.loads(found) for found in re.findall(r"```json\n(.*?)```", section, re.S)]


def filled(value: Any, values: dict[str, str]) -> Any:
    """`value` with every placeholder the README prints replaced by the test's own value."""
    if isinstance(value, str):
        for placeholder, real in values.items():
            value = value.replace(placeholder, real)
        assert "<" not in value, f"a placeholder the test does not know: {value}"
        return value
    if isinstance(value, list):
        return [filled(v, values) for v in value]
    return {k: filled(v, values) for k, v in value.items()}


@pytest.mark.slow  # the stdio block runs with the default configuration: the real embedding model
def test_the_readme_s_stdio_configuration_starts_a_server_with_the_tools(portal: Portal, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    stdio = [b for b in blocks() if "command" in b.get("mcpServers", {}).get("memory", {})]
    assert len(stdio) == 1
    entry = stdio[0]["mcpServers"]["memory"]
    assert entry["command"] == "memory-portal" and entry["args"][:2] == ["mcp", "--owner"]
    assert set(entry["env"]) == {"MEMORY_API_KEY", "MEMORY_DATABASE_URL"}
    values = {OWNER: "ada", KEY: portal.key(READ, WRITE, FORGET), DATABASE: portal.env["MEMORY_DATABASE_URL"]}
    # The client finds `memory-portal` on its PATH (this checkout's), the rest is the block itself.
    monkeypatch.setenv("PATH", f"{BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    server = StdioServerParameters(command=entry["command"], args=filled(entry["args"], values),
                                   env=filled(entry["env"], values), cwd=tmp_path)

    async def scenario() -> list[str]:
        with (tmp_path / "server.err").open("w") as err:
            async with stdio_client(server, errlog=err) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return [t.name for t in (await session.list_tools()).tools]

    assert anyio.run(scenario) == ["remember", "recall", "update_memory", "forget"]


def test_the_readme_s_http_configuration_reaches_the_person_s_endpoint(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    http = [b for b in blocks() if "url" in b.get("mcpServers", {}).get("memory", {})]
    assert len(http) == 1
    entry = filled(http[0]["mcpServers"]["memory"], {OWNER: "ada", KEY: portal.key(READ)})
    assert entry["type"] == "http" and entry["url"].startswith("http://127.0.0.1:8001/")
    url = entry["url"].replace("http://127.0.0.1:8001", server.base)  # the test's server is on a free port

    async def scenario() -> list[str]:
        async with (
            httpx2.AsyncClient(headers=entry["headers"], timeout=30) as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    assert anyio.run(scenario) == ["recall"]
