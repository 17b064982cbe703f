"""What a person erases, corrects away in place or undoes is never readable again (DESIGN §2, §4,
§10, §11): not through the API, the portal, an idempotency replay, any table, the SQLite files on
disk, or what the worker keeps in memory.

Each world is a real app (Flask test client) on a fresh migrated SQLite file or PostgreSQL
database, with the fake OpenAI-compatible model on loopback and no embedding model. One person,
`owner-zk81`, is given a distinctive made-up word through every write path (`WRITE_PATHS`: a
failure names the path), then erased one way (`WAYS`), and everything is looked at in a fixed
order: the worker's memory first (a later read would refill it), then every table, the files
while open, owner rows, every page, the files again once the engine let go of them, and the
replays last (a replay that runs again may write). Each test asserts one of those looks, so one
world answers several tests; worlds are built once per (store, way) for the module.

Every run also keeps what the portal logged: no log line may carry any of the words.

`corrected` erases nothing: there only the wording overwritten in place and the wording undone
must be gone, while everything else stays.
"""

from __future__ import annotations

import gc
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url
from werkzeug.test import TestResponse

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.sql.engine import make_engine
from portal.adapters.sql.migrate import upgrade

from ..api.conftest import API, World, build_world
from ..fakes.llm_server import FakeLLMServer
from .erasure_world import PASSWORD, PORTAL, PURGING, STORES, WAYS, WRITE_PATHS, Person, Run, erased_in, look
from .scans import words_in_postgres_files

# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def llm(server: FakeLLMServer) -> OpenAICompatibleLLM:
    """One client of the fake model for every world (making one costs most of a second)."""
    return OpenAICompatibleLLM(server.base_url, "m", retries=0, timeout=5.0)


class Databases:
    """Fresh migrated databases, each a copy of one migrated template (SQLite file, PostgreSQL
    template database), so Alembic runs once per store for the module."""

    def __init__(self, folder: Path, postgres_url: Callable[[], str]) -> None:
        self.folder, self._postgres_url = folder, postgres_url
        self._sqlite: Path | None = None
        self._admin: Engine | None = None
        self._pg_template = f"erasure_tpl_{uuid.uuid4().hex[:10]}"
        self.engines: list[Engine] = []
        self.made: list[str] = []

    def sqlite(self, folder: Path) -> tuple[Engine, Path]:
        if self._sqlite is None:
            self._sqlite = self.folder / "template.db"
            engine = make_engine(f"sqlite:///{self._sqlite}")
            upgrade(engine)
            engine.dispose()
        shutil.copyfile(self._sqlite, folder / "memory.db")
        engine = make_engine(f"sqlite:///{folder / 'memory.db'}")
        self.engines.append(engine)
        return engine, folder / "memory.db"

    def postgres(self) -> Engine:
        url = self._postgres_url()
        if self._admin is None:
            self._admin = make_engine(url)
            self._run(f'CREATE DATABASE "{self._pg_template}"')
            self.made.append(self._pg_template)
            template = make_engine(make_url(url).set(database=self._pg_template))
            upgrade(template)
            template.dispose()
        name = f"erasure_{uuid.uuid4().hex[:12]}"
        self._run(f'CREATE DATABASE "{name}" TEMPLATE "{self._pg_template}"')
        self.made.append(name)
        engine = make_engine(make_url(url).set(database=name))
        self.engines.append(engine)
        return engine

    def _run(self, statement: str) -> None:
        assert self._admin is not None
        with self._admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(statement))

    def close(self) -> None:
        gc.collect()  # an answer not yet collected may still hold a connection out of its pool
        for engine in self.engines:
            engine.dispose()
        for name in reversed(self.made):
            self._run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if self._admin is not None:
            self._admin.dispose()


