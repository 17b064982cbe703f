"""Connected apps through the API (issue 18): every key is an app of its tenant; a person's block
(403 `app_blocked`) and pause (`paused` for writes, reads still answered) hold on every endpoint,
for that app and that person only, and each use is recorded content-free. SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy import select

from portal.adapters.sql.tables import app_uses
from portal.domain.apps import App, app_of
from portal.domain.types import Place

from .conftest import API, World, endpoints, send
from .test_requests import is_problem, memory_id


def app(world: World, key: str) -> App:
    (found,) = [k for k in world.runtime.api_keys.list(world.tenant_a) if k.id == world.key_ids[key]]
    return app_of(found)


def decide(world: World, key: str, state: str | None, owner: str = "ada") -> None:
    world.runtime.service.set_app_control(Place(owner, world.tenant_a), app(world, key).id, state)


def test_a_blocked_app_is_refused_on_every_endpoint_for_that_person_only(any_world: World) -> None:
    world = any_world
    ada = memory_id(world)
    memory_id(world, owner="bob")
    decide(world, "a", "blocked")
    for endpoint in endpoints("ada", ada):
        if endpoint.name == "tools":  # the list of tools names no person
            continue
        answer = send(world.raw(), endpoint, world.auth("a"))
        is_problem(answer, 403, "app_blocked")
    assert world.count() == 1 and world.count("bob") == 1  # nothing was written, forgotten or erased
    # the same app for another person, and another app for this person, are answered as before
    assert world.raw().get(f"{API}/people/bob/memories", headers=world.auth("a")).status_code == 200
    other = world.raw().get(f"{API}/people/ada/memories/{ada}", headers=world.auth("a_without:erasure"))
    assert other.status_code == 200 and other.json["id"] == ada
    decide(world, "a", None)
    assert world.raw().get(f"{API}/people/ada/memories/{ada}", headers=world.auth("a")).status_code == 200


def test_a_paused_app_may_read_and_take_away_but_learns_and_changes_nothing(any_world: World) -> None:
    world = any_world
    ada = memory_id(world)
    decide(world, "a", "paused")
    refused = {"remember", "update", "put_settings", "seen"}
    taking_away = {"forget", "erase", "undo"}  # as for a paused person: forgetting is not learning
    for endpoint in endpoints("ada", ada):
        if endpoint.name in taking_away:
            continue
        answer = send(world.raw(), endpoint, world.auth("a"))
        if endpoint.name == "tool_remember":  # a model tool answers its refusal as a result
            assert answer.status_code == 200 and answer.json["reason"] == "paused", answer.json
        elif endpoint.name == "consolidate":  # answered like a paused person's: nothing learnt
            assert answer.status_code == 200 and answer.json["added"] == 0, answer.json
        elif endpoint.name in refused:
            is_problem(answer, 422, "paused")
        else:
            assert answer.status_code == 200, (endpoint.name, answer.json)
    assert world.count() == 1 and world.runtime.service.get(Place("ada", world.tenant_a), ada).seen is True
    with world.runtime.store.read(Place("ada", world.tenant_a)) as tx:
        assert tx.settings().paused is False  # the app's pause is not the person's
    # undo restoring an earlier wording is a change (refused); undo of a new memory takes it away
    other = world.auth("a_without:erasure")
    assert world.raw().patch(f"{API}/people/ada/memories/{ada}", json={"text": "Prefers black tea"},
                             headers=other).status_code == 200
    is_problem(world.raw().post(f"{API}/people/ada/memories/{ada}/undo", headers=world.auth("a")), 422, "paused")
    write = world.raw().post(f"{API}/people/ada/memories", json={"text": "Likes jazz"}, headers=world.auth("a"))
    assert write.json["detail"] == "Memory is paused: nothing is learnt or changed until you resume it."
    # a model's forget is refused, as when the person pauses; the one the person asked for is not
    tool = world.raw().post(f"{API}/people/ada/tools/forget", json={"arguments": {"id": ada}}, headers=world.auth("a"))
    assert tool.json["reason"] == "paused"
    assert world.raw().delete(f"{API}/people/ada/memories/{ada}", headers=world.auth("a")).status_code == 204
    assert world.raw().delete(f"{API}/people/ada", headers=world.auth("a")).status_code == 200
    decide(world, "a", None)
    assert world.raw().post(f"{API}/people/ada/memories", json={"text": "Likes jazz"},
                            headers=world.auth("a")).status_code == 201


def test_each_use_is_recorded_per_app_and_action_without_a_word_of_the_memory(any_world: World) -> None:
    world = any_world
    ada = memory_id(world, text="Prefers green tea")
    for _ in range(2):
        hits = world.raw().post(f"{API}/people/ada/recall", json={"query": "green tea"}, headers=world.auth("a"))
        assert [h["memory"]["id"] for h in hits.json["items"]] == [ada]
    world.raw().get(f"{API}/people/ada/memories/{ada}", headers=world.auth("a_only:memories:read"))
    world.raw().patch(f"{API}/people/ada/memories/{ada}", json={"text": "Prefers black tea"}, headers=world.auth("a"))
    names = {app(world, k).id: app(world, k) for k in ("a", "a_only:memories:read")}
    summaries = world.runtime.service.connected_apps(Place("ada", world.tenant_a), names)
    found = {s.app.name: (s.counts, s.memories) for s in summaries}
    assert found["a"] == ({"remembered": 1, "recalled": 2, "corrected": 1, "forgot": 0, "read": 0,
                          "temporary": 0}, 1)
    assert found["a_only:memories:read"] == ({"remembered": 0, "recalled": 0, "corrected": 0, "forgot": 0, "read": 1,
                                              "temporary": 0}, 1)
    with world.runtime.engine.connect() as conn:
        rows = [tuple(map(str, r)) for r in conn.execute(select(app_uses))]
    assert rows and not any("tea" in value for row in rows for value in row)
    # erased with the person, through the API's own erasure
    assert world.raw().delete(f"{API}/people/ada", headers=world.auth("a")).status_code == 200
    with world.runtime.engine.connect() as conn:
        assert conn.execute(select(app_uses).where(app_uses.c.owner_id == "ada")).first() is None


def test_a_blocked_app_is_not_answered_a_replay_of_what_it_wrote_before(any_world: World) -> None:
    world = any_world
    headers = world.auth("a", **{"Idempotency-Key": "write-1"})
    first = world.raw().post(f"{API}/people/ada/memories", json={"text": "Prefers green tea"}, headers=headers)
    assert first.status_code == 201
    again = world.raw().post(f"{API}/people/ada/memories", json={"text": "Prefers green tea"}, headers=headers)
    assert again.headers.get("Idempotent-Replayed") == "true"
    decide(world, "a", "blocked")
    replay = world.raw().post(f"{API}/people/ada/memories", json={"text": "Prefers green tea"}, headers=headers)
    is_problem(replay, 403, "app_blocked")
    assert "green tea" not in replay.get_data(as_text=True)


def test_an_app_s_export_tells_it_of_its_own_uses_only(any_world: World) -> None:
    world = any_world
    ada = memory_id(world)
    world.raw().get(f"{API}/people/ada/memories/{ada}", headers=world.auth("a_only:memories:read"))
    decide(world, "a_only:memories:read", "blocked")
    exported = world.raw().get(f"{API}/people/ada/export", headers=world.auth("a")).json
    assert exported["app_controls"] == {}
    assert {u["app_id"] for u in exported["app_uses"]} == {app(world, "a").id}
