"""Idempotency-Key on every write (DESIGN §11): the same key and body replay the stored answer
with `Idempotent-Replayed: true` and are applied once; another body is 409; a replay whose memory
was forgotten, corrected, overwritten or undone since is redacted (receipts keep no words); sixteen
concurrent retries against a live server apply once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import text

from portal.adapters.llm import OpenAICompatibleLLM
from portal.client import ApiError, MemoryClient, Redacted, Saved
from portal.domain.types import Place

from ..fakes.llm_server import FakeLLMServer
from .conftest import API, World, serving

ADA = f"{API}/people/ada"


def twice(world: World, method: str, path: str, body: Any = None, key: str = "k-1", **headers: str) -> tuple[Any, Any]:
    raw = world.raw()
    sent = world.auth(**{"Idempotency-Key": key, **headers})
    first = raw.open(path, method=method, json=body, headers=sent)
    again = raw.open(path, method=method, json=body, headers=sent)
    assert first.status_code < 500 and "Idempotent-Replayed" not in first.headers
    assert again.headers.get("Idempotent-Replayed") == "true", again.get_data(as_text=True)
    assert (again.status_code, again.get_data()) == (first.status_code, first.get_data())
    assert again.mimetype == first.mimetype or first.status_code == 204
    return first, again


def remembered(world: World, text: str, owner: str = "ada") -> str:
    answer = world.raw().post(f"{API}/people/{owner}/memories", json={"text": text}, headers=world.auth())
    return str(answer.json["memory"]["id"])


def current(world: World, memory_id: str) -> dict[str, Any]:
    return dict(world.raw().get(f"{ADA}/memories/{memory_id}", headers=world.auth()).json)


def test_remember_replayed_is_applied_once(any_world: World) -> None:
    first, _ = twice(any_world, "POST", f"{ADA}/memories", {"text": "Prefers tea"})
    assert first.status_code == 201
    memory = current(any_world, first.json["memory"]["id"])
    # Run twice, the second would have met the first as a duplicate and made revision 2.
    assert (memory["revision"], any_world.count()) == (1, 1)


def test_a_refusal_is_replayed_too(world: World) -> None:
    first, _ = twice(world, "POST", f"{ADA}/memories", {"text": "   "})
    assert (first.status_code, first.json["code"]) == (422, "empty")
    # The same body as without a key: kept or not, a refusal reads the same.
    plain = world.raw().post(f"{ADA}/memories", json={"text": "   "}, headers=world.auth())
    assert first.json == plain.json and "actual_revision" not in first.json


def test_a_conflict_is_replayed_with_its_actual_revision(world: World) -> None:
    memory_id = remembered(world, "Lives in Lyon")
    world.raw().patch(f"{ADA}/memories/{memory_id}", json={"text": "Lives in Paris"}, headers=world.auth())
    first, _ = twice(world, "PATCH", f"{ADA}/memories/{memory_id}", {"text": "Lives in Nice"}, **{"If-Match": '"1"'})
    assert (first.status_code, first.json["code"], first.json["actual_revision"]) == (409, "conflict", 2)
    plain = world.raw().patch(f"{ADA}/memories/{memory_id}", json={"text": "Lives in Nice"},
                              headers=world.auth(**{"If-Match": '"1"'}))
    assert first.json == plain.json


def test_update_replayed_is_applied_once(world: World) -> None:
    memory_id = remembered(world, "Lives in Lyon")
    # Run twice with If-Match "1", the second would be a 409.
    first, _ = twice(world, "PATCH", f"{ADA}/memories/{memory_id}", {"text": "Lives in Paris"}, **{"If-Match": '"1"'})
    assert first.status_code == 200 and first.json["revision"] == 2
    assert current(world, memory_id)["revision"] == 2


def test_update_with_a_key_answers_the_etag_as_without(world: World) -> None:
    memory_id = remembered(world, "Lives in Lyon")
    plain = world.raw().patch(f"{ADA}/memories/{memory_id}", json={"text": "Lives in Paris"}, headers=world.auth())
    assert plain.headers["ETag"] == '"2"'
    first, again = twice(world, "PATCH", f"{ADA}/memories/{memory_id}", {"text": "Lives in Nice"})
    assert first.headers.get("ETag") == again.headers.get("ETag") == '"3"'


def test_undo_replayed_is_applied_once(world: World) -> None:
    memory_id = remembered(world, "Lives in Lyon")
    for wording in ("Lives in Paris", "Lives in Nice"):
        world.raw().patch(f"{ADA}/memories/{memory_id}", json={"text": wording}, headers=world.auth())
    first, _ = twice(world, "POST", f"{ADA}/memories/{memory_id}/undo")
    assert first.json["memory"]["text"] == "Lives in Paris"
    assert current(world, memory_id)["text"] == "Lives in Paris"  # not "Lives in Lyon": undone once


def test_forget_replayed_is_204_not_404(world: World) -> None:
    memory_id = remembered(world, "Lives in Lyon")
    first, _ = twice(world, "DELETE", f"{ADA}/memories/{memory_id}")
    assert first.status_code == 204 and world.count() == 0


def test_used_replayed_is_applied_once(world: World) -> None:
    memory_id = remembered(world, "Likes jazz")
    first, _ = twice(world, "POST", f"{ADA}/used", {"ids": [memory_id]})
    assert first.json == {"marked": 1}
    used_at = current(world, memory_id)["last_used_at"]
    world.raw().post(f"{ADA}/used", json={"ids": [memory_id]}, headers=world.auth(**{"Idempotency-Key": "k-1"}))
    assert current(world, memory_id)["last_used_at"] == used_at


def test_seen_replayed_answers_what_the_first_call_marked(world: World) -> None:
    learnt = world.runtime.service.remember(Place("ada", world.tenant_a), "Has a cat", channel="background")
    first, again = twice(world, "POST", f"{ADA}/seen", {"ids": [learnt.memory.id]})  # type: ignore[union-attr]
    assert first.json == again.json == {"marked": 1}  # run again it would mark 0


def test_settings_replayed_do_not_undo_a_later_change(world: World) -> None:
    twice(world, "PUT", f"{ADA}/settings", {"paused": True}, key="pause-1")
    world.runtime.service.resume(Place("ada", world.tenant_a))  # the person resumes (an app may not)
    replay = world.raw().put(f"{ADA}/settings", json={"paused": True}, headers=world.auth(**{"Idempotency-Key": "pause-1"}))
    assert replay.json == {"paused": True} and replay.headers["Idempotent-Replayed"] == "true"
    assert world.raw().get(f"{ADA}/settings", headers=world.auth()).json == {"paused": False}


def test_erase_with_a_key_keeps_no_receipt_and_a_retry_erases_again(world: World) -> None:
    """No row may name an erased person, a receipt included: the key is checked, nothing is
    stored, and a retry erases what was kept since (nothing, here: zero counts)."""
    remembered(world, "Likes jazz")
    remembered(world, "Likes tea")
    headers = world.auth(**{"Idempotency-Key": "erase-1"})
    first = world.raw().delete(ADA, headers=headers)
    assert first.json["memories"] == 2 and "Idempotent-Replayed" not in first.headers
    with world.runtime.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM idempotency_receipts")).scalar() == 0
    again = world.raw().delete(ADA, headers=headers)
    assert again.status_code == 200 and again.json["memories"] == 0 and "Idempotent-Replayed" not in again.headers
    bad = world.raw().delete(ADA, headers=world.auth(**{"Idempotency-Key": "has space"}))
    assert (bad.status_code, bad.json["code"]) == (400, "invalid_idempotency_key")


def test_erase_with_a_key_erases(world: World) -> None:
    remembered(world, "Likes jazz")
    answer = world.raw().delete(ADA, headers=world.auth(**{"Idempotency-Key": "erase-1"}))
    assert answer.status_code == 200 and answer.json["memories"] == 1 and world.count() == 0


def test_a_tool_call_replayed_is_applied_once(world: World) -> None:
    first, _ = twice(world, "POST", f"{ADA}/tools/remember", {"arguments": {"text": "Likes jazz"}})
    assert first.json["code"] == "memory_saved"
    assert world.count() == 1 and current(world, first.json["memory"]["id"])["revision"] == 1


def test_consolidate_replayed_asks_the_model_once_and_answers_done_again(make_world: Callable[..., World],
                                                                            sqlite_engine: Any) -> None:
    with FakeLLMServer() as server:
        server.script('{"facts": [{"text": "Has a cat called Miso", "kind": "fact"}], "summary": "cat"}')
        world = make_world(sqlite_engine, llm=OpenAICompatibleLLM(server.base_url, "m", retries=0))
        body = {"transcript": [{"role": "user", "text": "I adopted a cat called Miso."}], "ref": "conv-1"}
        raw = world.raw()
        sent = world.auth(**{"Idempotency-Key": "k-1"})
        first = raw.post(f"{ADA}/consolidate", json=body, headers=sent)
        again = raw.post(f"{ADA}/consolidate", json=body, headers=sent)
        assert (first.json["status"], first.json["added"], first.json["summary"]) == ("done", 1, "cat")
        # Replayed, the counts again ("already" if it ran twice), and no summary: a receipt keeps no words.
        assert again.headers["Idempotent-Replayed"] == "true"
        assert again.json == {**first.json, "summary": None}
        assert len(server.requests) == 1 and world.count() == 1


@pytest.mark.parametrize(
    ("method", "path", "body", "other"),
    [("POST", "/memories", {"text": "Prefers tea"}, {"text": "Prefers coffee"}),
     ("POST", "/used", {"ids": ["a"]}, {"ids": ["b"]}),
     ("PUT", "/settings", {"paused": True}, {"paused": False}),
     ("POST", "/tools/remember", {"arguments": {"text": "Likes jazz"}}, {"arguments": {"text": "Likes rock"}})],
)
def test_the_same_key_with_another_body_is_409_and_applies_nothing(world: World, method: str, path: str, body: Any,
                                                                    other: Any) -> None:
    raw = world.raw()
    headers = world.auth(**{"Idempotency-Key": "k-1"})
    assert raw.open(ADA + path, method=method, json=body, headers=headers).status_code < 300
    count = world.count()
    reused = raw.open(ADA + path, method=method, json=other, headers=headers)
    assert reused.status_code == 409 and reused.mimetype == "application/problem+json"
    assert reused.json["code"] == "idempotency_key_reused"
    assert world.count() == count
    assert raw.get(f"{ADA}/settings", headers=world.auth()).json["paused"] is (path == "/settings")


def test_the_same_key_on_another_endpoint_is_409(world: World) -> None:
    memory_id = remembered(world, "Likes jazz")
    headers = world.auth(**{"Idempotency-Key": "k-1"})
    assert world.raw().post(f"{ADA}/used", json={"ids": [memory_id]}, headers=headers).status_code == 200
    reused = world.raw().post(f"{ADA}/seen", json={"ids": [memory_id]}, headers=headers)
    assert (reused.status_code, reused.json["code"]) == (409, "idempotency_key_reused")


def test_keys_are_per_person(world: World) -> None:
    with world.client() as memory:
        ada = memory.remember("ada", "Prefers tea", idempotency_key="turn-1")
        bob = memory.remember("bob", "Prefers tea", idempotency_key="turn-1")
    assert not bob.replayed and bob.memory.id != ada.memory.id
    assert world.count("bob") == 1


def test_reads_ignore_the_key(world: World) -> None:
    remembered(world, "Likes jazz")
    headers = world.auth(**{"Idempotency-Key": "k-1"})
    for _ in range(2):
        answer = world.raw().get(f"{ADA}/memories", headers=headers)
        assert answer.status_code == 200 and "Idempotent-Replayed" not in answer.headers


@pytest.mark.parametrize("key", ["has space", "k" * 201, "tab\there", "é"])
def test_a_malformed_key_is_400_and_applies_nothing(world: World, key: str) -> None:
    answer = world.raw().post(f"{ADA}/memories", json={"text": "Likes jazz"},
                              headers={**world.auth(), "Idempotency-Key": key.encode().decode("latin-1")})
    assert (answer.status_code, answer.json["code"]) == (400, "invalid_idempotency_key")
    assert world.count() == 0


def test_a_replay_after_forget_is_redacted_and_does_not_bring_the_memory_back(any_world: World) -> None:
    with any_world.client() as memory:
        saved = memory.remember("ada", "Had surgery on her left knee", idempotency_key="turn-7")
        memory.forget("ada", saved.memory.id)
        with pytest.raises(Redacted) as redacted:
            memory.remember("ada", "Had surgery on her left knee", idempotency_key="turn-7")
        assert (redacted.value.status, redacted.value.code) == (201, "redacted")
        assert memory.last_response is not None and "knee" not in memory.last_response.text
        assert memory.list("ada", state="all").items == []
    # The same bytes as the client sent them, through a plain HTTP client: the stored answer holds no text.
    raw = any_world.raw().post(f"{ADA}/memories", data='{"text":"Had surgery on her left knee"}',
                               headers=any_world.auth(**{"Idempotency-Key": "turn-7", "Content-Type": "application/json"}))
    assert (raw.status_code, raw.json, raw.headers["Idempotent-Replayed"]) == (201, {"redacted": True}, "true")


def test_the_same_json_body_spelt_differently_is_the_same_body(world: World) -> None:
    headers = world.auth(**{"Idempotency-Key": "k-1", "Content-Type": "application/json"})
    first = world.raw().post(f"{ADA}/memories", data='{"text":"Likes jazz","importance":4}', headers=headers)
    again = world.raw().post(f"{ADA}/memories", data='{"importance": 4, "text": "Likes jazz"}', headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true" and world.count() == 1


def test_a_replay_after_undo_of_a_new_memory_is_redacted(world: World) -> None:
    with world.client() as memory:
        saved = memory.remember("ada", "Likes jazz", idempotency_key="turn-8")
        assert memory.undo("ada", saved.memory.id) is None
        with pytest.raises(Redacted):
            memory.remember("ada", "Likes jazz", idempotency_key="turn-8")
    assert world.count() == 0


@pytest.fixture
def live(any_world: World) -> Iterator[tuple[World, str]]:
    with serving(any_world) as url:
        yield any_world, url


def test_sixteen_concurrent_retries_with_one_key_apply_once(live: tuple[World, str]) -> None:
    world, url = live
    start = threading.Barrier(16)
    results: list[Saved | BaseException] = []
    lock = threading.Lock()

    def attempt() -> None:
        with MemoryClient(url, world.keys["a"], timeout=30) as memory:
            start.wait()
            try:
                outcome: Saved | BaseException = memory.remember("ada", "Prefers green tea", idempotency_key="turn-42")
            except (ApiError, OSError) as exc:
                outcome = exc
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=attempt) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    saved = [r for r in results if isinstance(r, Saved)]
    assert len(saved) == 16, [r for r in results if not isinstance(r, Saved)]
    assert len({s.memory.id for s in saved}) == 1
    assert sorted(s.replayed for s in saved) == [False] + [True] * 15
    assert world.count() == 1
    with MemoryClient(url, world.keys["a"]) as memory:
        assert [(m.revision, m.text) for m in memory.list("ada").items] == [(1, "Prefers green tea")]


def test_replays_of_a_correction_and_of_a_tool_write_are_redacted_after_forget(world: World) -> None:
    with world.client() as memory:
        saved = memory.remember("ada", "Lives in Lyon")
        memory.update("ada", saved.memory.id, text="Lives at 3 rue Secrète", idempotency_key="fix-1")
        told = memory.call_tool("ada", "remember", {"text": "Takes insulin daily"}, idempotency_key="tool-1")
        memory.forget("ada", saved.memory.id)
        memory.forget("ada", told["memory"]["id"])
        with pytest.raises(Redacted):
            memory.update("ada", saved.memory.id, text="Lives at 3 rue Secrète", idempotency_key="fix-1")
        assert memory.last_response is not None and "Secrète" not in memory.last_response.text
        with pytest.raises(Redacted):
            memory.call_tool("ada", "remember", {"text": "Takes insulin daily"}, idempotency_key="tool-1")
        assert memory.last_response is not None and "insulin" not in memory.last_response.text
    assert world.count() == 0
