"""What one recall through the JSON API sends to the databases (issue 30), on SQLite and on
PostgreSQL, with the uses written in batches as a server writes them: its API key read once (the
rate limit's bucket and the permission check share it), its rate-limit count handed out of the
lease the key's previous call took (no statement: portal.adapters.sql.counters; the answer's
headers told from it), and no write at all to the memories' database: a read is a read. The rate
limit still holds (tests/security/test_hardening_live.py proves it across workers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from portal.domain.types import Place

from .conftest import World


@contextmanager
def statements(*engines: Engine) -> Iterator[Counter[str]]:
    """What each engine is sent, by kind: "SELECT api_keys", "INSERT rate_limit_counters", "write"."""
    seen: Counter[str] = Counter()

    def listen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        words = statement.split()
        verb = words[0].upper()
        if "api_keys" in statement and verb == "SELECT":
            seen["SELECT api_keys"] += 1
        elif "rate_limit_counters" in statement:
            seen[f"{verb} rate_limit_counters"] += 1
        elif verb in ("INSERT", "UPDATE", "DELETE"):
            seen["write"] += 1

    for engine in engines:
        event.listen(engine, "before_cursor_execute", listen)
    try:
        yield seen
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", listen)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def batched(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    return make_world(engine, env={"MEMORY_USES_EVERY_SECONDS": "2"})


def test_a_recall_reads_its_key_once_counts_once_and_writes_no_memory(batched: World) -> None:
    world, client = batched, batched.raw()
    made = client.post("/api/v1/people/ada/memories", json={"text": "Paddles a kayak on Sundays"}, headers=world.auth())
    assert made.status_code == 201
    counters = world.app.extensions.get("counters_engine")  # SQLite: a file of its own; PostgreSQL: the same database
    engines = [world.runtime.engine, *([counters] if counters not in (None, world.runtime.engine) else [])]
    with statements(*engines) as seen:
        found = client.post("/api/v1/people/ada/recall", json={"query": "kayak", "conversation_ref": "chat-1"},
                            headers=world.auth())
    assert found.status_code == 200 and found.json["items"]
    assert int(found.headers["X-RateLimit-Remaining"]) == int(found.headers["X-RateLimit-Limit"]) - 2
    assert seen["SELECT api_keys"] == 1
    assert {k: v for k, v in seen.items() if "rate_limit_counters" in k} == {}  # counted from the lease
    assert seen["write"] == 0
    # The recall's use is kept: written with the worker's batch, shown to the person at once here.
    summary = world.runtime.service.apps.connected(Place("ada", world.tenant_a), {})
    assert sum(a.counts["recalled"] for a in summary) == 1
