"""The memory as a Model Context Protocol server (the official `mcp` SDK), for assistants that
speak MCP: the model tools `remember`, `recall`, `update_memory` and `forget`, and the portrait as
a resource (`memory://portrait`) and a prompt (`portrait`).

A thin shell over the service like the JSON API: the same API keys (the key fixes the tenant and
the permissions), the person named by the transport (never by a tool argument), every call through
the app's view of the service (`MemoryService.for_app`), the tools run by `run_tool` so refusals
and their messages are the model tools' own. `server` builds the MCP server for a caller a
transport resolves; `stdio` and `http` are the two transports (`memory-portal mcp [--http]`).
`openmemory` serves OpenMemory's five tools at OpenMemory's URL (`/mcp/<client_name>/http/<user_id>`)
for the assistants configured for it, `client_name` naming an app of the key's tenant.
"""

from portal.mcp.server import PORTRAIT_PROMPT, PORTRAIT_URI, Caller, build_server

__all__ = ["PORTRAIT_PROMPT", "PORTRAIT_URI", "Caller", "build_server"]
