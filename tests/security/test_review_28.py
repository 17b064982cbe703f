"""Review of issue 28 (mem0's routes, attacked). The tests of each finding failed on the code under
review (commit 23a091f), each for the finding its reason names; the others are attacks that held
and stay as guards. mem0's own client is used where what it sends matters."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from portal.domain.apps import READ, RECALLED, REMEMBERED, app_of
from portal.domain.types import Place

from ..api import conftest as api_fixtures
from ..api.conftest import API, World, serving
from ..fakes.embedders import HashEmbedder
from .scans import words_in_tables

os.environ.setdefault("MEM0_TELEMETRY", "False")  # mem0 sends usage to PostHog unless told not to
mem0 = pytest.importorskip("mem0", reason="mem0ai is in the test extra")
from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import ValidationError  # noqa: E402

# The worlds of tests/api (tenants A and B, keys of every kind, no 5xx allowed at teardown).
sqlite_engine = api_fixtures.sqlite_engine  # on a copy of tests/conftest.py's migrated_sqlite
make_world, world = api_fixtures.make_world, api_fixtures.world


@pytest.fixture(autouse=True)
def mem0_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path / "mem0"))  # where mem0's client writes its config


@pytest.fixture
def served(world: World) -> Iterator[tuple[World, str]]:
    with serving(world) as url:
        yield world, url


@pytest.fixture
def embedded(make_world: Callable[..., World], sqlite_engine: Any) -> World:
    return make_world(sqlite_engine, embedder=HashEmbedder())


def token(world: World, key: str = "a") -> dict[str, str]:
    return {"Authorization": f"Token {world.keys[key]}"}


def add(world: World, *texts: str, owner: str = "ada") -> list[str]:
    messages = [{"role": "user", "content": text} for text in texts]
    answer = world.raw().post("/v3/memories/add/", json={"messages": messages, "user_id": owner, "infer": False},
                              headers=token(world))
    assert answer.status_code == 200, answer.get_json()
    return [r["id"] for r in answer.get_json()["results"]]


def bot(world: World) -> str:
    """The app of key "a" (the one every request here is sent with)."""
    key = world.runtime.api_keys.verify(world.keys["a"])
    assert key is not None
    return app_of(key).id


def uses(world: World, memory_id: str, owner: str = "ada") -> set[str]:
    return {u.action for u in world.runtime.service.app_uses_of(Place(owner, world.tenant_a), memory_id)}


# ------------------------------------------------------------------------------------ findings


@pytest.mark.parametrize("path", ["/v1/memories/?user_id=ada", "/v2/entities/user/ada/"])
def test_an_app_the_person_paused_never_frees_itself_by_erasing_them(world: World, path: str) -> None:
    """Found by the review of item 3: delete_all was the owner's purge, which took the person's
    decisions about apps with it; it is the person's erase-everything, which keeps them."""
    add(world, "Likes green tea")
    place = Place("ada", world.tenant_a)
    world.runtime.service.pause(place)
    world.runtime.service.set_app_control(place, bot(world), "paused")
    assert world.raw().delete(path, headers=token(world)).status_code == 200
    assert world.count("ada") == 0
    assert world.runtime.service.is_paused(place)
    with world.runtime.store.read(place) as tx:
        assert tx.app_control(bot(world)) == "paused"


def test_mem0s_everyone_wildcard_is_refused_not_answered_done(served: tuple[World, str]) -> None:
    """mem0 documents `delete_all(user_id="*")` as every user's memories. Here it erases a person
    literally named "*" and answers "Memories deleted successfully!": a wipe believed done, with
    every person's memories still kept."""
    world, url = served
    add(world, "Likes green tea")
    add(world, "Plays the cello", owner="bob")
    with pytest.raises(ValidationError):
        MemoryClient(api_key=world.keys["a"], host=url).delete_all(user_id="*")
    assert (world.count("ada"), world.count("bob")) == (1, 1)


def test_a_delete_all_naming_two_people_is_refused(world: World) -> None:
    add(world, "Likes green tea")
    add(world, "Plays the cello", owner="bob")
    answer = world.raw().delete("/v1/memories/?user_id=bob&user_id=ada", headers=token(world))
    assert answer.status_code == 400 and answer.get_json()["code"] == "one_person"
    assert (world.count("ada"), world.count("bob")) == (1, 1)


