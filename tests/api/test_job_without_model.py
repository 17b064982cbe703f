"""A background consolidation where no model is set up (issue 38, item 7): one outcome on every path.

Without `MEMORY_LLM_BASE_URL` where the job runs (or with the AI switched off since it was sent),
the job can never succeed: it is not tried again. It ends `failed` at that try, with the reason
`unavailable` (`ai_disabled`) and the synchronous form's answer as its result; its transcript goes,
and its ref is not used up (sent again once a model is set up, the conversation is learnt). The
same whoever runs it: huey's workers in this process (what `serve` runs on the embedded default),
a real `memory-portal serve` on SQLite, a real `memory-portal worker` on PostgreSQL, and a job the
model failed first and that a process without a model then takes up. SQLite and PostgreSQL."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.engine import Engine

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.queue import Worker
from portal.adapters.sql.tables import consolidation_jobs, consolidation_refs
from portal.bootstrap import build_runtime
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer, Reply
from ..security.live_server import cli_ok, free_port, instance_env
from .conftest import API, World
from .test_consolidate import TRANSCRIPT

BIN = Path(sys.executable).parent / "memory-portal"
STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def engine_of(request: pytest.FixtureRequest, store: str) -> Engine:
    engine: Engine = request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")
    return engine


def later(world: World, ref: str) -> Any:
    answer = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                              json={"transcript": TRANSCRIPT, "ref": ref, "wait": False})
    assert answer.status_code == 202, answer.json
    return answer


def settled(get: Callable[[], dict[str, Any]], timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = get()
        if job["state"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def the_one_outcome(job: dict[str, Any], attempts: int = 1, reason: str = "unavailable") -> None:
    assert (job["state"], job["reason"], job["attempts"]) == ("failed", reason, attempts), job
    assert job["result"]["status"] == "unavailable" and job["result"]["added"] == 0, job
    if reason == "unavailable":
        assert "No model is set up" in job["detail"] and "tried" not in job["detail"], job


def nothing_kept_of_it(engine: Engine) -> None:
    """The transcript went with the job's end; the ref was not used up."""
    with engine.connect() as conn:
        assert conn.execute(select(consolidation_jobs.c.work)).scalars().all() == [None]
        assert conn.execute(select(consolidation_refs)).first() is None


@pytest.mark.parametrize("store", STORES)
def test_a_job_without_a_model_fails_at_its_first_try_and_is_not_tried_again(
        store: str, request: pytest.FixtureRequest, make_world: Callable[..., World]) -> None:
    world = make_world(engine_of(request, store), llm=None)
    world.runtime.service.ctx.options = replace(world.runtime.service.options, job_retry_seconds=0.2)
    location = later(world, "conv-1").headers["Location"]
    running = Worker(world.runtime.queue, workers=2).start()
    try:
        job = settled(lambda: world.raw().get(location, headers=world.auth()).json)
        time.sleep(1.0)  # a retry would be due by now (0.2 s)
        assert world.runtime.queue.pending() == 0
        again = world.raw().get(location, headers=world.auth()).json
    finally:
        running.stop()
    the_one_outcome(job)
    assert again["attempts"] == 1 and again["state"] == "failed"
    nothing_kept_of_it(world.runtime.engine)
    event = world.raw().get(f"/v1/event/{job['id']}/", headers={"Authorization": f"Token {world.keys['a']}"}).json
    assert (event["status"], event["code"], event["results"]) == ("FAILED", "unavailable", [])
    assert event["error"] == "No model is set up (MEMORY_LLM_BASE_URL): nothing is learnt."  # its words


