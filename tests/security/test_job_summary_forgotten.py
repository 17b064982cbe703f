"""Forgetting what a background job taught erases its summary in the same transaction (issue 38,
item 24). A job learnt a memory and its model summed the conversation up; the app that sent it has
not read the summary yet. The person forgets that memory — on the portal, through "Forget
everything about …", with mem0's client (`delete`) or with OpenMemory's `delete_memories` — and at
once, with no sweep and no time passing: the job's row holds no summary, no table holds its words,
SQLite's file and log hold none of its bytes, the person's download shows none, and the app's next
`GET .../jobs/{id}` hands over none. A job whose lesson is forgotten while it runs keeps no summary
either. SQLite (in the clear: the bytes of its file) and PostgreSQL (with keys)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from portal.adapters.llm import OpenAICompatibleLLM
from portal.adapters.sql.tables import consolidation_jobs
from portal.domain.types import Place
from portal.services.memory_service import MemoryService

from ..api import conftest as api_fixtures
from ..api.conftest import API, World, serving
from ..api.test_consolidate import facts
from ..fakes.llm_server import FakeLLMServer
from ..mcp.harness import http_server, server_env
from ..mcp.openmemory_client import openmemory, said
from .scans import words_in_files, words_in_tables

sqlite_engine, make_world = api_fixtures.sqlite_engine, api_fixtures.make_world
os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to

LESSON, SUMMED = "Keeps qzorblen bees", "xqumbrit"  # the memory the job teaches; a word of its summary only
OTHER = "Plays the oboe"
STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
ROUTES = ["portal-forget", "forget-about", "mem0-delete", "openmemory-delete"]
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


def world_on(store: str, request: pytest.FixtureRequest, make_world: Callable[..., World],
             model: FakeLLMServer) -> World:
    model.replies.clear()
    engine = request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")
    return make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0),
                      flask={"WTF_CSRF_ENABLED": False})  # CSRF is proven in tests/web


def learnt(world: World, model: FakeLLMServer) -> tuple[str, str]:
    """A job that taught LESSON, its summary unread; answers (job id, the memory's id)."""
    world.runtime.service.remember(Place("ada", world.tenant_a), OTHER)
    model.script(facts(LESSON, summary=f"Talked about the {SUMMED} hives"))
    sent = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                            json={"transcript": [{"role": "user", "text": "I keep bees."}], "ref": "conv-1",
                                  "wait": False})
    assert sent.status_code == 202, sent.json
    assert world.runtime.service.run_job(sent.json["id"]) is None
    (lesson,) = [m.id for m in world.runtime.service.list(Place("ada", world.tenant_a)).items if m.text == LESSON]
    assert world.runtime.store.settle(30)
    return sent.json["id"], lesson


def words(world: World) -> list[str]:
    cipher = world.runtime.store.cipher
    return words_in_tables(world.runtime.engine, [SUMMED], decrypt=cipher.decrypt if cipher is not None else None)


def database_file(world: World) -> Path | None:
    engine = world.runtime.engine
    return Path(engine.url.database) if engine.dialect.name == "sqlite" and engine.url.database else None


def browser(world: World) -> Any:
    account = world.runtime.accounts.create("ada@a.example", "Ada", world.tenant_a, "member", PASSWORD, owner_id="ada")
    client = world.app.test_client()
    with client.session_transaction() as session:
        session["_user_id"], session["_fresh"] = account.get_id(), True
    return client


def forget(route: str, world: World, lesson: str, tmp_path: Path) -> None:
    if route == "portal-forget":
        done = browser(world).post(f"/memories/{lesson}/forget", data={"confirmed": "1"})
        assert done.status_code == 303, done.status_code
    elif route == "forget-about":
        portal = browser(world)
        preview = portal.post("/memories/forget-about/preview", data={"subject": "qzorblen"})
        html = preview.get_data(as_text=True)
        assert re.findall(r'<input type="checkbox" name="ids" value="([^"]+)"', html) == [lesson]
        token = html.split('name="preview" value="', 1)[1].split('"', 1)[0]
        assert portal.post("/memories/forget-about", data={"preview": token, "ids": [lesson]}).status_code == 303
    elif route == "mem0-delete":
        from mem0 import MemoryClient  # why: mem0ai is in the test extra, and reads MEM0_TELEMETRY at import

        with serving(world) as url:
            MemoryClient(api_key=world.keys["a"], host=url).delete(lesson)
    else:
        database = world.runtime.engine.url.render_as_string(hide_password=False)
        env = server_env(database, tmp_path / "mcp-instance")
        if world.runtime.config.encryption_keys:  # the development key the world made under its instance folder
            env["MEMORY_ENCRYPTION_KEYS"] = world.runtime.config.encryption_keys

        async def delete() -> None:
            async with openmemory(server, world.keys["a"], "a", "ada") as session:
                answer = said(await session.call_tool("delete_memories", {"memory_ids": [lesson]}))
                assert answer.startswith("Successfully deleted"), answer

        with http_server(env, tmp_path / "mcp.log") as server:
            anyio.run(delete)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("store", STORES)
def test_forgetting_what_a_job_taught_erases_its_summary_at_once(
        store: str, route: str, request: pytest.FixtureRequest, make_world: Callable[..., World],
        model: FakeLLMServer, tmp_path: Path) -> None:
    world = world_on(store, request, make_world, model)
    job_id, lesson = learnt(world, model)
    place = Place("ada", world.tenant_a)
    assert words(world), "the look can fail: the unread summary is kept"
    forget(route, world, lesson, tmp_path)
    assert [m.text for m in world.runtime.service.list(place).items] == [OTHER]
    with world.runtime.engine.connect() as conn:
        assert conn.execute(select(consolidation_jobs.c.summary)).scalars().all() == [None]
    assert world.runtime.store.settle(30)
    assert words(world) == []
    database = database_file(world)
    if database is not None:
        assert words_in_files(database, [SUMMED], f"after {route}") == []
    assert SUMMED not in str(world.runtime.service.export(place))
    job = world.raw().get(f"{API}/people/ada/jobs/{job_id}", headers=world.auth()).json
    assert job["state"] == "done" and job["result"]["summary"] is None and job["result"]["added"] == 1


@pytest.mark.parametrize("store", STORES)
def test_a_lesson_forgotten_while_its_job_runs_leaves_no_summary(
        store: str, request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> None:
    """The person forgets the memory between the job's write of it and the job's end: the summary,
    which says it, is not kept."""
    world = world_on(store, request, make_world, model)
    place = Place("ada", world.tenant_a)
    service = world.runtime.service
    learn_as = service.jobs.service_for

    def person_forgets_meanwhile(app_id: str | None) -> Any:
        learner = learn_as(app_id)

        class Meanwhile:
            def consolidate(self, *args: Any, **settings: Any) -> Any:
                result = learner.consolidate(*args, **settings)
                for memory in MemoryService.list(service, place).items:
                    if memory.text == LESSON:
                        service.forget(place, memory.id)  # the person, in the portal, at that moment
                return result

        return Meanwhile()

    service.jobs.service_for = person_forgets_meanwhile
    model.script(facts(LESSON, summary=f"Talked about the {SUMMED} hives"))
    sent = world.raw().post(f"{API}/people/ada/consolidate", headers=world.auth(),
                            json={"transcript": [{"role": "user", "text": "I keep bees."}], "ref": "conv-2",
                                  "wait": False}).json
    assert service.run_job(sent["id"]) is None
    assert service.job(place, sent["id"], take_summary=False).state == "done"
    assert world.runtime.store.settle(30)
    assert words(world) == []
