"""What a background consolidation keeps of a person's words, and for how long (issue 26, item 1):
the stored result holds counts and codes only; the model's summary is kept apart, encrypted like
memory text, handed once to the app that sent the job and to no other app, erased when read and
after a short retention if never read (the periodic sweep and `prune`), shown in the person's
export while it exists and erased with them; the transcript goes once the job is over, through the
same cleaning up as a forget (SQLite: zeroed pages and a truncated write-ahead log; PostgreSQL: a
VACUUM of the table). The jobs are run by the service's own `run_job`, as a worker would. SQLite
and PostgreSQL."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

from portal.adapters.cipher import generate_key
from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.sql.tables import consolidation_jobs
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer
from ..security.scans import words_in_files, words_in_tables
from .conftest import API, World
from .test_consolidate import facts

SAID = "zqorbelt"  # in the transcript only
SUMMED = "xvintrel"  # in the model's summary only
TRANSCRIPT = [{"role": "user", "text": f"I adopted a cat and we named it after {SAID} the painter."}]
STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


# PostgreSQL keeps no text in the clear unless the operator says so (a development key is made):
# its worlds are encrypted.
@pytest.fixture(params=[pytest.param(("sqlite", False), id="sqlite-plain"), pytest.param(("sqlite", True), id="sqlite"),
                        pytest.param(("postgres", True), id="postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> World:
    store, encrypted = request.param
    model.replies.clear()
    engine = request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")
    env = {"MEMORY_ENCRYPTION_KEYS": generate_key()} if encrypted else {}
    return make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0), env=env)


def run_job(world: World, model: FakeLLMServer, ref: str = "conv-1", key: str = "a") -> str:
    model.script(facts("Has a cat", summary=f"Talked about the {SUMMED} cat"))
    answer = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(key),
                              json={"transcript": TRANSCRIPT, "ref": ref, "wait": False})
    assert answer.status_code == 202, answer.json
    job_id: str = answer.json["id"]
    assert world.runtime.service.run_job(job_id) is None
    assert world.runtime.store.settle(30)
    return job_id


def readable(world: World) -> Callable[[str], str] | None:
    """What reads the store's text where it encrypts: a table holding a word encrypted still holds it."""
    cipher = world.runtime.store.cipher
    return cipher.decrypt if cipher is not None else None


def job_row(world: World) -> Any:
    with world.runtime.engine.connect() as conn:
        return conn.execute(select(consolidation_jobs)).mappings().one()


def database_file(world: World) -> Path | None:
    database = world.runtime.engine.url.database
    return Path(database) if world.runtime.engine.dialect.name == "sqlite" and database else None


def test_the_summary_is_kept_apart_encrypted_and_handed_once_to_the_app_that_sent_the_job(
        world: World, model: FakeLLMServer) -> None:
    job_id = run_job(world, model)
    row = job_row(world)
    assert row["work"] is None and SUMMED not in row["result"] and '"summary"' not in row["result"]
    if world.runtime.store.cipher is not None:
        assert row["summary"] and SUMMED not in row["summary"]
    assert words_in_tables(world.runtime.engine, [SUMMED], decrypt=readable(world))  # kept until read: the look can fail
    location = f"{API}/people/ada/jobs/{job_id}"
    # another app of the same tenant (another key, another name): not its job
    other = world.raw().get(location, headers=world.auth("a_only:consolidate"))
    assert other.status_code == 404 and SUMMED not in other.get_data(as_text=True)
    first = world.raw().get(location, headers=world.auth())
    assert first.status_code == 200 and first.json["state"] == "done"
    assert SUMMED in first.json["result"]["summary"] and first.json["result"]["added"] == 1
    again = world.raw().get(location, headers=world.auth())
    assert again.status_code == 200 and again.json["result"]["summary"] is None and again.json["result"]["added"] == 1
    assert world.runtime.store.settle(30)
    assert job_row(world)["summary"] is None
    assert words_in_tables(world.runtime.engine, [SUMMED, SAID], decrypt=readable(world)) == []
    database = database_file(world)
    if database is not None:
        assert words_in_files(database, [SUMMED, SAID], "after the summary was read") == []


def test_a_summary_never_read_is_erased_by_the_sweep_after_its_retention(world: World, model: FakeLLMServer) -> None:
    job_id = run_job(world, model)
    service = world.runtime.service
    assert service.sweep().summaries == 0  # still waiting for its app
    assert job_row(world)["summary"] is not None
    later = service.clock() + service.options.summary_retention + timedelta(seconds=1)
    service.clock = lambda: later
    assert service.sweep().summaries == 1
    assert world.runtime.store.settle(30)
    first = world.raw().get(f"{API}/people/ada/jobs/{job_id}", headers=world.auth())
    assert first.json["result"]["summary"] is None and first.json["state"] == "done"
    assert words_in_tables(world.runtime.engine, [SUMMED], decrypt=readable(world)) == []
    database = database_file(world)
    if database is not None:
        assert words_in_files(database, [SUMMED], "after the sweep") == []


def test_prune_erases_unread_summaries_and_deletes_old_jobs(world: World, model: FakeLLMServer) -> None:
    run_job(world, model)
    service = world.runtime.service
    later = service.clock() + timedelta(days=31)
    service.clock = lambda: later
    counts = service.prune(jobs_older_than=timedelta(days=30))
    assert (counts.summaries, counts.jobs) == (1, 1)
    with world.runtime.engine.connect() as conn:
        assert conn.execute(select(consolidation_jobs)).first() is None


def test_the_persons_export_shows_a_jobs_words_while_they_exist_and_an_app_only_its_counts(
        world: World, model: FakeLLMServer) -> None:
    place, service = Place("ada", world.tenant_a), world.runtime.service
    queued = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                              json={"transcript": TRANSCRIPT, "ref": "conv-0", "wait": False}).json
    (job,) = service.export(place)["jobs"]
    assert job["id"] == queued["id"] and job["state"] == "queued" and SAID in str(job["transcript"])
    model.script(facts("Has a cat", summary=f"Talked about the {SUMMED} cat"))
    service.run_job(queued["id"])
    (job,) = service.export(place)["jobs"]
    assert job["transcript"] is None and SUMMED in job["result"]["summary"]  # not read by its app yet
    by_app = world.raw().get(f"{API}/people/ada/export", headers=world.auth()).json["jobs"]
    assert [j["id"] for j in by_app] == [queued["id"]] and by_app[0]["result"]["summary"] is None
    assert SUMMED not in str(by_app) and SAID not in str(by_app)
    assert world.raw().get(f"{API}/people/ada/export", headers=world.auth("a_read")).json["jobs"] == []
    world.raw().get(f"{API}/people/ada/jobs/{queued['id']}", headers=world.auth())  # the app reads it
    (job,) = service.export(place)["jobs"]
    assert job["result"]["summary"] is None and SUMMED not in str(service.export(place))
    portal = world.app.test_client()
    account = world.runtime.accounts.create("ada@a.example", "Ada", world.tenant_a, "member", "pw-long-enough",
                                            owner_id="ada")
    with portal.session_transaction() as session:
        session["_user_id"], session["_fresh"] = account.get_id(), True
    download = portal.get("/account/export.json").json
    assert [j["id"] for j in download["jobs"]] == [queued["id"]]


@pytest.mark.parametrize("store", STORES)
def test_the_end_of_a_job_cleans_up_after_its_transcript_as_after_a_forget(
        store: str, request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> None:
    """Without encryption on SQLite, the words of the transcript are in the pages until the job
    ends; then none is left in the file or its write-ahead log. On PostgreSQL the table is
    VACUUMed once the transcript is cleared."""
    engine = request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")
    world = make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))
    if store == "postgres":
        with engine.connect() as conn:
            before = conn.execute(text("SELECT vacuum_count FROM pg_stat_user_tables "
                                       "WHERE relname = 'consolidation_jobs'")).scalar_one()
    run_job(world, model)
    database = database_file(world)
    if database is not None:
        assert words_in_files(database, [SAID], "after the job") == []
        return
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_stat_force_next_flush()"))
        after = conn.execute(text("SELECT vacuum_count FROM pg_stat_user_tables "
                                  "WHERE relname = 'consolidation_jobs'")).scalar_one()
    assert after > before


def test_an_unreachable_model_and_a_job_gone_with_its_person_are_said_in_words(
        make_world: Callable[..., World], sqlite_engine: Any) -> None:
    """Issue 27: with no model listening, consolidation answers `failed`/`model` and the job tries
    again: each says in words that the model did not answer, and how many tries are left; once the
    person is erased, the job's Location says there is no such job (not "no such memory")."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    world = make_world(sqlite_engine, llm=OpenAICompatibleLLM(f"http://127.0.0.1:{port}/v1", "m", retries=0,
                                                              timeout=2.0))
    now = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                           json={"transcript": TRANSCRIPT, "ref": "conv-now"}).json
    assert (now["status"], now["reason"]) == ("failed", "model")
    assert "did not answer" in now["detail"] and "MEMORY_LLM_BASE_URL" in now["detail"]
    later = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                             json={"transcript": TRANSCRIPT, "ref": "conv-later", "wait": False})
    assert world.runtime.service.run_job(later.json["id"]) is not None  # to be tried again
    job = world.raw().get(later.headers["Location"], headers=world.auth()).json
    assert (job["state"], job["reason"], job["attempts"], job["max_attempts"]) == ("queued", "model", 1, 5)
    assert "did not answer" in job["detail"] and "tried again" in job["detail"]
    world.raw().delete(f"{API}/people/ada", headers=world.auth())
    gone = world.raw().get(later.headers["Location"], headers=world.auth())
    assert gone.status_code == 404 and gone.json["detail"] == "no such job for this person"
