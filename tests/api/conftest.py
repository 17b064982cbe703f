"""An API world for the tests: the real app on a fresh migrated database (SQLite, or PostgreSQL
for the tests that ask for `any_world`), tenants A and B, and API keys of every kind.

Every app is wrapped in a recorder of response statuses; a test whose app answered any 5xx fails
at teardown (DESIGN §11: no 500 on any input).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.engine import Engine
from werkzeug.serving import make_server

from portal.adapters.sql.api_keys import ApiKeys
from portal.adapters.sql.engine import make_engine
from portal.app import create_app
from portal.bootstrap import Runtime, build_runtime
from portal.client import MemoryClient
from portal.config import load_config
from portal.domain.people import PERMISSIONS
from portal.domain.types import Place
from portal.ports import Filters

from ..status import StatusRecorder

API = "/api/v1"
RULES = """
[[rule]]
code = "secret"
patterns = ["\\\\bpassword\\\\b", "\\\\bpin code\\\\b"]
"""




@dataclass
class World:
    app: Flask
    runtime: Runtime
    tenant_a: str
    tenant_b: str
    keys: dict[str, str]
    recorder: StatusRecorder
    key_ids: dict[str, str] = field(default_factory=dict)

    def client(self, key: str = "a") -> MemoryClient:
        return MemoryClient("http://portal.test", self.keys[key], transport=httpx.WSGITransport(app=self.app))

    def raw(self) -> FlaskClient:
        return self.app.test_client()

    def auth(self, key: str = "a", **headers: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[key]}", **headers}

    def count(self, owner: str = "ada", tenant: str | None = None, state: str = "all") -> int:
        """How many memories the person has, read through the service (not the API under test)."""
        place = Place(owner, tenant or self.tenant_a)
        with self.runtime.store.read(place) as tx:
            return len(tx.list(Filters(state=None if state == "all" else state)))


def build_world(engine: Engine, tmp_path: Path, embedder: Any = None, llm: Any = None,
                env: dict[str, str] | None = None, flask: dict[str, Any] | None = None) -> World:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    config = load_config({
        "MEMORY_INSTANCE_PATH": str(tmp_path), "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "k" * 40,
        "MEMORY_RULES_FILE": str(rules),
        # What a call hands out written with the call, for the tests that look into the store right
        # after it; the batches of a server (every 2 s) have their own tests (test_use_batches.py).
        "MEMORY_USES_EVERY_SECONDS": "0", **(env or {}),
    })
    runtime = build_runtime(config, embedder=embedder, engine=engine, llm=llm)
    app = create_app(config=dict(flask or {}), runtime=runtime)
    app.config["TESTING"] = True
    recorder = StatusRecorder(app.wsgi_app)
    app.wsgi_app = recorder  # type: ignore[method-assign]
    tenant_a = runtime.tenants.create(f"acme-{tmp_path.name}").id
    tenant_b = runtime.tenants.create(f"globex-{tmp_path.name}").id
    keys = ApiKeys(engine)
    made: dict[str, str] = {}
    ids: dict[str, str] = {}

    def key(name: str, tenant: str, permissions: tuple[str, ...]) -> None:
        api_key, token = keys.create(tenant, permissions, name=name)
        made[name], ids[name] = token, api_key.id

    key("a", tenant_a, PERMISSIONS)
    key("b", tenant_b, PERMISSIONS)
    key("a_read", tenant_a, ("memories:read",))
    key("a_revoked", tenant_a, PERMISSIONS)
    keys.revoke(ids["a_revoked"])
    for permission in PERMISSIONS:
        key(f"a_without:{permission}", tenant_a, tuple(p for p in PERMISSIONS if p != permission))
        key(f"a_only:{permission}", tenant_a, (permission,))
    return World(app, runtime, tenant_a, tenant_b, made, recorder, ids)


@pytest.fixture
def sqlite_engine(migrated_sqlite: Path, tmp_path: Path) -> Iterator[Engine]:
    """A fresh migrated SQLite file for one test (a copy of the session's migrated template, made
    in tests/conftest.py)."""
    path = tmp_path / "memory.db"
    shutil.copyfile(migrated_sqlite, path)
    engine = make_engine(f"sqlite:///{path}")
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
def make_world(tmp_path: Path) -> Iterator[Callable[..., World]]:
    """A factory of worlds; at teardown, every world's app must have answered no 5xx."""
    worlds: list[World] = []
    counter = iter(range(1000))

    def make(engine: Engine, embedder: Any = None, llm: Any = None, env: dict[str, str] | None = None,
             flask: dict[str, Any] | None = None) -> World:
        folder = tmp_path / f"world{next(counter)}"
        folder.mkdir()
        world = build_world(engine, folder, embedder=embedder, llm=llm, env=env, flask=flask)
        worlds.append(world)
        return world

    yield make
    for world in worlds:  # the job queue's connection (PostgreSQL), made when a job was queued
        world.runtime.queue.close()
    errors = [seen for w in worlds for seen in w.recorder.seen if seen[2] >= 500]
    assert not errors, f"server errors: {errors}"


