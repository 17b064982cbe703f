"""Forget everything about … when the subject names many people (issue 38, item 22).

Every word a subject writes with a capital is a name, and each name was a word search of its own
over the person's memories, archived ones too: on PostgreSQL with keys each search decrypted every
memory again (a subject of 166 capitalised short words took 8.8 s for 336 memories). A subject now
names at most `MAX_NAMES` people, and its words and names are all ranked over one read of the
place: the active memories' terms from the recall cache (no text decrypted), the others read once.
What is measured, not timed here: the statements a preview sends and the texts it decrypts, on
every SQL store, whatever the number of names (bench/forget_matching.py times it).

Which memories match stays as it was, on every store: the in-memory one, SQLite and PostgreSQL,
with and without keys, with and without the recall cache."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from portal.adapters.cipher import FernetCipher, generate_key
from portal.adapters.memory.store import InMemoryStore
from portal.adapters.sql.store import SqlStore
from portal.domain.apps import App
from portal.domain.subjects import MAX_NAMES, names_in
from portal.domain.types import Place
from portal.services.memory_service import MemoryService
from tests.fakes.embedders import HashEmbedder

ADA = Place("ada", "acme")
NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
STORES = ["memory", "sqlite", "sqlite-keys", "sqlite-no-cache",
          pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("postgres-keys", marks=pytest.mark.postgres),
          pytest.param("postgres-no-cache", marks=pytest.mark.postgres)]
SQL_STORES = [s for s in STORES if s != "memory"]
# 166 capitalised short words, 500 characters: every one a name.
SHORT = [a + b for a in "BCDFGHJKLMNPRSTVWXYZ" for b in "aeiou"] + [b.upper() + a for b in "aeiou" for a in "bcdfgklmnprstvz"]
MANY = " ".join(SHORT[:166])


class CountingCipher(FernetCipher):
    """The store's cipher, counting the texts it decrypts."""

    def __init__(self) -> None:
        super().__init__([generate_key()])
        self.decrypted = 0

    def decrypt(self, token: str) -> str:
        self.decrypted += 1
        return super().decrypt(token)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> Any:
    kind = str(request.param)
    if kind == "memory":
        return InMemoryStore()
    engine = request.getfixturevalue("pg_engine" if kind.startswith("postgres") else "sqlite_engine")
    return SqlStore(engine, cipher=CountingCipher() if kind.endswith("keys") else None,
                    cache_bytes=0 if kind.endswith("no-cache") else 256 * 1024 * 1024)


@pytest.fixture(params=SQL_STORES)
def sql_store(request: pytest.FixtureRequest) -> SqlStore:
    kind = str(request.param)
    engine = request.getfixturevalue("pg_engine" if kind.startswith("postgres") else "sqlite_engine")
    return SqlStore(engine, cipher=CountingCipher() if kind.endswith("keys") else None,
                    cache_bytes=0 if kind.endswith("no-cache") else 256 * 1024 * 1024)


CORPUS = {
    "Anna called about the wedding": "active",
    "My sister Anna lives in Lyon": "active",
    "Joanna sings jazz": "active",
    "Will moved to Oslo last spring": "active",
    "I will call mum on Sunday": "active",
    "Lunch with Will and Anna": "active",
    "Paints birds on Sundays": "active",
    "Painted the kitchen blue": "active",
    "Walks the puppy every morning": "active",
    "Sold the vinyl player to Bo": "archived",
    "Collects vinyl records": "active",
    "Hiked with Zu in the Alps": "active",
    "Zu lent me a tent": "archived",
    "Met Ka at the station": "active",
    "Bo and Ka came to dinner": "active",
    "Likes green tea": "active",
    "Dines with Paul on Fridays": "active",
    "Pauline plays the cello": "active",
}
GONE_BY_THEN = "Visited Anna in hospital"  # expired: no answer holds it
WITHHELD = "Anna hates surprises"  # don't use, for every app: still the person's, still found


def service_on(store: Any, names: tuple[str, ...] = (), embedder: Any = None) -> MemoryService:
    return MemoryService(store, embedder, clock=Clock(), names_of=lambda place: list(names))


def keep_corpus(store: Any) -> dict[str, str]:
    service = service_on(store)
    ids = {t: service.remember(ADA, t, on_duplicate="keep").memory.id for t in CORPUS}
    ids[GONE_BY_THEN] = service.remember(ADA, GONE_BY_THEN, on_duplicate="keep",
                                         expires_at=NOW + timedelta(hours=1)).memory.id
    ids[WITHHELD] = service.remember(ADA, WITHHELD, on_duplicate="keep").memory.id
    service.set_use(ADA, ids[WITHHELD], False)
    with store.write(ADA) as tx:
        tx.set_state([ids[t] for t, state in CORPUS.items() if state == "archived"], "archived")
        tx.commit()
    return ids


