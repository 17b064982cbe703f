"""Issue 29 through the JSON API: the conversation each answer was for (`conversation_ref` on recall,
the portrait and tool calls), a memory's expiry (`expires_at` on remember and correct, and in every
memory), and "don't use this" (`PATCH ... {"use": false}`), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from portal.domain.apps import app_of
from portal.domain.types import Place

from .conftest import API, World

PERSON = f"{API}/people/ada"


def call(world: World, method: str, path: str, body: Any = None, key: str = "a") -> Any:
    response = world.raw().open(path, method=method, json=body, headers=world.auth(key))
    return response.status_code, response.get_json(silent=True)


def remember(world: World, text: str, **fields: Any) -> dict[str, Any]:
    status, body = call(world, "POST", f"{PERSON}/memories", {"text": text, **fields})
    assert status == 201, body
    return body["memory"]  # type: ignore[no-any-return]


def conversations(world: World) -> dict[str, set[str]]:
    """The person's conversations as the person sees them: the key's digest -> the memory ids."""
    found = world.runtime.service.conversations(Place("ada", world.tenant_a))
    return {c.key: {m.id for m in memories} for c, memories in found}


def test_recall_portrait_and_tools_record_which_conversation_was_given_what(any_world: World) -> None:
    w = any_world
    tea = remember(w, "Prefers tea to coffee", pinned=True)["id"]
    assert call(w, "POST", f"{PERSON}/recall", {"query": "tea", "conversation_ref": "chat-1"})[0] == 200
    assert len(conversations(w)) == 1 and list(conversations(w).values()) == [{tea}]
    status, portrait = call(w, "GET", f"{PERSON}/portrait?conversation_ref=chat-2")
    assert status == 200 and portrait["ids"] == [tea]
    status, tool = call(w, "POST", f"{PERSON}/tools/recall", {"arguments": {"query": "tea"}, "conversation_ref": "chat-3"})
    assert status == 200 and [m["id"] for m in tool["memories"]] == [tea]
    assert sorted(map(sorted, conversations(w).values())) == [[tea]] * 3
    # The same reference again is the same conversation; none named, none recorded.
    call(w, "POST", f"{PERSON}/recall", {"query": "tea", "conversation_ref": "chat-1"})
    call(w, "POST", f"{PERSON}/recall", {"query": "tea"})
    assert len(conversations(w)) == 3
    assert not any("chat" in key for key in conversations(w))  # a digest, never the reference


@pytest.mark.parametrize("ref", ["", " ", "x" * 201, "a\x01b"])
def test_a_bad_conversation_ref_is_refused_422_with_its_code_everywhere(world: World, ref: str) -> None:
    remember(world, "Prefers tea to coffee", pinned=True)
    answers = [
        call(world, "POST", f"{PERSON}/recall", {"query": "tea", "conversation_ref": ref}),
        call(world, "POST", f"{PERSON}/tools/recall", {"arguments": {"query": "tea"}, "conversation_ref": ref}),
    ]
    if "\x01" not in ref:  # a query string with a control character is refused before (invalid_text)
        answers.append(call(world, "GET", f"{PERSON}/portrait?conversation_ref={ref}"))
    for status, body in answers:
        assert (status, body["code"]) == (422, "invalid_conversation_ref"), body
    assert conversations(world) == {}


def test_expires_at_round_trips_through_remember_and_correct(any_world: World) -> None:
    w = any_world
    made = remember(w, "Is in Lyon this week", expires_at="2099-01-02T03:04:05+02:00")
    assert made["expires_at"] == "2099-01-02T01:04:05Z" and made["use"] is True
    assert "withheld_from" not in made
    memory = f"{PERSON}/memories/{made['id']}"
    assert call(w, "GET", memory)[1]["expires_at"] == "2099-01-02T01:04:05Z"
    status, changed = call(w, "PATCH", memory, {"expires_at": "2098-05-01T00:00:00Z"})
    assert status == 200 and changed["expires_at"] == "2098-05-01T00:00:00Z" and changed["revision"] == 1
    assert call(w, "PATCH", memory, {"importance": 5})[1]["expires_at"] == "2098-05-01T00:00:00Z"  # left out: kept
    assert call(w, "PATCH", memory, {"expires_at": None})[1]["expires_at"] is None  # null: never
    assert remember(w, "Has a cat")["expires_at"] is None


@pytest.mark.parametrize(("value", "code"), [("2001-01-01T00:00:00Z", "expiry_in_past"), ("tomorrow", "invalid_expiry"),
                                             ("2099-01-01T00:00:00", "invalid_expiry")])
def test_a_bad_or_past_expiry_is_refused_422_and_changes_nothing(world: World, value: str, code: str) -> None:
    status, body = call(world, "POST", f"{PERSON}/memories", {"text": "Is in Lyon", "expires_at": value})
    assert (status, body["code"]) == (422, code)
    assert world.count() == 0
    made = remember(world, "Has a cat")
    status, body = call(world, "PATCH", f"{PERSON}/memories/{made['id']}", {"expires_at": value})
    assert (status, body["code"]) == (422, code)
    assert call(world, "GET", f"{PERSON}/memories/{made['id']}")[1]["expires_at"] is None


def gone_for(world: World, memory_id: str, key: str) -> None:
    """The memory is in no answer `key`'s app gets: get, list, recall, portrait, the recall tool."""
    assert call(world, "GET", f"{PERSON}/memories/{memory_id}", key=key)[0] == 404
    assert memory_id not in {m["id"] for m in call(world, "GET", f"{PERSON}/memories?state=all", key=key)[1]["items"]}
    assert call(world, "POST", f"{PERSON}/recall", {"query": "tea"}, key=key)[1]["items"] == []
    assert call(world, "GET", f"{PERSON}/portrait", key=key)[1]["ids"] == []
    assert call(world, "POST", f"{PERSON}/tools/recall", {"arguments": {"query": "tea"}}, key=key)[1]["memories"] == []


