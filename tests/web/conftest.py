"""A portal world for the web tests: the real app on a fresh migrated SQLite file, one tenant, and
the accounts of two people (Ada chose English, Bob French) and Ada's colleague Chloé (who chose no
language: the portal speaks her browser's).

No embedder (recall ranks by words) and no model. The service's clock ticks one second per call, so
"newest first" is decided by the clock the service is handed, not by how fast the test runs.
Apps are built with CSRF off unless a test asks for it (`world.app(csrf=True)`; see test_csrf.py).
"""

from __future__ import annotations

import html as html_module
import itertools
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade
from portal.app import create_app
from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config
from portal.domain.people import User
from portal.domain.types import Memory, Saved, Source

PASSWORD = "correct horse battery"
HX = {"HX-Request": "true"}


@dataclass
class World:
    runtime: Runtime
    tenant_id: str
    ada: User
    bob: User
    chloe: User

    def app(self, csrf: bool = False, **settings: Any) -> Flask:
        config: dict[str, Any] = {"TESTING": True, **settings}
        if not csrf:
            config["WTF_CSRF_ENABLED"] = False
        return create_app(config, runtime=self.runtime)

    def client(self, user: User | None = None, **settings: Any) -> FlaskClient:
        """A browser on a fresh app (CSRF off), signed in as `user` when one is given."""
        client = self.app(**settings).test_client()
        if user is not None:
            sign_in(client, user.email)
        return client

    def remember(self, user: User, text: str, **kwargs: Any) -> Memory:
        """A memory written straight through the service (what the assistant would have kept)."""
        kwargs.setdefault("sources", (Source("api"),))
        outcome = self.runtime.service.remember(user.place, text, **kwargs)
        assert isinstance(outcome, Saved), outcome
        return outcome.memory

    def memory(self, user: User, memory_id: str) -> Memory:
        return self.runtime.service.get(user.place, memory_id)

    def texts(self, user: User) -> list[str]:
        return [m.text for m in self.runtime.service.list(user.place, limit=100).items]


def ticking_clock(start: datetime) -> Any:
    ticks = itertools.count()

    def now() -> datetime:
        return start + timedelta(seconds=next(ticks))

    return now


def seed(runtime: Runtime) -> dict[str, str]:
    """The tenant and the three accounts; their ids by name."""
    tenant = runtime.tenants.create("Acme")
    accounts = runtime.accounts
    return {
        "tenant": tenant.id,
        "ada": accounts.create("ada@example.com", "Ada Lovelace", tenant.id, "member", PASSWORD, language="en").id,
        "bob": accounts.create("bob@example.com", "Bob Durand", tenant.id, "member", PASSWORD, language="fr").id,
        "chloe": accounts.create("chloe@example.com", "Chloé", tenant.id, "member", PASSWORD).id,
    }


def config_in(folder: Path) -> Any:
    return load_config({"MEMORY_INSTANCE_PATH": str(folder), "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "s" * 40})


@pytest.fixture(scope="session")
def seeded_database(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A migrated SQLite file with the tenant and the three accounts, made once and copied for each
    test (migrating and hashing passwords for every test would triple the suite's time)."""
    folder = tmp_path_factory.mktemp("seed")
    engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
    try:
        upgrade(engine)
        ids = seed(build_runtime(config_in(folder), embedder=None, engine=engine, llm=None))
    finally:
        engine.dispose()
    return folder / "memory.db", ids


@pytest.fixture
def world_embedder() -> Any:
    """The world's embedder: none (recall by words); a test module may give one."""
    return None


@pytest.fixture
def world(tmp_path: Path, seeded_database: tuple[Path, dict[str, str]], world_embedder: Any) -> Iterator[World]:
    seeded, ids = seeded_database
    shutil.copyfile(seeded, tmp_path / "memory.db")
    config = config_in(tmp_path)
    runtime = build_runtime(config, embedder=world_embedder, engine=make_engine(config.database_url), llm=None)
    try:
        yield world_of(runtime, ids)
    finally:
        runtime.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_world(request: pytest.FixtureRequest, tmp_path: Path, world_embedder: Any) -> Iterator[World]:
    """The same world on SQLite and on PostgreSQL (migrated and seeded for the test)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("world")
        return
    runtime = build_runtime(config_in(tmp_path), embedder=world_embedder, engine=request.getfixturevalue("pg_engine"),
                            llm=None)
    try:
        yield world_of(runtime, seed(runtime))
    finally:
        runtime.dispose()


def world_of(runtime: Runtime, ids: dict[str, str]) -> World:
    runtime.service.clock = ticking_clock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))

    def account(name: str) -> User:
        user = runtime.accounts.get(ids[name])
        assert user is not None
        return user

    return World(runtime, ids["tenant"], account("ada"), account("bob"), account("chloe"))


def sign_in(client: FlaskClient, email: str, password: str = PASSWORD, **kwargs: Any) -> TestResponse:
    answer = client.post("/login", data={"email": email, "password": password}, **kwargs)
    assert answer.status_code == 303, answer.status_code
    return answer


def page_text(answer: TestResponse) -> str:
    """The answer's HTML with tags removed and whitespace collapsed: what a person reads."""
    html = answer.get_data(as_text=True)
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def row_ids(answer: TestResponse) -> list[str]:
    """The memory ids of the rows shown, top to bottom."""
    return re.findall(r'<li id="m-([^"]+)"', answer.get_data(as_text=True))


def csrf_token_of(answer: TestResponse) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', answer.get_data(as_text=True))
    assert found, "the page carries no CSRF token"
    return found.group(1)
