"""Person-level endpoints through the client: recall, portrait, used, unseen/seen, settings,
export and erasure."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from portal.client import Forbidden, NotFound
from portal.domain.types import Place

from .conftest import World


def background(world: World, owner: str, *texts: str) -> list[str]:
    """Memories learnt in the background (as consolidation would), written through the service."""
    place = Place(owner, world.tenant_a)
    ids = []
    for text in texts:
        saved = world.runtime.service.remember(place, text, origin="inferred", channel="background")
        ids.append(saved.memory.id)  # type: ignore[union-attr]
    return ids


def test_recall_ranks_by_words_without_an_embedder_and_marks_used(any_world: World) -> None:
    with any_world.client() as memory:
        tea = memory.remember("ada", "Prefers green tea in the morning", kind="preference").memory
        memory.remember("ada", "Is training for the Lyon marathon", kind="goal")
        memory.remember("ada", "Has a cat called Miso")
        hits = memory.recall("ada", "what tea does she drink")
        assert hits[0].memory.id == tea.id and hits[0].match == "lexical" and hits[0].score > 0
        assert memory.get("ada", tea.id).last_used_at is not None
        assert [h.memory.kind for h in memory.recall("ada", "marathon", kinds=["goal"])] == ["goal"]
        assert memory.recall("ada", "marathon", kinds=["preference"]) == []
        assert len(memory.recall("ada", "a", limit=1)) <= 1
        assert memory.recall("ada", "   ") == []


def test_recall_filters_by_creation_time(world: World) -> None:
    with world.client() as memory:
        memory.remember("ada", "Prefers green tea")
        now = datetime.now(UTC)
        assert len(memory.recall("ada", "tea", after=now - timedelta(hours=1))) == 1
        assert memory.recall("ada", "tea", after=now + timedelta(hours=1)) == []
        assert memory.recall("ada", "tea", before=now - timedelta(hours=1)) == []


def test_recall_with_a_time_without_its_zone_is_invalid_time(any_world: World) -> None:
    with any_world.client() as memory:
        memory.remember("ada", "Prefers green tea")
    for field in ("after", "before"):
        answer = any_world.raw().post(
            "/api/v1/people/ada/recall", json={"query": "tea", field: "2026-01-01T09:00:00"}, headers=any_world.auth()
        )
        assert answer.status_code == 400 and answer.json["code"] == "invalid_time"
        zoned = any_world.raw().post(
            "/api/v1/people/ada/recall", json={"query": "tea", field: "2000-01-01T09:00:00+02:00"}, headers=any_world.auth()
        )
        assert zoned.status_code == 200 and len(zoned.json["items"]) == (1 if field == "after" else 0)


@pytest.mark.parametrize(
    "body",
    [{"query": "tea", "limit": 0}, {"query": "tea", "limit": 101}, {"query": "tea", "min_similarity": 2},
     {"query": 3}, {"kinds": ["fact"]}, {"query": "tea", "after": "yesterday"}, {"query": "x" * 2001},
     {"query": "tea", "relevant_only": "yes"}, {"query": "tea", "relevant_only": 1}],
)
def test_recall_of_the_wrong_shape_is_400(world: World, body: dict[str, object]) -> None:
    answer = world.raw().post("/api/v1/people/ada/recall", json=body, headers=world.auth())
    assert answer.status_code == 400 and answer.json["code"] == "invalid_request"
    assert answer.mimetype == "application/problem+json"


def test_portrait_holds_pinned_and_important_memories_in_every_format(world: World) -> None:
    with world.client() as memory:
        pinned = memory.remember("ada", "Is vegetarian", importance=2, pinned=True).memory
        important = memory.remember("ada", "Is allergic to peanuts", importance=5).memory
        minor = memory.remember("ada", "Likes the colour blue", importance=2).memory
        portrait = memory.portrait("ada")
        assert set(portrait.ids) == {pinned.id, important.id}
        assert "Is allergic to peanuts" in portrait.text and "blue" not in portrait.text
        assert minor.id in memory.portrait("ada", min_importance=1).ids
        as_json = json.loads(memory.portrait("ada", format="json").text)
        assert {item["id"] for item in as_json} == {pinned.id, important.id}
        assert memory.portrait("ada", format="dated").text
        short = memory.portrait("ada", max_length=25, fill=True)
        assert len(short.text) <= 25 and len(short.ids) == 1
        assert memory.portrait("ada", max_length=0).ids == []
        assert memory.portrait("ada", masked=True).ids


@pytest.mark.parametrize(
    "query", ["format=xml", "max_length=-1", "min_importance=9", "fill=maybe", "colour=red", "max_length=abc"]
)
def test_portrait_with_a_wrong_query_is_400(world: World, query: str) -> None:
    answer = world.raw().get(f"/api/v1/people/ada/portrait?{query}", headers=world.auth())
    assert answer.status_code == 400 and answer.json["code"] == "invalid_request"


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "state=gone", "channel=radio", "seen=perhaps", "x=1"])
def test_list_with_a_wrong_query_is_400(world: World, query: str) -> None:
    answer = world.raw().get(f"/api/v1/people/ada/memories?{query}", headers=world.auth())
    assert (answer.status_code, answer.json["code"]) == (400, "invalid_request")


def test_mark_used_counts_only_the_persons_active_memories(world: World) -> None:
    with world.client() as memory:
        kept = memory.remember("ada", "Likes jazz").memory
        other = memory.remember("bob", "Likes rock").memory
        assert memory.mark_used("ada", [kept.id, other.id, "0" * 32]) == 1
        assert memory.get("ada", kept.id).last_used_at is not None
        assert memory.get("bob", other.id).last_used_at is None
        assert memory.mark_used("ada", []) == 0


def test_unseen_lists_background_memories_until_seen(world: World) -> None:
    ids = background(world, "ada", "Has a cat called Miso", "Is training for a marathon")
    with world.client() as memory:
        memory.remember("ada", "Said this herself")
        unseen = memory.unseen("ada")
        assert {m.id for m in unseen} == set(ids)
        assert all(m.channel == "background" and not m.seen and m.origin == "inferred" for m in unseen)
        assert memory.mark_seen("ada", [ids[0], "0" * 32]) == 1
        assert [m.id for m in memory.unseen("ada")] == [ids[1]]
        assert memory.mark_seen("ada", ids) == 1
        assert memory.unseen("ada") == []
        assert len(memory.list("ada", channel="background", seen=True).items) == 2


@pytest.mark.parametrize("body", [{"ids": "abc"}, {"ids": [3]}, {"ids": [""]}, {}, {"ids": ["a"] * 1001}, []])
def test_ids_bodies_of_the_wrong_shape_are_400(world: World, body: object) -> None:
    for endpoint in ("used", "seen"):
        answer = world.raw().post(f"/api/v1/people/ada/{endpoint}", json=body, headers=world.auth())
        assert answer.status_code == 400 and answer.json["code"] == "invalid_request", endpoint


def test_settings_pause_and_resume(world: World) -> None:
    """An app pauses learning (the person told the assistant); resuming is the person's alone
    (tests/security/test_settings_are_the_persons.py)."""
    with world.client() as memory:
        assert memory.get_settings("ada") is False
        assert memory.set_paused("ada", True) is True
        assert memory.get_settings("ada") is True and memory.get_settings("bob") is False
        with pytest.raises(Forbidden) as refused:
            memory.set_paused("ada", False)
        assert refused.value.code == "person_decides" and memory.get_settings("ada") is True
        world.runtime.service.resume(Place("ada", world.tenant_a))
        assert memory.get_settings("ada") is False
    for body in ({"paused": "yes please"}, {}, {"paused": True, "extra": 1}, {"paused": 0}, {"paused": 1},
                 {"paused": "true"}, {"paused": None}):
        answer = world.raw().put("/api/v1/people/ada/settings", json=body, headers=world.auth())
        assert answer.status_code == 400 and answer.json["code"] == "invalid_request", body
    assert world.runtime.service.is_paused(Place("ada", world.tenant_a)) is False


@pytest.mark.parametrize("flag", [0, 1, "true", "yes"])
def test_a_true_or_false_in_a_body_must_be_a_json_boolean(world: World, flag: object) -> None:
    """Not 0/1 or a string: a client sending `"pinned": "false"` would otherwise pin."""
    auth = world.auth()
    raw = world.raw()
    kept = raw.post("/api/v1/people/ada/memories", json={"text": "Likes green tea"}, headers=auth).json["memory"]
    asks = [
        ("POST", "/api/v1/people/ada/memories", {"text": "Plays chess", "pinned": flag}),
        ("POST", "/api/v1/people/ada/memories", {"text": "Plays chess", "explicit": flag}),
        ("PATCH", f"/api/v1/people/ada/memories/{kept['id']}", {"pinned": flag}),
        ("PATCH", f"/api/v1/people/ada/memories/{kept['id']}", {"text": "Likes tea", "in_place": flag}),
    ]
    for method, path, body in asks:
        answer = raw.open(path, method=method, json=body, headers=auth)
        assert answer.status_code == 400 and answer.json["code"] == "invalid_request", (method, body)
    assert world.count() == 1


def test_export_holds_every_memory_with_its_revisions_and_the_settings(any_world: World) -> None:
    with any_world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        memory.remember("ada", "Likes jazz")
        memory.remember("bob", "Likes rock")
        memory.set_paused("ada", True)
        exported = memory.export("ada")
    assert (exported.owner_id, exported.scope, exported.paused) == ("ada", any_world.tenant_a, True)
    assert exported.exported_at.tzinfo is not None
    by_text = {item["text"]: item for item in exported.memories}
    assert set(by_text) == {"Lives in Paris", "Likes jazz"}
    assert [r["text"] for r in by_text["Lives in Paris"]["revisions"]] == ["Lives in Lyon"]


def test_erasing_a_person_removes_everything_and_answers_counts(any_world: World) -> None:
    with any_world.client() as memory:
        m = memory.remember("ada", "Lives in Lyon").memory
        memory.update("ada", m.id, text="Lives in Paris")
        memory.remember("ada", "Likes jazz", idempotency_key="turn-1")
        memory.set_paused("ada", True)
        kept = memory.remember("bob", "Likes rock").memory
        counts = memory.erase_person("ada")
        assert (counts.memories, counts.revisions, counts.settings) == (2, 1, 1)
        assert counts.receipts >= 1
        assert memory.list("ada", state="all").items == [] and memory.get_settings("ada") is False
        with pytest.raises(NotFound):
            memory.get("ada", m.id)
        assert memory.get("bob", kept.id).text == "Likes rock"
        assert memory.erase_person("ada").memories == 0


def test_erasure_needs_the_erasure_permission(world: World) -> None:
    with world.client() as memory:
        memory.remember("ada", "Lives in Lyon")
    with world.client("a_without:erasure") as memory, pytest.raises(Forbidden) as forbidden:
        memory.erase_person("ada")
    assert (forbidden.value.status, forbidden.value.code) == (403, "forbidden")
    assert world.count("ada") == 1
