"""What is kept of the `ref` a host sends with a conversation to consolidate (issue 38, item 25): its
conversation key (`portal.domain.decisions.conversation_key`, the digest recall keeps of a
`conversation_ref`), never the reference itself. Not in `consolidation_refs`, `consolidation_jobs`
or a memory's sources, not in the files (SQLite's file and log; PostgreSQL's table files and
write-ahead log, its text encrypted with the keys), not in the person's or an app's export, nor in
a job's answer; the same conversation has the same key here as in recall's Recent conversations;
and a conversation is still learnt once only. SQLite (plain and with keys) and PostgreSQL (with
keys). The migration of the rows kept before is in tests/integration/test_migrations.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from portal.adapters.cipher import generate_key
from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.sql.tables import consolidation_jobs, consolidation_refs
from portal.domain.decisions import conversation_key
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer
from ..security.scans import words_in_files, words_in_postgres_files, words_in_tables
from .conftest import API, World
from .test_consolidate import facts

NOW_WORD, LATER_WORD = "qzmarrowfen", "qzlintwhorl"  # in a ref only: "the talk about <word>"
NOW_REF, LATER_REF = f"talk about {NOW_WORD} 1", f"talk about {LATER_WORD} 2"
TRANSCRIPT = [{"role": "user", "text": "I adopted a cat called Miso."}]


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(params=[pytest.param(("sqlite", False), id="sqlite-plain"), pytest.param(("sqlite", True), id="sqlite"),
                        pytest.param(("postgres", True), id="postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> World:
    store, keyed = request.param
    model.replies.clear()
    engine = request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")
    return make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0),
                      env={"MEMORY_ENCRYPTION_KEYS": generate_key()} if keyed else {})


def key_of(world: World, ref: str) -> str:
    return conversation_key(ref, world.runtime.store.words_secret)


def learn(world: World, model: FakeLLMServer) -> dict[str, Any]:
    """One conversation learnt at once, one in the background (run as a worker would); answers the job."""
    model.script(facts("Has a cat called Miso"), facts("Is training for a marathon", summary="Running"))
    now = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                           json={"transcript": TRANSCRIPT, "ref": NOW_REF}).json
    assert (now["status"], now["added"]) == ("done", 1), now
    queued = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                              json={"transcript": TRANSCRIPT, "ref": LATER_REF, "wait": False})
    assert queued.status_code == 202 and LATER_WORD not in queued.get_data(as_text=True)
    assert world.runtime.service.run_job(queued.json["id"]) is None
    assert world.runtime.store.settle(30)
    job: dict[str, Any] = world.raw().get(queued.headers["Location"], headers=world.auth()).json
    return job


def test_a_ref_is_kept_as_its_conversation_key_and_learnt_once(world: World, model: FakeLLMServer) -> None:
    started = time.time()
    job = learn(world, model)
    assert job["state"] == "done" and job["ref"] == key_of(world, LATER_REF)
    engine = world.runtime.engine
    with engine.connect() as conn:
        kept = set(conn.execute(select(consolidation_refs.c.ref)).scalars())
        jobs = conn.execute(select(consolidation_jobs.c.ref)).scalars().all()
    assert kept == {key_of(world, NOW_REF), key_of(world, LATER_REF)} and jobs == [key_of(world, LATER_REF)]
    sources = {m.text: m.sources for m in world.runtime.service.list(Place("ada", world.tenant_a)).items}
    assert [s.ref for s in sources["Has a cat called Miso"]] == [key_of(world, NOW_REF)]
    assert [s.ref for s in sources["Is training for a marathon"]] == [key_of(world, LATER_REF)]
    # Learnt once: the same conversation again, at once or in the background, is `already`.
    again = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                             json={"transcript": TRANSCRIPT, "ref": LATER_REF}).json
    assert again["status"] == "already"
    later = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                             json={"transcript": TRANSCRIPT, "ref": NOW_REF, "wait": False}).json
    world.runtime.service.run_job(later["id"])
    assert world.raw().get(f"{API}/people/ada/jobs/{later['id']}", headers=world.auth()).json["result"]["status"] \
        == "already"
    assert world.runtime.store.settle(30)
    words = [NOW_WORD, LATER_WORD]
    cipher = world.runtime.store.cipher
    assert words_in_tables(engine, words, decrypt=cipher.decrypt if cipher is not None else None) == []
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database:
        assert words_in_files(Path(database), words, "once learnt") == []
    else:
        assert words_in_postgres_files(engine, words, "after a CHECKPOINT", since=started) == []


def test_no_export_and_no_answer_carries_the_ref(world: World, model: FakeLLMServer) -> None:
    learn(world, model)
    place = Place("ada", world.tenant_a)
    exported = world.runtime.service.export(place)
    by_app = world.raw().get(f"{API}/people/ada/export", headers=world.auth()).get_data(as_text=True)
    listed = world.raw().get(f"{API}/people/ada/memories", headers=world.auth()).get_data(as_text=True)
    for said in (str(exported), by_app, listed):
        assert NOW_WORD not in said and LATER_WORD not in said
    assert [j["ref"] for j in exported["jobs"]] == [key_of(world, LATER_REF)]


def test_a_conversation_has_one_key_for_recall_and_for_consolidation(world: World, model: FakeLLMServer) -> None:
    """The same function digests both: the person's download names the conversation the same way
    where it was recalled for and where it was learnt from."""
    job = learn(world, model)
    with world.client() as memory:
        memory.recall("ada", "cat", conversation_ref=LATER_REF)
    exported = world.runtime.service.export(Place("ada", world.tenant_a))
    assert [c["conversation"] for c in exported["conversations"]] == [job["ref"]]