@pytest.fixture(scope="module")
def databases(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    made = Databases(tmp_path_factory.mktemp("erasure"), lambda: request.getfixturevalue("postgres_url"))
    yield made
    made.close()


def new_world(databases: Databases, store: str, folder: Path, llm: OpenAICompatibleLLM) -> tuple[World, Path | None]:
    engine, database = databases.sqlite(folder) if store == "sqlite" else (databases.postgres(), None)
    return build_world(engine, folder, llm=llm, flask=PORTAL), database


@pytest.fixture(scope="module")
def runs(databases: Databases, server: FakeLLMServer, llm: OpenAICompatibleLLM,
         tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Run]:
    """Each (store, way) world built and looked at once, on first use."""
    done: dict[tuple[str, str], Run] = {}

    def get(store: str, way: str) -> Run:
        if (store, way) not in done:
            number = f"{len(done) + 10:02d}"
            words = {path: f"{word}{number}" for path, word in WRITE_PATHS.items()}
            run = Run(store, way, words, erased_in(way, words))
            folder = tmp_path_factory.mktemp(f"{store}-{way}")
            world, database = new_world(databases, store, folder, llm)
            try:
                look(run, Person(world, f"zk{number}@a.example"), server, database)
            finally:
                world.runtime.queue.close()  # the job queue's connection (PostgreSQL), made when a job was queued
            done[(store, way)] = run
        return done[(store, way)]

    return get


# ---------------------------------------------------------------------------- erasure, every way


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_replaying_a_keyed_request_never_brings_back_an_erased_word(runs: Callable[[str, str], Run], store: str,
                                                                     way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("replays"), run.named(run.leaks("replays"))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_no_api_answer_or_portal_page_shows_an_erased_word(runs: Callable[[str, str], Run], store: str, way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("pages"), run.named(run.leaks("pages"))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_no_table_holds_an_erased_word(runs: Callable[[str, str], Run], store: str, way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("tables"), run.named(run.leaks("tables"))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_the_database_files_hold_no_erased_word(runs: Callable[[str, str], Run], store: str, way: str) -> None:
    """SQLite: the database file, its write-ahead log and every file beside it. PostgreSQL: the
    database's own files, the shared catalogs, and the write-ahead log and server log written since
    the world began, after a CHECKPOINT (which writes every page out)."""
    run = runs(store, way)
    assert not run.leaks("files"), run.named(run.leaks("files"))


@pytest.mark.postgres
def test_the_postgresql_scan_finds_a_word_written_in_the_clear(databases: Databases) -> None:
    """The scan above can fail: a word written in the clear is found in the table's file and in
    the write-ahead log, and once that row is deleted and VACUUMed, still in the file's free space
    (why PostgreSQL keeps no text in the clear unless its operator says so)."""
    engine = databases.postgres()
    started = time.time()
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE canary (said text)"))
        conn.execute(text("INSERT INTO canary VALUES ('Keeps bees'), ('Keeps a qxcanaryn lantern')"))
    found = words_in_postgres_files(engine, ["qxcanaryn"], "after a CHECKPOINT", since=started)
    assert any(line.startswith("pg_wal/") for line in found), found
    assert any(not line.startswith(("pg_wal/", "log/")) for line in found), found
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM canary WHERE said LIKE '%lantern'"))
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM canary"))
    kept = words_in_postgres_files(engine, ["qxcanaryn"], "after DELETE and VACUUM", since=started)
    assert any(not line.startswith(("pg_wal/", "log/")) for line in kept), kept


@pytest.mark.parametrize("way", PURGING)
@pytest.mark.parametrize("store", STORES)
def test_no_row_names_the_person_after_their_erasure(runs: Callable[[str, str], Run], store: str, way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("owner rows"), run.named(run.leaks("owner rows"))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_the_worker_keeps_nothing_erased_in_its_recall_cache(runs: Callable[[str, str], Run], store: str,
                                                              way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("recall cache"), run.named(run.leaks("recall cache"))


@pytest.mark.parametrize("way", WAYS)
def test_the_process_wide_stemmer_keeps_no_erased_word(runs: Callable[[str, str], Run], way: str) -> None:
    run = runs("sqlite", way)
    assert not run.leaks("stemmer"), run.named(run.leaks("stemmer"))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_no_log_line_carries_a_persons_words(runs: Callable[[str, str], Run], store: str, way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("logs"), run.named(run.leaks("logs"))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("store", STORES)
def test_no_request_of_the_run_answered_a_server_error(runs: Callable[[str, str], Run], store: str, way: str) -> None:
    run = runs(store, way)
    assert not run.leaks("server errors"), run.named(run.leaks("server errors"))


# ---------------------------------------------------------------------------- tenants


def counts_shown(html: str) -> dict[str, int]:
    return {k: int(n) for k, n in re.findall(r'data-testid="count-([a-z]+)">(\d+)<', html)}


def owner_counts(engine: Engine, owner: str, scope: str) -> dict[str, int]:
    """What the store keeps of `owner` in `scope`, counted straight from the tables."""
    names = {"memories": "memories", "revisions": "memory_revisions", "settings": "memory_settings",
             "refs": "consolidation_refs", "receipts": "idempotency_receipts", "tombstones": "memory_tombstones"}
    with engine.connect() as conn:
        return {k: conn.execute(text(f"SELECT count(*) FROM {t} WHERE owner_id = :o AND scope = :s"),
                                {"o": owner, "s": scope}).scalar_one() for k, t in names.items()}


@pytest.mark.parametrize("how", ["staff-erasure", "api-erasure"])
@pytest.mark.parametrize("store", STORES)
def test_erasing_tenant_a_user_1_leaves_tenant_b_user_1_whole_and_uncounted(
    databases: Databases, llm: OpenAICompatibleLLM, tmp_path: Path, store: str, how: str
) -> None:
    world, _ = new_world(databases, store, tmp_path, llm)
    accounts = world.runtime.accounts
    in_a = accounts.create("user1@a.example", "Una Able", world.tenant_a, "member", PASSWORD, owner_id="user-1")
    accounts.create("user1@b.example", "Uma Bee", world.tenant_b, "member", PASSWORD, owner_id="user-1")
    person = f"{API}/people/user-1"
    raw = world.raw()

    def send(key: str, method: str, path: str, body: Any = None, idem: str | None = None) -> TestResponse:
        headers = world.auth(key, **({"Idempotency-Key": idem} if idem else {}))
        answer = raw.open(person + path, method=method, json=body, headers=headers)
        assert answer.status_code < 300, (key, method, path, answer.status_code, answer.get_data(as_text=True)[:200])
        return answer

    for text_ in ("Sails a dinghy", "Grows basil"):
        send("a", "POST", "/memories", {"text": text_}, idem=f"a-{text_.replace(' ', '-')}")
    b_texts = ["Collects zeppelin postcards", "Plays the oboe", "Keeps bees"]
    b_ids = [send("b", "POST", "/memories", {"text": t}, idem=f"b-{t.replace(' ', '-')}").get_json()["memory"]["id"]
             for t in b_texts]
    send("b", "PATCH", f"/memories/{b_ids[0]}", {"text": "Collects old zeppelin postcards"})
    send("b", "POST", "/consolidate", {"transcript": "We chatted.", "ref": "conv-b-1"})
    send("b", "PUT", "/settings", {"paused": True})
    b_texts[0] = "Collects old zeppelin postcards"
    engine = world.runtime.engine
    a_alone = owner_counts(engine, "user-1", world.tenant_a)
    b_before = owner_counts(engine, "user-1", world.tenant_b)
    assert b_before["memories"] == 3 and b_before["revisions"] == 1 and b_before["settings"] == 1 and b_before["refs"] == 1

    if how == "staff-erasure":
        staff_account = accounts.create("staff@a.example", "Sam Helper", world.tenant_a, "staff", PASSWORD)
        staff = world.app.test_client()
        with staff.session_transaction() as session:
            session["_user_id"], session["_fresh"] = staff_account.get_id(), True
        logged = staff.post(f"/staff/people/{in_a.id}/erasure", data={"ticket": "GDPR-1"})
        assert logged.status_code == 303
        assert staff.post(logged.headers["Location"], data={"confirm": "user1@a.example"}).status_code == 303
        shown = counts_shown(staff.get(logged.headers["Location"]).get_data(as_text=True))
        assert shown.pop("accounts") == 1
    else:
        shown = send("a", "DELETE", "").get_json()
    # Tenant B's namesake keeps everything...
    listed = send("b", "GET", "/memories").get_json()["items"]
    assert sorted(m["text"] for m in listed) == sorted(b_texts)
    assert len(send("b", "GET", f"/memories/{b_ids[0]}/history").get_json()["items"]) == 2
    assert send("b", "GET", "/settings").get_json() == {"paused": True}
    assert owner_counts(engine, "user-1", world.tenant_b) == b_before
    # ...and the counts shown or returned are tenant A's alone: they tell nothing of B.
    assert set(shown) >= {"memories", "revisions", "settings", "refs", "receipts"}
    assert {k: v for k, v in shown.items() if k in a_alone} == {k: a_alone[k] for k in shown if k in a_alone}
    assert [m["text"] for m in send("a", "GET", "/memories").get_json()["items"]] == []
    assert not [s for s in world.recorder.seen if s[2] >= 500]
