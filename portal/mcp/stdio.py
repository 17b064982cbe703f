"""The MCP server over stdio, for an assistant that starts it as its own child process.

One process serves one person: the owner id comes from the command line (`--owner`, or
`MEMORY_OWNER_ID`), the key from `MEMORY_API_KEY`, and the tenant from the key, as the JSON API
takes them. The key is checked again on every request, so a key revoked while the assistant runs
stops working at once (`unauthorized`) instead of at its next start.
"""

from __future__ import annotations

import anyio.to_thread
from mcp.server.stdio import stdio_server

from portal.bootstrap import Runtime
from portal.domain.catalog import DEFAULT_LANGUAGE
from portal.mcp.server import Caller, Context, build_server, caller_for, refused


async def serve_stdio(runtime: Runtime, token: str, owner_id: str, language: str = DEFAULT_LANGUAGE) -> None:
    """Serve one client on this process's stdin and stdout until it closes them."""

    async def resolve(ctx: Context) -> Caller:
        key = await anyio.to_thread.run_sync(runtime.api_keys.verify, token)
        if key is None:
            raise refused("unauthorized", language, "unknown or revoked key (MEMORY_API_KEY)")
        return caller_for(key, owner_id, language)

    server = build_server(runtime, resolve)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


__all__ = ["serve_stdio"]
