"""A console world for the support and admin tests: the real app on a fresh migrated database.

Two tenants, A and B. Members a1 and a2 live in A, b1 in B; staff sA serves A, staff sB serves B;
the admin sits in A and sees everything. a1 has memories whose words appear nowhere else (so a
test can prove they never leak into pages, the audit log or a table after erasure), and an owner
id of its own (`ext-a1-owner`), as when the assistant backend names people by its own ids.

No embedder and no model. Apps are built with CSRF off unless a test asks for it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select
from sqlalchemy.engine import Engine
from werkzeug.test import TestResponse

from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.tables import api_keys, audit_log, erasure_requests, memories, tenants, users
from portal.app import create_app
from portal.bootstrap import Runtime, build_runtime
from portal.config import load_config
from portal.domain.audit import AuditEntry
from portal.domain.people import Tenant, User
from portal.domain.types import Memory, Place, Saved, Source

PASSWORD = "correct horse battery"

# a1's memories: (text, kind). Their distinctive words must never show outside a break-glass view,
# an access export or the person's own portal.
A1_MEMORIES = (
    ("Keeps an axolotl in the kitchen", "fact"),
    ("Loves marzipan on Sundays", "preference"),
    ("Wants to learn the bassoon", "goal"),
)
A1_WORDS = ("axolotl", "marzipan", "bassoon")
B1_TEXT = "Collects zeppelin postcards"


@dataclass
class Console:
    runtime: Runtime
    a: Tenant
    b: Tenant
    a1: User
    a2: User
    b1: User
    sA: User
    sB: User
    admin: User
    _app: Flask | None = None

    def app(self, csrf: bool = False) -> Flask:
        config: dict[str, Any] = {"TESTING": True, "LOGIN_RATE_LIMIT": "1000/minute"}
        if not csrf:
            config["WTF_CSRF_ENABLED"] = False
        return create_app(config, runtime=self.runtime)

    def client(self, user: User | None = None, app: Flask | None = None, through_form: bool = False) -> FlaskClient:
        """A browser on `app` (a fresh one, CSRF off, by default), signed in as `user` when given.

        Signing in through the form costs an Argon2 verification; most tests start from the session
        flask-login would have made (`through_form=True` goes through /login instead)."""
        if app is None:
            if self._app is None:
                self._app = self.app()
            app = self._app
        client = app.test_client()
        if user is not None and through_form:
            answer = client.post("/login", data={"email": user.email, "password": PASSWORD})
            assert answer.status_code == 303, answer.status_code
        elif user is not None:
            with client.session_transaction() as session:
                session["_user_id"] = user.get_id()
                session["_fresh"] = True
        return client

    def remember(self, place: Place, text: str, **kwargs: Any) -> Memory:
        kwargs.setdefault("sources", (Source("api"),))
        outcome = self.runtime.service.remember(place, text, **kwargs)
        assert isinstance(outcome, Saved), outcome
        return outcome.memory

    def texts(self, user: User) -> list[str]:
        return [m.text for m in self.runtime.service.list(user.place, state="all", limit=100).items]

    def audit(self, **filters: Any) -> list[AuditEntry]:
        return self.runtime.audit.query(None, **filters)

    def state(self) -> dict[str, Any]:
        """What a forbidden request must not change: row counts, memories, requests, tenants, keys."""
        engine = self.runtime.engine
        with engine.connect() as conn:
            counts = {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
                      for t in (api_keys, audit_log, erasure_requests, memories, tenants, users)}
            requests = sorted(tuple(r) for r in conn.execute(select(erasure_requests.c.id, erasure_requests.c.state)))
            switches = sorted(tuple(r) for r in conn.execute(select(tenants.c.id, tenants.c.ai_enabled)))
            keys = sorted(tuple(r) for r in conn.execute(select(api_keys.c.id, api_keys.c.revoked_at)))
        return {"counts": counts, "requests": requests, "switches": switches, "keys": keys,
                "a1": self.texts(self.a1), "b1": self.texts(self.b1)}


def build_console(engine: Engine, folder: Path) -> Console:
    config = load_config({"MEMORY_INSTANCE_PATH": str(folder), "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "s" * 40})
    runtime = build_runtime(config, embedder=None, engine=engine, llm=None)
    a = runtime.tenants.create("Tenant A")
    b = runtime.tenants.create("Tenant B")
    make = runtime.accounts.create
    console = Console(
        runtime, a, b,
        a1=make("ada@a.example", "Ada Quill", a.id, "member", PASSWORD, owner_id="ext-a1-owner"),
        a2=make("alan@a.example", "Alan Brook", a.id, "member", PASSWORD),
        b1=make("bea@b.example", "Bea Stone", b.id, "member", PASSWORD),
        sA=make("sam@a.example", "Sam Helper", a.id, "staff", PASSWORD),
        sB=make("sid@b.example", "Sid Helper", b.id, "staff", PASSWORD),
        admin=make("root@a.example", "Ana Admin", a.id, "admin", PASSWORD),
    )
    for text, kind in A1_MEMORIES:
        console.remember(console.a1.place, text, kind=kind)
    console.remember(console.a2.place, "Plays chess by mail", kind="fact")
    console.remember(console.b1.place, B1_TEXT, kind="fact")
    return console


def open_console(engine: Engine, folder: Path, **env: str) -> Console:
    """The console world already written in `engine` (by `build_console`), on a runtime of its own
    (configured by `env` besides the defaults)."""
    config = load_config({"MEMORY_INSTANCE_PATH": str(folder), "MEMORY_EMBEDDER": "none", "MEMORY_SECRET_KEY": "s" * 40,
                          **env})
    runtime = build_runtime(config, embedder=None, engine=engine, llm=None)
    a, b = runtime.tenants.find("Tenant A"), runtime.tenants.find("Tenant B")
    assert a is not None and b is not None
    found = {u.email: u for u in runtime.accounts.find("example")}
    return Console(runtime, a, b, a1=found["ada@a.example"], a2=found["alan@a.example"], b1=found["bea@b.example"],
                   sA=found["sam@a.example"], sB=found["sid@b.example"], admin=found["root@a.example"])


@pytest.fixture(scope="session")
def console_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The migrated database with the console world in it, made once: Argon2 hashing and the
    migrations are the slow part of a world, so each test starts from a copy of this file."""
    folder = tmp_path_factory.mktemp("console-template")
    engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
    try:
        upgrade(engine)
        build_console(engine, folder).runtime.dispose()
    finally:
        engine.dispose()
    return folder / "memory.db"


