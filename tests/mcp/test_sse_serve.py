"""`memory-portal serve` serves the MCP server too (issue 39, item 9), on the portal's own port, with
several gunicorn workers: OpenMemory's SSE URL, `/mcp/<client_name>/sse/<user_id>` (what
OpenMemory's installer writes), with the messages POST the stream names, and the streamable HTTP
URLs (`/mcp/<client_name>/http/<user_id>`, `/mcp/people/<owner_id>`).

Driven by the SDK's own clients (`mcp.client.sse.sse_client`, the streamable HTTP client) against a
real `serve` with 2 workers, on SQLite and PostgreSQL. The SSE client here opens a new connection
for every message it posts, so the posts land on either worker, the stream's or the other one.
A key acts as its own app on the SSE URL as on the HTTP one (403 `wrong_app`), a stream is its
key's, person's and app's alone, and a worker holds a bounded number of streams (503 beyond), so a
stream never takes a thread the portal's pages need."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client

from portal.adapters.sql.engine import make_engine
from portal.domain.apps import app_of
from portal.domain.types import Place

from .harness import BIN, FORGET, READ, WRITE, HttpServer, Portal, free_port, portal_on
from .openmemory_client import openmemory, postgres_database, reason, said

STREAMS_PER_WORKER = 3
TEA, BEES = "I like green tea", "Keeps bees on the roof of the old barn"


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Portal, HttpServer]]:
    """One portal and `memory-portal serve --workers 2` on it, for the module."""
    folder = tmp_path_factory.mktemp("sse")
    with ExitStack() as stack:
        if request.param == "sqlite":
            engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
        else:
            engine = stack.enter_context(postgres_database(request.getfixturevalue("postgres_url")))
        portal = stack.enter_context(portal_on(engine, folder / "instance"))
        portal.env["MEMORY_SECRET_KEY"] = "k" * 40
        yield portal, stack.enter_context(serve(portal.env, folder / "serve.log"))


@contextmanager
def serve(env: dict[str, str], log: Path) -> Iterator[HttpServer]:
    """`memory-portal serve --workers 2` on a free loopback port, up (both workers booted)."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([str(BIN), "serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
                                 "--mcp-streams", str(STREAMS_PER_WORKER)],
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"serve stopped: {log.read_text()}"
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200 and \
                        log.read_text().count("Booting worker") >= 2:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"serve did not come up: {log.read_text()}"
            time.sleep(0.1)
        yield HttpServer(base, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def sse_url(server: HttpServer, client_name: str, user_id: str) -> str:
    return f"{server.base}/mcp/{quote(client_name, safe='')}/sse/{quote(user_id, safe='')}"


def one_connection_a_request(posted: list[str]) -> Any:
    """The SDK's client, but every message posted on a connection of its own (posts land on
    whichever worker takes the connection, not only on the stream's), and the path and query of
    each post in `posted`."""
    def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        async def record(request: httpx2.Request) -> None:
            if request.method == "POST":
                posted.append(request.url.raw_path.decode("ascii"))

        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks={"request": [record]},
                                  limits=httpx2.Limits(max_keepalive_connections=0))

    return factory