# What each subject matched before the change, on every store: words (stemmed), names (with the
# capital rule for a name made of stop words), archived memories, not an expired one. The last
# subject names 166 people: only its first MAX_NAMES are sought now (before, "Ka", the 36th, and
# "Zu", the 100th, were sought too, and "Met Ka at the station" and Zu's memories matched).
EXPECTED = {
    "my sister Anna": {"Anna called about the wedding", "My sister Anna lives in Lyon", "Lunch with Will and Anna",
                       WITHHELD},
    "my brother Will": {"Will moved to Oslo last spring", "Lunch with Will and Anna"},
    "painting": {"Paints birds on Sundays", "Painted the kitchen blue"},
    "vinyl": {"Collects vinyl records", "Sold the vinyl player to Bo"},
    "Zu": {"Hiked with Zu in the Alps", "Zu lent me a tent"},
    "Bo Ka Zu": {"Sold the vinyl player to Bo", "Hiked with Zu in the Alps", "Zu lent me a tent",
                 "Met Ka at the station", "Bo and Ka came to dinner"},
    "Paul": {"Dines with Paul on Fridays"},
    "Ka " + " ".join(SHORT[:20]) + " Zu": {"Met Ka at the station", "Bo and Ka came to dinner",
                                           "Sold the vinyl player to Bo", "Hiked with Zu in the Alps",
                                           "Zu lent me a tent"},
    MANY: {"Sold the vinyl player to Bo", "Bo and Ka came to dinner"},
}


@pytest.mark.parametrize("subject", list(EXPECTED), ids=lambda s: s[:24])
def test_which_memories_a_subject_matches_is_the_same_on_every_store(store: Any, subject: str) -> None:
    keep_corpus(store)
    service = service_on(store)
    service.clock.now = NOW + timedelta(hours=2)  # type: ignore[attr-defined]
    service.recall(ADA, "anything")  # a worker that served a recall has the place in its cache
    assert {m.text for m in service.preview_forget_matching(ADA, subject).items} == EXPECTED[subject]
    # An app's preview: the same, but for what the person withheld from it (it may not learn of it).
    app_view = service.for_app(App("app-1", "Writer"))
    assert {m.text for m in app_view.preview_forget_matching(ADA, subject).items} == EXPECTED[subject] - {WITHHELD}


def test_a_subject_finds_by_meaning_on_every_store(store: Any) -> None:
    keep_corpus(store)
    # A wide hash: no two words of the corpus share a bucket, so only "puppy" means "dog".
    service = service_on(store, embedder=HashEmbedder(dim=4096, synonyms={"puppy": "dog"}))
    service.reindex()
    assert {m.text for m in service.preview_forget_matching(ADA, "dog").items} == {"Walks the puppy every morning"}


def test_someone_the_tenant_knows_is_a_name_written_small_on_every_store(store: Any) -> None:
    keep_corpus(store)
    service = service_on(store, names=("Will",))
    assert {m.text for m in service.preview_forget_matching(ADA, "my brother will").items} == {
        "Will moved to Oslo last spring", "Lunch with Will and Anna"}


def test_a_subject_names_at_most_max_names_people_known_names_first() -> None:
    named = names_in(MANY, ["Ca Ce", "Pauline"])
    assert len(named) == MAX_NAMES and named[0].query == "ca ce"
    assert [n.query for n in names_in(MANY, [])] == [w.lower() for w in SHORT[:MAX_NAMES]]


def test_a_name_past_the_bound_is_not_sought(store: Any) -> None:
    """The subject's own words count for their first 32 terms; its names for the first MAX_NAMES."""
    service = service_on(store)
    far = SHORT[MAX_NAMES + 5]
    near = SHORT[3]
    ids = {t: service.remember(ADA, t, on_duplicate="keep").memory.id for t in (f"Met {far} today", f"Met {near} today")}
    found = {m.text for m in service.preview_forget_matching(ADA, " ".join(SHORT[:MAX_NAMES + 10])).items}
    assert found == {f"Met {near} today"}, ids


class Statements:
    def __init__(self, engine: Engine) -> None:
        self.count = 0
        self.engine = engine
        event.listen(engine, "before_cursor_execute", self.seen)

    def seen(self, *args: Any) -> None:
        self.count += 1

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self.seen)


@pytest.fixture
def statements(sql_store: SqlStore) -> Iterator[Statements]:
    counted = Statements(sql_store.engine)
    yield counted
    counted.close()


def test_a_subject_naming_many_people_reads_the_place_once(sql_store: SqlStore, statements: Statements) -> None:
    """What a preview costs does not grow with the names: a few statements, and each text
    decrypted once at most (none of the active ones a recall cached)."""
    keep_corpus(sql_store)
    service = service_on(sql_store)
    service.recall(ADA, "anything")
    cipher = sql_store.cipher
    for subject in ("my sister Anna", MANY):
        statements.count = 0
        if isinstance(cipher, CountingCipher):
            cipher.decrypted = 0
        service.preview_forget_matching(ADA, subject)
        assert statements.count <= 12, (subject[:20], statements.count)
        if isinstance(cipher, CountingCipher):
            assert cipher.decrypted <= len(CORPUS) + 2, (subject[:20], cipher.decrypted)