def test_an_expired_memory_is_in_no_answer(any_world: World) -> None:
    w = any_world
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    made = remember(w, "Prefers tea to coffee", pinned=True, expires_at=soon)
    assert call(w, "GET", f"{PERSON}/portrait")[1]["ids"] == [made["id"]]
    later = datetime.now(UTC) + timedelta(hours=2)
    w.runtime.service.clock = lambda: later
    gone_for(w, made["id"], "a")


def test_use_false_withholds_a_memory_from_every_app_and_the_person_still_has_it(any_world: World) -> None:
    w = any_world
    made = remember(w, "Prefers tea to coffee", pinned=True)
    status, body = call(w, "PATCH", f"{PERSON}/memories/{made['id']}", {"use": False})
    assert status == 200 and body["use"] is False and body["revision"] == 1 and "withheld_from" not in body
    for key in ("a", "a_read"):  # this app and another app of the tenant
        gone_for(w, made["id"], key)
    # An app cannot give it back: the person allows it again.
    assert call(w, "PATCH", f"{PERSON}/memories/{made['id']}", {"use": True})[0] == 404
    person = w.runtime.service
    place = Place("ada", w.tenant_a)
    assert person.get(place, made["id"]).to_json()["use"] is False
    exported = person.export(place)["memories"]
    assert [(m["id"], m["use"]) for m in exported] == [(made["id"], False)]
    person.set_use(place, made["id"], True)
    assert call(w, "GET", f"{PERSON}/portrait")[1]["ids"] == [made["id"]]


def test_use_true_from_an_app_changes_nothing_and_use_goes_with_a_correction(world: World) -> None:
    made = remember(world, "Prefers tea to coffee")
    memory = f"{PERSON}/memories/{made['id']}"
    place = Place("ada", world.tenant_a)
    world.runtime.service.set_use(place, made["id"], False, app_id="another-app")
    status, body = call(world, "PATCH", memory, {"use": True})
    assert status == 200 and body["use"] is True and "withheld_from" not in body
    assert world.runtime.service.get(place, made["id"]).withheld == ("another-app",)
    response = world.raw().patch(memory, json={"text": "Prefers green tea", "use": False},
                                 headers=world.auth(**{"If-Match": '"1"'}))
    assert response.status_code == 200 and (response.get_json()["text"], response.get_json()["use"]) == (
        "Prefers green tea", False)
    kept = world.runtime.service.get(place, made["id"])
    assert (kept.text, kept.revision, kept.to_json()["use"]) == ("Prefers green tea", 2, False)


def test_use_alone_checks_if_match_and_a_non_boolean_is_refused(world: World) -> None:
    made = remember(world, "Prefers tea to coffee")
    memory = f"{PERSON}/memories/{made['id']}"
    response = world.raw().patch(memory, json={"use": False}, headers=world.auth(**{"If-Match": '"7"'}))
    assert response.status_code == 409 and response.get_json()["actual_revision"] == 1
    assert call(world, "PATCH", memory, {"use": "no"})[0] == 400  # a JSON true or false, not guessed at
    assert call(world, "GET", memory)[1]["use"] is True


def test_an_apps_export_never_says_what_the_person_decided_about_other_apps(world: World) -> None:
    made = remember(world, "Prefers tea to coffee")
    world.runtime.service.set_use(Place("ada", world.tenant_a), made["id"], False, app_id="another-app")
    status, body = call(world, "GET", f"{PERSON}/export")
    assert status == 200 and [m["id"] for m in body["memories"]] == [made["id"]]
    assert all("withheld_from" not in m for m in body["memories"])


@pytest.mark.parametrize("withheld_from", ["every app", "this app"])
def test_an_app_repeating_a_withheld_memory_reinforces_it_and_never_gets_it_back(any_world: World,
                                                                                 withheld_from: str) -> None:
    """Issue 38, item 17: the same words again from the app meet the memory the person said "don't
    use" (201, reinforced, its id); no second memory comes back to the app, and it stays withheld."""
    w = any_world
    made = remember(w, "Prefers tea to coffee", importance=2)
    place, person = Place("ada", w.tenant_a), w.runtime.service
    app_id = None
    if withheld_from == "this app":
        key = w.runtime.api_keys.verify(w.keys["a"])
        assert key is not None
        app_id = app_of(key).id
    person.set_use(place, made["id"], False, app_id)
    status, body = call(w, "POST", f"{PERSON}/memories", {"text": "prefers TEA to coffee!", "importance": 4})
    assert status == 201 and (body["reinforced"], body["replaced_id"]) == (True, None)
    assert (body["memory"]["id"], body["memory"]["text"], body["memory"]["use"]) == (
        made["id"], "prefers TEA to coffee!", False)
    gone_for(w, made["id"], "a")
    (kept,) = person.list(place, state=None).items
    assert (kept.id, kept.text, kept.importance, kept.usable_by(app_id or "any app")) == (
        made["id"], "Prefers tea to coffee", 4, False)
