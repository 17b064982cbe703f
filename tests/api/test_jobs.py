"""Consolidation in the background (issue 19): `"wait": false` or `Prefer: respond-async` answers 202
with a job at its Location; a real huey worker (threads of this process, on the database the world
runs on) learns it; the job is tried again with back-off while the model fails, survives a restart,
keeps its transcript encrypted and only while it may run, and goes with the person's erasure. The
model is the fake OpenAI-compatible server on loopback. SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.queue import Worker
from portal.adapters.sql.tables import consolidation_jobs
from portal.bootstrap import build_runtime
from portal.domain.apps import app_of
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer, Reply
from .conftest import API, World
from .test_consolidate import TRANSCRIPT, facts
from .test_requests import is_problem

CAT, RUN = "Has a cat called Miso", "Is training for a marathon in April"


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def jobs_world(request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> World:
    model.replies.clear()
    model.requests.clear()
    engine = request.getfixturevalue("sqlite_engine" if request.param == "sqlite" else "pg_engine")
    world = make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0),
                       env=getattr(request, "env", None))
    world.runtime.service.ctx.options = replace(world.runtime.service.options, job_retry_seconds=0.2)
    return world


@pytest.fixture
def worker(jobs_world: World) -> Iterator[Worker]:
    running = Worker(jobs_world.runtime.queue, workers=2).start()
    yield running
    running.stop()


def send_later(world: World, ref: str, key: str = "a", prefer: bool = False, **body: Any) -> Any:
    headers = world.auth(key, Prefer="respond-async") if prefer else world.auth(key)
    payload = {"transcript": TRANSCRIPT, "ref": ref, **({} if prefer else {"wait": False}), **body}
    return world.raw().post(f"{API}/people/ada/consolidate", json=payload, headers=headers)


def settled(world: World, location: str, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = world.raw().get(location, headers=world.auth()).json
        if job["state"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def test_a_conversation_sent_with_wait_false_is_learnt_by_the_worker(jobs_world: World, model: FakeLLMServer,
                                                                      worker: Worker) -> None:
    world = jobs_world
    model.script(Reply(facts(CAT, RUN), delay=1.0))  # a slow model: the request does not wait for it
    started = time.monotonic()
    answer = send_later(world, "conv-1")
    assert answer.status_code == 202 and time.monotonic() - started < 0.9
    location = answer.headers["Location"]
    assert location == f"{API}/people/ada/jobs/{answer.json['id']}"
    assert answer.json["state"] == "queued" and answer.json["result"] is None
    job = settled(world, location)
    assert job["state"] == "done" and job["attempts"] == 1, job
    assert (job["result"]["status"], job["result"]["added"]) == ("done", 2)
    assert sorted(m.text for m in world.runtime.service.list_unseen(Place("ada", world.tenant_a))) == [CAT, RUN]
    with world.runtime.engine.connect() as conn:  # nothing of the conversation is kept once it is over
        assert conn.execute(select(consolidation_jobs.c.work)).scalars().all() == [None]
    # the same conversation again: the job answers what the synchronous form would
    again = settled(world, send_later(world, "conv-1", prefer=True).headers["Location"])
    assert again["result"]["status"] == "already"


def test_a_failing_model_is_tried_again_with_back_off_until_it_answers(jobs_world: World, model: FakeLLMServer,
                                                                        worker: Worker) -> None:
    world = jobs_world
    model.script(Reply(status=500), Reply(status=503), facts(CAT))
    job = settled(world, send_later(world, "conv-2").headers["Location"])
    assert (job["state"], job["attempts"], job["result"]["added"]) == ("done", 3, 1), job
    assert len(model.requests) == 3


def test_a_model_that_never_answers_fails_the_job_with_its_reason(jobs_world: World, model: FakeLLMServer,
                                                                   worker: Worker) -> None:
    world = jobs_world
    model.script(*[Reply(status=500)] * 5)
    job = settled(world, send_later(world, "conv-3").headers["Location"], timeout=30)
    assert (job["state"], job["attempts"], job["reason"]) == ("failed", 5, "model"), job
    assert world.count() == 0


def test_a_queued_job_survives_a_restart(jobs_world: World, model: FakeLLMServer) -> None:
    world = jobs_world
    model.script(facts(CAT))
    location = send_later(world, "conv-4").headers["Location"]  # no worker runs yet
    assert world.raw().get(location, headers=world.auth()).json["state"] == "queued"
    # another process on the same database: a new runtime, its own queue, its worker
    again = build_runtime(world.runtime.config, embedder=None, engine=world.runtime.engine,
                          llm=world.runtime.service.llm)
    again.service.ctx.options = replace(again.service.options, job_retry_seconds=0.2)
    running = Worker(again.queue, workers=1).start()
    try:
        assert settled(world, location)["state"] == "done"
    finally:
        running.stop()
    assert [m.text for m in world.runtime.service.list_unseen(Place("ada", world.tenant_a))] == [CAT]


def test_the_job_goes_with_the_persons_erasure_and_wakes_to_nothing(jobs_world: World, model: FakeLLMServer) -> None:
    world = jobs_world
    location = send_later(world, "conv-5").headers["Location"]
    assert world.raw().delete(f"{API}/people/ada", headers=world.auth()).json["jobs"] == 1
    assert world.raw().get(location, headers=world.auth()).status_code == 404
    running = Worker(world.runtime.queue, workers=1).start()
    try:
        deadline = time.monotonic() + 5
        while world.runtime.queue.pending() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        running.stop()
    assert model.requests == [] and world.count() == 0
    with world.runtime.engine.connect() as conn:
        assert conn.execute(select(consolidation_jobs)).first() is None


def test_refusals_come_at_once(jobs_world: World) -> None:
    world = jobs_world
    is_problem(send_later(world, " "), 422, "invalid_ref")
    place = Place("ada", world.tenant_a)
    key = next(k for k in world.runtime.api_keys.list(world.tenant_a) if k.id == world.key_ids["a"])
    world.runtime.service.set_app_control(place, app_of(key).id, "blocked")
    is_problem(send_later(world, "conv-6"), 403, "app_blocked")
    other = send_later(world, "conv-6", key="a_without:erasure")
    assert other.status_code == 202
    # someone else's job is not found, even by its id
    is_problem(world.raw().get(f"{API}/people/bob/jobs/{other.json['id']}", headers=world.auth()), 404, "not_found")
    world.runtime.tenants.set_ai(world.tenant_a, False)
    is_problem(send_later(world, "conv-7", key="a_without:erasure"), 422, "ai_disabled")


def test_the_transcript_waits_encrypted_at_rest(make_world: Callable[..., World], sqlite_engine: Any,
                                                model: FakeLLMServer) -> None:
    from portal.adapters.cipher import generate_key

    world = make_world(sqlite_engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0),
                       env={"MEMORY_ENCRYPTION_KEYS": generate_key()})
    assert send_later(world, "conv-8").status_code == 202
    with world.runtime.engine.connect() as conn:
        (work,) = conn.execute(select(consolidation_jobs.c.work)).scalars().all()
    assert work and "Miso" not in work and "marathon" not in work


def test_memory_portal_worker_runs_the_jobs_and_stops_gracefully(make_world: Callable[..., World], sqlite_engine: Any,
                                                                 model: FakeLLMServer, tmp_path: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    model.replies.clear()
    model.script(facts(CAT))
    world = make_world(sqlite_engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0))
    location = send_later(world, "conv-9").headers["Location"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    env.update(MEMORY_DATABASE_URL=world.runtime.engine.url.render_as_string(hide_password=False),
               MEMORY_INSTANCE_PATH=str(tmp_path), MEMORY_EMBEDDER="none", MEMORY_SECRET_KEY="k" * 40,
               MEMORY_LLM_BASE_URL=model.base_url, MEMORY_LLM_MODEL="m")
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen([str(Path(sys.executable).parent / "memory-portal"), "worker", "--workers", "1"],
                                  env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        job = settled(world, location, timeout=90)  # a process of its own: it loads the app first
        assert job["state"] == "done" and job["result"]["added"] == 1, (job, log.read_text())
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0, log.read_text()
    assert "Miso" not in log.read_text() and '"taken_up": 0' in log.read_text()


def test_a_job_another_worker_holds_is_looked_at_again_and_a_dead_ones_is_taken_up(jobs_world: World) -> None:
    world = jobs_world
    job_id = send_later(world, "conv-10").json["id"]
    place, service = Place("ada", world.tenant_a), world.runtime.service
    now = service.clock()

    def held_since(at: Any) -> None:
        with world.runtime.store.write(place) as tx:
            job = tx.get_job(job_id)
            assert job is not None
            tx.save_job(replace(job, state="running", updated_at=at))
            tx.commit()

    held_since(now)
    delay = service.run_job(job_id)  # not run twice: looked at again once the holder's lease is over
    assert delay is not None and 0 < delay <= 10 * service.options.lease_seconds + 1
    assert job_id not in service.jobs.stale()
    held_since(now - timedelta(hours=2))  # its worker died long ago: `memory-portal worker` takes it up
    assert job_id in service.jobs.stale()


def test_a_job_left_running_by_a_dead_worker_is_taken_up_and_learnt(jobs_world: World, model: FakeLLMServer) -> None:
    world = jobs_world
    model.script(facts(CAT))
    location = send_later(world, "conv-11").headers["Location"]
    place, service = Place("ada", world.tenant_a), world.runtime.service
    with world.runtime.store.write(place) as tx:  # a worker took it, then died (its wake-up was used)
        job = tx.get_job(location.rsplit("/", 1)[1])
        assert job is not None
        tx.save_job(replace(job, state="running", attempts=1, updated_at=service.clock() - timedelta(hours=1)))
        tx.commit()
    running = Worker(world.runtime.queue, workers=1).start()  # serve's thread and `worker` take up at start
    try:
        assert world.runtime.queue.take_up() == 1
        job_json = settled(world, location)
    finally:
        running.stop()
    assert (job_json["state"], job_json["attempts"]) == ("done", 2)
    assert [m.text for m in service.list_unseen(place)] == [CAT]
