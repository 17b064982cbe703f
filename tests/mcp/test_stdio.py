"""`memory-portal mcp --owner ...` over stdio, spawned by the SDK's stdio client as an assistant
spawns it, on a real SQLite database."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from portal.domain.types import Place

from .flow import WORDS, the_whole_flow
from .harness import BIN, FORGET, READ, WRITE, Portal, payload, stdio_session

BEES = "Keeps bees on the roof of the old barn"


def test_an_assistant_remembers_recalls_corrects_and_forgets_over_stdio(portal: Portal, tmp_path: Path) -> None:
    token = portal.key(READ, WRITE, FORGET)
    stranger = portal.runtime.service.remember(Place("bob", portal.tenant()), BEES, importance=5).memory
    errlog = tmp_path / "server.err"

    async def scenario() -> None:
        with errlog.open("w") as err:
            async with stdio_session(portal.env, token, "alice", err) as session:
                await the_whole_flow(session, stranger.id, BEES)
                # A key revoked while the assistant runs stops working at its next request.
                assert portal.runtime.api_keys.revoke(portal.api_key(token).id)
                with pytest.raises(MCPError) as refused:
                    await session.call_tool("recall", {"query": "marathon"})
                assert refused.value.data == {"code": "unauthorized"}
                assert refused.value.message == "This key is unknown or was revoked: ask for a new one."

    anyio.run(scenario)
    alice, bob = Place("alice", portal.tenant()), Place("bob", portal.tenant())
    assert portal.runtime.service.count(alice) == 0  # forgotten for good
    assert portal.runtime.service.get(bob, stranger.id).text == BEES  # the stranger's memory untouched
    logs = errlog.read_text()
    assert "memory.tool name=remember code=memory_saved" in logs  # the server does log, by codes
    assert not [w for w in (*WORDS, BEES) if w in logs]  # and never a person's words


def test_forget_is_offered_only_to_a_key_allowed_to_forget(portal: Portal, tmp_path: Path) -> None:
    token = portal.key(READ, WRITE)
    stranger = portal.runtime.service.remember(Place("bob", portal.tenant()), BEES).memory

    async def scenario() -> None:
        with (tmp_path / "server.err").open("w") as err:
            async with stdio_session(portal.env, token, "alice", err) as session:
                await the_whole_flow(session, stranger.id, BEES, can_forget=False)
                assert payload(await session.call_tool("recall", {"query": "Paris"}))["memories"]  # still kept

    anyio.run(scenario)


def start(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), "mcp", *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_server_stops_at_once_without_a_valid_key_owner_or_schema(portal: Portal, tmp_path: Path) -> None:
    started = start({**portal.env, "MEMORY_API_KEY": "mp_nope"}, "--owner", "alice")
    assert started.returncode == 1 and started.stdout == ""  # nothing on the protocol's channel
    assert "Error: MEMORY_API_KEY is unknown or revoked" in started.stderr and "Traceback" not in started.stderr
    unnamed = start({**portal.env, "MEMORY_API_KEY": portal.key(READ)}, "--owner", "../x\x01")
    assert unnamed.returncode == 2 and "--owner is not a valid owner id" in unnamed.stderr
    blank = {**portal.env, "MEMORY_DATABASE_URL": f"sqlite:///{tmp_path / 'blank.db'}", "MEMORY_API_KEY": "mp_nope"}
    unmigrated = start(blank, "--owner", "alice")
    assert unmigrated.returncode == 1 and "run `memory-portal db upgrade`" in unmigrated.stderr