@pytest.mark.parametrize("who", ["person", "app"])
def test_a_paused_add_to_learn_from_is_refused_and_keeps_no_word(served: tuple[World, str], who: str) -> None:
    world, url = served
    memory, place, svc = MemoryClient(api_key=world.keys["a"], host=url), Place("ada", world.tenant_a), world.runtime.service
    if who == "person":
        svc.pause(place)
    else:
        svc.set_app_control(place, bot(world), "paused")
    with pytest.raises(ValidationError, match="paused"):
        memory.add("My diagnosis is zorblax syndrome", user_id="ada")  # infer is true unless said
    assert words_in_tables(world.runtime.engine, ["zorblax"]) == []


def test_a_later_page_records_no_read_of_the_memories_before_it(served: tuple[World, str]) -> None:
    world, url = served
    ids = add(world, "Likes green tea", "Lives in Lyon", "Has a cat called Miso")
    page = MemoryClient(api_key=world.keys["a"], host=url).get_all(filters={"user_id": "ada"}, page=3, page_size=1)
    handed = [m["id"] for m in page["results"]]
    assert len(handed) == 1 and uses(world, handed[0]) == {REMEMBERED, READ}
    assert [uses(world, i) for i in ids if i not in handed] == [{REMEMBERED}, {REMEMBERED}]


def test_hits_under_the_threshold_are_not_recorded_as_recalled(embedded: World) -> None:
    ids = add(embedded, "Likes green tea", "Lives in Lyon", "Has a cat called Miso")
    answer = embedded.raw().post("/v3/memories/search/", json={"query": "green tea", "threshold": 1.0, "top_k": 3,
                                                               "filters": {"user_id": "ada"}}, headers=token(embedded))
    assert answer.status_code == 200 and answer.get_json()["results"] == []  # nothing handed to the app
    assert [RECALLED in uses(embedded, i) for i in ids] == [False, False, False]
    svc = embedded.runtime.service
    assert [svc.get(Place("ada", embedded.tenant_a), i).last_used_at for i in ids] == [None, None, None]


def test_one_add_keeps_a_bounded_number_of_messages(world: World) -> None:
    messages = [{"role": "user", "content": f"Fact number {n}"} for n in range(1000)]
    answer = world.raw().post("/v3/memories/add/", json={"messages": messages, "user_id": "ada", "infer": False},
                              headers=token(world))
    assert answer.status_code == 400 and answer.get_json()["detail"]
    assert world.count("ada") == 0


def test_listing_people_costs_a_bounded_number_of_statements(world: World) -> None:
    svc = world.runtime.service
    for n in range(60):
        svc.remember(Place(f"person-{n}", world.tenant_a), "Likes tea")
        svc.remember(Place(f"other-{n}", world.tenant_b), "Likes tea")
    statements: list[str] = []
    listener = lambda *args: statements.append(args[2])  # noqa: E731
    event.listen(world.runtime.engine, "before_cursor_execute", listener)
    try:
        answer = world.raw().get("/v1/entities/", headers=token(world))
    finally:
        event.remove(world.runtime.engine, "before_cursor_execute", listener)
    assert answer.status_code == 200 and answer.get_json()["count"] == 60
    assert len(statements) <= 20, f"{len(statements)} statements for one listing"


@pytest.mark.parametrize("method, path", [("POST", "/v3/memories/add"), ("GET", "/v1/ping")])
def test_a_path_without_its_trailing_slash_is_answered_not_redirected(world: World, method: str, path: str) -> None:
    """Finding 7: a 308 (HTML, not followed by httpx) before; now the route answers either way."""
    answer = world.raw().open(path, method=method, json={"messages": "x", "user_id": "ada", "infer": False},
                              headers=token(world))
    assert answer.status_code == 200 and answer.mimetype == "application/json", (answer.status_code, answer.mimetype)


@pytest.mark.parametrize("method, path", [
    pytest.param("DELETE", "/v1/memories/?user_id=a%00b"),
    pytest.param("GET", "/v1/memories/a%00b/"),
    ("GET", "/v1/feedback/"),
    ("PATCH", "/v1/memories/m1/"),
])
def test_every_answer_under_mem0s_prefixes_is_json_with_a_detail(world: World, method: str, path: str) -> None:
    answer = world.raw().open(path, method=method, json={"messages": "x", "user_id": "ada"}, headers=token(world))
    assert answer.status_code >= 400 and answer.mimetype == "application/json", (answer.status_code, answer.mimetype)
    assert answer.get_json()["detail"]


