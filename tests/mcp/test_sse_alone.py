"""OpenMemory's SSE URL on `memory-portal mcp --http` (uvicorn, one process, no worker sockets), as
docs/operations.md says: the same stream and door as under `serve`."""

from __future__ import annotations

import json

import anyio
import httpx

from portal.domain.types import Place

from .harness import FORGET, READ, WRITE, HttpServer, Portal
from .openmemory_client import said
from .test_sse_serve import over_sse, sse_url


def test_openmemory_s_sse_url_on_mcp_http(served: tuple[Portal, HttpServer]) -> None:
    portal, server = served
    token = portal.key(READ, WRITE, FORGET, name="Claude", tenant="Alone")
    portal.runtime.service.remember(Place("ada", portal.tenant("Alone")), "I like green tea")

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with over_sse(server, token, "claude", "ada") as session:
                found = json.loads(said(await session.call_tool("search_memory", {"query": "green tea"})))
                assert [h["memory"] for h in found["results"]] == ["I like green tea"]

    anyio.run(scenario)
    with httpx.stream("GET", sse_url(server, "cursor", "ada"), headers={"Authorization": f"Bearer {token}"},
                      timeout=10) as answer:
        assert answer.status_code == 403 and json.loads(answer.read())["error"]["data"] == {"code": "wrong_app"}
