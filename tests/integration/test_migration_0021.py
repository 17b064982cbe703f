"""Migration 0021 (issue 38, review1): a conversation's claim names the app that had it. A claim kept
before cannot be told whose it was: it holds for every app and the person, as before, so nothing
learnt before the upgrade is learnt twice; claims made since are each app's own. Going back keeps
one claim per conversation, a done one first. SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import column, insert, inspect, select, table
from sqlalchemy.engine import Engine

from portal.adapters.sql.migrate import upgrade
from portal.adapters.sql.store import SqlStore
from portal.adapters.sql.tables import UTCDateTime, consolidation_refs
from portal.domain.apps import App
from portal.domain.decisions import conversation_key
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from .test_migrations import downgrade

ADA, BOB = Place("ada", "default"), Place("bob", "default")
NOW = datetime(2026, 12, 1, tzinfo=UTC)
CLAIMS_AT_0020 = table("consolidation_refs", *(column(n, UTCDateTime() if n.endswith(("_at", "_until")) else None)
                                               for n in ("owner_id", "scope", "ref", "claimed_at", "state", "lease_until",
                                                         "holder")))


class Model:
    """The model, at our own boundary: it learns one fact from whatever it is shown."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, system: str, prompt: str) -> str:
        self.calls += 1
        return json.dumps({"facts": [{"text": f"Learnt fact number {self.calls}"}], "summary": "a chat"})


def key(ref: str) -> str:
    return conversation_key(ref, None)


def claims(engine: Engine) -> set[tuple[str, str, str, str]]:
    with engine.connect() as conn:
        c = consolidation_refs.c
        return {tuple(r) for r in conn.execute(select(c.owner_id, c.ref, c.app_id, c.state))}  # type: ignore[misc]


def check_0021(engine: Engine) -> None:
    upgrade(engine, "0020")
    with engine.begin() as conn:  # two conversations of ada's learnt, one whose worker died, one of bob's
        conn.execute(insert(CLAIMS_AT_0020), [
            {"owner_id": "ada", "scope": "default", "ref": key("conv-1"), "claimed_at": NOW, "state": "done"},
            {"owner_id": "ada", "scope": "default", "ref": key("conv-2"), "claimed_at": NOW, "state": "done"},
            {"owner_id": "ada", "scope": "default", "ref": key("conv-3"), "claimed_at": NOW, "state": "running",
             "holder": "dead", "lease_until": NOW - timedelta(hours=1)},
            {"owner_id": "bob", "scope": "default", "ref": key("conv-1"), "claimed_at": NOW, "state": "done"},
        ])
    upgrade(engine)
    assert inspect(engine).get_pk_constraint("consolidation_refs")["constrained_columns"] == [
        "owner_id", "scope", "ref", "app_id"]
    assert claims(engine) == {("ada", key("conv-1"), "*", "done"), ("ada", key("conv-2"), "*", "done"),
                              ("ada", key("conv-3"), "*", "running"), ("bob", key("conv-1"), "*", "done")}
    model = Model()
    person = MemoryService(SqlStore(engine), llm=model)
    writer, bot = person.for_app(App("app-w", "Writer")), person.for_app(App("app-b", "Bot"))
    # What was learnt before stays learnt, whoever sends it again.
    for who, place, ref in ((writer, ADA, "conv-1"), (bot, ADA, "conv-2"), (person, ADA, "conv-1"), (bot, BOB, "conv-1")):
        assert who.consolidate(place, "I adopted a cat.", ref).status == "already", (place, ref)
    assert model.calls == 0
    # The claim a dead worker left is taken over, by the app that sends it: its own from then on.
    assert bot.consolidate(ADA, "I run.", "conv-3").status == "done"
    assert bot.consolidate(ADA, "I run.", "conv-3").status == "already"
    assert writer.consolidate(ADA, "I swim.", "conv-3").status == "done"  # the writer's conv-3 is its own
    # A conversation had since is the app's that had it.
    for who in (writer, bot, person):
        assert who.consolidate(ADA, "I play the cello.", "conv-4").status == "done"
        assert who.consolidate(ADA, "I play the cello.", "conv-4").status == "already"
    assert model.calls == 5 and len(person.list(ADA).items) == 5
    # Going back: one claim per conversation, a done one (not the running first in app order), under the old key.
    with engine.begin() as conn:
        conn.execute(consolidation_refs.update().where(consolidation_refs.c.app_id == "",
                                                       consolidation_refs.c.ref == key("conv-4")).values(state="running"))
    downgrade(engine, "0020")
    assert inspect(engine).get_pk_constraint("consolidation_refs")["constrained_columns"] == ["owner_id", "scope", "ref"]
    with engine.connect() as conn:
        kept = {tuple(r) for r in conn.execute(select(CLAIMS_AT_0020.c.owner_id, CLAIMS_AT_0020.c.ref,
                                                      CLAIMS_AT_0020.c.state))}
    assert kept == {("ada", key(f"conv-{n}"), "done") for n in range(1, 5)} | {("bob", key("conv-1"), "done")}
    upgrade(engine)
    assert {(owner, ref, app) for owner, ref, app, _ in claims(engine)} == {
        ("ada", key(f"conv-{n}"), "*") for n in range(1, 5)} | {("bob", key("conv-1"), "*")}


def test_sqlite_0021_names_the_app_of_a_claim_and_learns_nothing_twice(sqlite_blank_engine: Engine) -> None:
    check_0021(sqlite_blank_engine)


@pytest.mark.postgres
def test_postgres_0021_names_the_app_of_a_claim_and_learns_nothing_twice(pg_blank_engine: Engine) -> None:
    check_0021(pg_blank_engine)