@pytest.mark.parametrize("method, path, body", [
    ("POST", "/v3/memories/add/", {"messages": "x", "user_id": "ada", "not_a_field": 1}),
    ("POST", "/v3/memories/search/", {"query": "x", "not_a_field": 1}),
    ("POST", "/v3/memories/", {"filters": {"not_a_filter": 1}}),
    ("DELETE", "/v1/memories/?user_id=ada&not_a_field=1", None),
])
def test_a_revoked_key_is_told_so_whatever_it_sends(world: World, method: str, path: str, body: Any) -> None:
    answer = world.raw().open(path, method=method, json=body, headers=token(world, "a_revoked"))
    assert answer.status_code == 401 and answer.get_json()["code"] == "unauthorized"


def test_the_count_is_what_the_pages_hold(world: World) -> None:
    """Finding 9 on 23a091f (count = active + archived); the listing rewritten since counts what it lists."""
    first, _ = add(world, "Likes green tea", "Lives in Lyon")
    with world.runtime.store.write(Place("ada", world.tenant_a)) as tx:  # as the cap does
        tx.set_state([first], "archived")
        tx.commit()
    page = world.raw().post("/v3/memories/", json={"filters": {"user_id": "ada"}}, headers=token(world)).get_json()
    assert page["count"] == len(page["results"]) == 1


def test_what_an_app_keeps_or_corrects_through_mem0_says_where_it_came_from(world: World) -> None:
    (memory_id,) = add(world, "Likes green tea")
    world.raw().put(f"/v1/memories/{memory_id}/", json={"text": "Likes jasmine tea"}, headers=token(world))
    place = Place("ada", world.tenant_a)
    revisions = world.runtime.service.history(place, memory_id)
    assert [bool(r.sources) for r in revisions] == [True, True]


@pytest.mark.parametrize("method, where, body", [
    pytest.param("PUT", "memory", {"text": 5}),
    pytest.param("POST", "/v3/memories/", {"filters": {"user_id": "ada"}, "page": True}),
    pytest.param("POST", "/v3/memories/", {"filters": {"user_id": "ada"}, "page_size": 2.9}),
    pytest.param("POST", "/v3/memories/search/", {"query": "tea " * 600, "filters": {"user_id": "ada"}}),
    ("POST", "/v3/memories/search/", {"query": "tea", "top_k": True, "filters": {"user_id": "ada"}}),
])
def test_a_value_of_the_wrong_type_or_size_is_a_400(world: World, method: str, where: str, body: Any) -> None:
    (memory_id,) = add(world, "Likes green tea")
    path = f"/v1/memories/{memory_id}/" if where == "memory" else where
    answer = world.raw().open(path, method=method, json=body, headers=token(world))
    assert answer.status_code == 400, answer.get_json()


# ------------------------------------------------------------------------------------ attacks that held


def test_another_tenant_learns_nothing_of_a_memory_a_job_or_a_person(world: World) -> None:
    (memory_id,) = add(world, "Likes green tea")
    job = world.raw().post("/v3/memories/add/", json={"messages": "I like jazz", "user_id": "ada"},
                           headers=token(world)).get_json()["event_id"]
    raw, b = world.raw(), token(world, "b")
    for path in (f"/v1/memories/{memory_id}/", f"/v1/memories/{memory_id}/history/", f"/v1/event/{job}/"):
        assert raw.get(path, headers=b).get_json() == raw.get(path.replace(memory_id, "0" * 32).replace(
            job, "0" * 32), headers=b).get_json()  # the same 404 as for an id no one holds
    assert raw.put(f"/v1/memories/{memory_id}/", json={"text": "x y"}, headers=b).status_code == 404
    assert raw.delete(f"/v1/memories/{memory_id}/", headers=b).status_code == 404
    assert raw.get("/v1/entities/", headers=b).get_json()["results"] == []
    for filters in ({"OR": [{"user_id": "ada"}, {"user_id": "bob"}]}, {"user_id": {"in": ["ada", "bob"]}},
                    {"AND": [{"user_id": "ada"}, {"user_id": "bob"}]}):
        assert raw.post("/v3/memories/", json={"filters": filters}, headers=b).status_code == 400
    assert raw.post("/v3/memories/search/", json={"query": "tea", "user_id": "bob", "filters": {"user_id": "ada"}},
                    headers=token(world)).status_code == 400
    assert raw.delete("/v2/entities/user/ada/", headers=b).status_code == 200  # B's own ada: A's is kept
    assert world.count("ada") == 1


