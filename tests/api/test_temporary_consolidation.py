"""A conversation that teaches nothing through the JSON API and the Python client (issue 29, item
5): `"temporary": true` on consolidate answers 200 at once with status `temporary` — with `wait`
false or `Prefer: respond-async` too, no job queued — nothing sent to the model, nothing learnt,
no word of the conversation in any table, the queue or the SQLite files, and the app's use counted;
a paused person or app answers `paused`, a blocked app 403 `app_blocked`. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from portal.adapters.cipher import generate_key
from portal.adapters.llm import OpenAICompatibleLLM
from portal.api.consolidation_schemas import ConsolidateIn, ConsolidateOut
from portal.domain.apps import TEMPORARY, app_of, apps_of
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer
from ..security.scans import words_in_files, words_in_tables
from .conftest import API, World
from .test_consolidate import facts

SAID = "zqalvendor"  # in the temporary conversation only
TRANSCRIPT = [{"role": "user", "text": f"Off the record: my new neighbour is called {SAID}."},
              {"role": "assistant", "text": "Understood, I will not remember it."}]
DONE_SHAPE = {"status", "added", "corrected", "refused", "reinforced", "summary", "reason", "failed", "proposed", "detail"}


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(params=[pytest.param(("sqlite", False), id="sqlite-plain"), pytest.param(("sqlite", True), id="sqlite"),
                        pytest.param(("postgres", True), id="postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, make_world: Callable[..., World], model: FakeLLMServer) -> World:
    store, encrypted = request.param
    model.replies.clear()
    model.requests.clear()
    engine = request.getfixturevalue("sqlite_engine" if store == "sqlite" else "pg_engine")
    env = {"MEMORY_ENCRYPTION_KEYS": generate_key()} if encrypted else {}
    return make_world(engine, llm=OpenAICompatibleLLM(model.base_url, "m", retries=0, timeout=5.0), env=env)


def consolidate(world: World, key: str = "a", headers: dict[str, str] | None = None, **body: Any) -> Any:
    payload = {"transcript": TRANSCRIPT, "ref": "conv-1", "temporary": True, **body}
    return world.raw().post(f"{API}/people/ada/consolidate", json=payload, headers={**world.auth(key), **(headers or {})})


def app_summary(world: World, key: str = "a") -> Any:
    api_key = next(k for k in world.runtime.api_keys.list(world.tenant_a) if k.id == world.key_ids[key])
    found = world.runtime.service.connected_apps(Place("ada", world.tenant_a), apps_of([api_key]))
    return next((s for s in found if s.app.id == app_of(api_key).id), None)


def words_left(world: World) -> list[str]:
    cipher = world.runtime.store.cipher
    found = words_in_tables(world.runtime.engine, [SAID], decrypt=cipher.decrypt if cipher is not None else None)
    database = world.runtime.engine.url.database
    if world.runtime.engine.dialect.name == "sqlite" and database:
        assert world.runtime.store.settle(30)
        found += words_in_files(Path(database), [SAID], "after a temporary conversation")
    return found


@pytest.mark.parametrize("later", [None, {"wait": False}, {"prefer": True}], ids=["wait", "wait-false", "prefer-async"])
def test_a_temporary_conversation_is_answered_at_once_learns_nothing_and_keeps_no_word(
        world: World, model: FakeLLMServer, later: dict[str, Any] | None) -> None:
    tea = world.runtime.service.remember(Place("ada", world.tenant_a), "Prefers green tea").memory  # the person's
    body = {k: v for k, v in (later or {}).items() if k != "prefer"}
    headers = {"Prefer": "respond-async"} if later and later.get("prefer") else None
    answer = consolidate(world, headers=headers, **body)
    assert answer.status_code == 200, answer.json
    assert "Location" not in answer.headers and "Preference-Applied" not in answer.headers
    assert answer.json["status"] == "temporary" and set(answer.json) == DONE_SHAPE
    assert (answer.json["added"], answer.json["corrected"], answer.json["refused"], answer.json["summary"]) == (0, 0, 0, None)
    assert answer.json["detail"] == "The conversation was temporary: nothing was learnt from it and nothing of it was kept."
    assert model.requests == [] and world.runtime.queue.pending() == 0
    with world.runtime.store.read(Place("ada", world.tenant_a)) as tx:
        assert tx.jobs() == []
    assert world.count() == 1 and words_left(world) == []
    summary = app_summary(world)
    assert (summary.temporary, summary.memories, summary.only_reads) == (1, 0, True)
    # recall is still allowed, and the app still only reads
    with world.client() as memory:
        assert [h.memory.id for h in memory.recall("ada", "green tea")] == [tea.id]
    assert app_summary(world).only_reads


def test_the_same_conversation_sent_later_not_temporary_is_learnt(world: World, model: FakeLLMServer) -> None:
    assert consolidate(world).json["status"] == "temporary"
    model.script(facts("Has a new neighbour"))
    with world.client() as memory:
        learnt = memory.consolidate("ada", TRANSCRIPT, "conv-1")
        assert (learnt.status, learnt.added) == ("done", 1)
        assert [m.text for m in memory.list("ada").items] == ["Has a new neighbour"]
    assert not app_summary(world).only_reads


def test_the_person_s_pause_and_the_app_s_pause_and_block_are_obeyed(world: World, model: FakeLLMServer) -> None:
    place = Place("ada", world.tenant_a)
    service = world.runtime.service
    service.pause(place)
    paused = consolidate(world, wait=False)
    assert (paused.status_code, paused.json["status"]) == (200, "paused")
    service.resume(place)
    assert app_summary(world) is None  # a pause counts no use
    api_key = next(k for k in world.runtime.api_keys.list(world.tenant_a) if k.id == world.key_ids["a"])
    service.set_app_control(place, app_of(api_key).id, "paused")
    assert consolidate(world).json["status"] == "paused"
    service.set_app_control(place, app_of(api_key).id, "blocked")
    blocked = consolidate(world, wait=False)
    assert (blocked.status_code, blocked.json["code"]) == (403, "app_blocked")
    summary = app_summary(world)
    assert summary.counts[TEMPORARY] == 0 and model.requests == []


def test_the_ai_switched_off_stops_nothing_here(world: World, model: FakeLLMServer) -> None:
    """Nothing of a temporary conversation goes to a model: no `ai_disabled` to answer."""
    world.runtime.tenants.set_ai(world.tenant_a, False)
    answer = consolidate(world)
    assert (answer.status_code, answer.json["status"]) == (200, "temporary")
    assert model.requests == []


def test_temporary_must_be_a_boolean_and_the_openapi_says_what_it_does(world: World) -> None:
    answer = consolidate(world, temporary="yes")
    assert (answer.status_code, answer.json["code"]) == (400, "invalid_request")
    spec = world.raw().get(f"{API}/openapi.json").json
    schemas = spec["components"]["schemas"]
    assert "nothing is learnt" in schemas["ConsolidateIn"]["properties"]["temporary"]["description"]
    assert "temporary" in schemas["ConsolidateOut"]["properties"]["status"]["enum"]
    assert "temporary" in schemas["ConsolidateOut"]["properties"]["status"]["description"]
    assert ConsolidateIn.model_fields["temporary"].default is False and "temporary" in str(ConsolidateOut.model_fields)


def test_the_client_marks_a_conversation_temporary(world: World, model: FakeLLMServer) -> None:
    with world.client() as memory:
        result = memory.consolidate("ada", TRANSCRIPT, "conv-9", temporary=True)
        assert (result.status, result.added, result.summary) == ("temporary", 0, None)
        assert memory.list("ada").items == []
        # and an idempotent replay answers the same, counting the use once
        first = memory.consolidate("ada", TRANSCRIPT, "conv-10", temporary=True, idempotency_key="k-1")
        again = memory.consolidate("ada", TRANSCRIPT, "conv-10", temporary=True, idempotency_key="k-1")
        assert first.status == again.status == "temporary"
    assert app_summary(world).temporary == 2 and model.requests == []