@pytest.mark.parametrize("store", STORES)
def test_a_job_the_model_failed_then_taken_up_where_no_model_is_set_up_ends_the_same_way(
        store: str, request: pytest.FixtureRequest, make_world: Callable[..., World]) -> None:
    """The server restarted without its model between two tries: the fourth try ended `done` before."""
    with FakeLLMServer() as model:
        model.script(*[Reply(status=500)] * 3)
        world = make_world(engine_of(request, store), llm=OpenAICompatibleLLM(model.base_url, "m", retries=0,
                                                                              timeout=5.0))
        job_id = later(world, "conv-2").json["id"]
        for _ in range(3):
            assert world.runtime.service.run_job(job_id) is not None  # to be tried again
    place = Place("ada", world.tenant_a)
    assert world.runtime.service.job(place, job_id).attempts == 3
    restarted = build_runtime(world.runtime.config, embedder=None, engine=world.runtime.engine, llm=None)
    assert restarted.service.run_job(job_id) is None  # over: not to be tried again
    the_one_outcome(world.raw().get(f"{API}/people/ada/jobs/{job_id}", headers=world.auth()).json, attempts=4)
    nothing_kept_of_it(world.runtime.engine)


@pytest.mark.parametrize("store", STORES)
def test_a_job_whose_tenant_switched_the_ai_off_since_fails_at_once_saying_so(
        store: str, request: pytest.FixtureRequest, make_world: Callable[..., World]) -> None:
    with FakeLLMServer() as model:
        world = make_world(engine_of(request, store), llm=OpenAICompatibleLLM(model.base_url, "m", retries=0,
                                                                              timeout=5.0))
        job_id = later(world, "conv-3").json["id"]
        world.runtime.tenants.set_ai(world.tenant_a, False)
        assert world.runtime.service.run_job(job_id) is None
        assert model.requests == []
    job = world.raw().get(f"{API}/people/ada/jobs/{job_id}", headers=world.auth()).json
    the_one_outcome(job, reason="ai_disabled")
    assert "switched off" in job["detail"]


@pytest.fixture
def no_model_env(tmp_path: Path) -> dict[str, str]:
    return instance_env(tmp_path / "instance")


def test_serve_on_the_embedded_default_ends_a_job_without_a_model_the_same_way(
        no_model_env: dict[str, str], tmp_path: Path) -> None:
    env = no_model_env
    cli_ok(["db", "upgrade"], env)
    cli_ok(["tenant", "create", "Acme"], env)
    key = cli_ok(["api-key", "create", "--tenant", "Acme", "--permission", "consolidate"], env)
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen([str(BIN), "serve", "--port", str(port), "--workers", "1"], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                try:
                    if http.get("/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            answer = http.post(f"{API}/people/ada/consolidate",
                               json={"transcript": TRANSCRIPT, "ref": "conv-4", "wait": False})
            assert answer.status_code == 202, answer.text
            job = settled(lambda: http.get(answer.headers["Location"]).json())
            time.sleep(3)  # a retry would have run by now (2 s)
            again = http.get(answer.headers["Location"]).json()
    finally:
        server.terminate()
        server.wait(timeout=60)
    the_one_outcome(job)
    assert again["attempts"] == 1, again
    assert "Miso" not in log.read_text()


@pytest.mark.postgres
def test_memory_portal_worker_on_postgresql_ends_a_job_without_a_model_the_same_way(
        make_world: Callable[..., World], pg_engine: Engine, no_model_env: dict[str, str], tmp_path: Path) -> None:
    world = make_world(pg_engine, llm=None)
    location = later(world, "conv-5").headers["Location"]
    env = {**no_model_env, "MEMORY_DATABASE_URL": pg_engine.url.render_as_string(hide_password=False)}
    if world.runtime.config.encryption_keys:  # the development key the world made under its instance folder
        env["MEMORY_ENCRYPTION_KEYS"] = world.runtime.config.encryption_keys
    log = tmp_path / "worker.log"
    with log.open("w") as out:
        worker = subprocess.Popen([str(BIN), "worker", "--workers", "1"], env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        job = settled(lambda: world.raw().get(location, headers=world.auth()).json, timeout=90)
        time.sleep(3)
        again = world.raw().get(location, headers=world.auth()).json
    finally:
        worker.terminate()
        assert worker.wait(timeout=30) == 0, log.read_text()
    the_one_outcome(job)
    assert again["attempts"] == 1, (again, log.read_text())
    nothing_kept_of_it(pg_engine)


@pytest.fixture(autouse=True)
def _no_leaked_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What this module means by "no model": none in the environment of a process it starts."""
    for name in ("MEMORY_LLM_BASE_URL", "MEMORY_LLM_MODEL", "MEMORY_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield

