"""OpenMemory's client side, for tests/mcp/test_openmemory_tools.py: the SDK's client on OpenMemory's
URL as a client configured for OpenMemory would use it (plus our key), how its answers and our
refusals read, OpenMemory's own declarations, a PostgreSQL database of a module's own, and a
worker with a fake model for the adds the model learns from."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import replace
from urllib.parse import quote

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from sqlalchemy import text as sql
from sqlalchemy.engine import Engine, make_url

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.queue import Worker
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.janitor import settle_all
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer, Reply
from .harness import HttpServer, Portal

INPUTS = {  # OpenMemory's own, as its FastMCP declared them (540d23d6)
    "add_memories": {"properties": {"text": {"title": "Text", "type": "string"}, "infer": {
        "default": True, "title": "Infer", "type": "boolean"}}, "required": ["text"], "title": "add_memoriesArguments",
        "type": "object"},
    "search_memory": {"properties": {"query": {"title": "Query", "type": "string"}}, "required": ["query"],
                      "title": "search_memoryArguments", "type": "object"},
    "list_memories": {"properties": {}, "title": "list_memoriesArguments", "type": "object"},
    "delete_memories": {"properties": {"memory_ids": {"items": {"type": "string"}, "title": "Memory Ids",
                                                      "type": "array"}}, "required": ["memory_ids"],
                        "title": "delete_memoriesArguments", "type": "object"},
    "delete_all_memories": {"properties": {}, "title": "delete_all_memoriesArguments", "type": "object"},
}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}
STREAMS = {"Accept": "application/json, text/event-stream"}


@contextmanager
def postgres_database(postgres_url: str) -> Iterator[Engine]:
    """A fresh PostgreSQL database for this module, dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    admin = make_engine(postgres_url)
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sql(f'CREATE DATABASE "{name}"'))
    engine = make_engine(make_url(postgres_url).set(database=name))
    try:
        yield engine
    finally:
        settle_all(30)
        engine.dispose()
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def url(server: HttpServer, client_name: str, user_id: str) -> str:
    return f"{server.base}/mcp/{quote(client_name, safe='')}/http/{quote(user_id, safe='')}"


@asynccontextmanager
async def openmemory(server: HttpServer, token: str, client_name: str, user_id: str) -> AsyncIterator[ClientSession]:
    """The SDK's client on OpenMemory's URL, as a client configured for OpenMemory (plus our key)."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        streamable_http_client(url(server, client_name, user_id), http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def said(result: CallToolResult) -> str:
    """A tool's answer: OpenMemory's text, repeated as the structured `result`."""
    assert not result.is_error, result
    assert len(result.content) == 1 and result.content[0].type == "text"
    text = result.content[0].text
    assert result.structured_content == {"result": text}
    return text


def reason(result: CallToolResult) -> str:
    """A refusal: an error result with our code, and a text OpenMemory's clients read as an error."""
    assert result.is_error, result
    data = result.structured_content or {}
    text = result.content[0].text  # type: ignore[union-attr]
    assert data["ok"] is False and data["code"] == "refused" and data["result"] == text
    assert text.startswith("Error: ") and text.endswith(f"({data['reason']})") and data["message"] in text
    return str(data["reason"])


def learn(portal: Portal, place: Place, fact: str) -> None:
    """Run the queued job in a worker here, with a fake model that finds `fact`."""
    with FakeLLMServer() as model:
        model.script(Reply(json.dumps({"facts": [{"text": fact, "kind": "fact", "importance": 4}], "summary": "x"})))
        service = portal.runtime.service
        service.llm = OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0)
        service.ctx.options = replace(service.options, job_retry_seconds=0.2)
        before = service.count(place)
        worker = Worker(portal.runtime.queue, workers=1).start()
        try:
            deadline = time.monotonic() + 20
            while service.count(place) == before and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            worker.stop()
            service.llm = None