@asynccontextmanager
async def over_sse(server: HttpServer, token: str, client_name: str, user_id: str,
                   posted: list[str] | None = None) -> AsyncIterator[ClientSession]:
    """The SDK's SSE client on OpenMemory's SSE URL (with our key), initialized."""
    async with (
        sse_client(sse_url(server, client_name, user_id), headers={"Authorization": f"Bearer {token}"}, timeout=20,
                   httpx_client_factory=one_connection_a_request(posted if posted is not None else [])) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture
def acme(served: tuple[Portal, HttpServer]) -> dict[str, Any]:
    """A tenant of the test's own with two apps, Claude and Cursor, and ada's memory of tea."""
    portal, _ = served
    name = f"Tenant {uuid.uuid4().hex[:8]}"
    claude, cursor = (portal.key(READ, WRITE, FORGET, name=n, tenant=name) for n in ("Claude", "Cursor"))
    place = Place("ada", portal.tenant(name))
    portal.runtime.service.remember(place, TEA)
    return {"claude": claude, "cursor": cursor, "place": place}


def test_openmemory_s_sse_url_lists_adds_and_searches_through_serve_s_workers(
        served: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    portal, server = served

    async def scenario() -> None:
        with anyio.fail_after(60):
            for _ in range(3):  # three streams: on one worker or the other, their posts on either
                async with over_sse(server, acme["claude"], "claude", "ada") as session:
                    names = {t.name for t in (await session.list_tools()).tools}
                    assert {"add_memories", "search_memory", "list_memories"} <= names
                    listed = json.loads(said(await session.call_tool("list_memories", {})))
                    assert TEA in [m["memory"] for m in listed]
                    for _ in range(4):
                        found = json.loads(said(await session.call_tool("search_memory", {"query": "green tea"})))
                        assert [h["memory"] for h in found["results"]] == [TEA]
            async with over_sse(server, acme["claude"], "Claude", "ada") as session:
                said(await session.call_tool("add_memories", {"text": BEES, "infer": False}))
                found = json.loads(said(await session.call_tool("search_memory", {"query": "bees on the roof"})))
                assert [h["memory"] for h in found["results"]] == [BEES]

    anyio.run(scenario)
    assert sorted(m.text for m in portal.runtime.service.list(acme["place"]).items) == sorted([BEES, TEA])


def test_a_message_the_other_worker_takes_reaches_the_stream(served: tuple[Portal, HttpServer],
                                                             acme: dict[str, Any]) -> None:
    """The stream's worker stopped (SIGSTOP) while the client posts: only the other worker can take
    the post, and hands it on; the answer comes on the stream once its worker runs again."""
    _, server = served
    posted: list[str] = []

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with over_sse(server, acme["claude"], "claude", "ada", posted) as session:
                found = re.search(r"/messages/([0-9]+)/\?session_id=", posted[0])
                assert found, posted
                holder = int(found[1])
                for _ in range(2):
                    answers: list[str] = []

                    async def ask(into: list[str] = answers) -> None:
                        into.append(said(await session.call_tool("search_memory", {"query": "green tea"})))

                    os.kill(holder, signal.SIGSTOP)
                    try:
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(ask)
                            await anyio.sleep(1.0)  # the post is taken meanwhile: by the other worker
                            assert answers == []
                            os.kill(holder, signal.SIGCONT)
                    finally:
                        os.kill(holder, signal.SIGCONT)
                    assert [h["memory"] for h in json.loads(answers[0])["results"]] == [TEA]

    anyio.run(scenario)


def test_a_wrong_key_is_401_another_app_s_name_403_and_a_blocked_app_is_refused(
        served: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    portal, server = served
    for token, name, user, status, code in (("mp_wrong", "claude", "ada", 401, "unauthorized"),
                                            (acme["claude"], "cursor", "ada", 403, "wrong_app"),
                                            (acme["claude"], "claude", "a\x00da", 400, "invalid_owner")):
        with httpx.stream("GET", sse_url(server, name, user), headers={"Authorization": f"Bearer {token}"},
                          timeout=10) as answer:
            assert answer.status_code == status, answer.read()
            assert json.loads(answer.read())["error"]["data"] == {"code": code}

    async def refused(token: str, name: str) -> int:
        with pytest.raises(httpx2.HTTPStatusError) as caught:  # the SDK's client raises it as it connects
            async with over_sse(server, token, name, "ada"):
                pass
        return int(caught.value.response.status_code)

    async def scenario() -> None:
        with anyio.fail_after(60):
            assert await refused("mp_wrong", "claude") == 401
            assert await refused(acme["claude"], "Cursor") == 403
            cursor = app_of(portal.api_key(acme["cursor"]))
            portal.runtime.service.set_app_control(acme["place"], cursor.id, "blocked")
            async with over_sse(server, acme["cursor"], "cursor", "ada") as session:
                for name, arguments in (("list_memories", {}), ("search_memory", {"query": "tea"}),
                                        ("add_memories", {"text": BEES, "infer": False})):
                    assert reason(await session.call_tool(name, arguments)) == "app_blocked", name

    anyio.run(scenario)
    assert [m.text for m in portal.runtime.service.list(acme["place"]).items] == [TEA]


def test_a_stream_is_its_key_s_person_s_and_app_s_alone(served: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    portal, server = served
    posted: list[str] = []

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with over_sse(server, acme["claude"], "claude", "ada", posted) as session:
                path = posted[0]
                assert path.startswith("/mcp/claude/sse/ada/messages/"), path
                message = {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                           "params": {"name": "add_memories", "arguments": {"text": BEES, "infer": False}}}
                other_person = path.replace("/sse/ada/", "/sse/eve/")
                for token, where in ((acme["cursor"], path.replace("/mcp/claude/", "/mcp/cursor/")),
                                     (acme["claude"], other_person), ("mp_wrong", path)):
                    for _ in range(4):  # on either worker
                        async with httpx2.AsyncClient(base_url=server.base, timeout=10) as http:
                            answer = await http.post(where, json=message, headers={"Authorization": f"Bearer {token}"})
                        assert answer.status_code in (401, 404), (where, answer.status_code, answer.text)
                listed = json.loads(said(await session.call_tool("list_memories", {})))
                assert [m["memory"] for m in listed] == [TEA]

    anyio.run(scenario)
    assert [m.text for m in portal.runtime.service.list(acme["place"]).items] == [TEA]
    assert portal.runtime.service.list(Place("eve", acme["place"].scope)).items == []


def test_streams_are_bounded_per_worker_and_the_portal_keeps_answering(
        served: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    _, server = served
    headers = {"Authorization": f"Bearer {acme['claude']}"}
    with ExitStack() as stack:
        statuses = []
        for _ in range(2 * STREAMS_PER_WORKER + 4):
            client = stack.enter_context(httpx.Client(timeout=10))
            answer = stack.enter_context(client.stream("GET", sse_url(server, "claude", "ada"), headers=headers))
            statuses.append(answer.status_code)
            if answer.status_code == 503:
                body = json.loads(answer.read())
                assert body["error"]["data"] == {"code": "too_many_streams"}, body
                assert answer.headers["Retry-After"]
        assert statuses.count(200) <= 2 * STREAMS_PER_WORKER and 503 in statuses, statuses
        for _ in range(10):  # the portal's pages and API still answer, on both workers
            assert httpx.get(server.base + "/readyz", timeout=5, headers={"Connection": "close"}).status_code == 200
    deadline = time.monotonic() + 20  # the streams closed: their places free again, soon
    while True:
        with httpx.stream("GET", sse_url(server, "claude", "ada"), headers=headers, timeout=10) as answer:
            if answer.status_code == 200:
                break
        assert time.monotonic() < deadline, "closed streams kept their places"
        time.sleep(0.2)


def test_the_streamable_http_urls_answer_on_serve_s_port(served: tuple[Portal, HttpServer], acme: dict[str, Any]) -> None:
    _, server = served

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with openmemory(server, acme["claude"], "claude", "ada") as session:
                found = json.loads(said(await session.call_tool("search_memory", {"query": "green tea"})))
                assert [h["memory"] for h in found["results"]] == [TEA]
            async with server.session(acme["claude"], "ada") as session:
                assert (await session.list_tools()).tools

    anyio.run(scenario)
    answer = httpx.post(f"{server.base}/mcp/cursor/http/ada", json={}, timeout=10,
                        headers={"Authorization": f"Bearer {acme['claude']}", "Accept": "application/json, text/event-stream"})
    assert answer.status_code == 403 and answer.json()["error"]["data"] == {"code": "wrong_app"}