def test_a_blocked_app_is_refused_on_every_route_and_a_paused_one_may_read_and_take_away(world: World) -> None:
    (memory_id,) = add(world, "Likes green tea")
    svc, place, raw = world.runtime.service, Place("ada", world.tenant_a), world.raw()
    routes = [("POST", "/v3/memories/add/", {"messages": "x y", "user_id": "ada", "infer": False}),
              ("POST", "/v3/memories/add/", {"messages": "x y", "user_id": "ada"}),
              ("POST", "/v3/memories/search/", {"query": "tea", "filters": {"user_id": "ada"}}),
              ("POST", "/v3/memories/?page=4", {"filters": {"user_id": "ada"}}),
              ("GET", f"/v1/memories/{memory_id}/", None), ("GET", f"/v1/memories/{memory_id}/history/", None),
              ("PUT", f"/v1/memories/{memory_id}/", {"text": None}), ("DELETE", f"/v1/memories/{memory_id}/", None),
              ("DELETE", "/v1/memories/?user_id=ada", None), ("DELETE", "/v2/entities/user/ada/", None)]
    svc.set_app_control(place, bot(world), "blocked")
    assert [raw.open(p, method=m, json=b, headers=token(world)).status_code for m, p, b in routes] == [403] * 10
    assert raw.get("/v1/entities/", headers=token(world)).get_json()["results"] == []
    svc.set_app_control(place, bot(world), "paused")
    assert raw.put(f"/v1/memories/{memory_id}/", json={"text": "Likes black tea"}, headers=token(world)).status_code == 422
    assert raw.post("/v3/memories/search/", json={"query": "tea", "user_id": "ada"}, headers=token(world)).status_code == 200
    assert raw.delete(f"/v1/memories/{memory_id}/", headers=token(world)).status_code == 200
    assert world.count("ada") == 0


def test_a_key_does_what_its_permissions_say_on_mem0s_routes(world: World) -> None:
    (memory_id,) = add(world, "Likes green tea")
    raw = world.raw()
    for key, method, path, body in [
        ("a_read", "PUT", f"/v1/memories/{memory_id}/", {"text": "x y"}),
        ("a_read", "DELETE", f"/v1/memories/{memory_id}/", None),
        ("a_read", "POST", "/v3/memories/add/", {"messages": "x y", "user_id": "ada", "infer": False}),
        ("a_without:consolidate", "POST", "/v3/memories/add/", {"messages": "x y", "user_id": "ada"}),
        ("a_without:erasure", "DELETE", "/v1/memories/?user_id=ada", None),
        ("a_without:erasure", "DELETE", "/v2/entities/user/ada/", None),
        ("a", "DELETE", "/v1/memories/?user_id=ada&metadata=%7B%7D", None),
        ("a", "DELETE", "/v1/memories/", None),  # no person: never everyone
    ]:
        answer = raw.open(path, method=method, json=body, headers=token(world, key))
        assert answer.status_code in (400, 403), (key, method, path, answer.status_code)
    # Narrowed by an agent the memory does not carry: never the person's erasure.
    raw.delete("/v1/memories/?user_id=ada&agent_id=bot", headers=token(world))
    assert world.count("ada") == 1


def test_token_and_bearer_count_in_one_bucket(make_world: Callable[..., World], sqlite_engine: Any) -> None:
    world = make_world(sqlite_engine, flask={"API_RATE_LIMIT": "3/minute"})
    raw, listing = world.raw(), {"filters": {"user_id": "ada"}}
    assert raw.get(f"{API}/people/ada/memories", headers=world.auth()).status_code == 200
    assert raw.post("/v3/memories/", json=listing, headers=token(world)).status_code == 200
    assert raw.get(f"{API}/people/ada/memories", headers=world.auth()).status_code == 200
    limited = raw.get("/v1/ping/", headers={"Authorization": f"token  {world.keys['a']} "})
    assert limited.status_code == 429 and limited.mimetype == "application/json" and limited.headers["Retry-After"]
