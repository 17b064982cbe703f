"""The MCP server run as an assistant runs it: `memory-portal mcp` as a real process (stdio, or
streamable HTTP on a free loopback port) on a real migrated database, reached with the SDK's own
client. A runtime in the test process makes the tenants and keys and looks at what the server did.

The server processes embed nothing (`MEMORY_EMBEDDER=none`: recall ranks by words), which keeps
them starting in about a second; what the embedder changes is proven by the service's own tests.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx
import httpx2
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult
from sqlalchemy.engine import Engine

from portal.adapters.sql.janitor import settle_all
from portal.adapters.sql.migrate import upgrade
from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config
from portal.domain.people import ApiKey

BIN = Path(sys.executable).parent / "memory-portal"
READ, WRITE, FORGET = "memories:read", "memories:write", "memories:forget"
LEGACY, MODERN = "2025-11-25", "2026-07-28"  # the initialize handshake; the per-request protocol


def server_env(database_url: str, instance: Path) -> dict[str, str]:
    """The environment of a server process: this one's, without any MEMORY_ setting of the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_DATABASE_URL=database_url, MEMORY_INSTANCE_PATH=str(instance), MEMORY_EMBEDDER="none",
               # What a call hands out written with the call: these tests look into the database
               # right after it (a server's batches: tests/deploy/test_use_batches_served.py).
               MEMORY_USES_EVERY_SECONDS="0")
    return env


@dataclass
class Portal:
    """A migrated database, the environment a server needs to use it, and a runtime on it here."""

    env: dict[str, str]
    runtime: Runtime
    tenants: dict[str, str] = field(default_factory=dict)

    def tenant(self, name: str = "Acme") -> str:
        if name not in self.tenants:
            self.tenants[name] = self.runtime.tenants.create(name).id
        return self.tenants[name]

    def key(self, *permissions: str, name: str = "Claude Desktop", tenant: str = "Acme") -> str:
        """A new key's plaintext, as `memory-portal api-key create` prints it."""
        _, token = self.runtime.api_keys.create(self.tenant(tenant), permissions, name=name)
        return token

    def api_key(self, token: str) -> ApiKey:
        key = self.runtime.api_keys.verify(token)
        assert key is not None
        return key


@contextmanager
def portal_on(engine: Engine, instance: Path) -> Iterator[Portal]:
    upgrade(engine)
    env = server_env(engine.url.render_as_string(hide_password=False), instance)
    runtime = build_runtime(load_config(env), embedder=None, llm=None, engine=engine)
    try:
        yield Portal(env, runtime)
    finally:
        settle_all(30)
        runtime.dispose()


# ---------------------------------------------------------------------------------- clients


def payload(result: CallToolResult) -> dict[str, Any]:
    """A tool's answer: the JSON of its text content, which its structured content repeats."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert result.is_error is (data["ok"] is False)  # a refusal, and only a refusal, is an error result
    return data


def reason(result: CallToolResult) -> str:
    """The refusal code of a tool's error result."""
    data = payload(result)
    assert result.is_error and data["ok"] is False and data["code"] == "refused", data
    return str(data["reason"])


@asynccontextmanager
async def stdio_session(env: dict[str, str], token: str, owner_id: str, errlog: TextIO) -> AsyncIterator[ClientSession]:
    """`memory-portal mcp --owner OWNER_ID` spawned by the SDK's stdio client, initialized."""
    server = StdioServerParameters(command=str(BIN), args=["mcp", "--owner", owner_id],
                                   env={**env, "MEMORY_API_KEY": token})
    async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@dataclass
class HttpServer:
    base: str
    log: Path

    def url(self, owner_id: str) -> str:
        return f"{self.base}/mcp/people/{owner_id}"

    @asynccontextmanager
    async def session(self, token: str | None, owner_id: str, era: str = LEGACY, **headers: str) -> AsyncIterator[Any]:
        """The SDK's streamable HTTP client on OWNER_ID's endpoint with `token` as bearer, connected:
        a `ClientSession` after the initialize handshake (LEGACY), or a `Client` that negotiated
        the per-request protocol of 2026-07-28 (MODERN), as the SDK's `Client` does by default."""
        sent = {k.replace("_", "-"): v for k, v in headers.items()}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        async with httpx2.AsyncClient(headers=sent, timeout=30) as http:
            transport = streamable_http_client(self.url(owner_id), http_client=http)
            if era == MODERN:
                async with Client(transport) as client:
                    assert client.session.protocol_version == MODERN
                    yield client
                return
            async with transport as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(env: dict[str, str], log: Path) -> Iterator[HttpServer]:
    """`memory-portal mcp --http` on a free loopback port, up until the block ends."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN), "mcp", "--http", "--host", "127.0.0.1", "--port", str(port)],
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, f"the server stopped: {log.read_text()}"
            try:
                httpx.get(base + "/", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, f"the server did not come up: {log.read_text()}"
                time.sleep(0.1)
        yield HttpServer(base, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
