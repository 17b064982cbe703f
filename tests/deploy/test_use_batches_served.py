"""What recalls hand out is written off the request path by a real server (issue 30, item 2):
`memory-portal serve` (gunicorn, two forked workers) on SQLite and on PostgreSQL, set up through
the command line. Recalls through HTTP write nothing while they answer (the uses wait in each
worker's batch); a SIGTERM stops the server gracefully and each worker writes what it gathered
(gunicorn's worker_exit), so every recall is counted, with its conversation.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.store import SqlStore
from portal.domain.types import Place
from tests.deploy.test_multiprocess import API, cli, start, stop

RECALLS = 24


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'memory.db'}"
        return
    url = request.getfixturevalue("postgres_url")
    name = f"uses_{uuid.uuid4().hex[:12]}"
    admin = make_engine(url)
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def test_recalls_are_counted_by_the_workers_batches_and_at_shutdown(database: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_DATABASE_URL=database, MEMORY_EMBEDDER="none", MEMORY_INSTANCE_PATH=str(tmp_path / "instance"),
               MEMORY_SECRET_KEY="s" * 40, MEMORY_API_RATE_LIMIT="100000/minute",
               MEMORY_USES_EVERY_SECONDS="60")  # no batch written by time while the test runs: only at shutdown
    cli(["db", "upgrade"], env)
    tenant = cli(["tenant", "create", "Acme"], env)
    env["TEST_API_KEY"] = cli(["api-key", "create", "--tenant", "Acme", "--name", "Support bot", "--permission",
                               "memories:read", "--permission", "memories:write"], env)
    server = start(env, 2, tmp_path / "gunicorn.log")
    engine = make_engine(database)
    store = SqlStore(engine)
    place = Place("ada", tenant)
    try:
        with httpx.Client(base_url=server.base + API, timeout=30,
                          headers={"Authorization": f"Bearer {server.key}"}) as client:
            made = client.post("/people/ada/memories", json={"text": "Paddles a kayak on Sundays"})
            assert made.status_code == 201, made.text
            kayak = made.json()["memory"]["id"]
            for i in range(RECALLS):
                found = client.post("/people/ada/recall", json={"query": "kayak", "conversation_ref": f"chat-{i % 3}"})
                assert found.status_code == 200, found.text
                assert [h["memory"]["id"] for h in found.json()["items"]] == [kayak]
        with store.read(place) as tx:
            assert [u.action for u in tx.app_uses()] == ["remembered"]  # not one recall written while answering
            assert tx.get(kayak).last_used_at is None  # type: ignore[union-attr]
    finally:
        stop(server)
    assert "Traceback" not in server.output(), server.output()
    assert server.proc.returncode == 0
    with store.read(place) as tx:
        recalled = [u for u in tx.app_uses() if u.action == "recalled"]
        assert sum(u.count for u in recalled) == RECALLS  # both workers' batches, written as they stopped
        assert tx.get(kayak).last_used_at is not None  # type: ignore[union-attr]
        assert len(tx.conversations()) == 3
    engine.dispose()