@pytest.fixture
def console(console_template: Path, tmp_path: Path) -> Iterator[Console]:
    """A fresh copy of the console world on SQLite, for one test."""
    shutil.copyfile(console_template, tmp_path / "memory.db")
    engine = make_engine(f"sqlite:///{tmp_path / 'memory.db'}")
    world = open_console(engine, tmp_path)
    try:
        yield world
    finally:
        world.runtime.dispose()


def page_text(answer: TestResponse) -> str:
    """The answer's HTML with tags removed and whitespace collapsed: what a person reads."""
    html = answer.get_data(as_text=True)
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def bare_cells(html: str) -> str:
    """`html` without the cells' `data-label` (the column's name a phone shows above each value),
    so a test reads a row as its cells' values."""
    return re.sub(r' data-label="[^"]*"', "", html)


def main_html(answer: TestResponse) -> str:
    """The page's <main> only (the header names the signed-in staff member, which is fine)."""
    html = answer.get_data(as_text=True)
    found = re.search(r"<main\b.*?</main>", html, flags=re.S)
    assert found, "no <main> on the page"
    return found.group(0)


def csrf_token_of(answer: TestResponse) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', answer.get_data(as_text=True))
    assert found, "the page carries no CSRF token"
    return found.group(1)


def request_id_from(answer: TestResponse) -> str:
    """The erasure request a 'log erasure' redirect points at."""
    found = re.search(r"/staff/erasure/([0-9a-f]+)$", answer.headers["Location"])
    assert found, answer.headers.get("Location")
    return found.group(1)


def entry_json(entry: AuditEntry) -> str:
    """Everything an audit entry holds, as one string to search."""
    return json.dumps([entry.actor_id, entry.actor_role, entry.action, entry.subject_owner_id, entry.scope,
                       entry.counts, entry.ticket, entry.reason_code])