@pytest.fixture
def world(make_world: Callable[..., World], sqlite_engine: Engine) -> World:
    return make_world(sqlite_engine)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_world(request: pytest.FixtureRequest, make_world: Callable[..., World]) -> World:
    """The same world on SQLite and on PostgreSQL (pgvector)."""
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    return make_world(engine)


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    body: Any
    permission: str | None


def endpoints(owner: str, memory_id: str) -> list[Endpoint]:
    """Every endpoint of the §11 table with a valid body, for `owner` and an existing memory."""
    person = f"{API}/people/{owner}"
    memory = f"{person}/memories/{memory_id}"
    write, read = "memories:write", "memories:read"
    return [
        Endpoint("remember", "POST", f"{person}/memories", {"text": "Likes jazz"}, write),
        Endpoint("list", "GET", f"{person}/memories", None, read),
        Endpoint("get", "GET", memory, None, read),
        Endpoint("update", "PATCH", memory, {"importance": 5}, write),
        Endpoint("undo", "POST", f"{memory}/undo", None, write),
        Endpoint("forget", "DELETE", memory, None, write),
        Endpoint("history", "GET", f"{memory}/history", None, read),
        Endpoint("recall", "POST", f"{person}/recall", {"query": "tea"}, read),
        Endpoint("portrait", "GET", f"{person}/portrait", None, read),
        Endpoint("consolidate", "POST", f"{person}/consolidate", {"transcript": "I like tea", "ref": "c1"},
                 "consolidate"),
        Endpoint("used", "POST", f"{person}/used", {"ids": [memory_id]}, write),
        Endpoint("unseen", "GET", f"{person}/unseen", None, read),
        Endpoint("seen", "POST", f"{person}/seen", {"ids": [memory_id]}, write),
        Endpoint("get_settings", "GET", f"{person}/settings", None, read),
        # What an app may change of the settings: a pause (lifting it is the person's, 403 person_decides).
        Endpoint("put_settings", "PUT", f"{person}/settings", {"paused": True}, write),
        Endpoint("export", "GET", f"{person}/export", None, read),
        Endpoint("erase", "DELETE", person, None, "erasure"),
        Endpoint("forget_matching", "POST", f"{person}/forget-matching", {"query": "tea", "dry_run": True}, write),
        Endpoint("tools", "GET", f"{API}/tools", None, None),
        Endpoint("tool_recall", "POST", f"{person}/tools/recall", {"arguments": {"query": "tea"}}, read),
        Endpoint("tool_remember", "POST", f"{person}/tools/remember", {"arguments": {"text": "Likes jazz"}}, write),
    ]


def send(raw: FlaskClient, endpoint: Endpoint, headers: dict[str, str]) -> Any:
    return raw.open(endpoint.path, method=endpoint.method, json=endpoint.body, headers=headers)


@contextmanager
def serving(world: World) -> Iterator[str]:
    """The world's app on a threaded WSGI server on a free loopback port; yields its base URL."""
    server = make_server("127.0.0.1", 0, world.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
